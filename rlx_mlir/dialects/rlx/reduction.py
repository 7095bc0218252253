"""Reductions over axes: reduce, softmax, cumsum, argmax."""

from __future__ import annotations

from mlir import ir

from ...dsl import (
    BoolAttr,
    DenseI64ArrayAttr,
    FloatTensor,
    I64Attr,
    Pure,
    StrEnumAttr,
    TensorOf,
    VerifyError,
    attribute,
    operand,
    result,
)
from ...ir.shapes import element_of, format_shape, shape_of
from .dialect import Rlx
from .shape import _normalize_axis

_REDUCE_KINDS = ("sum", "mean", "max", "min", "prod")


def _reduced_shape(shape, axes, keep_dim: bool) -> list[int]:
    return [1 if d in axes and keep_dim else size for d, size in enumerate(shape) if keep_dim or d not in axes]


class ReduceOp(Rlx.Operation, name="reduce", traits=[Pure]):
    """Reduces over `axes` with sum, mean, max, min or prod (`torch.sum`, `torch.amax`, ...).

    `axes` is non-empty, its entries are unique (after resolving negative axes,
    which count from the end) and within the input's rank.  The reduced
    dimensions are removed from the result, or kept with size 1 when
    `keep_dim` is true (PyTorch's `keepdim`).  `mean` is the sum divided by the
    number of reduced elements.  `max` and `min` propagate NaN (like
    `numpy.max`).  f16 and bf16 inputs accumulate in f32 and round once to the
    input's element type.  Reducing an empty axis gives the kind's identity
    (0 for sum, 1 for prod, -inf for max, +inf for min; NaN for mean).
    """

    input = operand(FloatTensor, "the tensor to reduce")
    kind = attribute(StrEnumAttr(*_REDUCE_KINDS), "the reduction")
    axes = attribute(DenseI64ArrayAttr, "the axes to reduce over: non-empty, unique, negative counts from the end")
    keep_dim = attribute(BoolAttr, "keep the reduced axes as size-1 dimensions", default=False)
    result = result(FloatTensor, "the input's element type; reduced dimensions removed (or 1 with `keep_dim`)")

    @classmethod
    def infer_result_type(cls, input: ir.Type, kind: str, axes: list[int], keep_dim: bool) -> ir.Type:
        shape = shape_of(input)
        if not axes:
            raise VerifyError("requires at least one axis to reduce over")
        resolved = [_normalize_axis(a, shape) for a in axes]
        if len(set(resolved)) != len(resolved):
            listed = ", ".join(map(str, axes))
            raise VerifyError(f"axes [{listed}] name a dimension of {format_shape(shape)} more than once")
        return ir.RankedTensorType.get(_reduced_shape(shape, set(resolved), keep_dim), element_of(input))


class SoftmaxOp(Rlx.Operation, name="softmax", traits=[Pure]):
    """`exp(x - max(x)) / sum(exp(x - max(x)))` along `axis` (`torch.softmax`).

    Numerically stable: the maximum along the axis is subtracted before the
    exponential, so large-magnitude inputs do not overflow.  Computed in f32
    (f16 and bf16 inputs are extended and the result rounded once).  A
    negative `axis` counts from the end.  The result has the input's type.
    """

    input = operand(FloatTensor, "the logits")
    axis = attribute(I64Attr, "the axis to normalise along (negative counts from the end)")
    result = result(FloatTensor, "probabilities summing to 1 along `axis`, same type as the input")

    @classmethod
    def infer_result_type(cls, input: ir.Type, axis: int) -> ir.Type:
        _normalize_axis(axis, shape_of(input))
        return input


class CumsumOp(Rlx.Operation, name="cumsum", traits=[Pure]):
    """Prefix sums along `axis` (`torch.cumsum`; exclusive like `cumsum - x`).

    Inclusive: `result[..., i, ...] = sum(x[..., 0..i, ...])`; exclusive:
    `sum(x[..., 0..i-1, ...])`, so the first entry is 0.  Sums accumulate in
    f32 (f16 and bf16 results are rounded once per entry from the f32 running
    sum).  A negative `axis` counts from the end.  The result has the input's
    type.  Lowers to one loop along the axis carrying the running sum (O(n)).
    """

    input = operand(FloatTensor, "the tensor to sum up")
    axis = attribute(I64Attr, "the axis to accumulate along (negative counts from the end)")
    exclusive = attribute(BoolAttr, "leave out the entry itself (the first sum is 0)", default=False)
    result = result(FloatTensor, "the running sums, same type as the input")

    @classmethod
    def infer_result_type(cls, input: ir.Type, axis: int, exclusive: bool) -> ir.Type:
        _normalize_axis(axis, shape_of(input))
        return input


class ArgmaxOp(Rlx.Operation, name="argmax", traits=[Pure]):
    """The i64 index of the maximum along `axis` (`torch.argmax` / `numpy.argmax`).

    Ties go to the lowest index; NaN counts as larger than any number (the
    first NaN wins, as in NumPy and PyTorch).  The axis is removed from the
    result shape, or kept with size 1 when `keep_dim` is true.  A negative
    `axis` counts from the end; the axis must not be empty.
    """

    input = operand(FloatTensor, "the values to compare")
    axis = attribute(I64Attr, "the axis to search along (negative counts from the end)")
    keep_dim = attribute(BoolAttr, "keep the searched axis as a size-1 dimension", default=False)
    result = result(TensorOf(("i64",)), "i64 indices along `axis`")

    @classmethod
    def infer_result_type(cls, input: ir.Type, axis: int, keep_dim: bool) -> ir.Type:
        shape = shape_of(input)
        dim = _normalize_axis(axis, shape)
        if shape[dim] == 0:
            raise VerifyError(f"cannot take the argmax along the empty axis {axis} of {format_shape(shape)}")
        out = _reduced_shape(shape, {dim}, keep_dim)
        return ir.RankedTensorType.get(out, ir.IntegerType.get_signless(64))
