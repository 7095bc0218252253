"""rlx-gpu-align-workgroup-memory: workgroup (shared) buffers of outlined kernels aligned to 32 bytes.

A `gpu.func`'s workgroup attributions become `.shared` globals aligned to their element type (2 bytes for
f16) unless the attribution carries `llvm.align`.  Tensor-core fragment loads and stores
(`wmma.load` / `wmma.store`, rlx-gpu-mma-matmul) need 32-byte aligned addresses, and 16-byte vector
stores need 16: this pass gives every workgroup attribution of every `gpu.func` `{llvm.align = 32}`
(keeping any larger alignment already there).  It runs after `gpu-kernel-outlining` (a `gpu.launch`
has no attribute dictionaries for its attributions).
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import gpu

from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass, option

ALIGN = "llvm.align"


@dataclasses.dataclass(frozen=True)
class GpuAlignWorkgroupMemory(RlxPass):
    name = "rlx-gpu-align-workgroup-memory"
    summary = "gives every workgroup attribution of outlined kernels (gpu.func) an llvm.align of at least 32 bytes"
    creates_rlx_ops = False
    alignment: int = option(32, "bytes", minimum=1, power_of_two=True)

    def run(self, module: ir.Operation) -> bool:
        changed = False
        for function in collect_ops(module, lambda o: is_op(o, gpu.GPUFuncOp)):
            count = ir.IntegerAttr(function.attributes["workgroup_attributions"]).value \
                if "workgroup_attributions" in function.attributes else 0
            if count == 0:
                continue
            old = (list(ir.ArrayAttr(function.attributes["workgroup_attrib_attrs"]))
                   if "workgroup_attrib_attrs" in function.attributes else [ir.DictAttr.get({})] * count)
            new = []
            for entry in old:
                attrs = {a.name: a.attr for a in ir.DictAttr(entry)}
                current = ir.IntegerAttr(attrs[ALIGN]).value if ALIGN in attrs else 0
                attrs[ALIGN] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), max(current, self.alignment))
                new.append(ir.DictAttr.get(attrs))
            function.attributes["workgroup_attrib_attrs"] = ir.ArrayAttr.get(new)
            changed = True
        return changed
