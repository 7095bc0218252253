"""Normalisation blocks: RMSNorm over the last axis, and of a residual sum."""

from __future__ import annotations

from mlir import ir

from ...dsl import F32Attr, FloatTensor, Pure, attribute, operand, result
from ..rlx import norm as mir_norm
from .dialect import RlxHir

__all__ = ["RmsNormOp", "ResidualRmsNormOp"]

_EPS_DOC = "added to the mean of squares under the square root; must be positive"


class RmsNormOp(RlxHir.Operation, name="rms_norm", traits=[Pure]):
    """RMSNorm over the last axis: `x / sqrt(mean(x^2) + eps) * gamma + beta`.

    `x` is `[..., D]`, `gamma` and `beta` are `[D]` (RLX keeps the `beta`
    slot; pass zeros for none); the result has the type of `x`.  Expansion
    (RLX's `HirOp::RmsNorm`): `rlx.rms_norm` with `axis = -1` under both
    policies.
    """

    x = operand(FloatTensor, "the tensor to normalise, `[..., D]`")
    gamma = operand(FloatTensor, "scale, `[D]`")
    beta = operand(FloatTensor, "shift, `[D]` (zeros for none)")
    eps = attribute(F32Attr, _EPS_DOC, default=1e-6)
    result = result(FloatTensor, "same type as `x`")

    @classmethod
    def infer_result_type(cls, x: ir.Type, gamma: ir.Type, beta: ir.Type, eps: float) -> ir.Type:
        return mir_norm.RmsNormOp.infer_result_type(x, gamma, beta, -1, eps)


class ResidualRmsNormOp(RlxHir.Operation, name="residual_rms_norm", traits=[Pure]):
    """RMSNorm of a residual sum: `rms_norm(x + residual)` over the last axis.

    `x` and `residual` have one shape `[..., D]`; with `h = x + residual` the
    one result is `h / sqrt(mean(h^2) + eps) * gamma + beta`, the normalised
    sum (the sum itself is not a result, as in RLX).  Expansion (RLX's
    `HirOp::ResidualRmsNorm`): under `direct`, `rlx.fused_residual_rms_norm`
    (no bias; the sum stays in f32); under `fusable`, `rlx.add` then
    `rlx.rms_norm` with `axis = -1` (for f16 / bf16 the sum rounds once to the
    element type in between).
    """

    x = operand(FloatTensor, "the block's output, `[..., D]`")
    residual = operand(FloatTensor, "the residual stream, same shape as `x`")
    gamma = operand(FloatTensor, "scale, `[D]`")
    beta = operand(FloatTensor, "shift, `[D]` (zeros for none)")
    eps = attribute(F32Attr, _EPS_DOC, default=1e-6)
    result = result(FloatTensor, "the normalised sum, same type as `x`")

    @classmethod
    def infer_result_type(
        cls, x: ir.Type, residual: ir.Type, gamma: ir.Type, beta: ir.Type, eps: float
    ) -> ir.Type:
        return mir_norm.FusedResidualRmsNormOp.infer_result_type(x, residual, None, gamma, beta, eps)
