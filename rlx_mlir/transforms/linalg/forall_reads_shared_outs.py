"""rlx-forall-reads-shared-outs: a thread's tile of a value it overwrites is read from the shared out.

`rlx-parallelize-linalg` tiles an op across threads as

    scf.forall (%t) shared_outs(%out = %init) {
      %a = tensor.extract_slice %init[tile(%t)]     // an input that is also the destination
      %o = tensor.extract_slice %out[tile(%t)]
      %r = linalg.generic ins(%a, ...) outs(%o)
      scf.forall.in_parallel { tensor.parallel_insert_slice %r into %out[tile(%t)] }
    }

and `eliminate-empty-tensors` makes `%init` the buffer the result is materialized in: a
training step's `m = b1 m + (1 - b1) g`, whose destination is the argument `m` it reads (a
tied result, updated in place).  One-shot bufferization cannot tell that the read of `%init`
inside the loop touches only the tile this thread overwrites, so it copies `%init` into a fresh
buffer first and computes there: with 2 threads, a 2-layer training step allocated and copied
every parameter and optimiser state once more per step (its peak RSS 74 MB above one thread's).

In tensor semantics the shared out's block argument *is* `%init` on entry, so such an
`extract_slice` may read `%out` instead.  This pass does that for each slice of `%init` that
reads exactly the tile a `parallel_insert_slice` of the same iteration writes into `%out` (equal
offsets, sizes and strides: the same values, or the same pure ops of the same values), and
makes the slices of that tile of `%out` one value (`ins(%o, ...) outs(%o)`: an elementwise op
reading and writing one tile, which bufferization updates in place).  Other reads of `%init`
are left alone.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import scf, tensor

from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass

_SLICE_ATTRS = ("static_offsets", "static_sizes", "static_strides")
_PURE_INDEX_OPS = ("affine.apply", "affine.min", "affine.max", "arith.constant", "arith.addi", "arith.muli",
                   "arith.subi", "arith.minsi", "arith.maxsi", "arith.index_cast")


def _same_value(a: ir.Value, b: ir.Value, depth: int = 4) -> bool:
    """True when `a` and `b` are one value, or results of the same pure index op on the same values."""
    if a == b:
        return True
    if depth == 0 or isinstance(a.owner, ir.Block) or isinstance(b.owner, ir.Block):
        return False
    x, y = a.owner, b.owner
    if x.name != y.name or x.name not in _PURE_INDEX_OPS or len(x.operands) != len(y.operands):
        return False
    if ir.OpResult(a).result_number != ir.OpResult(b).result_number:
        return False
    attrs_x = {n: str(x.attributes[n]) for n in x.attributes}
    attrs_y = {n: str(y.attributes[n]) for n in y.attributes}
    return attrs_x == attrs_y and all(_same_value(p, q, depth - 1) for p, q in zip(x.operands, y.operands))


def _same_tile(extract: ir.Operation, insert: ir.Operation) -> bool:
    """True when `extract` (tensor.extract_slice) reads the tile `insert` (parallel_insert_slice) writes."""
    if any(str(extract.attributes[n]) != str(insert.attributes[n]) for n in _SLICE_ATTRS):
        return False
    read, written = list(extract.operands)[1:], list(insert.operands)[2:]
    return len(read) == len(written) and all(_same_value(p, q) for p, q in zip(read, written))


@dataclasses.dataclass(frozen=True)
class ForallReadsSharedOuts(RlxPass):
    name = "rlx-forall-reads-shared-outs"
    summary = "In scf.forall, read a thread's own tile of a shared out's init from the shared out"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> bool:
        changed = False
        for forall in collect_ops(module, scf.ForallOp):
            body = forall.regions[0].blocks[0]
            results = len(forall.results)
            if results == 0:
                continue
            first_out = len(body.arguments) - results
            inits = list(forall.operands)[len(forall.operands) - results:]
            terminator = body.operations[len(body.operations) - 1]
            inserts = [op for op in terminator.regions[0].blocks[0].operations
                       if isinstance(op, tensor.ParallelInsertSliceOp)]
            for insert in inserts:
                out = insert.operands[1]
                if not isinstance(out.owner, ir.Block) or ir.BlockArgument(out).owner != body:
                    continue
                init = inits[ir.BlockArgument(out).arg_number - first_out]
                own_tile = None  # the first slice of this iteration's tile of `out`
                for op in list(body.operations):
                    if not isinstance(op, tensor.ExtractSliceOp) or not _same_tile(op.operation, insert.operation):
                        continue
                    if op.operands[0] == init:
                        op.operation.operands[0] = out
                        changed = True
                    if op.operands[0] != out:
                        continue
                    if own_tile is None:
                        own_tile = op
                    else:  # one slice value for the tile: the op reading it and writing it in place
                        op.result.replace_all_uses_with(own_tile.result)
                        op.operation.erase()
                        changed = True
        return changed
