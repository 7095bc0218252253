"""Normalisation: RMSNorm, LayerNorm and their fused residual forms; fused SwiGLU."""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...dsl import F32Attr, FloatTensor, I64Attr, Pure, VerifyError, attribute, operand, result
from ...ir.shapes import DYNAMIC, format_shape, shape_of
from .dialect import Rlx, same_element_type

__all__ = [
    "DEFAULT_EPS",
    "RmsNormOp",
    "LayerNormOp",
    "FusedResidualRmsNormOp",
    "FusedResidualLayerNormOp",
    "FusedSwigluOp",
]


# The one default epsilon of every RMS/LayerNorm, in MIR, in HIR (rms_norm, residual_rms_norm,
# llama_decoder_block) and in the builder: RLX's, and Llama's own (Llama 2 checkpoints say 1e-5 in
# their config, which LlamaConfig.eps and the checkpoint loaders pass on explicitly).
DEFAULT_EPS = 1e-6


# --- shared checks ------------------------------------------------------------------


def normalize_axis(axis: int, shape, what: str = "input") -> int:
    """`axis` in `0 .. rank-1` (negative axes count from the end); VerifyError when out of range."""
    rank = len(shape)
    if not -rank <= axis < rank:
        raise VerifyError(f"axis {axis} is out of range for rank {rank} {what} {format_shape(shape)}")
    return axis % rank


def _check_eps(eps: float) -> None:
    if not eps > 0.0:
        raise VerifyError(f"eps must be positive, got {eps}")


def _check_same_size(a: int, b: int) -> bool:
    return a == b or a == DYNAMIC or b == DYNAMIC


def _check_param(name: str, type_: ir.Type, size: int, axis: int, x_shape) -> None:
    """gamma / beta / bias: a 1-D tensor of the normalised dimension's size."""
    shape = shape_of(type_)
    if len(shape) != 1 or not _check_same_size(shape[0], size):
        raise VerifyError(
            f"{name} must have shape [{size}] (dimension {axis} of input {format_shape(x_shape)}), "
            f"got {format_shape(shape)}"
        )


def _check_norm_operands(x: ir.Type, gamma: ir.Type, beta: ir.Type, axis: int, eps: float) -> int:
    """Common checks of the norms; returns the normalised axis in `0 .. rank-1`."""
    same_element_type(x, gamma, beta)
    shape = shape_of(x)
    dim = normalize_axis(axis, shape)
    _check_param("gamma", gamma, shape[dim], dim, shape)
    _check_param("beta", beta, shape[dim], dim, shape)
    _check_eps(eps)
    return dim


# --- norms over one axis ------------------------------------------------------------------


class _AxisNorm(Rlx.Operation, traits=[Pure]):
    x = operand(FloatTensor, "the tensor to normalise")
    gamma = operand(FloatTensor, "scale, `[x.shape[axis]]`, broadcast along `axis`")
    beta = operand(FloatTensor, "shift, `[x.shape[axis]]`, broadcast along `axis` (zeros for none)")
    axis = attribute(I64Attr, "the normalised axis; negative counts from the end", default=-1)
    eps = attribute(F32Attr, "added to the statistic under the square root; must be positive", default=DEFAULT_EPS)
    result = result(FloatTensor, "same type as `x`")

    @classmethod
    def infer_result_type(cls, x: ir.Type, gamma: ir.Type, beta: ir.Type, axis: int, eps: float) -> ir.Type:
        _check_norm_operands(x, gamma, beta, axis, eps)
        return x


class RmsNormOp(_AxisNorm, name="rms_norm"):
    """Root-mean-square normalisation over one axis.

    `y = x / sqrt(mean(x^2, axis) + eps) * gamma + beta`, with `gamma` and `beta`
    of shape `[x.shape[axis]]` broadcast along `axis` (RLX keeps the `beta`
    slot; pass zeros for none).  The statistic accumulates in f32; f16 and bf16
    inputs are computed in f32 and the result rounds once to the input's
    element type.
    """


class LayerNormOp(_AxisNorm, name="layer_norm"):
    """Layer normalisation over one axis.

    `y = (x - mean) / sqrt(var + eps) * gamma + beta` with `mean` and the biased
    variance `var = mean((x - mean)^2)` taken over `axis` (PyTorch's
    `F.layer_norm` over one axis); `gamma` and `beta` have shape
    `[x.shape[axis]]` and broadcast along `axis`.  Statistics accumulate in
    f32; f16 and bf16 inputs are computed in f32 and the result rounds once.
    """


