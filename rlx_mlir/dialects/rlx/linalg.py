"""Linear algebra: matmul and its fused and generalised forms."""

from __future__ import annotations

from mlir import ir

from ...dsl import (
    FloatTensor,
    Pure,
    VerifyError,
    operand,
    result,
)
from ...shapes import broadcast_shapes, format_shape, shape_of
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
