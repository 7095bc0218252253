"""rlx-reassociate-reductions: let LLVM vectorize floating-point reductions.

LLVM's loop vectorizer keeps a floating-point sum in program order unless the
adds may be reassociated, so a row sum (softmax, norms, attention scores, a
contraction whose innermost loop reduces) runs one scalar add per element. This
pass marks the `arith.addf`, `arith.mulf`, `arith.maximumf` and `arith.minimumf`
in the body of every `linalg.generic` / `linalg.reduce` whose innermost loop reduces
`fastmath<reassoc,contract>` (where the innermost loop is parallel, LLVM vectorizes it
as it is, and the order of the sum is kept):
sums then accumulate in vector lanes (a pairwise-like order, no less accurate
than the sequential one) and a multiply feeding an add may become one FMA.
Other bodies are left exactly as written.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import arith, linalg

from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass

FLAGGED = (arith.AddFOp, arith.MulFOp, arith.MaximumFOp, arith.MinimumFOp, arith.SubFOp)


def _innermost_loop_reduces(op: ir.OpView) -> bool:
    """True when the op's innermost loop is a reduction: the only case where LLVM needs to
    reorder the sum to vectorize (an innermost parallel loop vectorizes as it is)."""
    if isinstance(op, linalg.ReduceOp):
        rank = ir.RankedTensorType(op.operands[0].type).rank
        return (rank - 1) in list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
    if not isinstance(op, linalg.GenericOp):
        return False
    iterators = ir.ArrayAttr(op.attributes["iterator_types"])
    return len(iterators) > 0 and "reduction" in str(iterators[len(iterators) - 1])


@dataclasses.dataclass(frozen=True)
class ReassociateReductions(RlxPass):
    name = "rlx-reassociate-reductions"
    summary = "Mark float arithmetic in linalg reduction bodies fastmath<reassoc,contract> (vectorizable sums)"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> bool:
        flags = ir.Attribute.parse("#arith.fastmath<reassoc,contract>")
        reducing = [op for op in collect_ops(module, (linalg.GenericOp, linalg.ReduceOp)) if _innermost_loop_reduces(op)]
        if not reducing:
            return False  # nothing changed: the pass manager need not verify the module again
        for op in reducing:
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        if isinstance(inner, FLAGGED):
                            inner.operation.attributes["fastmath"] = flags
