"""rlx-vectorize-transposes: transposes of the last two dimensions as 16x16 register transposes.

Every static f32 `linalg.transpose` (on tensors) whose permutation exchanges the last two
dimensions, the others in place (`[1, 0]`, or `[0, 2, 1]`: the lowered packing of a GEMM's B
read transposed, rlx-pack-matmul), with both of those dimensions multiples of 16, is tiled into
16x16 blocks (one block per iteration, the leading dimensions one at a time) and each block
vectorized: 16 contiguous 16-float rows read, transposed in registers (`vector.transpose`,
AVX-512's 16x16 shuffle sequence), 16 contiguous rows written.

Why: left to LLVM, a transpose is a loop nest that reads (or writes) one element per stride,
1.2-1.3 ns per element at the power-of-two strides of a transformer's activations ([128, 512]
transposed: 81 us), slower than the GEMM it feeds needs; the blocked form reads and writes whole
cache lines.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import bufferization, func, linalg

from ...ir.attrs import TRANSPOSE_BLOCKS_ATTR
from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass
from .transform_script import apply_script

BLOCK = 16

_SCRIPT = """
%ops{rank} = transform.structured.match ops{{["linalg.transpose"]}} attributes {{{attr} = {rank} : i64}} in %root : (!transform.any_op) -> !transform.any_op
%blocks{rank}, %loops{rank}:{rank} = transform.structured.tile_using_for %ops{rank} tile_sizes {sizes} : (!transform.any_op) -> ({handles})
transform.structured.vectorize %blocks{rank} : !transform.any_op
"""

_LOWER = """
%funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
transform.apply_patterns to %funcs {
  transform.apply_patterns.vector.cast_away_vector_leading_one_dim
  transform.apply_patterns.vector.transfer_permutation_patterns
  transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_16x16"
  transform.apply_patterns.canonicalization
} : !transform.any_op
"""


def blockable(op: linalg.TransposeOp) -> bool:
    """Whether `op` exchanges its last two dimensions only, static f32, both multiples of BLOCK,
    and its result is not materialized in a function argument (see `_into_argument`)."""
    result = ir.RankedTensorType(op.results[0].type) if len(op.results) == 1 else None
    if result is None or not result.has_static_shape or result.element_type != ir.F32Type.get():
        return False
    rank = result.rank
    if rank < 2 or list(op.permutation) != [*range(rank - 2), rank - 1, rank - 2]:
        return False
    return all(size % BLOCK == 0 for size in result.shape[-2:]) and not _into_argument(op)


def _into_argument(op: linalg.TransposeOp) -> bool:
    """Whether `op`'s result is materialized in a function argument: an output tied to an input
    (`rlx.tied`, GraphModule.tie_outputs).  Empty-tensor elimination then makes that argument the
    init of the blocked loops, which one-shot bufferization rejects ("'scf.for' op not bufferizable
    under the given constraints: cannot avoid RaW conflict"); the plain transpose writes it."""
    for use in op.results[0].uses:
        owner = use.owner
        if is_op(owner, bufferization.MaterializeInDestinationOp) and use.operand_number == 0:
            destination = owner.operands[1]
            if isinstance(destination, ir.BlockArgument) and is_op(destination.owner.owner, func.FuncOp):
                return True
    return False


@dataclasses.dataclass(frozen=True)
class VectorizeTransposes(RlxPass):
    name = "rlx-vectorize-transposes"
    summary = "Transposes of the last two dimensions (static f32, multiples of 16) as 16x16 register transposes"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> bool:
        chosen = [op for op in collect_ops(module, linalg.TransposeOp) if blockable(op)]
        if not chosen:
            return False
        i64 = ir.IntegerType.get_signless(64)
        ranks = sorted({ir.RankedTensorType(op.results[0].type).rank for op in chosen})
        for op in chosen:
            op.attributes[TRANSPOSE_BLOCKS_ATTR] = ir.IntegerAttr.get(i64, ir.RankedTensorType(op.results[0].type).rank)
        body = "".join(
            _SCRIPT.format(attr=TRANSPOSE_BLOCKS_ATTR, rank=rank, sizes=[1] * (rank - 2) + [BLOCK, BLOCK],
                           handles=", ".join(["!transform.any_op"] * (rank + 1)))
            for rank in ranks
        )
        apply_script(module, body + _LOWER, chosen[0].location, "blocking the transposes")
        return True
