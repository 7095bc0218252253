"""rlx-distinct-results: give every returned tensor a buffer of its own.

`buffer-results-to-out-params{hoist-static-allocs}` in LLVM 22 crashes the
process when one buffer is returned twice (llvm/llvm-project#219492, fixed
after 22).  Before bufferization, each repeated return operand is replaced by
a copy (`bufferization.alloc_tensor copy(...)`), so each result is written to
its own output buffer.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import bufferization, func

from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass


@dataclasses.dataclass(frozen=True)
class DistinctResults(RlxPass):
    name = "rlx-distinct-results"
    summary = "Copy tensors returned more than once, so each result has its own buffer"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> bool:
        changed = False
        for ret in collect_ops(module, func.ReturnOp):
            seen = set()
            for index, value in enumerate(list(ret.operands)):
                if not isinstance(value.type, ir.RankedTensorType):
                    continue
                if value in seen:
                    with ir.InsertionPoint(ret), ret.location:
                        ret.operands[index] = bufferization.AllocTensorOp(value.type, [], copy=value).result
                    changed = True
                seen.add(value)
        return changed
