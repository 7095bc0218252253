"""Normalisation blocks: RMSNorm over the last axis, and of a residual sum."""

from __future__ import annotations

from mlir import ir

from ...dsl import Pure, same_as
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

    x = same_as(mir_norm.RmsNormOp.x, doc="the tensor to normalise, `[..., D]`")
    gamma = same_as(mir_norm.RmsNormOp.gamma, doc="scale, `[D]`")
    beta = same_as(mir_norm.RmsNormOp.beta, doc="shift, `[D]` (zeros for none)")
    eps = same_as(mir_norm.RmsNormOp.eps, doc=_EPS_DOC)
    result = same_as(mir_norm.RmsNormOp.result)

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

    x = same_as(mir_norm.FusedResidualRmsNormOp.x)
    residual = same_as(mir_norm.FusedResidualRmsNormOp.residual)
    gamma = same_as(mir_norm.FusedResidualRmsNormOp.gamma)
    beta = same_as(mir_norm.FusedResidualRmsNormOp.beta)
    eps = same_as(mir_norm.FusedResidualRmsNormOp.eps, doc=_EPS_DOC)
    result = same_as(mir_norm.FusedResidualRmsNormOp.result)

    @classmethod
    def infer_result_type(
        cls, x: ir.Type, residual: ir.Type, gamma: ir.Type, beta: ir.Type, eps: float
    ) -> ir.Type:
        return mir_norm.FusedResidualRmsNormOp.infer_result_type(x, residual, None, gamma, beta, eps)
