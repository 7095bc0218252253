"""rlx-split-functions: move runs of a huge function's loop nests into private functions.

LLVM's code generation takes super-linear time in a function's size (the
two-address pass and the register allocator look at the whole function): a
50k-op elementwise chain is one function of ~500k LLVM instructions. On
buffers (after bufferization, before the linalg ops become loops), a function
whose top-level ops weigh more than `max-ops` has its consecutive result-less
linalg ops and `memref.dealloc`s cut into runs of at most `max-ops`, each moved
into a private function (internal linkage, LLVM `noinline`) called in its place. The ops, their order
and their operands are unchanged (numerics are too): values of the caller that
a run reads become arguments, except constants, which are copied into it.

The weight of a top-level op is 1 plus the ops directly in its regions (a
linalg.generic's body), which is what a loop nest becomes; a function at or
under `max-ops` is left alone.

With `loops`, result-less `scf` loops (`scf.for`, `scf.forall`, `scf.parallel`: the GEMM
kernels, the tiled attention, on one thread) move too, so that with `max-ops=1` every loop
nest of a model is a function of its own, which a profiler (`perf` on an ahead-of-time
library) names: time per loop nest in the whole model, caches as the model leaves them.  Off by
default: code generation across those calls is not what a model runs otherwise.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import arith, func, memref

from ...ir.walk import is_op
from ...passmanager.base import RlxPass, option


def _weight(op: ir.Operation) -> int:
    return 1 + sum(len(block.operations) for region in op.regions for block in region.blocks)


LOOPS = ("scf.for", "scf.forall", "scf.parallel")


def _movable(op: ir.Operation, loops: bool = False) -> bool:
    return len(op.results) == 0 and (op.name.startswith("linalg.") or is_op(op, memref.DeallocOp)
                                     or (loops and op.name in LOOPS))


def _runs(body: ir.Block, max_ops: int, loops: bool = False) -> list[list[ir.Operation]]:
    """Consecutive movable top-level ops of `body` (result-less scf loops too with `loops`), cut so
    that each weighs at most `max_ops` (a single heavier op is a run of its own)."""
    runs: list[list[ir.Operation]] = []
    current: list[ir.Operation] = []
    weight = 0
    for op in body.operations:
        op = op.operation
        if not _movable(op, loops):
            if current:
                runs.append(current)
            current, weight = [], 0
            continue
        w = _weight(op)
        if current and weight + w > max_ops:
            runs.append(current)
            current, weight = [], 0
        current.append(op)
        weight += w
    if current:
        runs.append(current)
    return runs


def _top_level(op: ir.Operation, body: ir.Block) -> ir.Operation:
    """The ancestor of `op` (or `op`) directly in `body`."""
    while op.block != body:
        op = op.parent
        op = op.operation if isinstance(op, ir.OpView) else op
    return op


def _is_constant(value: ir.Value) -> bool:
    return isinstance(value.owner, arith.ConstantOp)


def _reads(body: ir.Block, runs: list[list[ir.Operation]]) -> list[list[tuple[ir.Value, list[tuple[ir.Operation, int]]]]]:
    """For each run, the values of the caller it reads, each with its uses in the run (owner,
    operand number). They can only be the entry block's arguments and results of top-level
    ops (a run's ops have none; ops nested elsewhere are not visible from it); one pass over
    their uses finds them all."""
    run_of = {op: index for index, run in enumerate(runs) for op in run}
    # Most uses are in the body of a run's op (a linalg.generic reading a constant): found by
    # their block, without walking up from each of them.
    run_of_block = {block: index for index, run in enumerate(runs) for op in run
                    for region in op.regions for block in region.blocks}
    reads: list[list] = [[] for _ in runs]
    candidates = list(body.arguments) + [r for op in body.operations for r in op.operation.results]
    for value in candidates:
        uses_by_run: dict[int, list[tuple[ir.Operation, int]]] = {}
        for use in value.uses:
            owner = use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner
            block = owner.block
            index = run_of_block.get(block)
            if index is None:
                index = run_of.get(owner if block == body else _top_level(owner, body))
            if index is not None:
                uses_by_run.setdefault(index, []).append((owner, use.operand_number))
        for index, uses in uses_by_run.items():
            reads[index].append((value, uses))
    return reads


@dataclasses.dataclass(frozen=True)
class SplitFunctions(RlxPass):
    name = "rlx-split-functions"
    summary = "Move runs of a huge function's linalg ops (on buffers) into private noinline functions (LLVM is super-linear in function size)"
    creates_rlx_ops = False
    max_ops: int = option(20000, "largest function body, in ops, left whole (top-level ops plus loop bodies)", minimum=1)
    loops: bool = option(False, "also move result-less scf loops (GEMM kernels, tiled attention): with max-ops=1, "
                                "every loop nest a function of its own, for a profiler")

    def run(self, module: ir.Operation) -> bool:
        top = module.regions[0].blocks[0]
        changed = False
        functions = [op.operation for op in top.operations if isinstance(op, func.FuncOp)]
        taken = {ir.StringAttr(op.operation.attributes["sym_name"]).value for op in top.operations if "sym_name" in op.operation.attributes}
        for function in functions:
            if not function.regions[0].blocks or len(function.regions[0].blocks) != 1:
                continue
            body = function.regions[0].blocks[0]
            if sum(_weight(op.operation) for op in body.operations) <= self.max_ops:
                continue
            name = ir.StringAttr(function.attributes["sym_name"]).value
            runs = _runs(body, self.max_ops, self.loops)
            reads = _reads(body, runs)
            for index, run in enumerate(runs):
                callee = f"{name}_part{index}"
                while callee in taken:
                    callee += "_"
                taken.add(callee)
                self._outline(function, run, reads[index], callee)
                changed = True
        return changed

    @staticmethod
    def _outline(function: ir.Operation, run: list[ir.Operation], reads: list[tuple[ir.Value, list]], callee: str) -> None:
        inputs = [value for value, _ in reads]
        uses_of = [uses for _, uses in reads]
        with run[0].location:
            arguments = [v for v in inputs if not _is_constant(v)]
            with ir.InsertionPoint.after(function):
                outlined = func.FuncOp(callee, ([v.type for v in arguments], []))
            outlined.attributes["sym_visibility"] = ir.StringAttr.get("private")
            # Internal to the module, and kept a function by LLVM's inliner (what convert-func-to-llvm passes on).
            outlined.attributes["llvm.linkage"] = ir.Attribute.parse("#llvm.linkage<internal>")
            outlined.attributes["passthrough"] = ir.ArrayAttr.get([ir.StringAttr.get("noinline")])
            entry = outlined.add_entry_block()
            with ir.InsertionPoint(run[0]):
                func.CallOp([], ir.FlatSymbolRefAttr.get(callee), arguments)
            with ir.InsertionPoint(entry):
                terminator = func.ReturnOp([])
            for value, uses in zip(inputs, uses_of):
                if _is_constant(value):
                    owner = value.owner.operation if isinstance(value.owner, ir.OpView) else value.owner
                    new = owner.clone(ir.InsertionPoint(terminator)).results[0]
                else:
                    new = entry.arguments[arguments.index(value)]
                for owner, n in uses:
                    owner.operands[n] = new
            for op in run:
                op.move_before(terminator)
