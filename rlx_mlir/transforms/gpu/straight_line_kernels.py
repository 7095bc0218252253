"""rlx-gpu-straight-line-kernels: element loads, stores and their arithmetic left in a host function
run in a loop of one iteration, so they map to a kernel of one thread.

Computation on buffer elements reaches the host function without a loop around it when
every loop of its nest had one iteration or there was none: a linalg op on rank-0 buffers
(`rlx.mul` of two `tensor<f32>`, the fill of a full reduction's result) has no loops, and
canonicalization folds loops of one iteration (`rlx.cumsum` of a `tensor<1x1xf32>`, any op
on `tensor<1xf32>`) into their bodies.  Such code would run on the CPU over device memory,
which `rlx-gpu-check-mapping` refuses.  This pass finds, in each host function's body,
every maximal run of consecutive ops made only of `memref.load`, `memref.store` and `arith` /
`math` ops (and views: `memref.view`, `subview`, reshapes, which stay on the host, moved before
the run) that holds at least one load or store, and whose values are not used after it, and
moves it into

    scf.parallel (%i) = (0) to (1) step (1) { <the run> }

which `rlx-gpu-grid-loops` and `gpu-map-parallel-loops` map like any other loop nest.  The
run keeps its place between the other kernels, so the order of memory effects is unchanged.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import arith, func, memref, scf

from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass

_VIEWS = (memref.ViewOp, memref.SubViewOp, memref.CastOp, memref.ExpandShapeOp, memref.CollapseShapeOp,
          memref.ReinterpretCastOp)


def _straight_line(op: ir.Operation) -> bool:
    return is_op(op, (memref.LoadOp, memref.StoreOp)) or op.name.split(".", 1)[0] in ("arith", "math")


def _runs(block: ir.Block) -> list[list[ir.Operation]]:
    runs, current = [], []
    for op in block.operations:
        op = op.operation
        if _straight_line(op) or is_op(op, _VIEWS):
            current.append(op)
            continue
        runs.append(current)
        current = []
    runs.append(current)
    return [_trim(run) for run in runs if any(is_op(op, (memref.LoadOp, memref.StoreOp)) for op in run)]


def _trim(run: list[ir.Operation]) -> list[ir.Operation]:
    """The run from its first load or store to its last one (constants and index arithmetic around
    it stay on the host, where later code may use them)."""
    access = [i for i, op in enumerate(run) if is_op(op, (memref.LoadOp, memref.StoreOp))]
    return run[access[0]:access[-1] + 1]


def _movable(run: list[ir.Operation]) -> bool:
    """Whether the run's views can go before it (their operands come from before the run, or from views
    in it, which move before it too, in order: a reshape of a view of the arena) and no value computed in
    it is used after it."""
    inside = set(run)
    for op in run:
        if is_op(op, _VIEWS):
            if any(not isinstance(v.owner, ir.Block) and v.owner.operation in inside
                   and not is_op(v.owner.operation, _VIEWS) for v in op.operands):
                return False
            continue
        if any(use.owner.operation not in inside for result in op.results for use in result.uses):
            return False
    return True


@dataclasses.dataclass(frozen=True)
class GpuStraightLineKernels(RlxPass):
    name = "rlx-gpu-straight-line-kernels"
    summary = "Move element loads/stores and scalar arithmetic left in host code into a one-iteration scf.parallel"

    def run(self, module: ir.Operation) -> None:
        for function in collect_ops(module, lambda op: is_op(op, func.FuncOp)):
            if not len(function.regions[0].blocks):
                continue
            for run in _runs(function.regions[0].blocks[0]):
                if _movable(run):
                    self._wrap(run)

    @staticmethod
    def _wrap(run: list[ir.Operation]) -> None:
        for view in [op for op in run if is_op(op, _VIEWS)]:
            view.move_before(run[0])
        run = [op for op in run if not is_op(op, _VIEWS)]
        with ir.InsertionPoint(run[0]), run[0].location:
            zero = arith.ConstantOp(ir.IndexType.get(), 0)
            one = arith.ConstantOp(ir.IndexType.get(), 1)
            loop = scf.ParallelOp([], [zero], [one], [one], [])
            block = loop.region.blocks.append(ir.IndexType.get())
            with ir.InsertionPoint(block):
                anchor = scf.ReduceOp([], 0)
        for op in run:
            op.move_before(anchor.operation)
