"""Linear algebra: matmul and its fused and generalised forms."""

from __future__ import annotations

from mlir import ir

from ...dsl import DenseI64ArrayAttr, F32Attr, FloatTensor, Pure, StrEnumAttr, VerifyError, attribute, operand, result
from ...ir.shapes import DYNAMIC, broadcast_shapes, format_shape, shape_of
from .dialect import Rlx, same_element_type

# --- linear algebra -----------------------------------------------------------


class MatmulOp(Rlx.Operation, name="matmul", traits=[Pure]):
    """Matrix product `[..., M, K] x [..., K, N] -> [..., M, N]`.

    Both operands have rank 2 or more; the leading (batch) dimensions broadcast
    as in NumPy, so a `[K, N]` weight applies to every batch of a `[B, M, K]`
    input.  Products accumulate in f32 for f16 and bf16 operands; the result has
    the operands' element type.
    """

    lhs = operand(FloatTensor, "left factor, `[..., M, K]`")
    rhs = operand(FloatTensor, "right factor, `[..., K, N]` (RLX's weight layout)")
    result = result(FloatTensor, "`[broadcast(...), M, N]`")

    @classmethod
    def infer_result_type(cls, lhs: ir.Type, rhs: ir.Type) -> ir.Type:
        element = same_element_type(lhs, rhs)
        a, b = shape_of(lhs), shape_of(rhs)
        if len(a) < 2 or len(b) < 2:
            raise VerifyError(f"requires operands of rank 2 or more, got {format_shape(a)} and {format_shape(b)}")
        if a[-1] != b[-2]:
            raise VerifyError(
                f"contracting dimensions differ: lhs {format_shape(a)} has K = {a[-1]}, "
                f"rhs {format_shape(b)} has K = {b[-2]}"
            )
        batch = broadcast_shapes(a[:-2], b[:-2])
        if batch is None:
            raise VerifyError(
                f"batch dimensions {format_shape(a[:-2])} and {format_shape(b[:-2])} do not broadcast"
            )
        return ir.RankedTensorType.get([*batch, a[-2], b[-1]], element)


