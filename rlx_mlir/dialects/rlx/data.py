"""Leaves and data: constants and casts.

Function arguments are the other leaves: an argument is an input unless it
carries the unit attribute `rlx.param` (a weight); `rlx.name = "..."` names it
(see `rlx_mlir.runtime.signature`).
"""

from __future__ import annotations

from mlir import ir

from ...dsl import DenseElementsAttr, Pure, TensorOf, VerifyError, attribute, element_type_from_name, operand, result
from ...ir.dtypes import ALIASES
from ...ir.shapes import format_shape, shape_of
from .dialect import Rlx

CASTABLE = ("f32", "f16", "bf16", "f8E4M3FN", "i8", "ui8", "i32", "i64", "i1")
CastableTensor = TensorOf(CASTABLE)


class ConstantOp(Rlx.Operation, name="constant", traits=[Pure]):
    """A tensor constant: `value` (a dense elements attribute) with its own type.

        %w = "rlx.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    """

    value = attribute(DenseElementsAttr, "the elements; the result has this attribute's type")
    result = result(TensorOf(), "the constant tensor")

    @classmethod
    def infer_result_type(cls, value) -> ir.Type:
        return value.type


class CastOp(Rlx.Operation, name="cast", traits=[Pure]):
    """Converts elements to the result's element type (f32, f16, bf16, f8E4M3FN, i8, ui8, i32, i64, i1); shape unchanged.

    As PyTorch's `Tensor.to`: floats round to nearest even when narrowed; floats
    to integers truncate toward zero (NaN and out-of-range values give
    unspecified results); integers to floats round to nearest; integers
    sign-extend (`ui8`, unsigned bytes: zero-extend) or truncate (keeping the
    low bits, as NumPy's `astype`); anything to i1 is `x != 0` (NaN is true); i1
    to a number is 0 or 1.  `f8E4M3FN` (the 8-bit float: largest finite 448, no
    infinities) converts through f32, exactly to it and from it rounding to
    nearest even, what rounds beyond 448 (and infinities) becoming NaN, as
    ml_dtypes' `float8_e4m3fn` converts.  The builder is `CastOp(x,
    result_type=...)`, or `CastOp.to(x, "i32")` (`"u8"` names `ui8`).
    """

    input = operand(CastableTensor, "the tensor to convert")
    result = result(CastableTensor, "same shape, the target element type")

    def verify(self) -> None:
        source, target = shape_of(self.input.type), shape_of(self.result.type)
        if source != target:
            raise VerifyError(f"changes the shape from {format_shape(source)} to {format_shape(target)}")

    @classmethod
    def to(cls, input: ir.Value, dtype: str, *, loc=None, ip=None) -> "CastOp":
        """Builds a cast of `input` to the element type named `dtype` ("f16", "i64", ...)."""
        if dtype not in CASTABLE and ALIASES.get(dtype) not in CASTABLE:
            raise ValueError(f"'rlx.cast' cannot convert to '{dtype}'; targets: {', '.join(CASTABLE)}")
        element = element_type_from_name(dtype)
        result_type = ir.RankedTensorType.get(list(shape_of(input.type)), element)
        return cls(input, result_type=result_type, loc=loc, ip=ip)


__all__ = ["CastOp", "ConstantOp"]
