"""The MIR dialect `rlx`: RLX's fused tensor DAG, one result per op.

Ops are on ranked tensors.  Shapes follow RLX (and NumPy where RLX says
"broadcast"); matmul weights are `[K, N]`.  Each op documents its semantics;
`dialect/rlx.md` is rendered from these classes.
"""

from __future__ import annotations

from mlir import ir

from ..dsl import (
    AnyTensor,
    DenseI64ArrayAttr,
    Dialect,
    Elementwise,
    FloatTensor,
    Pure,
    VerifyError,
    attribute,
    operand,
    result,
)
from ..shapes import broadcast_shapes, element_of, format_shape, is_static, num_elements, shape_of


class Rlx(Dialect, name="rlx"):
    """RLX MIR: a fused tensor DAG of inference ops on ranked tensors."""


def _same_element_type(*types: ir.Type) -> ir.Type:
    elements = [element_of(t) for t in types]
    if any(e != elements[0] for e in elements[1:]):
        listed = ", ".join(str(e) for e in elements)
        raise VerifyError(f"requires operands of one element type, got {listed}")
    return elements[0]


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
        element = _same_element_type(lhs, rhs)
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


# --- elementwise binaries -------------------------------------------------------


class _Binary(Rlx.Operation, traits=[Pure, Elementwise]):
    lhs = operand(FloatTensor, "first operand")
    rhs = operand(FloatTensor, "second operand")
    result = result(FloatTensor, "the NumPy broadcast of both operand shapes")

    @classmethod
    def infer_result_type(cls, lhs: ir.Type, rhs: ir.Type) -> ir.Type:
        element = _same_element_type(lhs, rhs)
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


# --- shape ------------------------------------------------------------------------


class ReshapeOp(Rlx.Operation, name="reshape", traits=[Pure]):
    """Reinterprets the elements (row-major order) in a new shape.

    The result type states the new shape; its element count and element type
    equal the input's.  The builder accepts one `-1` dimension and resolves it.
    A pure view: no data moves.
    """

    input = operand(AnyTensor, "the tensor to reshape")
    result = result(AnyTensor, "same elements, new shape")

    def verify(self) -> None:
        source, target = self.input.type, self.result.type
        if element_of(source) != element_of(target):
            raise VerifyError(f"changes the element type from {element_of(source)} to {element_of(target)}")
        a, b = shape_of(source), shape_of(target)
        if is_static(a) and is_static(b) and num_elements(a) != num_elements(b):
            raise VerifyError(
                f"cannot reshape {format_shape(a)} ({num_elements(a)} elements) "
                f"to {format_shape(b)} ({num_elements(b)} elements)"
            )


class TransposeOp(Rlx.Operation, name="transpose", traits=[Pure]):
    """Permutes dimensions: `result.shape[i] = input.shape[perm[i]]`."""

    input = operand(AnyTensor, "the tensor to permute")
    perm = attribute(DenseI64ArrayAttr, "a permutation of `0 .. rank-1`")
    result = result(AnyTensor, "the permuted tensor")

    @classmethod
    def infer_result_type(cls, input: ir.Type, perm: list[int]) -> ir.Type:
        shape = shape_of(input)
        if sorted(perm) != list(range(len(shape))):
            raise VerifyError(
                f"perm [{', '.join(map(str, perm))}] is not a permutation of the {len(shape)} dimensions "
                f"of {format_shape(shape)}"
            )
        return ir.RankedTensorType.get([shape[p] for p in perm], element_of(input))
