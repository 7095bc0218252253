"""Elementwise ops: NumPy-broadcast binaries, activations, comparisons and select."""

from __future__ import annotations

from mlir import ir

from ...dsl import (
    BoolTensor,
    Elementwise,
    F32Attr,
    FloatTensor,
    Pure,
    StrEnumAttr,
    TensorOf,
    VerifyError,
    attribute,
    operand,
    result,
)
from ...ir.shapes import broadcast_shapes, format_shape, shape_of
from .dialect import Rlx, same_element_type

# --- elementwise binaries -------------------------------------------------------


def broadcast_all(*types: ir.Type) -> tuple[int, ...]:
    """The NumPy broadcast of the operands' shapes; VerifyError when they do not broadcast."""
    shape: tuple[int, ...] = ()
    for type_ in types:
        merged = broadcast_shapes(shape, shape_of(type_))
        if merged is None:
            listed = " and ".join(format_shape(shape_of(t)) for t in types)
            raise VerifyError(f"operand shapes {listed} do not broadcast")
        shape = merged
    return shape


def broadcast_binary_type(lhs: ir.Type, rhs: ir.Type) -> ir.Type:
    """The result of an elementwise binary: both operands' element type, their NumPy broadcast shape."""
    element = same_element_type(lhs, rhs)
    return ir.RankedTensorType.get(broadcast_all(lhs, rhs), element)


class _Binary(Rlx.Operation, traits=[Pure, Elementwise]):
    lhs = operand(FloatTensor, "first operand")
    rhs = operand(FloatTensor, "second operand")
    result = result(FloatTensor, "the NumPy broadcast of both operand shapes")

    @classmethod
    def infer_result_type(cls, lhs: ir.Type, rhs: ir.Type) -> ir.Type:
        return broadcast_binary_type(lhs, rhs)


def _binary(class_name: str, op_name: str, formula: str) -> type:
    doc = (
        f"Elementwise `{formula}` with NumPy broadcasting.\n\n"
        "Operands share an element type; size-1 and missing leading dimensions broadcast."
    )
    return type(class_name, (_Binary,), {"__doc__": doc, "__module__": __name__}, name=op_name)


AddOp = _binary("AddOp", "add", "lhs + rhs")
SubOp = _binary("SubOp", "sub", "lhs - rhs")
MulOp = _binary("MulOp", "mul", "lhs * rhs")
DivOp = _binary("DivOp", "div", "lhs / rhs")
MaxOp = _binary("MaxOp", "max", "max(lhs, rhs)")
MinOp = _binary("MinOp", "min", "min(lhs, rhs)")
PowOp = _binary("PowOp", "pow", "lhs ** rhs")


# --- activations -------------------------------------------------------------------


class _Activation(Rlx.Operation, traits=[Pure, Elementwise]):
    input = operand(FloatTensor, "the tensor to transform")
    result = result(FloatTensor, "same type as the input")

    @classmethod
    def infer_result_type(cls, input: ir.Type) -> ir.Type:
        return input


def _activation(class_name: str, op_name: str, formula: str) -> type:
    doc = f"Elementwise activation `{formula}`, computed in f32 for f16 and bf16 inputs."
    return type(class_name, (_Activation,), {"__doc__": doc, "__module__": __name__}, name=op_name)


ReluOp = _activation("ReluOp", "relu", "max(x, 0)")
GeluOp = _activation("GeluOp", "gelu", "0.5 * x * (1 + erf(x / sqrt(2)))")
GeluApproxOp = _activation(
    "GeluApproxOp", "gelu_approx", "0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))"
)
SiluOp = _activation("SiluOp", "silu", "x * sigmoid(x)")
SigmoidOp = _activation("SigmoidOp", "sigmoid", "1 / (1 + exp(-x))")
TanhOp = _activation("TanhOp", "tanh", "tanh(x)")
ExpOp = _activation("ExpOp", "exp", "exp(x)")
LogOp = _activation("LogOp", "log", "log(x)")
SqrtOp = _activation("SqrtOp", "sqrt", "sqrt(x)")
RsqrtOp = _activation("RsqrtOp", "rsqrt", "1 / sqrt(x)")
NegOp = _activation("NegOp", "neg", "-x")
AbsOp = _activation("AbsOp", "abs", "|x|")
SoftplusOp = _activation(
    "SoftplusOp", "softplus", "log(1 + exp(x)), computed as max(x, 0) + log1p(exp(-|x|)) so that it never overflows"
)
SinOp = _activation("SinOp", "sin", "sin(x)")
CosOp = _activation("CosOp", "cos", "cos(x)")
FloorOp = _activation("FloorOp", "floor", "floor(x)")
RoundOp = _activation("RoundOp", "round", "x rounded to the nearest integer, halves to even (numpy.round)")


