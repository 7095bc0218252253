"""rlx-emit-c-interface: mark public functions `llvm.emit_c_interface`.

convert-func-to-llvm then emits a `_mlir_ciface_<name>` wrapper taking memref
descriptors by pointer, which is what the ExecutionEngine and AOT loaders call.

An entry point with many memref arguments (a 12-layer model takes ~160 weights and caches:
~1000 scalars once each descriptor is unpacked) is also given internal linkage: the
wrapper is then its only caller and LLVM inlines it there, instead of generating a call
with one argument per descriptor field (and the ExecutionEngine a packed wrapper making the
same call). Such a call costs LLVM seconds: the arguments past the sixth are stored to the
stack, the fields the function never reads are passed as poison, and SelectionDAG's store
merging revisits every stack store each time one is dropped (12-layer KV-cache decode step:
6.3 s of 7.3 s of code generation).
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import func

from ...passmanager.base import RlxPass

# LLVM arguments (3 + 2 * rank per memref) above which the entry point is inlined into its wrapper.
INLINE_INTO_WRAPPER_ARGUMENTS = 256


def _llvm_arguments(function) -> int:
    count = 0
    for argument in function.regions[0].blocks[0].arguments:
        count += 3 + 2 * ir.MemRefType(argument.type).rank if isinstance(argument.type, ir.MemRefType) else 1
    return count


@dataclasses.dataclass(frozen=True)
class EmitCInterface(RlxPass):
    name = "rlx-emit-c-interface"
    summary = "Mark public func.func ops llvm.emit_c_interface for C and JIT callers"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> None:
        for region in module.regions:
            for block in region.blocks:
                for op in block.operations:
                    if not isinstance(op, func.FuncOp) or op.is_external:
                        continue
                    visibility = op.attributes["sym_visibility"] if "sym_visibility" in op.attributes else None
                    if visibility is None or ir.StringAttr(visibility).value == "public":
                        op.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
                        if _llvm_arguments(op) > INLINE_INTO_WRAPPER_ARGUMENTS:
                            op.attributes["llvm.linkage"] = ir.Attribute.parse("#llvm.linkage<internal>")
