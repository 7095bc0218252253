"""rlx-fuse-swiglu: a SwiGLU's two projections and gating into one matmul and rlx.fused_swiglu.

    %up   = rlx.matmul(%x, %wu)              %wu, %wg: 2-D, equal shapes [K, N]
    %gate = rlx.matmul(%x, %wg)              the SAME %x
    %g    = rlx.silu(%gate)
    %y    = rlx.mul(%up, %g)                 either operand order
  ->
    %w    = rlx.concat(%wu, %wg) {axis = 1}  [K, 2N]: up then gate
    %h    = rlx.matmul(%x, %w)               [..., 2N]
    %y    = rlx.fused_swiglu(%h)             [..., N]

Conditions: each matched value has no other use (the up and gate products,
the silu), the mul does not broadcast, shapes are static.  The new ops are
built at the mul, with a fused location whose first part is the mul's.  When
the weights are constants the concat is left for rlx-fold-constants.

Run it before rlx-fuse-shared-matmul: that pass leaves SwiGLU projection pairs
alone, and merges the fused projection with other matmuls on the same input
(the fused_swiglu then reads a narrow of the merged product).

f32 results agree with the unfused ops up to the last bit of the silu and
the product (the fused op computes `up * g * sigmoid(g)` in one expression).

Every mul with an rlx.silu operand is recorded in the fusion report.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from mlir import ir

from ...dialects import rlx
from ...ir.shapes import shape_of
from ...passmanager.base import RlxPass
from . import fusion_report as report


def swiglu_projections(mul) -> tuple[Optional[object], Optional[object], Optional[object], str]:
    """(up matmul, gate matmul, silu, "") for `mul(up, silu(gate))`, or (None, None, None, reason).

    The reason is "" when `mul` has no silu operand at all (not a candidate).
    """
    reason = ""
    for up_value, silu_value in ((mul.lhs, mul.rhs), (mul.rhs, mul.lhs)):
        silu = report.producer(silu_value, rlx.SiluOp)
        if silu is None:
            continue
        up = report.producer(up_value, rlx.MatmulOp)
        gate = report.producer(silu.input, rlx.MatmulOp)
        if gate is None:
            reason = reason or "the silu's input is not an rlx.matmul"
            continue
        if up is None:
            reason = reason or "the up projection is not an rlx.matmul"
            continue
        problem = _pair_problem(mul, up, gate, silu)
        if problem:
            reason = reason or problem
            continue
        return up, gate, silu, ""
    return None, None, None, reason


def _pair_problem(mul, up, gate, silu) -> str:
    if up.operation == gate.operation:
        return "up and gate are the same matmul"
    if up.lhs != gate.lhs:
        return "up and gate project different inputs"
    for which, matmul in (("up", up), ("gate", gate)):
        if len(shape_of(matmul.rhs.type)) != 2:
            return f"{which} weight is batched {report.describe_shape(matmul.rhs)}"
    if report.static_shape(up.rhs) is None or report.static_shape(gate.rhs) is None:
        return "dynamic shapes"
    if report.static_shape(up.lhs) is None:
        return "dynamic shapes"
    if up.rhs.type != gate.rhs.type:
        return (
            f"weights differ in shape: up {report.describe_shape(up.rhs)}, "
            f"gate {report.describe_shape(gate.rhs)}"
        )
    if mul.result.type != up.result.type:
        return f"the mul broadcasts to {report.describe_shape(mul.result)}"
    for what, value in (("up projection", up.result), ("gate projection", gate.result), ("silu", silu.result)):
        uses = report.use_count(value)
        if uses != 1:
            return f"{what} has {uses} uses"
    return ""


@dataclasses.dataclass(frozen=True)
class FuseSwiglu(RlxPass):
    name = "rlx-fuse-swiglu"
    summary = "Fuse rlx.mul(matmul(x, Wu), silu(matmul(x, Wg))) into one matmul and rlx.fused_swiglu"

    def run(self, module: ir.Operation) -> None:
        for mul in report.ops_of(module, rlx.MulOp):
            report.guarded(self.name, mul, self._try)

    def _try(self, mul) -> None:
        up, gate, silu, reason = swiglu_projections(mul)
        if up is None:
            if reason:
                report.record_missed(self.name, mul, reason)
            return
        loc = report.fused_location(mul, silu, up, gate)
        at = ir.InsertionPoint(mul)
        weights = rlx.ConcatOp(up.rhs, gate.rhs, 1, loc=loc, ip=at)
        product = rlx.MatmulOp(up.lhs, weights.result, loc=loc, ip=at)
        fused = rlx.FusedSwigluOp(product.result, loc=loc, ip=at)
        n = shape_of(up.rhs.type)[1]
        report.record_fused(self.name, mul, f"rlx.fused_swiglu of one matmul on [K, {2 * n}] (up then gate)")
        mul.result.replace_all_uses_with(fused.result)
        for op in (mul, silu, up, gate):
            op.operation.erase()
