"""Linear blocks: linear layers, a pair of projections of one input, the SwiGLU feed-forward."""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...dsl import FloatTensor, Pure, VerifyError, operand, result, same_as
from ...ir.shapes import format_shape, shape_of
from ..rlx.dialect import same_element_type
from ..rlx.linalg import FusedMatmulBiasActOp, LoraMatmulOp, check_lora_weights
from .dialect import RlxHir, activations_shape, check_contracting, check_shape, same_size, weight_shape

__all__ = ["LinearOp", "LinearFusedOp", "LoraLinearOp", "SharedLinearPairOp", "SwigluFfnOp"]


def _linear_type(x: ir.Type, w: ir.Type, bias: Optional[ir.Type]) -> ir.Type:
    element = same_element_type(*(t for t in (x, w, bias) if t is not None))
    xs = activations_shape("x", x)
    k, n = weight_shape("w", w, "[K, N]")
    check_contracting("x", xs, "w", (k, n))
    if bias is not None:
        check_shape("bias", bias, [n], "[N]")
    return ir.RankedTensorType.get([*xs[:-1], n], element)


class LinearOp(RlxHir.Operation, name="linear", traits=[Pure]):
    """Linear layer: `act(x @ w [+ bias])`.

    `x` is `[..., K]` (rank 1 or more; leading dimensions are batch), `w` the
    weight `[K, N]` (RLX's layout), the optional `bias` `[N]` is added to every
    row; the result is `[..., N]`.  `activation` is one of `none`, `relu`,
    `gelu` (erf form), `gelu_approx` (tanh form), `silu`, `sigmoid`, `tanh`,
    with the formulas of the MIR activation ops of the same names.

    Expansion (RLX's `HirOp::Linear`): under `direct` with a bias, one
    `rlx.fused_matmul_bias_act`; otherwise the chain `rlx.matmul`, `rlx.add`
    (with a bias), then the activation op (unless `none`).  A rank-1 `x` is
    reshaped to `[1, K]` around the product.
    """

    x = same_as(FusedMatmulBiasActOp.x, doc="input, `[..., K]`")
    w = same_as(FusedMatmulBiasActOp.w)
    bias = operand(FloatTensor, "optional bias, `[N]`", optional=True)
    activation = same_as(FusedMatmulBiasActOp.activation, doc="the activation applied last")
    result = same_as(FusedMatmulBiasActOp.result, doc="`[..., N]`")

    @classmethod
    def infer_result_type(cls, x: ir.Type, w: ir.Type, bias: Optional[ir.Type], activation: str) -> ir.Type:
        return _linear_type(x, w, bias)


class LinearFusedOp(RlxHir.Operation, name="linear_fused", traits=[Pure]):
    """Linear layer with a bias, always fused: `act(x @ w + bias)`.

    Shapes and activations as `rlx_hir.linear`, with the bias `[N]` required.
    Expansion (RLX's `HirOp::LinearFused`): one `rlx.fused_matmul_bias_act`
    under both policies.
    """

    x = same_as(LinearOp.x)
    w = same_as(LinearOp.w)
    bias = same_as(FusedMatmulBiasActOp.bias)
    activation = same_as(LinearOp.activation)
    result = same_as(LinearOp.result)

    @classmethod
    def infer_result_type(cls, x: ir.Type, w: ir.Type, bias: ir.Type, activation: str) -> ir.Type:
        return _linear_type(x, w, bias)


class LoraLinearOp(RlxHir.Operation, name="lora_linear", traits=[Pure]):
    """Linear layer with a low-rank adapter: `act(x @ w + scale * (x @ a) @ b [+ bias])`.

    `x` is `[..., K]` (rank 1 or more), `w` the base weight `[K, N]`, `a`
    `[K, r]` and `b` `[r, N]` the adapter (LoRA's `A` and `B` in RLX's `[in,
    out]` layout), `scale` LoRA's `alpha / r`; bias and activation as
    `rlx_hir.linear`.  The result is `[..., N]`, equal to
    `act(x @ (w + scale * a @ b) [+ bias])`.

    Expansion (RLX's `LoraMatMul`): `rlx.lora_matmul`, then `rlx.add` (with a
    bias) and the activation op (unless `none`), under both policies.  A
    rank-1 `x` is reshaped to `[1, K]` around the product.  The builder's
    `GraphModule.attach_lora` turns an existing `rlx_hir.linear` into this op.
    """

    x = same_as(LinearOp.x)
    w = same_as(LoraMatmulOp.w)
    a = same_as(LoraMatmulOp.a)
    b = same_as(LoraMatmulOp.b)
    bias = same_as(LinearOp.bias)
    scale = same_as(LoraMatmulOp.scale)
    activation = same_as(LinearOp.activation)
    result = same_as(LinearOp.result)

    @classmethod
    def infer_result_type(
        cls, x: ir.Type, w: ir.Type, a: ir.Type, b: ir.Type, bias: Optional[ir.Type], scale: float, activation: str
    ) -> ir.Type:
        element = same_element_type(*(t for t in (x, w, a, b, bias) if t is not None))
        xs = activations_shape("x", x)
        n = check_lora_weights(xs[-1], shape_of(w), shape_of(a), shape_of(b), "x", format_shape(xs))
        if bias is not None:
            check_shape("bias", bias, [n], "[N]")
        return ir.RankedTensorType.get([*xs[:-1], n], element)


