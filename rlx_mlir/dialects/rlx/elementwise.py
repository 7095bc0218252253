"""Elementwise ops: NumPy-broadcast binaries and activations."""

from __future__ import annotations

from mlir import ir

from ...dsl import (
    Elementwise,
    FloatTensor,
    Pure,
    VerifyError,
    operand,
    result,
)
from ...shapes import broadcast_shapes, format_shape, shape_of
from .dialect import Rlx, same_element_type


# --- elementwise binaries -------------------------------------------------------


class _Binary(Rlx.Operation, traits=[Pure, Elementwise]):
    lhs = operand(FloatTensor, "first operand")
    rhs = operand(FloatTensor, "second operand")
    result = result(FloatTensor, "the NumPy broadcast of both operand shapes")

    @classmethod
    def infer_result_type(cls, lhs: ir.Type, rhs: ir.Type) -> ir.Type:
        element = same_element_type(lhs, rhs)
        shape = broadcast_shapes(shape_of(lhs), shape_of(rhs))
        if shape is None:
            raise VerifyError(
                f"operand shapes {format_shape(shape_of(lhs))} and {format_shape(shape_of(rhs))} do not broadcast"
            )
        return ir.RankedTensorType.get(shape, element)


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
