"""rlx-gpu-hoist-parallel-loops: parallel dimensions outside sequential reduction loops.

`convert-linalg-to-parallel-loops` nests loops in the order of the op's
iterators, so a reduction over a middle axis (`rlx.reduce` over axis 1 of
[B, R, N], softmax over a non-last axis) becomes

    scf.parallel (%b) { scf.for %r { scf.parallel (%n) { body(%b, %r, %n) } } }

where only %b would be mapped to the GPU (the inner `scf.parallel` runs
sequentially inside each thread).  This pass rewrites such a nest, when the
`scf.for` carries no values and holds nothing but the inner `scf.parallel`,
and the inner loop has static bounds and no reductions, into

    scf.parallel (%b, %n) { scf.for %r { body(%b, %r, %n) } }

which is the same computation: for each (%b, %n) the body still runs for %r
in order, and iterations of different (%b, %n) were already independent
(the inner loop is parallel).  The result is a plain reduction nest that
`rlx-gpu-block-reductions` or `rlx-gpu-grid-loops` map onto blocks and threads.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import scf

from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass


def _hoistable(outer: ir.Operation):
    """The (scf.for, inner scf.parallel) of `outer` when the nest has the shape above."""
    if len(outer.opview.initVals):
        return None
    body = [op.operation for op in outer.regions[0].blocks[0].operations]
    if len(body) != 2 or not is_op(body[0], scf.ForOp) or not is_op(body[1], scf.ReduceOp):
        return None
    loop = body[0]
    if len(loop.results):
        return None
    loop_body = [op.operation for op in loop.regions[0].blocks[0].operations]
    if len(loop_body) != 2 or not is_op(loop_body[0], scf.ParallelOp) or not is_op(loop_body[1], scf.YieldOp):
        return None
    inner = loop_body[0]
    if len(inner.opview.initVals):
        return None
    defined_in_loop = lambda value: (  # noqa: E731
        isinstance(value.owner, ir.Block) and value.owner == loop.regions[0].blocks[0])
    view = inner.opview
    if any(defined_in_loop(v) for v in (*view.lowerBound, *view.upperBound, *view.step)):
        return None  # inner bounds depend on the sequential induction variable
    return loop, inner


@dataclasses.dataclass(frozen=True)
class GpuHoistParallelLoops(RlxPass):
    name = "rlx-gpu-hoist-parallel-loops"
    summary = "Hoist a parallel loop out of a sequential reduction loop (scf.parallel/for/parallel -> parallel/for)"

    def run(self, module: ir.Operation) -> None:
        changed = True
        while changed:  # a nest may hoist more than once (several reduced axes)
            changed = False
            for outer in collect_ops(module, lambda op: is_op(op, scf.ParallelOp), ir.WalkOrder.PRE_ORDER):
                match = _hoistable(outer)
                if match is not None:
                    self._hoist(outer, *match)
                    changed = True
                    break

    @staticmethod
    def _hoist(outer: ir.Operation, loop: ir.Operation, inner: ir.Operation) -> None:
        o, i = outer.opview, inner.opview
        with ir.InsertionPoint(outer), outer.location:
            merged = scf.ParallelOp([], [*o.lowerBound, *i.lowerBound], [*o.upperBound, *i.upperBound],
                                    [*o.step, *i.step], [])
            block = merged.region.blocks.append(*[ir.IndexType.get()] * (len(o.lowerBound) + len(i.lowerBound)))
            with ir.InsertionPoint(block):
                lower, upper, step = loop.operands[:3]
                new_loop = scf.ForOp(lower, upper, step)
                with ir.InsertionPoint(new_loop.body):
                    anchor = scf.YieldOp([])
                scf.ReduceOp([], 0)
        outer_args = list(outer.regions[0].blocks[0].arguments)
        inner_args = list(inner.regions[0].blocks[0].arguments)
        for old, new in zip(outer_args + inner_args, block.arguments):
            old.replace_all_uses_with(new)
        loop.regions[0].blocks[0].arguments[0].replace_all_uses_with(new_loop.induction_variable)
        for op in list(inner.regions[0].blocks[0].operations)[:-1]:  # all but the scf.reduce
            op.operation.move_before(anchor.operation)
        outer.erase()
