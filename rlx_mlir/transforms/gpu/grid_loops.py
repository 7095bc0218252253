"""rlx-gpu-grid-loops: shape host loop nests as a grid of blocks of threads.

Runs on buffers after `convert-linalg-to-parallel-loops`, before upstream
`gpu-map-parallel-loops` + `convert-parallel-loops-to-gpu`, which map an outer
`scf.parallel` to blocks and a nested one to threads.

- Every outermost `scf.parallel` with static bounds and no reductions, of any
  rank, becomes a two-level nest over its flattened iteration space:

      scf.parallel (%block) = (0) to (ceildiv(N, T)) step (1) {
        scf.parallel (%thread) = (0) to (T) step (1) {
          %i = %block * T + %thread
          scf.if %i < N {            // only when T does not divide N
            <original body, its induction variables delinearized from %i>

  where N is the product of the trip counts and T = min(`block-size`, N).
  Reduction loops the body holds (`scf.for` over a reduced dimension) stay
  sequential inside each thread: one thread per output element.
- A run of consecutive host ops that read or write memory element by element
  without any parallel loop (a rank-0 `memref.store`, a full reduction's
  `scf.for` nest) is wrapped in a 1 x 1 grid, so it too runs on the device
  (serially, on one thread), provided none of its results is used after it.

Loops with dynamic bounds or reductions are left alone; `rlx-gpu-check-mapping`
reports anything that stays on the host.
"""

from __future__ import annotations

import dataclasses
import math

from mlir import ir
from mlir.dialects import arith, func, gpu, memref, scf, vector

from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass, option

_MEMORY_OPS = (memref.LoadOp, memref.StoreOp, vector.LoadOp, vector.StoreOp, vector.TransferReadOp,
               vector.TransferWriteOp, memref.CopyOp)


def _constant_index(value: ir.Value):
    owner = value.owner
    owner = getattr(owner, "operation", owner)
    if isinstance(owner, ir.Operation) and is_op(owner, arith.ConstantOp):
        attr = owner.attributes["value"]
        if isinstance(attr, ir.IntegerAttr):
            return attr.value
    return None


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _parallel_1d(lower: ir.Value, upper: ir.Value, step: ir.Value) -> tuple[ir.Operation, ir.Block]:
    """An empty 1-D `scf.parallel` at the insertion point, with its block and `scf.reduce`."""
    loop = scf.ParallelOp([], [lower], [upper], [step], [])
    block = loop.region.blocks.append(ir.IndexType.get())
    with ir.InsertionPoint(block):
        scf.ReduceOp([], 0)
    return loop, block


def _host_functions(module: ir.Operation) -> list[ir.Operation]:
    return [op.operation for op in module.regions[0].blocks[0].operations
            if isinstance(op, func.FuncOp) and op.regions[0].blocks]


def _inside(op: ir.Operation, op_classes: tuple[type, ...]) -> bool:
    parent = op.parent
    while parent is not None and not is_op(parent, func.FuncOp):
        if is_op(parent, op_classes):
            return True
        parent = parent.parent
    return False


def _touches_memory(op: ir.Operation) -> bool:
    return bool(collect_ops(op, lambda inner: is_op(inner, _MEMORY_OPS)))


def _holds_parallel(op: ir.Operation) -> bool:
    return bool(collect_ops(op, lambda inner: is_op(inner, (scf.ParallelOp, gpu.LaunchOp))))


