"""rlx-memref-copy-to-linalg: `memref.copy` as `linalg.copy`.

Bufferization copies buffers with `memref.copy`, which lowers to a host loop or
a call into the CPU runtime.  As `linalg.copy` the copy becomes a loop nest like
any other linalg op, so the GPU pipeline maps it to a kernel (strided views
included).  Same semantics: every element of the source written to the target.

On the CPU (`only-strided`), copies between two contiguous buffers stay
`memref.copy` (a `memcpy`); the others would become calls to the runtime's
generic `memrefCopy`, which walks elements one index computation at a time
(about 6 ms per million floats, more than a 1000³ matmul's padding is worth),
while `linalg.copy` lowers to plain loops whose contiguous inner dimension
LLVM vectorizes.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import linalg, memref

from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass, option


def _contiguous(memref_type: ir.Type) -> bool:
    """Row-major with no gaps and a static offset: what `memcpy` can copy."""
    if not isinstance(memref_type, ir.MemRefType):
        return False
    shaped = ir.MemRefType(memref_type)
    strides, offset = shaped.get_strides_and_offset()
    expected = 1
    for size, stride in zip(reversed(shaped.shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return not shaped.is_dynamic_stride_or_offset(offset)


@dataclasses.dataclass(frozen=True)
class MemrefCopyToLinalg(RlxPass):
    name = "rlx-memref-copy-to-linalg"
    summary = "Rewrite memref.copy as linalg.copy (so copies become kernels on the GPU, vector loops on the CPU)"
    creates_rlx_ops = False
    only_strided: bool = option(False, "leave copies between two contiguous buffers (memcpy) alone")

    def run(self, module: ir.Operation) -> bool:
        changed = False
        for op in collect_ops(module, memref.CopyOp):
            source, target = op.operands
            if self.only_strided and _contiguous(source.type) and _contiguous(target.type):
                continue
            with ir.InsertionPoint(op), op.location:
                linalg.copy(source, outs=[target])
            op.erase()
            changed = True
        return changed
