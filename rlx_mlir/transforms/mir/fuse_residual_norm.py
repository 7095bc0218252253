"""rlx-fuse-residual-norm: a residual add feeding a norm over the last axis into one op.

    %h = rlx.add(%x, %residual)               equal shapes [..., D]
    %y = rlx.rms_norm(%h, %gamma, %beta)      over the last axis
  ->
    %y = rlx.fused_residual_rms_norm(%x, %residual, %gamma, %beta)

and likewise rlx.layer_norm -> rlx.fused_residual_layer_norm.  A bias on the
sum folds into the fused op's optional `bias` operand:

    %s = rlx.add(%x, %residual)               equal shapes
    %h = rlx.add(%s, %bias)                   %bias: [D], either operand order
    %y = rlx.rms_norm(%h, ...)
  ->
    %y = rlx.fused_residual_rms_norm(%x, %residual, %gamma, %beta, bias = %bias)

The adds may have other uses (the residual stream usually goes on): they then
stay for those uses and only the norm is replaced; an add left without uses
is erased.  `eps` carries over.  Shapes must be static.  The fused op is built
at the norm, with a fused location whose first part is the norm's.

f32 results are unchanged up to the norms' own summation order.  For f16 /
bf16 the fused op keeps the sum in f32 where the separate add rounds it to
the element type first, so the fused result is the more accurate one.

Every norm whose input is an rlx.add is recorded in the fusion report.
"""

from __future__ import annotations

import dataclasses

from mlir import ir

from ...dialects import rlx
from ...ir.shapes import shape_of
from ...passmanager.base import RlxPass
from . import fusion_report as report

_FUSED = {
    rlx.RmsNormOp: rlx.FusedResidualRmsNormOp,
    rlx.LayerNormOp: rlx.FusedResidualLayerNormOp,
}


def _equal_shape_add(add) -> bool:
    shape = report.static_shape(add.result)
    return shape is not None and report.static_shape(add.lhs) == shape and report.static_shape(add.rhs) == shape


@dataclasses.dataclass(frozen=True)
class FuseResidualNorm(RlxPass):
    name = "rlx-fuse-residual-norm"
    summary = "Fuse rlx.add (+ [D] bias) feeding rlx.rms_norm / rlx.layer_norm into a fused residual norm"

    def run(self, module: ir.Operation) -> None:
        for norm in report.ops_of(module, rlx.RmsNormOp, rlx.LayerNormOp):
            report.guarded(self.name, norm, self._try)

    def _miss(self, op, reason: str) -> None:
        report.record_missed(self.name, op, reason)

    def _try(self, norm) -> None:
        outer = report.producer(norm.x, rlx.AddOp)
        if outer is None:
            return  # no residual sum feeding this norm
        rank = len(shape_of(norm.x.type))
        if norm.axis not in (-1, rank - 1):
            self._miss(norm, f"normalises axis {norm.axis}, not the last axis of {report.describe_shape(norm.x)}")
            return
        if report.static_shape(norm.x) is None:
            self._miss(norm, "dynamic shapes")
            return
        bias, residual_add = None, outer
        if not _equal_shape_add(outer):
            shape, d = shape_of(norm.x.type), shape_of(norm.x.type)[-1]
            full = [v for v in (outer.lhs, outer.rhs) if report.static_shape(v) == shape]
            if not full:
                self._miss(
                    norm,
                    f"the add of {report.describe_shape(outer.lhs)} and {report.describe_shape(outer.rhs)} broadcasts",
                )
                return
            summed = full[0]
            bias = outer.rhs if summed == outer.lhs else outer.lhs
            if report.static_shape(bias) != (d,):
                self._miss(norm, f"bias shape {report.describe_shape(bias)} is not [{d}]")
                return
            residual_add = report.producer(summed, rlx.AddOp)
            if residual_add is None:
                self._miss(norm, f"the [{d}] bias is added to a value that is not an rlx.add")
                return
            if not _equal_shape_add(residual_add):
                self._miss(
                    norm,
                    f"the residual add of {report.describe_shape(residual_add.lhs)} and "
                    f"{report.describe_shape(residual_add.rhs)} broadcasts",
                )
                return
        fused_class = _FUSED[type(norm)]
        matched = [norm, outer] + ([residual_add] if residual_add is not outer else [])
        fused = fused_class(
            residual_add.lhs,
            residual_add.rhs,
            norm.gamma,
            norm.beta,
            bias=bias,
            eps=norm.operation.attributes["eps"],
            loc=report.fused_location(*matched),
            ip=ir.InsertionPoint(norm),
        )
        what = fused_class.OPERATION_NAME + (" with bias" if bias is not None else "")
        report.record_fused(self.name, norm, what)
        norm.result.replace_all_uses_with(fused.result)
        norm.operation.erase()
        for add in matched[1:]:  # the outer add first: it may be the inner one's last use
            if report.use_count(add.result) == 0:
                add.operation.erase()