def _format_list(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _same_size(a: int, b: int) -> bool:
    return a == b or a == DYNAMIC or b == DYNAMIC


class DotGeneralOp(Rlx.Operation, name="dot_general", traits=[Pure]):
    """General tensor contraction, as XLA's DotGeneral.

    `lhs_contracting[i]` of `lhs` is summed against `rhs_contracting[i]` of
    `rhs`; `lhs_batch[i]` and `rhs_batch[i]` are batch dimensions iterated in
    lockstep.  Result dimensions: the batch dimensions (in `lhs_batch` order),
    then the remaining (free) dimensions of `lhs` in order, then the free
    dimensions of `rhs` in order.  Paired dimensions must have equal sizes (no
    broadcasting), axes are in `0 .. rank-1` (no negative axes, as XLA) and
    each dimension is named at most once.  Products accumulate in f32 for f16
    and bf16 operands; the result has the operands' element type.
    """

    lhs = operand(FloatTensor, "left operand")
    rhs = operand(FloatTensor, "right operand")
    lhs_contracting = attribute(DenseI64ArrayAttr, "contracting dimensions of `lhs`")
    rhs_contracting = attribute(DenseI64ArrayAttr, "contracting dimensions of `rhs`, paired with `lhs_contracting`")
    lhs_batch = attribute(DenseI64ArrayAttr, "batch dimensions of `lhs`", default=())
    rhs_batch = attribute(DenseI64ArrayAttr, "batch dimensions of `rhs`, paired with `lhs_batch`", default=())
    result = result(FloatTensor, "`[batch..., lhs free..., rhs free...]`")

    @classmethod
    def infer_result_type(
        cls,
        lhs: ir.Type,
        rhs: ir.Type,
        lhs_contracting: list[int],
        rhs_contracting: list[int],
        lhs_batch: list[int],
        rhs_batch: list[int],
    ) -> ir.Type:
        element = same_element_type(lhs, rhs)
        a, b = shape_of(lhs), shape_of(rhs)
        for kind, lhs_dims, rhs_dims in (
            ("contracting", lhs_contracting, rhs_contracting),
            ("batch", lhs_batch, rhs_batch),
        ):
            if len(lhs_dims) != len(rhs_dims):
                raise VerifyError(
                    f"lhs_{kind} {_format_list(lhs_dims)} and rhs_{kind} {_format_list(rhs_dims)} "
                    f"differ in length ({len(lhs_dims)} vs {len(rhs_dims)})"
                )
        for side, shape, batch, contracting in (
            ("lhs", a, lhs_batch, lhs_contracting),
            ("rhs", b, rhs_batch, rhs_contracting),
        ):
            for kind, dims in (("batch", batch), ("contracting", contracting)):
                for d in dims:
                    if not 0 <= d < len(shape):
                        raise VerifyError(
                            f"{side}_{kind} axis {d} is out of range for rank {len(shape)} {side} {format_shape(shape)}"
                        )
            used = [*batch, *contracting]
            for d in used:
                if used.count(d) > 1:
                    raise VerifyError(
                        f"{side} dimension {d} is used more than once in {side}_batch {_format_list(batch)} "
                        f"and {side}_contracting {_format_list(contracting)}"
                    )
        for kind, lhs_dims, rhs_dims in (
            ("batch", lhs_batch, rhs_batch),
            ("contracting", lhs_contracting, rhs_contracting),
        ):
            for i, j in zip(lhs_dims, rhs_dims):
                if not _same_size(a[i], b[j]):
                    raise VerifyError(
                        f"{kind} dimensions differ: lhs {format_shape(a)} dimension {i} has size {a[i]}, "
                        f"rhs {format_shape(b)} dimension {j} has size {b[j]}"
                    )
        lhs_free = [d for d in range(len(a)) if d not in lhs_batch and d not in lhs_contracting]
        rhs_free = [d for d in range(len(b)) if d not in rhs_batch and d not in rhs_contracting]
        batch_sizes = [a[i] if a[i] != DYNAMIC else b[j] for i, j in zip(lhs_batch, rhs_batch)]
        shape = [*batch_sizes, *(a[d] for d in lhs_free), *(b[d] for d in rhs_free)]
        return ir.RankedTensorType.get(shape, element)


_ACTIVATION_NAMES = ("none", "relu", "gelu", "gelu_approx", "silu", "sigmoid", "tanh")


class FusedMatmulBiasActOp(Rlx.Operation, name="fused_matmul_bias_act", traits=[Pure]):
    """Linear layer with bias and activation: `act(x @ w + bias)`.

    `x` is `[..., M, K]` (rank 2 or more; leading dimensions are batch), `w` the
    weight `[K, N]` (RLX's layout) and `bias` is `[N]`, added to every row.
    `activation` is one of `none` (identity), `relu`, `gelu` (erf form),
    `gelu_approx` (tanh form), `silu`, `sigmoid`, `tanh`, with the formulas of
    the activation ops of the same names.  Products accumulate in f32 for f16
    and bf16 operands; the bias and activation are applied in f32 and the
    result rounds once to the operands' element type.
    """

    x = operand(FloatTensor, "input, `[..., M, K]`")
    w = operand(FloatTensor, "weight, `[K, N]`")
    bias = operand(FloatTensor, "bias, `[N]`")
    activation = attribute(
        StrEnumAttr(*_ACTIVATION_NAMES), "the activation applied after the bias", default="none"
    )
    result = result(FloatTensor, "`[..., M, N]`")

    @classmethod
    def infer_result_type(cls, x: ir.Type, w: ir.Type, bias: ir.Type, activation: str) -> ir.Type:
        element = same_element_type(x, w, bias)
        a, b, c = shape_of(x), shape_of(w), shape_of(bias)
        if len(a) < 2 or len(b) != 2:
            raise VerifyError(
                f"requires x of rank 2 or more and w of rank 2, got {format_shape(a)} and {format_shape(b)}"
            )
        if not _same_size(a[-1], b[0]):
            raise VerifyError(
                f"contracting dimensions differ: x {format_shape(a)} has K = {a[-1]}, "
                f"w {format_shape(b)} has K = {b[0]}"
            )
        if len(c) != 1 or not _same_size(c[0], b[1]):
            raise VerifyError(f"bias must have shape [{b[1]}] (N of w {format_shape(b)}), got {format_shape(c)}")
        return ir.RankedTensorType.get([*a[:-1], b[1]], element)


class LoraMatmulOp(Rlx.Operation, name="lora_matmul", traits=[Pure]):
    """Matrix product with a low-rank adapter: `x @ w + scale * (x @ a) @ b`.

    `x` is `[..., M, K]` (rank 2 or more; leading dimensions are batch, as for
    `rlx.fused_matmul_bias_act`), `w` the base weight `[K, N]` (RLX's layout),
    `a` the adapter's down projection `[K, r]` and `b` its up projection `[r,
    N]`; the result is `[..., M, N]`, `result[..., m, n] = sum_k x[..., m, k] *
    w[k, n] + scale * sum_j (sum_k x[..., m, k] * a[k, j]) * b[j, n]`.  `scale`
    is LoRA's `alpha / r`.  The adapter is applied as two skinny products
    (`x @ a` is `[..., M, r]`), never by forming `w + scale * a @ b`; the pass
    `rlx-merge-lora` does that once, at compile time, for a frozen adapter.
    Products accumulate in f32 for f16 and bf16 operands (`x @ a` stays in f32)
    and the result rounds once to the operands' element type.
    """

    x = operand(FloatTensor, "input, `[..., M, K]`")
    w = operand(FloatTensor, "base weight, `[K, N]`")
    a = operand(FloatTensor, "adapter down projection, `[K, r]`")
    b = operand(FloatTensor, "adapter up projection, `[r, N]`")
    scale = attribute(F32Attr, "the adapter's scale (LoRA's `alpha / r`)")
    result = result(FloatTensor, "`[..., M, N]`")

    @classmethod
    def infer_result_type(cls, x: ir.Type, w: ir.Type, a: ir.Type, b: ir.Type, scale: float) -> ir.Type:
        element = same_element_type(x, w, a, b)
        xs = shape_of(x)
        if len(xs) < 2:
            raise VerifyError(f"requires x of rank 2 or more, got {format_shape(xs)}")
        n = check_lora_weights(xs[-1], shape_of(w), shape_of(a), shape_of(b), "x", format_shape(xs))
        return ir.RankedTensorType.get([*xs[:-1], n], element)


def check_lora_weights(k: int, w: list, a: list, b: list, x_name: str, x_shape: str) -> int:
    """VerifyError unless `w [K, N]`, `a [K, r]`, `b [r, N]` fit an input whose last dimension is `k`; N."""
    for name, shape, layout in (("w", w, "[K, N]"), ("a", a, "[K, r]"), ("b", b, "[r, N]")):
        if len(shape) != 2:
            raise VerifyError(f"requires {name} of rank 2 ({layout}), got {format_shape(shape)}")
    for name, shape in (("w", w), ("a", a)):
        if not _same_size(k, shape[0]):
            raise VerifyError(
                f"contracting dimensions differ: {x_name} {x_shape} has K = {k}, {name} {format_shape(shape)} "
                f"has K = {shape[0]}"
            )
    if not _same_size(a[1], b[0]):
        raise VerifyError(
            f"adapter ranks differ: a {format_shape(a)} has r = {a[1]}, b {format_shape(b)} has r = {b[0]}"
        )
    if not _same_size(b[1], w[1]):
        raise VerifyError(
            f"output dimensions differ: w {format_shape(w)} has N = {w[1]}, b {format_shape(b)} has N = {b[1]}"
        )
    return w[1] if w[1] != DYNAMIC else b[1]