class ClampOp(Rlx.Operation, name="clamp", traits=[Pure, Elementwise]):
    """Elementwise `min(max(x, min), max)` (numpy's `clip`); an absent bound does not clamp.

    NaN stays NaN. The bounds are given in f32 and compared in f32 for f16 and bf16 inputs.
    """

    input = operand(FloatTensor, "the tensor to clamp")
    min = attribute(F32Attr, "the lower bound; absent means none", optional=True)
    max = attribute(F32Attr, "the upper bound; absent means none", optional=True)
    result = result(FloatTensor, "same type as the input")

    @classmethod
    def infer_result_type(cls, input: ir.Type, min=None, max=None) -> ir.Type:
        if min is None and max is None:
            raise VerifyError("needs at least one of the attributes 'min' and 'max'")
        if min is not None and max is not None and not min <= max:
            raise VerifyError(f"min ({min:g}) must not exceed max ({max:g})")
        return input


# --- integer bitwise ops ---------------------------------------------------------------

BitsTensor = TensorOf(("i8", "ui8", "i32", "i64"))


class _Bitwise(Rlx.Operation, traits=[Pure, Elementwise]):
    lhs = operand(BitsTensor, "first operand")
    rhs = operand(BitsTensor, "second operand, same element type")
    result = result(BitsTensor, "the NumPy broadcast of both operand shapes, the operands' element type")

    @classmethod
    def infer_result_type(cls, lhs: ir.Type, rhs: ir.Type) -> ir.Type:
        return broadcast_binary_type(lhs, rhs)


def _bitwise(class_name: str, op_name: str, formula: str) -> type:
    doc = (
        f"Elementwise integer `{formula}` with NumPy broadcasting (for unpacking packed codes).\n\n"
        "Operands share an integer element type: i8, ui8, i32 or i64. A shift by a negative amount or by "
        "the element width or more gives what shifting one bit at a time would: 0, or -1 for an "
        "arithmetic right shift of a negative value."
    )
    return type(class_name, (_Bitwise,), {"__doc__": doc, "__module__": __name__}, name=op_name)


BitwiseAndOp = _bitwise("BitwiseAndOp", "bitwise_and", "lhs & rhs")
BitwiseOrOp = _bitwise("BitwiseOrOp", "bitwise_or", "lhs | rhs")
BitwiseXorOp = _bitwise("BitwiseXorOp", "bitwise_xor", "lhs ^ rhs")
ShiftLeftOp = _bitwise("ShiftLeftOp", "shift_left", "lhs << rhs")
ShiftRightOp = _bitwise(
    "ShiftRightOp", "shift_right", "lhs >> rhs (arithmetic for signed types, logical for ui8, as numpy)"
)


# --- comparison and select ------------------------------------------------------------

NumericTensor = TensorOf(("f32", "f16", "bf16", "i32", "i64"))
SelectableTensor = TensorOf(("f32", "f16", "bf16", "i32", "i64", "i1"))
PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


class CompareOp(Rlx.Operation, name="compare", traits=[Pure, Elementwise]):
    """Elementwise comparison `lhs <predicate> rhs` to i1, with NumPy broadcasting.

    Floats compare as NumPy does: every predicate is false when an operand is
    NaN, except `ne`, which is true.  Integers compare as signed values.
    """

    lhs = operand(NumericTensor, "first operand")
    rhs = operand(NumericTensor, "second operand, same element type")
    predicate = attribute(StrEnumAttr(*PREDICATES), "the comparison")
    result = result(BoolTensor, "i1, the NumPy broadcast of both operand shapes")

    @classmethod
    def infer_result_type(cls, lhs: ir.Type, rhs: ir.Type, predicate: str) -> ir.Type:
        same_element_type(lhs, rhs)
        return ir.RankedTensorType.get(broadcast_all(lhs, rhs), ir.IntegerType.get_signless(1))


class WhereOp(Rlx.Operation, name="where", traits=[Pure, Elementwise]):
    """Elementwise select: `condition ? on_true : on_false`, all three broadcast (NumPy's `where`)."""

    condition = operand(BoolTensor, "i1 selector")
    on_true = operand(SelectableTensor, "taken where the condition holds")
    on_false = operand(SelectableTensor, "taken elsewhere; same element type as on_true")
    result = result(SelectableTensor, "the broadcast of all three shapes")

    @classmethod
    def infer_result_type(cls, condition: ir.Type, on_true: ir.Type, on_false: ir.Type) -> ir.Type:
        element = same_element_type(on_true, on_false)
        return ir.RankedTensorType.get(broadcast_all(condition, on_true, on_false), element)
