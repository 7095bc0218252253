"""rlx-emit-c-interface: mark public functions `llvm.emit_c_interface`.

convert-func-to-llvm then emits a `_mlir_ciface_<name>` wrapper taking memref
descriptors by pointer, which is what the ExecutionEngine and AOT loaders call.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import func

from ...passmanager.base import RlxPass


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
