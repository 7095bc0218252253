"""The LIR planning core: memory planner, independent plan checker, streaming phases.

Pure Python (no MLIR): buffers are built by a tiny schedule builder below.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlx_mlir.lir.checker import check_plan
from rlx_mlir.lir.phases import derive_phases, ops_in_phase, phase_order
from rlx_mlir.lir.planner import STRATEGIES, Buffer, MemoryPlan, PlanError, compare_strategies, format_plan, plan_memory


class Schedule:
    """Builds buffers op by op: each op defines one value (its buffer) and reads some earlier ones."""

    def __init__(self) -> None:
        self.drafts: list[dict] = []
        self.num_ops = 0

    def _add(self, producer, size, kind, view_of=None, view_offset=0, may_alias=()) -> int:
        self.drafts.append({"producer": producer, "size": size, "users": [], "kind": kind,
                            "view_of": view_of, "view_offset": view_offset, "may_alias": tuple(may_alias)})
        return len(self.drafts) - 1

    def arg(self, size, kind="input") -> int:
        return self._add(-1, size, kind)

    def op(self, size, *reads, kind="intermediate", view_of=None, view_offset=0, may_alias=()) -> int:
        index = self.num_ops
        self.num_ops += 1
        for r in reads:
            self.drafts[r]["users"].append(index)
        return self._add(index, size, kind, view_of, view_offset, may_alias)

    def view(self, parent, size=None, offset=0) -> int:
        size = self.drafts[parent]["size"] - offset if size is None else size
        return self.op(size, parent, view_of=parent, view_offset=offset)

    def ret(self, *reads) -> None:
        """A terminator reading `reads` (defines nothing)."""
        for r in reads:
            self.drafts[r]["users"].append(self.num_ops)
        self.num_ops += 1

    def buffers(self) -> list[Buffer]:
        return [Buffer(id=i, producer=d["producer"], size=d["size"], users=tuple(d["users"]),
                       kind=d["kind"], view_of=d["view_of"], view_offset=d["view_offset"],
                       may_alias=d["may_alias"])
                for i, d in enumerate(self.drafts)]


def plan_and_check(s: Schedule, alignment=64, strategies=None) -> tuple[list[Buffer], MemoryPlan]:
    buffers = s.buffers()
    plan = plan_memory(buffers, s.num_ops, alignment, strategies=strategies)
    assert check_plan(buffers, s.num_ops, plan) == []
    arena = {b.id for b in buffers if plan.is_placed(b.id)}
    assert set(plan.lifetimes) == arena
    assert plan.lower_bound <= plan.arena_size <= plan.unshared_total
    assert plan.bytes_saved == plan.unshared_total - plan.arena_size
    return buffers, plan


def overlaps(plan: MemoryPlan, buffers, a: int, b: int) -> bool:
    oa, ob = plan.offsets[a], plan.offsets[b]
    return oa < ob + buffers[b].size and ob < oa + buffers[a].size


# ---------------------------------------------------------------------------------------- planner


def test_chain_reuses_two_slots():
    s = Schedule()
    x = s.arg(1000)
    prev = x
    chain = []
    for _ in range(6):
        prev = s.op(1000, prev)
        chain.append(prev)
    out = s.op(1000, prev, kind="output")
    s.ret(out)
    buffers, plan = plan_and_check(s)
    # Neighbours are live together at the op that reads one and writes the next: two slots suffice.
    assert plan.arena_size == plan.lower_bound == 2 * 1024
    assert plan.unshared_total == 6 * 1024
    assert plan.lifetimes[chain[0]] == (0, 1)
    assert len({plan.offsets[c] for c in chain}) == 2
    for a, b in itertools.pairwise(chain):
        assert not overlaps(plan, buffers, a, b)
    assert x not in plan.offsets and out not in plan.offsets


def test_diamond_keeps_the_fork_alive():
    s = Schedule()
    x = s.arg(256)
    a = s.op(256, x)  # op 0
    b = s.op(128, a)  # op 1
    c = s.op(512, a)  # op 2
    d = s.op(256, b, c, kind="output")  # op 3
    buffers, plan = plan_and_check(s)
    assert plan.lifetimes[a] == (0, 2)
    assert plan.lifetimes[b] == (1, 3)
    assert plan.lifetimes[c] == (2, 3)
    for u, v in [(a, b), (a, c), (b, c)]:
        assert not overlaps(plan, buffers, u, v)
    assert plan.arena_size == plan.lower_bound == 256 + 128 + 512
    assert d not in plan.offsets


def test_views_of_views_extend_the_root_and_resolve_offsets():
    s = Schedule()
    x = s.arg(4096)
    root = s.op(4096, x)  # op 0
    v1 = s.view(root, 2048, offset=1024)  # op 1, narrow
    v2 = s.view(v1, 512, offset=256)  # op 2, narrow of the narrow
    v3 = s.view(v2)  # op 3, reshape
    tmp = s.op(4096, x)  # op 4 would like root's bytes...
    y = s.op(64, v3, tmp)  # op 5 ...but root is read through v3 here
    s.ret(y)
    buffers, plan = plan_and_check(s)
    assert plan.roots == {v1: root, v2: root, v3: root}
    assert plan.lifetimes[root] == (0, 5)
    assert plan.lifetimes[v3] == plan.lifetimes[root]
    assert plan.offsets[v1] == plan.offsets[root] + 1024
    assert plan.offsets[v2] == plan.offsets[v3] == plan.offsets[root] + 1280
    assert not overlaps(plan, buffers, root, tmp)


def test_view_root_dies_without_later_reads():
    s = Schedule()
    x = s.arg(1024)
    a = s.op(1024, x)  # op 0
    va = s.view(a)  # op 1
    b = s.op(1024, va)  # op 2: last read of a (through va)
    c = s.op(1024, b)  # op 3: may reuse a's bytes
    s.ret(c)
    _, plan = plan_and_check(s)
    assert plan.lifetimes[a] == (0, 2)
    assert plan.offsets[c] == plan.offsets[a]
    assert plan.arena_size == 2048


def test_inputs_params_constants_outputs_are_not_placed():
    s = Schedule()
    x = s.arg(4096)
    w = s.arg(4096, kind="param")
    k = s.op(4096, kind="constant")
    h = s.op(4096, x, w, k)
    vx = s.view(x, 1024)  # a view of an input aliases the input: not in the arena
    o = s.op(4096, h, vx, kind="output")
    vo = s.view(o)  # a view of an output: not in the arena either
    s.ret(o, vo)
    _, plan = plan_and_check(s)
    assert set(plan.offsets) == {h}
    assert plan.roots == {vx: x, vo: o}
    assert plan.arena_size == 4096 and plan.unshared_total == 4096


def test_output_view_of_an_arena_buffer_is_rejected():
    s = Schedule()
    x = s.arg(64)
    h = s.op(64, x)
    s.op(64, h, kind="output", view_of=h)
    with pytest.raises(PlanError, match="cannot alias the arena"):
        plan_memory(s.buffers(), s.num_ops)


@pytest.mark.parametrize("alignment", [1, 8, 64, 256, 4096])
def test_alignment_option(alignment):
    s = Schedule()
    x = s.arg(7)
    a = s.op(100, x)
    b = s.op(3, a)
    c = s.op(50, a, b)
    d = s.op(1, c)
    s.ret(d)
    _, plan = plan_and_check(s, alignment=alignment)
    assert plan.alignment == alignment
    assert all(off % alignment == 0 for off in plan.offsets.values())
    assert plan.arena_size % alignment == 0

    def up(n):
        return -(-n // alignment) * alignment

    assert plan.unshared_total == up(100) + up(3) + up(50) + up(1)


@pytest.mark.parametrize("alignment", [0, -64, 3, 48, 1.0, True, "64"])
def test_bad_alignment_is_rejected(alignment):
    with pytest.raises(PlanError, match="power of two"):
        plan_memory([], 0, alignment)


def test_size_zero_buffers():
    s = Schedule()
    x = s.arg(64)
    z = s.op(0, x)
    a = s.op(128, x, z)
    vz = s.view(z)
    b = s.op(128, a, vz)
    s.ret(b)
    _, plan = plan_and_check(s)
    assert plan.offsets[z] == 0 and plan.offsets[vz] == 0
    assert plan.lifetimes[z] == (0, 3)
    assert plan.arena_size == plan.lower_bound == 256


def test_empty_and_input_only_schedules():
    plan = plan_memory([], 0)
    assert plan.arena_size == plan.lower_bound == plan.unshared_total == 0 and plan.offsets == {}
    assert check_plan([], 0, plan) == []
    s = Schedule()
    x = s.arg(64)
    s.ret(x)
    _, plan = plan_and_check(s)
    assert plan.arena_size == 0


def test_every_strategy_gives_a_valid_plan_and_the_best_wins():
    s = transformer(layers=2)
    buffers = s.buffers()
    sizes = compare_strategies(buffers, s.num_ops)
    assert set(sizes) == set(STRATEGIES)
    for strategy in STRATEGIES:
        plan = plan_memory(buffers, s.num_ops, strategies=[strategy])
        assert plan.strategy == strategy and plan.arena_size == sizes[strategy]
        assert check_plan(buffers, s.num_ops, plan) == []
    best = plan_memory(buffers, s.num_ops)
    assert best.arena_size == min(sizes.values())
    assert best.strategy == next(k for k in STRATEGIES if sizes[k] == best.arena_size)
    with pytest.raises(PlanError, match="unknown strategy"):
        plan_memory(buffers, s.num_ops, strategies=["nope"])


def test_rlx_greedy_by_size_is_a_strategy():
    # Largest first at the lowest fitting offset: the big buffer takes offset 0.
    s = Schedule()
    x = s.arg(64)
    a = s.op(64, x)
    b = s.op(640, a)
    c = s.op(64, b)
    s.ret(c)
    _, plan = plan_and_check(s, strategies=["greedy_by_size/first_fit"])
    assert plan.offsets[b] == 0 and plan.offsets[a] == plan.offsets[c] == 640


def test_refinement_beats_every_greedy_order():
    # Live bytes peak at 576 (ops 4 and 5); every greedy order leaves a 64-byte hole under the
    # 320-byte buffer c and stacks b above a: 704.  Moving b to the front reaches the bound.
    buffers = [Buffer(0, 4, 256, (5,), "intermediate"), Buffer(1, 0, 128, (1, 2, 3, 4), "intermediate"),
               Buffer(2, 5, 320, (), "intermediate"), Buffer(3, 3, 256, (), "intermediate")]
    greedy = plan_memory(buffers, 6, refine=False)
    assert greedy.arena_size == 704 and greedy.lower_bound == 576
    assert min(compare_strategies(buffers, 6).values()) == 704
    plan = plan_memory(buffers, 6)
    assert plan.arena_size == 576 and plan.strategy.endswith("+promote")
    assert check_plan(buffers, 6, plan) == []


def test_plans_are_deterministic():
    s = transformer(layers=2)
    buffers = s.buffers()
    first = plan_memory(buffers, s.num_ops)
    assert plan_memory(list(buffers), s.num_ops) == first
    assert plan_memory(buffers[::-1], s.num_ops) == first  # the list's order does not matter


@pytest.mark.parametrize(
    "buffers, num_ops, message",
    [
        ([Buffer(0, 0, 8, (), "intermediate"), Buffer(0, 0, 8, (), "intermediate")], 1, "duplicate"),
        ([Buffer(0, 0, 8, (), "scratch")], 1, "kind"),
        ([Buffer(0, 0, -8, (), "intermediate")], 1, "size"),
        ([Buffer(0, 2, 8, (), "intermediate")], 2, "producer"),
        ([Buffer(0, 0, 8, (5,), "intermediate")], 2, "user 5"),
        ([Buffer(0, 1, 8, (0,), "intermediate")], 2, "before its producer"),
        ([Buffer(0, -1, 8, (0,), "intermediate")], 1, "defined by an op"),
        ([Buffer(0, 0, 8, (), "intermediate", view_of=7)], 1, "not a buffer id"),
        ([Buffer(0, 0, 8, (), "intermediate"), Buffer(1, 0, 8, (), "intermediate", 0, 4)], 1, "does not fit"),
        ([Buffer(0, 0, 8, (), "intermediate", 1), Buffer(1, 0, 8, (), "intermediate", 0)], 1, "cycle"),
        ([Buffer(0, 1, 8, (), "intermediate"), Buffer(1, 0, 8, (), "intermediate", 0)], 2, "before its parent"),
    ],
)
def test_malformed_buffers_are_rejected(buffers, num_ops, message):
    with pytest.raises(PlanError, match=message):
        plan_memory(buffers, num_ops)


# ---------------------------------------------------------------------------------------- checker


def diamond_with_view():
    s = Schedule()
    x = s.arg(256)
    a = s.op(256, x)
    b = s.op(256, a)
    c = s.op(256, a)
    vb = s.view(b, 128, offset=64)
    d = s.op(256, vb, c)
    e = s.op(256, d)
    s.ret(e)
    return plan_and_check(s) + (s.num_ops,)


def corrupt(plan: MemoryPlan, **changes) -> MemoryPlan:
    return dataclasses.replace(plan, **changes)


def test_checker_accepts_the_planner_plan_and_a_plan_without_lifetimes():
    buffers, plan, n = diamond_with_view()
    assert check_plan(buffers, n, corrupt(plan, lifetimes={})) == []


def test_checker_catches_overlap():
    buffers, plan, n = diamond_with_view()
    offsets = dict(plan.offsets)
    offsets[2] = offsets[3]  # b and c are live together (ops 2..3)
    offsets[4] = offsets[2] + 64
    problems = check_plan(buffers, n, corrupt(plan, offsets=offsets))
    assert any("overlap in bytes and in time" in p for p in problems), problems


def test_checker_catches_misalignment_and_out_of_arena():
    buffers, plan, n = diamond_with_view()
    offsets = dict(plan.offsets)
    offsets[6] = plan.arena_size + 8  # e, a root: misaligned and beyond the arena
    problems = check_plan(buffers, n, corrupt(plan, offsets=offsets))
    assert any("not a multiple of the alignment" in p for p in problems), problems
    assert any("outside the arena" in p for p in problems), problems
    problems = check_plan(buffers, n, corrupt(plan, alignment=48))
    assert any("power of two" in p for p in problems), problems


def test_checker_catches_unplaced_and_wrongly_placed():
    buffers, plan, n = diamond_with_view()
    offsets = dict(plan.offsets)
    del offsets[5]  # d
    offsets[0] = 0  # x is an input
    problems = check_plan(buffers, n, corrupt(plan, offsets=offsets))
    assert any("buffer 5" in p and "has no offset" in p for p in problems), problems
    assert any("buffer 0 (input) must not be placed" in p for p in problems), problems


def test_checker_catches_view_out_of_its_root_and_wrong_view_offset():
    buffers, plan, n = diamond_with_view()
    offsets = dict(plan.offsets)
    offsets[4] = offsets[2] + 192  # vb (128 bytes) now sticks out of b (256 bytes)
    problems = check_plan(buffers, n, corrupt(plan, offsets=offsets))
    assert any("view 4: offset" in p and "expected" in p for p in problems), problems
    assert any("outside its root 2" in p for p in problems), problems


def test_checker_catches_wrong_metadata():
    buffers, plan, n = diamond_with_view()
    problems = check_plan(buffers, n, corrupt(plan, lower_bound=plan.arena_size + 64, roots={},
                                              unshared_total=1, lifetimes={**plan.lifetimes, 1: (0, 0)}))
    text = "\n".join(problems)
    for needle in ["lower_bound", "roots differ", "unshared_total", "lifetimes differ"]:
        assert needle in text, problems
    problems = check_plan(buffers, n, corrupt(plan, arena_size=plan.lower_bound - 64,
                                              offsets={k: 0 for k in plan.offsets}))
    assert any("below the lower bound" in p for p in problems), problems


# ------------------------------------------------------------------------------ property test


@st.composite
def random_schedules(draw):
    """Random DAG-shaped schedules: chains, diamonds, multi-use, views of views, several outputs."""
    s = Schedule()
    values: list[int] = []  # readable buffers
    for _ in range(draw(st.integers(0, 3))):
        values.append(s.arg(draw(st.integers(0, 5000)), kind=draw(st.sampled_from(["input", "param"]))))
    for _ in range(draw(st.integers(1, 30))):
        what = draw(st.sampled_from(["op", "op", "op", "chain", "view", "constant", "allocated"]))
        if what == "constant" or not values:
            values.append(s.op(draw(st.integers(0, 3000)), kind="constant"))
        elif what == "allocated":  # a call's result: may be any of its operands (alias-aware liveness)
            reads = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3))
            values.append(s.op(draw(st.integers(0, 3000)), *reads, kind="allocated", may_alias=reads))
        elif what == "view":
            parent = draw(st.sampled_from(values))
            psize = s.drafts[parent]["size"]
            size = draw(st.integers(0, psize))
            offset = draw(st.integers(0, psize - size))
            values.append(s.view(parent, size, offset))
        else:
            if what == "chain":
                reads = [values[-1]]
            else:
                reads = draw(st.lists(st.sampled_from(values), min_size=1, max_size=4))
            size = draw(st.one_of(st.integers(0, 9000), st.sampled_from([4096, 65536, 12288])))
            values.append(s.op(size, *reads))
    # Several outputs: some non-view intermediates become caller-provided outputs.
    candidates = [i for i in values if s.drafts[i]["kind"] == "intermediate" and s.drafts[i]["view_of"] is None]
    outputs = draw(st.lists(st.sampled_from(candidates), unique=True, max_size=3)) if candidates else []
    for i in outputs:
        s.drafts[i]["kind"] = "output"
    # A view chain whose root became an output is a view of an output: fine.  A view marked as an
    # intermediate of an arena root is fine.  Return some values (outputs and a few others).
    returned = outputs + draw(st.lists(st.sampled_from(values), max_size=2))
    s.ret(*returned)
    return s, draw(st.sampled_from([1, 16, 64, 256]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_schedules())
def test_random_schedules_plan_validly(case):
    s, alignment = case
    buffers = s.buffers()
    plan = plan_memory(buffers, s.num_ops, alignment)
    assert check_plan(buffers, s.num_ops, plan) == []
    assert plan.lower_bound <= plan.arena_size <= plan.unshared_total
    assert set(plan.lifetimes) == set(plan.offsets)
    assert plan_memory(buffers, s.num_ops, alignment, refine=False).arena_size >= plan.arena_size
    # Every strategy on its own is valid too, and never beats the winner.
    for strategy in STRATEGIES[::3]:
        alone = plan_memory(buffers, s.num_ops, alignment, strategies=[strategy], refine=False)
        assert check_plan(buffers, s.num_ops, alone) == []
        assert alone.arena_size >= plan.arena_size


# --------------------------------------------------------------------- transformer-like report


def transformer(layers=12, seq=128, d=512, heads=8, ffn=1376, vocab=4000, unfused_attention=False):
    """A llama-like decoder as a schedule of buffers (f32; sizes in bytes)."""
    f = 4
    s = Schedule()
    ids = s.arg(seq * 4)
    embed = s.arg(vocab * d * f, kind="param")
    h = s.op(seq * d * f, ids, embed)  # gather
    for _ in range(layers):
        w = {name: s.arg(size * f, kind="param") for name, size in
             [("n1", d), ("q", d * d), ("k", d * d), ("v", d * d), ("o", d * d),
              ("n2", d), ("g", d * ffn), ("u", d * ffn), ("dn", ffn * d)]}
        n1 = s.op(seq * d * f, h, w["n1"])  # rms_norm
        q = s.op(seq * d * f, n1, w["q"])
        k = s.op(seq * d * f, n1, w["k"])
        v = s.op(seq * d * f, n1, w["v"])
        q4, k4, v4 = s.view(q), s.view(k), s.view(v)  # reshape to [heads, seq, d/heads]
        qr = s.op(seq * d * f, q4)  # rope
        kr = s.op(seq * d * f, k4)
        if unfused_attention:
            kt = s.op(seq * d * f, kr)  # transpose
            scores = s.op(heads * seq * seq * f, qr, kt)  # matmul
            probs = s.op(heads * seq * seq * f, scores)  # softmax
            a = s.op(seq * d * f, probs, v4)  # matmul
        else:
            a = s.op(seq * d * f, qr, kr, v4)  # attention
        a2 = s.view(a)  # reshape back to [seq, d]
        o = s.op(seq * d * f, a2, w["o"])
        h2 = s.op(seq * d * f, h, o)  # residual add
        n2 = s.op(seq * d * f, h2, w["n2"])
        g = s.op(seq * ffn * f, n2, w["g"])
        u = s.op(seq * ffn * f, n2, w["u"])
        act = s.op(seq * ffn * f, g, u)  # silu(g) * u
        dn = s.op(seq * d * f, act, w["dn"])
        h = s.op(seq * d * f, h2, dn)  # residual add
    wn, wl = s.arg(d * f, kind="param"), s.arg(d * vocab * f, kind="param")
    hn = s.op(seq * d * f, h, wn)
    last = s.view(hn, d * f, offset=(seq - 1) * d * f)  # narrow: the last position
    logits = s.op(vocab * f, last, wl, kind="output")
    s.ret(logits)
    return s


@pytest.mark.parametrize("unfused_attention", [False, True])
def test_transformer_arena_within_5_percent_of_lower_bound(unfused_attention):
    s = transformer(layers=12, unfused_attention=unfused_attention)
    buffers, plan = plan_and_check(s)
    sizes = compare_strategies(buffers, s.num_ops)
    ratio = plan.arena_size / plan.lower_bound
    print(f"\n12-layer transformer ({'unfused' if unfused_attention else 'fused'} attention, "
          f"{len(buffers)} buffers, {s.num_ops} ops): {format_plan(plan)}")
    for name, size in sizes.items():
        print(f"  {name:32s} {size:>10d} B  x{size / plan.lower_bound:.4f}")
    assert ratio <= 1.05, format_plan(plan)
    assert plan.bytes_saved > 0.9 * plan.unshared_total  # sharing matters at this depth


# ----------------------------------------------------------------------------------------- phases


def test_phases_follow_rlx_typical_graph():
    # RLX's test: x, w -> matmul -> sample; inputs are function arguments here, not ops.
    assert derive_phases(["rlx.matmul", "rlx.sample", "func.return"]) == ["steady", "epilogue", "epilogue"]


def test_phases_positional_heuristic():
    names = ["rlx.constant", "rlx.gather", "rlx.rms_norm", "rlx.matmul", "rlx.attention", "rlx.add",
             "rlx.fused_matmul_bias_act", "rlx.rms_norm", "rlx.constant", "rlx.softmax", "rlx.topk",
             "rlx.reshape"]
    phases = derive_phases(names)
    assert phases == ["prologue", "steady", "steady", "steady", "steady", "steady", "steady",
                      "epilogue", "prologue", "epilogue", "epilogue", "epilogue"]
    assert ops_in_phase(phases, "prologue") == [0, 8]


def test_phases_sample_before_last_compute():
    # Ops after the last sample are epilogue even if a compute op follows (RLX's rule).
    names = ["rlx.matmul", "rlx.sample", "rlx.add", "rlx.dot_general", "rlx.exp"]
    assert derive_phases(names) == ["steady", "epilogue", "epilogue", "epilogue", "epilogue"]


def test_phases_without_compute_or_sample():
    assert derive_phases(["rlx.add", "rlx.constant", "rlx.exp"]) == ["steady", "prologue", "steady"]
    assert derive_phases([]) == []
    assert derive_phases(["rlx.add", "rlx.matmul", "rlx.exp"]) == ["steady", "steady", "epilogue"]


def test_phase_order():
    assert [phase_order(p) for p in ("prologue", "steady", "epilogue")] == [0, 1, 2]
    with pytest.raises(ValueError, match="unknown phase"):
        phase_order("loop")
