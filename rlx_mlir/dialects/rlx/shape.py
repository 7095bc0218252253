"""Shape and data movement: reshape, transpose, narrow, concat, expand, gather."""

from __future__ import annotations

from mlir import ir

from ...dsl import (
    AnyTensor,
    DenseI64ArrayAttr,
    Pure,
    VerifyError,
    attribute,
    operand,
    result,
)
from ...shapes import element_of, format_shape, is_static, num_elements, shape_of
from .dialect import Rlx


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
