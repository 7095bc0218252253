"""The LIR memory planner: one activation arena shared by buffers whose lifetimes do not overlap.

Pure Python (numpy only), independent of MLIR: `rlx-mir-to-lir` turns a MIR function into a list
of abstract `Buffer`s in schedule order and calls `plan_memory`; `rlx_mlir.lir.checker.check_plan`
re-validates any plan independently.

Model (RLX's `rlx-compile/memory.rs`, catalogue §6.2, with the changes marked *):

- The schedule is a list of `num_ops` ops, indexed 0..num_ops-1. Every value is a `Buffer` defined
  by one op (`producer`; -1 for function inputs and params) and read by ops (`users`).
- Only buffers of kind ``"intermediate"`` live in the arena. Inputs, params and constants are never
  shared (they live for the whole run, as in RLX) and *outputs are caller-provided buffers in this
  project*, so none of them gets an arena slot. Nor does a ``"fused"`` value (*): an elementwise
  result computed inside its only consumer's loop nest, which never exists in memory, nor an
  ``"allocated"`` one (*): a result the op returns in a buffer of its own (calls, multi-result ops).
- A view (``view_of`` set: reshape, same-dtype cast, contiguous narrow, identity expand or
  transpose, or a strided narrow whose readers take it as it is) allocates nothing: it aliases its
  parent from ``view_offset`` bytes on (a strided one reads some of the bytes after that, all
  inside its parent); chains of views are
  resolved to the *root* with the cumulative offset. A view is in the arena exactly when its root is
  an intermediate (such a view must itself be of kind "intermediate": a caller-provided output cannot
  alias the arena). Views of inputs, params, constants or outputs are not placed, but their root is
  still reported in `roots`.
- (*) A buffer outside the arena may still share memory with the values its op reads: the results
  of a call or of a multi-result op (kind ``"allocated"``: the op returns them in buffers it
  allocates) may be an operand, a slice of one, or an operand written in place. ``may_alias``
  lists those buffers; every read of the buffer counts as a read of each of them (and, through
  them, of whatever they view or alias, transitively). An arena intermediate aliases nothing: it
  is computed into its own slot and read from there, and a returned value is copied into a buffer
  of its own when its op runs, unless it is already computed there (`rlx-lir-to-linalg`).
- Lifetime of an arena root, inclusive: ``[producer, max(producer, every user of the root, and the
  producer and every user of every buffer that may reference its bytes)]``; a buffer may reference
  the root's bytes when it is a view of the root or of a buffer that may, or when its ``may_alias``
  names one that may. Reads through a view or an alias thus keep the root alive (RLX, for views),
  and the op that makes the view counts as a read (it reads its parent).
- Two roots may share bytes only if their lifetimes are disjoint. Every root starts at a multiple of
  `alignment` and, for packing, occupies its size rounded up to `alignment`; the arena size is the
  highest end, hence also a multiple of `alignment`. Size-0 roots get offset 0 and conflict with
  nothing; a view's offset is always its root's offset plus its cumulative view offset.
- `lower_bound` is the peak over time of the sum of the (aligned) sizes of the live roots: no valid
  placement can use less. `unshared_total` is the sum of the aligned root sizes (the arena with no
  sharing at all).

Packing (* RLX runs one greedy): several orders × two fit policies are run and the smallest arena
wins (ties: the first in `STRATEGIES`, which starts with RLX's own `greedy_by_size/first_fit`);
the search stops as soon as a plan meets `lower_bound`.

Orders:
  ``greedy_by_size``      size descending (RLX's "GlobalDecreasingSizeBestFit", simplified)
  ``greedy_by_size_long`` size descending, then longer lifetime first
  ``greedy_by_lifetime``  lifetime length descending, then size
  ``greedy_by_breadth``   ops by breadth (live bytes at the op) descending; each op's not yet placed
                          live buffers by size descending (Pisarchyk & Lee, 2020)
  ``greedy_by_start``     definition order (a linear scan), larger first on ties
Fit policies, over the gaps left by the already placed buffers whose lifetimes overlap:
  ``first_fit``  the lowest offset that fits (candidates: 0 and the ends of placed buffers)
  ``best_fit``   the smallest gap that fits (lowest on ties); above everything when none fits

Refinement (``+promote`` in `strategy`): when no strategy meets the lower bound, a local search
re-runs the best strategies' placement with a buffer that reaches the top of the arena moved to
the front of the order, keeping a move only when the arena shrinks. The number of trial placements
is bounded by a budget that shrinks with the square of the number of buffers (none past ~6000), so
planning stays well under a couple of seconds.

Everything is deterministic (ties are broken by buffer id; no clocks, no randomness).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import RlxError

__all__ = [
    "ARENA_KINDS",
    "KINDS",
    "STRATEGIES",
    "Buffer",
    "MemoryPlan",
    "PlanError",
    "compare_strategies",
    "format_plan",
    "plan_memory",
]

# "allocated": a result the op returns in a buffer of its own (results of multi-result ops and of
# calls: bufferization allocates it), never in the arena.
KINDS = ("intermediate", "input", "param", "constant", "output", "fused", "allocated")
ARENA_KINDS = ("intermediate",)

_ORDERS = (
    "greedy_by_size",
    "greedy_by_size_long",
    "greedy_by_lifetime",
    "greedy_by_breadth",
    "greedy_by_start",
)
_POLICIES = ("first_fit", "best_fit")
STRATEGIES = tuple(f"{order}/{policy}" for order in _ORDERS for policy in _POLICIES)


class PlanError(RlxError, ValueError):
    """The buffer list (or an option) given to `plan_memory` is malformed."""


@dataclass(frozen=True)
class Buffer:
    """One value of the schedule, as the planner sees it."""

    id: int  # unique, in schedule order of the values' definitions
    producer: int  # schedule index of the op that defines it (0-based); inputs/params: -1
    size: int  # bytes (>= 0)
    users: tuple[int, ...]  # schedule indices of the ops that read it
    kind: str  # one of KINDS
    view_of: Optional[int] = None  # id of the buffer this one is a pure view of
    view_offset: int = 0  # byte offset of the view inside view_of
    may_alias: tuple[int, ...] = ()  # buffers whose memory this (non-arena, non-view) one may share


@dataclass(frozen=True)
class MemoryPlan:
    """Where each arena buffer lives; see the module docstring for the exact rules."""

    arena_size: int
    alignment: int
    offsets: dict[int, int]  # buffer id -> byte offset, for every placed buffer (views included)
    lifetimes: dict[int, tuple[int, int]]  # id -> (first, last) schedule index, arena buffers
    roots: dict[int, int]  # view id -> root id (chains resolved), every view
    lower_bound: int  # peak over time of simultaneously live (aligned) root bytes
    unshared_total: int  # sum of aligned root sizes = arena size with no sharing
    strategy: str  # which packing heuristic won

    @property
    def bytes_saved(self) -> int:
        return max(0, self.unshared_total - self.arena_size)

    def is_placed(self, buffer_id: int) -> bool:
        return buffer_id in self.offsets

    def is_view(self, buffer_id: int) -> bool:
        return buffer_id in self.roots


def _align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _check_alignment(alignment: object) -> int:
    if (
        isinstance(alignment, bool)
        or not isinstance(alignment, (int, np.integer))
        or alignment < 1
        or alignment & (alignment - 1)
    ):
        raise PlanError(f"alignment must be a positive power of two, got {alignment!r}")
    return int(alignment)


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _validate(buffers: Sequence[Buffer], num_ops: int) -> dict[int, Buffer]:
    if not _is_int(num_ops) or num_ops < 0:
        raise PlanError(f"num_ops must be a non-negative integer, got {num_ops!r}")
    by_id: dict[int, Buffer] = {}
    for buf in buffers:
        if not _is_int(buf.id):
            raise PlanError(f"buffer id must be an integer, got {buf.id!r}")
        if buf.id in by_id:
            raise PlanError(f"duplicate buffer id {buf.id}")
        by_id[buf.id] = buf
        if buf.kind not in KINDS:
            raise PlanError(f"buffer {buf.id}: kind {buf.kind!r} is not one of {', '.join(KINDS)}")
        if not _is_int(buf.size) or buf.size < 0:
            raise PlanError(f"buffer {buf.id}: size must be a non-negative integer, got {buf.size!r}")
        if not _is_int(buf.producer) or not -1 <= buf.producer < num_ops:
            raise PlanError(
                f"buffer {buf.id}: producer {buf.producer!r} is outside [-1, {num_ops}) "
                f"for a schedule of {num_ops} ops"
            )
        for user in buf.users:
            if not _is_int(user) or not 0 <= user < num_ops:
                raise PlanError(
                    f"buffer {buf.id}: user {user!r} is outside [0, {num_ops}) "
                    f"for a schedule of {num_ops} ops"
                )
            if user < buf.producer:
                raise PlanError(
                    f"buffer {buf.id}: user op {user} comes before its producer op {buf.producer}"
                )
        if buf.view_of is None:
            if buf.view_offset != 0:
                raise PlanError(f"buffer {buf.id}: view_offset {buf.view_offset} without view_of")
            if buf.kind in ARENA_KINDS and buf.producer < 0:
                raise PlanError(f"buffer {buf.id}: an intermediate must be defined by an op (producer -1)")
        elif not _is_int(buf.view_offset) or buf.view_offset < 0:
            raise PlanError(f"buffer {buf.id}: view_offset must be a non-negative integer, got {buf.view_offset!r}")
        if buf.may_alias and (buf.view_of is not None or buf.kind in ARENA_KINDS):
            raise PlanError(
                f"buffer {buf.id}: may_alias is only for buffers outside the arena that are not views "
                f"(an arena buffer owns its slot; a view names its parent with view_of)"
            )
    for buf in buffers:
        for other in buf.may_alias:
            target = by_id.get(other) if _is_int(other) else None
            if target is None:
                raise PlanError(f"buffer {buf.id}: may_alias {other!r} is not a buffer id")
            if target.producer >= buf.producer:
                raise PlanError(
                    f"buffer {buf.id}: may alias buffer {other}, which is not defined before it "
                    f"(op {target.producer}, not before op {buf.producer})"
                )
        if buf.view_of is None:
            continue
        parent = by_id.get(buf.view_of)
        if parent is None:
            raise PlanError(f"buffer {buf.id}: view_of {buf.view_of!r} is not a buffer id")
        if buf.view_offset + buf.size > parent.size:
            raise PlanError(
                f"buffer {buf.id}: view of {buf.size} bytes at offset {buf.view_offset} does not fit "
                f"in buffer {parent.id} of {parent.size} bytes"
            )
        if buf.producer < parent.producer:
            raise PlanError(
                f"buffer {buf.id}: view made at op {buf.producer}, before its parent {parent.id} "
                f"is defined at op {parent.producer}"
            )
    return by_id


def _resolve_views(by_id: dict[int, Buffer]) -> tuple[dict[int, int], dict[int, int]]:
    """View id -> (root id, cumulative byte offset); raises on cycles."""
    roots: dict[int, int] = {}
    cumulative: dict[int, int] = {}
    for start in by_id.values():
        if start.view_of is None or start.id in roots:
            continue
        chain: list[Buffer] = []
        seen: set[int] = set()
        buf = start
        while buf.view_of is not None and buf.id not in roots:
            if buf.id in seen:
                raise PlanError(f"buffer {start.id}: cycle in view_of chain through buffer {buf.id}")
            seen.add(buf.id)
            chain.append(buf)
            buf = by_id[buf.view_of]
        if buf.view_of is None:
            root, offset = buf.id, 0
        else:
            root, offset = roots[buf.id], cumulative[buf.id]
        for link in reversed(chain):
            offset += link.view_offset
            roots[link.id] = root
            cumulative[link.id] = offset
    return roots, cumulative


def _arena_references(
    by_id: dict[int, Buffer], roots: dict[int, int], arena_roots: set[int]
) -> dict[int, frozenset[int]]:
    """Buffer id -> the arena roots whose bytes it may reference: itself, through views, aliases."""
    referenced: dict[int, frozenset[int]] = {}
    # may_alias names buffers defined strictly earlier, and a view's root is no later than the view:
    # visiting the non-views by producer, then the views, finds every target already done.
    for buf in sorted((b for b in by_id.values() if b.view_of is None), key=lambda b: (b.producer, b.id)):
        if buf.id in arena_roots:
            referenced[buf.id] = frozenset((buf.id,))
        else:
            found: set[int] = set()
            for other in buf.may_alias:
                found |= referenced[roots.get(other, other)]
            referenced[buf.id] = frozenset(found)
    for view, root in roots.items():
        referenced[view] = referenced[root]
    return referenced


def _order(
    name: str, ids: list[int], starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray, num_ops: int
) -> list[int]:
    """Indices into the root arrays, in the placement order of the named heuristic."""
    idx = np.arange(len(ids))
    key_id = np.asarray(ids, dtype=np.int64)
    length = ends - starts
    if name == "greedy_by_size":
        return list(np.lexsort((key_id, starts, -sizes)))  # last key is the primary one
    if name == "greedy_by_size_long":
        return list(np.lexsort((key_id, starts, -length, -sizes)))
    if name == "greedy_by_lifetime":
        return list(np.lexsort((key_id, starts, -sizes, -length)))
    if name == "greedy_by_start":
        return list(np.lexsort((key_id, -sizes, starts)))
    if name == "greedy_by_breadth":
        diff = np.zeros(num_ops + 1, dtype=np.int64)
        np.add.at(diff, starts, sizes)
        np.add.at(diff, ends + 1, -sizes)
        breadth = np.cumsum(diff)[:num_ops]
        done = np.zeros(len(ids), dtype=bool)
        order: list[int] = []
        for t in np.lexsort((np.arange(num_ops), -breadth)):
            live = idx[(starts <= t) & (ends >= t) & ~done]
            if live.size:
                live = live[np.lexsort((key_id[live], starts[live], -sizes[live]))]
                order.extend(live)
                done[live] = True
                if len(order) == len(ids):
                    break
        return order
    raise AssertionError(name)


def _place(
    order: list[int], starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray, policy: str
) -> tuple[np.ndarray, int]:
    """Offsets of the roots (indices into the arrays) placed in `order`, and the arena size."""
    n = len(order)
    p_start = np.empty(n, dtype=np.int64)
    p_end = np.empty(n, dtype=np.int64)
    p_lo = np.empty(n, dtype=np.int64)
    p_hi = np.empty(n, dtype=np.int64)
    offsets = np.zeros(len(sizes), dtype=np.int64)
    arena = 0
    best_fit = policy == "best_fit"
    for k, i in enumerate(order):
        s, e, size = starts[i], ends[i], int(sizes[i])
        offset = 0
        if k:
            hit = np.flatnonzero((p_start[:k] <= e) & (p_end[:k] >= s))
            if hit.size:
                lo, hi = p_lo[hit], p_hi[hit]
                by_lo = np.argsort(lo, kind="stable")
                cursor = 0  # lowest free offset above the intervals seen so far
                best_gap = -1
                for lo_j, hi_j in zip(lo[by_lo].tolist(), hi[by_lo].tolist()):
                    gap = lo_j - cursor
                    if gap >= size:
                        if not best_fit:
                            break
                        if best_gap < 0 or gap < best_gap:
                            best_gap, offset = gap, cursor
                    cursor = max(cursor, hi_j)
                if not best_fit or best_gap < 0:
                    offset = cursor
        p_start[k], p_end[k], p_lo[k], p_hi[k] = s, e, offset, offset + size
        offsets[i] = offset
        arena = max(arena, offset + size)
    return offsets, arena


@dataclass(frozen=True)
class _Analysis:
    alignment: int
    placed_roots: list[int]  # arena roots, in id order
    lifetimes: dict[int, tuple[int, int]]  # arena roots
    roots: dict[int, int]  # every view -> root
    cumulative: dict[int, int]  # every view -> cumulative offset
    arena_views: list[int]
    lower_bound: int
    unshared_total: int
    # packing problem: roots of size > 0
    ids: list[int]
    starts: np.ndarray
    ends: np.ndarray
    sizes: np.ndarray  # aligned


def _analyse(buffers: Sequence[Buffer], num_ops: int, alignment: int) -> _Analysis:
    alignment = _check_alignment(alignment)
    by_id = _validate(buffers, num_ops)
    roots, cumulative = _resolve_views(by_id)

    arena_roots = sorted(b.id for b in buffers if b.view_of is None and b.kind in ARENA_KINDS)
    arena_root_set = set(arena_roots)
    arena_views = sorted(v for v, r in roots.items() if r in arena_root_set)
    for v in arena_views:
        if by_id[v].kind not in ARENA_KINDS:
            raise PlanError(
                f"buffer {v} of kind {by_id[v].kind!r} is a view of arena buffer {roots[v]}; "
                f"{by_id[v].kind} buffers cannot alias the arena (make the root {by_id[v].kind!r} "
                f"instead, or copy)"
            )

    last = {r: max((by_id[r].producer, *by_id[r].users)) for r in arena_roots}
    for b, referenced in _arena_references(by_id, roots, arena_root_set).items():
        for r in referenced:
            if r != b:  # a view or an alias reads its root's bytes where it is made and read
                last[r] = max(last[r], by_id[b].producer, *by_id[b].users)
    lifetimes = {r: (by_id[r].producer, last[r]) for r in arena_roots}

    ids = [r for r in arena_roots if by_id[r].size > 0]
    starts = np.array([lifetimes[r][0] for r in ids], dtype=np.int64)
    ends = np.array([lifetimes[r][1] for r in ids], dtype=np.int64)
    sizes = np.array([_align_up(by_id[r].size, alignment) for r in ids], dtype=np.int64)

    unshared = int(sizes.sum())
    lower = 0
    if ids:
        diff = np.zeros(num_ops + 1, dtype=np.int64)
        np.add.at(diff, starts, sizes)
        np.add.at(diff, ends + 1, -sizes)
        lower = int(np.cumsum(diff).max())
    return _Analysis(
        alignment, arena_roots, lifetimes, roots, cumulative, arena_views, lower, unshared,
        ids, starts, ends, sizes,
    )


# Placements the refinement may run in total, scaled so that it stays around a second at worst.
_REFINE_WORK = 40_000_000
_REFINE_MAX_PLACEMENTS = 256


def _run(a: _Analysis, num_ops: int, strategy: str) -> tuple[list[int], np.ndarray, int]:
    """(placement order, offsets by root index, arena size) of one base strategy."""
    order_name, _, policy = strategy.partition("/")
    order = [int(i) for i in _order(order_name, a.ids, a.starts, a.ends, a.sizes, num_ops)]
    offsets, arena = _place(order, a.starts, a.ends, a.sizes, policy)
    return order, offsets, int(arena)


def _promote(
    a: _Analysis, order: list[int], offsets: np.ndarray, arena: int, policy: str, budget: list[int]
) -> tuple[np.ndarray, int, bool]:
    """Local search: move a buffer that reaches the top of the arena to the front of the order.

    A move is kept only when the arena shrinks, so this never makes a plan worse and stops; each
    trial placement costs one unit of the shared `budget`. Deterministic.
    """
    improved = False
    while budget[0] > 0 and arena > a.lower_bound:
        top = [i for i in order if offsets[i] + a.sizes[i] == arena]
        for i in top:
            if budget[0] <= 0:
                break
            pos = order.index(i)
            if pos == 0:
                continue
            budget[0] -= 1
            trial = [i, *order[:pos], *order[pos + 1 :]]
            trial_offsets, trial_arena = _place(trial, a.starts, a.ends, a.sizes, policy)
            if trial_arena < arena:
                order, offsets, arena, improved = trial, trial_offsets, int(trial_arena), True
                break
        else:
            break  # no move of a top buffer helps
    return offsets, arena, improved


def _check_strategies(strategies: Optional[Sequence[str]]) -> tuple[str, ...]:
    if strategies is None:
        return STRATEGIES
    chosen = tuple(strategies)
    if not chosen:
        raise PlanError("strategies must name at least one strategy")
    for s in chosen:
        if s not in STRATEGIES:
            raise PlanError(f"unknown strategy {s!r}; known: {', '.join(STRATEGIES)}")
    return chosen


def plan_memory(
    buffers: Sequence[Buffer],
    num_ops: int,
    alignment: int = 64,
    *,
    strategies: Optional[Sequence[str]] = None,
    refine: bool = True,
) -> MemoryPlan:
    """Place every arena buffer of `buffers` (a schedule of `num_ops` ops) in one shared arena.

    Runs each packing strategy of `strategies` (default: all of `STRATEGIES`), then, unless
    `refine` is false or a plan already meets the lower bound, improves the best ones by local
    search (strategy name suffixed ``+promote``), and returns the plan with the smallest arena.
    Raises `PlanError` (a ValueError) on malformed input.
    """
    a = _analyse(buffers, num_ops, alignment)
    runs: list[tuple[int, int, str, list[int], np.ndarray]] = []  # (arena, rank, strategy, order, offsets)
    for rank, strategy in enumerate(_check_strategies(strategies)):
        order, offsets_by_index, arena = _run(a, num_ops, strategy)
        runs.append((arena, rank, strategy, order, offsets_by_index))
        if arena == a.lower_bound:
            break  # optimal: no strategy can do better
    runs.sort(key=lambda run: run[:2])
    arena, _, strategy, _, best_offsets = runs[0]
    if refine and arena > a.lower_bound and a.ids:
        budget = [min(_REFINE_MAX_PLACEMENTS, _REFINE_WORK // (len(a.ids) ** 2))]
        for run_arena, _, base, order, offsets_by_index in runs:
            if budget[0] <= 0 or arena == a.lower_bound:
                break
            refined, refined_arena, improved = _promote(
                a, order, offsets_by_index, run_arena, base.partition("/")[2], budget
            )
            if improved and refined_arena < arena:
                arena, strategy, best_offsets = refined_arena, base + "+promote", refined
    root_offsets = {r: int(o) for r, o in zip(a.ids, best_offsets)}

    offsets: dict[int, int] = {}
    for r in a.placed_roots:
        offsets[r] = root_offsets.get(r, 0)  # size-0 roots: 0
    for v in a.arena_views:
        offsets[v] = offsets[a.roots[v]] + a.cumulative[v]
    lifetimes = dict(a.lifetimes)
    for v in a.arena_views:
        lifetimes[v] = a.lifetimes[a.roots[v]]
    return MemoryPlan(
        arena_size=arena,
        alignment=a.alignment,
        offsets=dict(sorted(offsets.items())),
        lifetimes=dict(sorted(lifetimes.items())),
        roots=dict(sorted(a.roots.items())),
        lower_bound=a.lower_bound,
        unshared_total=a.unshared_total,
        strategy=strategy,
    )


def compare_strategies(buffers: Sequence[Buffer], num_ops: int, alignment: int = 64) -> dict[str, int]:
    """Arena size reached by every strategy (for reports and tuning)."""
    a = _analyse(buffers, num_ops, alignment)
    return {s: _run(a, num_ops, s)[2] for s in STRATEGIES}


def format_plan(plan: MemoryPlan) -> str:
    """A short human-readable summary of a plan (like RLX's `inspect_lir` arena line)."""
    ratio = plan.arena_size / plan.lower_bound if plan.lower_bound else 1.0
    return (
        f"arena {plan.arena_size} B (lower bound {plan.lower_bound} B, x{ratio:.4f}; "
        f"unshared {plan.unshared_total} B, saved {plan.bytes_saved} B) "
        f"alignment {plan.alignment}, {len(plan.offsets)} placed buffers "
        f"({len(plan.offsets) - sum(1 for v in plan.roots if v in plan.offsets)} roots), "
        f"strategy {plan.strategy}"
    )
