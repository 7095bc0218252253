"""rlx-merge-lora: fold a frozen LoRA adapter into its base weight, once, at compile time.

    %w = rlx.constant dense<...> : [K, N]
    %a = rlx.constant dense<...> : [K, r]
    %b = rlx.constant dense<...> : [r, N]
    %y = rlx.lora_matmul(%x, %w, %a, %b) {scale = s}
  ->
    %m = rlx.constant dense<W + s * A @ B> : [K, N]
    %y = rlx.matmul(%x, %m)

For serving a fine-tuned model: one GEMM per call instead of the base GEMM plus two skinny ones.

*Frozen* means that the base weight and both adapter matrices are constants in the IR (an
`rlx.constant`, or a tensor `arith.constant`, of dense elements): folding happens at compile
time, so the values must be known then.  An adapter passed as function arguments (`rlx.param`)
may differ from call to call -- swapping adapters without recompiling is what the unmerged op is
for -- so it is left alone, as is an op whose base weight alone is an argument (merging it would
form `W + s * A @ B` on every call).  To merge an adapter held in parameters, bind them as
constants first: `GraphModule.freeze({"w": W, "w.lora_a": A, "w.lora_b": B})`.

The merged weight is `W + scale * A @ B` evaluated in float64 and rounded once to the element
type (f32 or f16; bf16 is left unmerged, NumPy has no bf16), so it equals the unmerged op up
to f32 rounding of the products (the order of the sums differs).  Ops sharing the same three
constants and scale share one merged constant; constants left without uses are erased.  Every
`rlx.lora_matmul` is recorded in the fusion report, merged or not, with the reason.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np
from mlir import ir
from mlir.dialects import arith

from ...dialects import rlx
from ...ir import dtypes
from ...passmanager.base import RlxPass
from . import fusion_report as report


def _constant_array(value: ir.Value) -> Optional[np.ndarray]:
    """The elements of a dense `rlx.constant` / tensor `arith.constant` as a NumPy array, else None."""
    owner = value.owner
    if not isinstance(owner, (rlx.ConstantOp, arith.ConstantOp)):
        return None
    attribute = owner.attributes["value"]
    if not isinstance(attribute, ir.DenseElementsAttr) or attribute.type != value.type:
        return None  # e.g. dense_resource
    shape = list(ir.RankedTensorType(value.type).shape)
    if attribute.is_splat:
        return np.full(shape, ir.FloatAttr(attribute.get_splat_value()).value)
    return np.array(attribute).reshape(shape)


@dataclasses.dataclass(frozen=True)
class MergeLora(RlxPass):
    name = "rlx-merge-lora"
    summary = "Fold a frozen LoRA adapter (constant w, a, b) into its weight: rlx.lora_matmul -> rlx.matmul"

    def run(self, module: ir.Operation) -> None:
        merged: dict[tuple, ir.Value] = {}
        sources: dict[ir.Operation, None] = {}
        for op in report.ops_of(module, rlx.LoraMatmulOp):
            report.guarded(self.name, op, lambda op: self._merge(op, merged, sources))
        for source in reversed(list(sources)):  # users before producers
            if not any(list(r.uses) for r in source.results):
                source.erase()

    def _merge(self, op, merged: dict, sources: dict) -> None:
        element = ir.RankedTensorType(op.result.type).element_type
        if str(element) not in ("f32", "f16"):
            report.record_missed(self.name, op, f"element type {element} (only f32 and f16 are merged)")
            return
        arrays = {}
        for name in ("w", "a", "b"):
            array = _constant_array(getattr(op, name))
            if array is None:
                report.record_missed(self.name, op, f"{name} is not a constant (the adapter is not frozen)")
                return
            arrays[name] = array
        key = (op.w, op.a, op.b, float(op.scale))
        weight = next((v for k, v in merged.items() if k == key), None)
        if weight is None:
            w, a, b = (arrays[n].astype(np.float64) for n in ("w", "a", "b"))
            with np.errstate(all="ignore"):
                folded = (w + float(op.scale) * (a @ b)).astype(dtypes.numpy_name(str(element), "merged weight"))
            attribute = ir.DenseElementsAttr.get(np.ascontiguousarray(folded), type=op.w.type)
            weight = rlx.ConstantOp(attribute, loc=op.w.owner.location, ip=ir.InsertionPoint(op)).result
            merged[key] = weight
        with ir.InsertionPoint(op), op.location:
            matmul = rlx.MatmulOp(op.x, weight)
        op.result.replace_all_uses_with(matmul.result)
        for name in ("w", "a", "b"):
            sources[getattr(op, name).owner.operation] = None
        op.erase()
        report.record_fused(self.name, matmul, "rlx.matmul")
