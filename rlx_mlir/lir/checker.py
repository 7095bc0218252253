"""An independent checker for LIR memory plans.

`check_plan(buffers, num_ops, plan)` re-derives everything it needs (view roots, cumulative view
offsets, lifetimes, the lower bound) from the buffer list alone, with none of the planner's code,
and lists every way the plan breaks the rules stated in `rlx_mlir.lir.planner`'s docstring:

- every arena buffer (an "intermediate" root, or a view whose root is one) has an offset; no other
  buffer has one;
- roots start at a multiple of the alignment (which must be a power of two), size-0 roots at 0;
- every placed buffer lies inside ``[0, arena_size)``, and the arena size is a multiple of the
  alignment;
- no two roots with overlapping (inclusive) lifetimes share a byte, where a root's lifetime is
  alias-aware: it runs from its producer to the last read of any buffer that may reference its
  bytes, found by walking `view_of` and `may_alias` links (a view of a view of an alias ... of
  the root), each on its own; a conflict names the chain that kept the root alive;
- each view's offset is its root's offset plus its cumulative view offset, and it lies inside its
  root;
- `roots`, `lower_bound` and `unshared_total` equal the recomputed ones, every entry of
  `lifetimes` equals the recomputed lifetime (a plan read back from IR may give none; entries for
  buffers outside the arena are wrong), and ``lower_bound <= arena_size``.

Overlap is judged with the recomputed lifetimes, never with the plan's own.

Works on anything with the attributes of `Buffer` / `MemoryPlan` (duck typing).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["check_plan"]


def _round_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def _paths_to_roots(start: Any, by_id: dict[int, Any], roots: set[int]) -> list[tuple[int, ...]]:
    """Every chain of view_of / may_alias links from `start` to an arena root (one per root)."""
    found: dict[int, tuple[int, ...]] = {}
    stack = [(start.id,)]
    seen: set[int] = set()
    while stack:
        path = stack.pop()
        node = by_id.get(path[-1])
        if node is None or node.id in seen:
            continue
        seen.add(node.id)
        if node.id in roots:
            found.setdefault(node.id, path)
            continue
        links = [node.view_of] if node.view_of is not None else list(getattr(node, "may_alias", ()))
        stack.extend(path + (link,) for link in links if link not in path)
    return list(found.values())


def _kept_alive(root: int, path: tuple[int, ...], end: int, by_id: dict[int, Any]) -> str:
    """Why `root` lives until `end` when a view or an alias of it is what is read there."""
    if len(path) < 2:
        return ""
    links = []
    for here, there in zip(path, path[1:]):
        links.append(f"{here} {'views' if by_id[here].view_of == there else 'may alias'} {there}")
    return f"; buffer {root} is read until op {end} through buffer {path[0]} ({', '.join(links)})"


def check_plan(buffers: Sequence[Any], num_ops: int, plan: Any) -> list[str]:
    """Problems found in `plan` for `buffers` scheduled over `num_ops` ops; empty when valid."""
    problems: list[str] = []
    by_id: dict[int, Any] = {}
    for b in buffers:
        if b.id in by_id:
            problems.append(f"buffer list: duplicate id {b.id}")
        by_id[b.id] = b

    # --- views: root and cumulative offset, walking each chain on its own
    root_of: dict[int, int] = {}
    view_off: dict[int, int] = {}
    for b in buffers:
        if b.view_of is None:
            continue
        total, cur, steps = 0, b, 0
        while cur is not None and cur.view_of is not None and steps <= len(by_id):
            total += cur.view_offset
            cur = by_id.get(cur.view_of)
            steps += 1
        if cur is None:
            problems.append(f"buffer {b.id}: its view chain reaches an unknown buffer id")
        elif cur.view_of is not None:
            problems.append(f"buffer {b.id}: its view chain is cyclic")
        else:
            root_of[b.id] = cur.id
            view_off[b.id] = total

    def in_arena(b: Any) -> bool:
        if b.view_of is None:
            return b.kind == "intermediate"
        root = root_of.get(b.id)
        return root is not None and by_id[root].kind == "intermediate"

    arena_ids = {b.id for b in buffers if in_arena(b)}
    arena_roots = sorted(i for i in arena_ids if by_id[i].view_of is None)

    # --- alias-aware lifetimes: a root's bytes are read by every buffer that may reference them:
    # the root, its views (and views of views), buffers whose may_alias names one of those, and
    # so on. `why[r]` keeps the path to the last read, for the messages.
    for b in buffers:
        for other in getattr(b, "may_alias", ()):
            if other not in by_id:
                problems.append(f"buffer {b.id}: may_alias names an unknown buffer id {other}")
            elif b.view_of is not None or in_arena(b):
                problems.append(f"buffer {b.id}: an arena buffer or a view must not carry may_alias")
    last: dict[int, int] = {r: by_id[r].producer for r in arena_roots}
    why: dict[int, tuple[int, ...]] = {r: (r,) for r in arena_roots}
    for b in buffers:
        reads = list(b.users)
        if b.view_of is not None or getattr(b, "may_alias", ()):
            reads.append(b.producer)  # the op that makes a view or an alias reads its source
        if not reads:
            continue
        for path in _paths_to_roots(b, by_id, set(arena_roots)):
            r = path[-1]
            if max(reads) > last[r]:
                last[r], why[r] = max(reads), path
    life = {r: (by_id[r].producer, last[r]) for r in arena_roots}
    for r, (s, e) in life.items():
        if s < 0 or e >= num_ops:
            problems.append(f"buffer {r}: lifetime {s}..{e} is outside the schedule of {num_ops} ops")
    for i in arena_ids:
        if i not in life:
            life[i] = life[root_of[i]]

    # --- alignment and arena size
    alignment = plan.alignment
    if not isinstance(alignment, int) or alignment < 1 or alignment & (alignment - 1):
        problems.append(f"alignment {alignment!r} is not a positive power of two")
        alignment = 1
    arena = plan.arena_size
    if arena < 0:
        problems.append(f"arena_size {arena} is negative")
    elif arena % alignment:
        problems.append(f"arena_size {arena} is not a multiple of the alignment {alignment}")

    # --- placement: exactly the arena buffers
    offsets = plan.offsets
    for i in sorted(arena_ids):
        if i not in offsets:
            problems.append(f"buffer {i} ({by_id[i].kind}) lives in the arena but has no offset")
    for i in sorted(offsets):
        if i not in by_id:
            problems.append(f"offset given for unknown buffer id {i}")
        elif i not in arena_ids:
            problems.append(f"buffer {i} ({by_id[i].kind}) must not be placed in the arena but has offset {offsets[i]}")
    for i in sorted(arena_ids & offsets.keys()):
        b, off = by_id[i], offsets[i]
        if off < 0 or off + b.size > arena:
            problems.append(
                f"buffer {i}: bytes [{off}, {off + b.size}) are outside the arena [0, {arena})"
            )
        if b.view_of is None:
            if b.size == 0 and off != 0:
                problems.append(f"buffer {i}: size-0 root at offset {off}, expected 0")
            elif off % alignment:
                problems.append(f"buffer {i}: offset {off} is not a multiple of the alignment {alignment}")
        else:
            r = root_of[i]
            if r in offsets:
                expect = offsets[r] + view_off[i]
                if off != expect:
                    problems.append(
                        f"view {i}: offset {off}, expected root {r}'s offset {offsets[r]} + "
                        f"cumulative view offset {view_off[i]} = {expect}"
                    )
                if off < offsets[r] or off + b.size > offsets[r] + by_id[r].size:
                    problems.append(
                        f"view {i}: bytes [{off}, {off + b.size}) are outside its root {r}'s bytes "
                        f"[{offsets[r]}, {offsets[r] + by_id[r].size})"
                    )

    # --- no byte overlap between roots alive at the same time (sweep by offset)
    placed = sorted(
        (offsets[r], offsets[r] + by_id[r].size, r) for r in arena_roots if r in offsets and by_id[r].size > 0
    )
    for k, (lo, hi, r) in enumerate(placed):
        for lo2, hi2, r2 in placed[k + 1 :]:
            if lo2 >= hi:
                break
            (s1, e1), (s2, e2) = life[r], life[r2]
            if s1 <= e2 and s2 <= e1:
                problems.append(
                    f"buffers {r} [{lo}, {hi}) live ops {s1}..{e1} and {r2} [{lo2}, {hi2}) "
                    f"live ops {s2}..{e2} overlap in bytes and in time"
                    + "".join(_kept_alive(x, why[x], e, by_id) for x, e in ((r, e1), (r2, e2)))
                )

    # --- reported metadata
    plan_roots = dict(plan.roots)
    if plan_roots != root_of:
        wrong = sorted(set(plan_roots.items()) ^ set(root_of.items()))
        problems.append(f"roots differ from the recomputed view roots: {wrong[:8]}")
    # A plan read back from IR may carry no lifetimes: only the entries given are compared.
    plan_life = {k: tuple(v) for k, v in plan.lifetimes.items()}
    wrong = sorted(k for k in plan_life if plan_life[k] != life.get(k))
    if wrong:
        problems.append(
            "lifetimes differ from the recomputed ones for buffers "
            + ", ".join(f"{k}: {plan_life.get(k)} vs {life.get(k)}" for k in wrong[:8])
        )
    sizes = {r: _round_up(by_id[r].size, alignment) for r in arena_roots}
    unshared = sum(sizes.values())
    if plan.unshared_total != unshared:
        problems.append(f"unshared_total {plan.unshared_total}, recomputed {unshared}")
    events = sorted((t, d) for r in arena_roots for t, d in ((life[r][0], sizes[r]), (life[r][1] + 1, -sizes[r])))
    lower = running = 0
    for k, (t, d) in enumerate(events):  # births and deaths at the same t: deaths (< 0) first
        running += d
        if k + 1 == len(events) or events[k + 1][0] != t:
            lower = max(lower, running)
    if plan.lower_bound != lower:
        problems.append(f"lower_bound {plan.lower_bound}, recomputed {lower}")
    if lower > arena:
        problems.append(f"arena_size {arena} is below the lower bound {lower}")
    return problems
