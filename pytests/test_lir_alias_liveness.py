"""Alias-aware liveness in the planner and in the independent checker (issue 13, item 1).

A root's bytes are read by every buffer that may reference them: its views, views of those views,
and buffers that may alias any of them (`Buffer.may_alias`: results of calls and multi-result ops).
The planner must keep the root live until the last such read, and the checker must reject, with a
message naming the chain, a hand-made plan that gives the root's bytes to another buffer earlier.
"""

from __future__ import annotations

import pytest

from rlx_mlir.lir.checker import check_plan
from rlx_mlir.lir.planner import Buffer, MemoryPlan, PlanError, plan_memory


def _plan(offsets: dict[int, int], roots: dict[int, int], arena: int, lower: int, unshared: int) -> MemoryPlan:
    return MemoryPlan(arena_size=arena, alignment=64, offsets=offsets, lifetimes={}, roots=roots,
                      lower_bound=lower, unshared_total=unshared, strategy="by hand")


# op 0 makes root 0; op 1 views it (1); op 2 views the view (2); op 3 makes 3; op 4 reads 2 and 3.
VIEW_CHAIN = [
    Buffer(0, 0, 64, (1,), "intermediate"),
    Buffer(1, 1, 32, (2,), "intermediate", view_of=0, view_offset=0),
    Buffer(2, 2, 16, (4,), "intermediate", view_of=1, view_offset=16),
    Buffer(3, 3, 64, (4,), "intermediate"),
]


def test_checker_rejects_a_slot_reused_while_a_view_of_a_view_is_live():
    bad = _plan({0: 0, 1: 0, 2: 16, 3: 0}, {1: 0, 2: 0}, arena=128, lower=128, unshared=128)
    problems = check_plan(VIEW_CHAIN, 5, bad)
    assert problems == [
        "buffers 0 [0, 64) live ops 0..4 and 3 [0, 64) live ops 3..4 overlap in bytes and in time; "
        "buffer 0 is read until op 4 through buffer 2 (2 views 1, 1 views 0)"
    ]


def test_the_same_offsets_are_fine_once_the_view_is_dead():
    early = [*VIEW_CHAIN[:2], Buffer(2, 2, 16, (2,), "intermediate", view_of=1, view_offset=16), VIEW_CHAIN[3]]
    plan = _plan({0: 0, 1: 0, 2: 16, 3: 0}, {1: 0, 2: 0}, arena=64, lower=64, unshared=128)
    assert check_plan(early, 5, plan) == []


def test_planner_keeps_the_root_live_through_the_view_chain():
    plan = plan_memory(VIEW_CHAIN, 5)
    assert plan.lifetimes[0] == (0, 4)
    assert plan.offsets[3] != plan.offsets[0]
    assert check_plan(VIEW_CHAIN, 5, plan) == []


# op 0 makes root 0; op 1 is a call whose result (1, allocated) may be root 0 itself; op 2 makes
# 2; op 3 reads 1 and 2; op 4 returns.
ALIAS = [
    Buffer(0, 0, 64, (1,), "intermediate"),
    Buffer(1, 1, 64, (3,), "allocated", may_alias=(0,)),
    Buffer(2, 2, 64, (3,), "intermediate"),
]


def test_checker_rejects_a_slot_reused_while_an_alias_is_live():
    bad = _plan({0: 0, 2: 0}, {}, arena=128, lower=128, unshared=128)
    assert check_plan(ALIAS, 5, bad) == [
        "buffers 0 [0, 64) live ops 0..3 and 2 [0, 64) live ops 2..3 overlap in bytes and in time; "
        "buffer 0 is read until op 3 through buffer 1 (1 may alias 0)"
    ]
    plan = plan_memory(ALIAS, 5)
    assert plan.lifetimes[0] == (0, 3) and plan.offsets[0] != plan.offsets[2]
    assert check_plan(ALIAS, 5, plan) == []


def test_aliases_chain_through_views_and_other_aliases():
    # 3 views the allocated 1, which may alias 0: reading 3 at op 5 keeps 0 alive.
    buffers = [
        Buffer(0, 0, 64, (1,), "intermediate"),
        Buffer(1, 1, 64, (2,), "allocated", may_alias=(0,)),
        Buffer(2, 2, 64, (3,), "allocated", may_alias=(1,)),
        Buffer(3, 3, 32, (5,), "intermediate", view_of=2),
        Buffer(4, 4, 64, (5,), "intermediate"),
    ]
    plan = plan_memory(buffers, 6)
    assert plan.lifetimes[0] == (0, 5)
    assert check_plan(buffers, 6, plan) == []
    bad = _plan({0: 0, 4: 0}, {3: 2}, arena=128, lower=128, unshared=128)
    assert check_plan(buffers, 6, bad) == [
        "buffers 0 [0, 64) live ops 0..5 and 4 [0, 64) live ops 4..5 overlap in bytes and in time; "
        "buffer 0 is read until op 5 through buffer 3 (3 views 2, 2 may alias 1, 1 may alias 0)"
    ]


@pytest.mark.parametrize(
    "buffers, message",
    [
        ([Buffer(0, 0, 8, (), "intermediate"), Buffer(1, 1, 8, (), "intermediate", may_alias=(0,))], "only for buffers outside the arena"),
        ([Buffer(0, 0, 8, (), "allocated", may_alias=(3,))], "may_alias 3 is not a buffer id"),
        ([Buffer(0, 1, 8, (), "intermediate"), Buffer(1, 1, 8, (), "allocated", may_alias=(0,))], "not defined before it"),
    ],
)
def test_malformed_may_alias_is_rejected(buffers, message):
    with pytest.raises(PlanError, match=message):
        plan_memory(buffers, 2)