@dataclasses.dataclass(frozen=True)
class GpuGridLoops(RlxPass):
    name = "rlx-gpu-grid-loops"
    summary = "Flatten and tile host scf.parallel nests into blocks x threads (and wrap serial memory nests)"
    block_size: int = option(256, "threads per block (the tile of the flattened iteration space)", minimum=1, maximum=1024)

    def run(self, module: ir.Operation) -> None:
        for function in _host_functions(module):
            outermost = collect_ops(
                function,
                lambda op: is_op(op, scf.ParallelOp) and not _inside(op, (scf.ParallelOp, gpu.LaunchOp)),
                ir.WalkOrder.PRE_ORDER,
            )
            for loop in outermost:
                self._grid(loop)
            for block in [function.regions[0].blocks[0], *self._host_loop_blocks(function)]:
                for run in self._serial_runs(block):
                    self._wrap_serial(run)

    # -- parallel nests --------------------------------------------------------------------

    def _grid(self, loop: ir.Operation) -> None:
        view = loop.opview
        if len(view.initVals):
            return
        bounds = [
            (_constant_index(lo), _constant_index(hi), _constant_index(st))
            for lo, hi, st in zip(view.lowerBound, view.upperBound, view.step)
        ]
        if any(None in triple for triple in bounds):
            return
        trips = [max(0, -(-(hi - lo) // st)) for lo, hi, st in bounds]
        total = math.prod(trips)
        if total == 0:
            return
        threads = min(self.block_size, total)
        blocks = -(-total // threads)
        with ir.InsertionPoint(loop), loop.location:
            zero, one = _index(0), _index(1)
            outer, outer_block = _parallel_1d(zero, _index(blocks), one)
            with ir.InsertionPoint.at_block_begin(outer_block):
                _, inner_block = _parallel_1d(zero, _index(threads), one)
            body_anchor = inner_block.operations[0]  # the inner scf.reduce
            with ir.InsertionPoint(body_anchor):
                linear = arith.AddIOp(
                    arith.MulIOp(outer_block.arguments[0], _index(threads)).result, inner_block.arguments[0]
                ).result
                if total % threads:
                    in_bounds = arith.CmpIOp(arith.CmpIPredicate.ult, linear, _index(total)).result
                    guard = scf.IfOp(in_bounds)
                    with ir.InsertionPoint(guard.then_block):
                        body_anchor = scf.YieldOp([]).operation
            with ir.InsertionPoint(body_anchor):
                remaining, ivs = linear, [None] * len(trips)
                for dim in reversed(range(len(trips))):
                    lo, _, st = bounds[dim]
                    trip = _index(trips[dim])
                    position = arith.RemUIOp(remaining, trip).result if dim else remaining
                    if dim:
                        remaining = arith.DivUIOp(remaining, trip).result
                    iv = position
                    if st != 1:
                        iv = arith.MulIOp(iv, _index(st)).result
                    if lo != 0:
                        iv = arith.AddIOp(iv, _index(lo)).result
                    ivs[dim] = iv
        old_block = loop.regions[0].blocks[0]
        for argument, iv in zip(old_block.arguments, ivs):
            argument.replace_all_uses_with(iv)
        for op in list(old_block.operations)[:-1]:  # all but the scf.reduce terminator
            op.move_before(body_anchor)
        loop.erase()

    # -- serial memory nests ---------------------------------------------------------------

    @staticmethod
    def _host_loop_blocks(function: ir.Operation) -> list[ir.Block]:
        """Blocks of host control flow (scf.for / scf.if / scf.while) that also launch kernels."""
        blocks = []
        for op in collect_ops(function, lambda o: is_op(o, (scf.ForOp, scf.IfOp, scf.WhileOp))):
            if _inside(op, (scf.ParallelOp, gpu.LaunchOp)) or not _holds_parallel(op):
                continue
            blocks += [block for region in op.regions for block in region.blocks]
        return blocks

    @staticmethod
    def _serial_runs(block: ir.Block) -> list[list[ir.Operation]]:
        runs, current = [], []
        for op in block.operations:
            op = op.operation
            wrappable = (
                not is_op(op, (scf.ParallelOp, gpu.LaunchOp, func.ReturnOp, scf.YieldOp))
                and _touches_memory(op)
                and not _holds_parallel(op)
            )
            if wrappable:
                current.append(op)
            elif current:
                runs.append(current)
                current = []
        if current:
            runs.append(current)
        return [run for run in runs if not GpuGridLoops._results_escape(run)]

    @staticmethod
    def _results_escape(run: list[ir.Operation]) -> bool:
        for op in run:
            for result in op.results:
                for use in result.uses:
                    user = getattr(use.owner, "operation", use.owner)
                    if not any(user == member for member in run) and not _is_nested_in(user, run):
                        return True
        return False

    @staticmethod
    def _wrap_serial(run: list[ir.Operation]) -> None:
        with ir.InsertionPoint(run[0]), run[0].location:
            zero, one = _index(0), _index(1)
            _, outer_block = _parallel_1d(zero, one, one)
            with ir.InsertionPoint.at_block_begin(outer_block):
                _, inner_block = _parallel_1d(zero, one, one)
        anchor = inner_block.operations[0]
        for op in run:
            op.move_before(anchor)


def _is_nested_in(op, run: list[ir.Operation]) -> bool:
    parent = op.parent
    while parent is not None:
        if any(parent == candidate for candidate in run):
            return True
        parent = parent.parent
    return False