# --- fused residual norms -----------------------------------------------------------


class _ResidualNorm(Rlx.Operation, traits=[Pure]):
    x = operand(FloatTensor, "the block's output, `[..., D]`")
    residual = operand(FloatTensor, "the residual stream, same shape as `x`")
    bias = operand(FloatTensor, "optional bias `[D]` added to the sum", optional=True)
    gamma = operand(FloatTensor, "scale, `[D]`")
    beta = operand(FloatTensor, "shift, `[D]` (zeros for none)")
    eps = attribute(F32Attr, "added to the statistic under the square root; must be positive", default=DEFAULT_EPS)
    result = result(FloatTensor, "the normalised sum, same type as `x`")

    @classmethod
    def infer_result_type(
        cls,
        x: ir.Type,
        residual: ir.Type,
        bias: Optional[ir.Type],
        gamma: ir.Type,
        beta: ir.Type,
        eps: float,
    ) -> ir.Type:
        same_element_type(*[t for t in (x, residual, bias, gamma, beta) if t is not None])
        shape = shape_of(x)
        if not shape:
            raise VerifyError("requires an input of rank 1 or more, got []")
        res = shape_of(residual)
        if len(res) != len(shape) or not all(_check_same_size(a, b) for a, b in zip(shape, res)):
            raise VerifyError(
                f"residual {format_shape(res)} must have the shape of x {format_shape(shape)}"
            )
        dim = len(shape) - 1
        if bias is not None:
            _check_param("bias", bias, shape[dim], dim, shape)
        _check_norm_operands(x, gamma, beta, -1, eps)
        return x


class FusedResidualRmsNormOp(_ResidualNorm, name="fused_residual_rms_norm"):
    """RMSNorm of a residual sum: `rms_norm(x + residual [+ bias])` over the last axis.

    `h = x + residual (+ bias)` with `bias` of shape `[D]` broadcast over the
    leading dimensions; the one result is `h / sqrt(mean(h^2) + eps) * gamma +
    beta` over the last axis, the normalised sum (as RLX's fused residual
    norms: the sum itself is not returned).  `h` is formed in f32 and never
    rounded; the statistic accumulates in f32 and the result rounds once to the
    input's element type.
    """


class FusedResidualLayerNormOp(_ResidualNorm, name="fused_residual_layer_norm"):
    """LayerNorm of a residual sum: `layer_norm(x + residual [+ bias])` over the last axis.

    `h = x + residual (+ bias)` with `bias` of shape `[D]` broadcast over the
    leading dimensions; the one result is `(h - mean) / sqrt(var + eps) * gamma
    + beta` with the biased variance over the last axis, the normalised sum (as
    RLX's fused residual norms: the sum itself is not returned).  `h` is formed
    in f32 and never rounded; statistics accumulate in f32 and the result
    rounds once to the input's element type.
    """


# --- SwiGLU ----------------------------------------------------------------------------


class FusedSwigluOp(Rlx.Operation, name="fused_swiglu", traits=[Pure]):
    """SwiGLU of a fused up / gate projection: `[..., 2N] -> [..., N]`.

    The last dimension holds `up` then `gate` (`up = x[..., :N]`,
    `gate = x[..., N:]`); the result is `up * silu(gate)` with
    `silu(g) = g * sigmoid(g)`.  Computed in f32 for f16 and bf16 inputs,
    rounded once.
    """

    input = operand(FloatTensor, "`[..., 2N]`: up projection then gate projection along the last axis")
    result = result(FloatTensor, "`[..., N]`")

    @classmethod
    def infer_result_type(cls, input: ir.Type) -> ir.Type:
        shape = shape_of(input)
        if not shape:
            raise VerifyError("requires an input of rank 1 or more, got []")
        last = shape[-1]
        if last == DYNAMIC:
            return ir.RankedTensorType.get([*shape[:-1], DYNAMIC], ir.RankedTensorType(input).element_type)
        if last % 2:
            raise VerifyError(f"requires an even last dimension (up and gate halves), got {format_shape(shape)}")
        return ir.RankedTensorType.get([*shape[:-1], last // 2], ir.RankedTensorType(input).element_type)
