"""rlx-reassociate-reductions: let LLVM vectorize floating-point reductions.

LLVM's loop vectorizer keeps a floating-point sum in program order unless the
adds may be reassociated, so a row sum (softmax, norms, attention scores, a
contraction whose innermost loop reduces) runs one scalar add per element. This
pass marks the `arith.addf`, `arith.mulf`, `arith.maximumf` and `arith.minimumf`
in the body of every linalg op with a reduction loop `fastmath<reassoc,contract>`:
sums then accumulate in vector lanes (a pairwise-like order, no less accurate
than the sequential one) and a multiply feeding an add may become one FMA.
Elementwise bodies are left exactly as written.
"""

from __future__ import annotations

import dataclasses

from mlir import ir

from ..ir_walk import collect_ops
from .base import RlxPass

FLAGGED = ("arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.subf")


def _has_reduction_loop(op: ir.Operation) -> bool:
    if op.name == "linalg.reduce":
        return True
    if "iterator_types" not in op.attributes:
        return op.name in ("linalg.matmul", "linalg.batch_matmul", "linalg.matvec", "linalg.dot")
    return any("reduction" in str(it) for it in ir.ArrayAttr(op.attributes["iterator_types"]))


@dataclasses.dataclass(frozen=True)
class ReassociateReductions(RlxPass):
    name = "rlx-reassociate-reductions"
    summary = "Mark float arithmetic in linalg reduction bodies fastmath<reassoc,contract> (vectorizable sums)"

    def run(self, module: ir.Operation) -> None:
        flags = ir.Attribute.parse("#arith.fastmath<reassoc,contract>")
        for op in collect_ops(module, lambda o: o.name.startswith("linalg.") and o.regions and _has_reduction_loop(o)):
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        if inner.operation.name in FLAGGED:
                            inner.operation.attributes["fastmath"] = flags