class SharedLinearPairOp(RlxHir.Operation, name="shared_linear_pair", traits=[Pure]):
    """Two projections of one input: `(x @ w_first, x @ w_second)`.

    `x` is `[..., K]` (rank 1 or more), `w_first` `[K, N1]`, `w_second`
    `[K, N2]`; the two results are `[..., N1]` and `[..., N2]` (e.g. the
    gate and up projections of an FFN, or K and V).  RLX's
    `shared_linear_pair` returns the two nodes of one `HirOp::SharedLinearPair`;
    here the op has two results.

    Expansion: under `direct`, one `rlx.matmul` of `x` with
    `rlx.concat(w_first, w_second, axis = 1)` (`[K, N1 + N2]`), then two
    `rlx.narrow`s of the last axis (two `rlx.matmul`s when `N1` or `N2` is
    dynamic); under `fusable`, two `rlx.matmul`s.  The
    builder `SharedLinearPairOp(x, w_first, w_second, result_types=[...])`
    takes the result types; `SharedLinearPairOp.build(x, w_first, w_second)`
    infers them.
    """

    x = operand(FloatTensor, "input, `[..., K]`")
    w_first = operand(FloatTensor, "first weight, `[K, N1]`")
    w_second = operand(FloatTensor, "second weight, `[K, N2]`")
    first = result(FloatTensor, "`x @ w_first`, `[..., N1]`")
    second = result(FloatTensor, "`x @ w_second`, `[..., N2]`")

    @classmethod
    def infer_result_types(cls, x: ir.Type, w_first: ir.Type, w_second: ir.Type) -> list[ir.Type]:
        element = same_element_type(x, w_first, w_second)
        xs = activations_shape("x", x)
        k1, n1 = weight_shape("w_first", w_first, "[K, N1]")
        k2, n2 = weight_shape("w_second", w_second, "[K, N2]")
        check_contracting("x", xs, "w_first", (k1, n1))
        check_contracting("x", xs, "w_second", (k2, n2))
        return [ir.RankedTensorType.get([*xs[:-1], n], element) for n in (n1, n2)]

    @classmethod
    def build(cls, x, w_first, w_second, *, loc=None, ip=None) -> "SharedLinearPairOp":
        """Builds the op with its two result types inferred (ValueError when the shapes do not fit)."""
        return cls(x, w_first, w_second, loc=loc, ip=ip)


class SwigluFfnOp(RlxHir.Operation, name="swiglu_ffn", traits=[Pure]):
    """SwiGLU feed-forward: `(up(x) * silu(gate(x))) @ down_w`.

    `x` is `[..., D]` (rank 1 or more), `up_w` and `gate_w` `[D, F]`,
    `down_w` `[F, M]` (`M = D` in a transformer); with `up(x) = x @ up_w`,
    `gate(x) = x @ gate_w` and `silu(g) = g * sigmoid(g)` the result is
    `[..., M]`.

    Expansion (RLX's `HirOp::SwiGLU`): under `direct`,
    `rlx.matmul(x, rlx.concat(up_w, gate_w, axis = 1))` (`[..., 2F]`, up then
    gate), `rlx.fused_swiglu`, `rlx.matmul` with `down_w`; under `fusable`,
    two `rlx.matmul`s, `rlx.silu` of the gate, `rlx.mul` with the up
    projection, `rlx.matmul` with `down_w`.
    """

    x = operand(FloatTensor, "input, `[..., D]`")
    up_w = operand(FloatTensor, "up projection, `[D, F]`")
    gate_w = operand(FloatTensor, "gate projection, `[D, F]`")
    down_w = operand(FloatTensor, "down projection, `[F, M]`")
    result = result(FloatTensor, "`[..., M]`")

    @classmethod
    def infer_result_type(cls, x: ir.Type, up_w: ir.Type, gate_w: ir.Type, down_w: ir.Type) -> ir.Type:
        element = same_element_type(x, up_w, gate_w, down_w)
        xs = activations_shape("x", x)
        up = weight_shape("up_w", up_w, "[D, F]")
        gate = weight_shape("gate_w", gate_w, "[D, F]")
        down = weight_shape("down_w", down_w, "[F, M]")
        check_contracting("x", xs, "up_w", up)
        if not (same_size(gate[0], up[0]) and same_size(gate[1], up[1])):
            raise VerifyError(f"gate_w {format_shape(gate)} must have the shape of up_w {format_shape(up)}")
        if not same_size(down[0], up[1]):
            raise VerifyError(
                f"down_w {format_shape(down)} must have F = {up[1]} rows (the columns of up_w {format_shape(up)})"
            )
        return ir.RankedTensorType.get([*xs[:-1], down[1]], element)
