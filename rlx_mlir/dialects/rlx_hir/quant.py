"""Linear layers over quantised weights."""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...dsl import ByteTensor, Pure, StrEnumAttr, TensorOf, VerifyError, attribute, operand, result, same_as
from ...ir.shapes import format_shape, shape_of
from ..rlx.linalg import FusedMatmulBiasActOp
from ..rlx.quant import GGUF_SCHEMES, check_weight_bytes
from .dialect import RlxHir, activations_shape, check_shape

__all__ = ["DequantLinearOp"]


class DequantLinearOp(RlxHir.Operation, name="dequant_linear", traits=[Pure]):
    """Linear layer with a quantised weight: `act(x @ dequant(w).T [+ bias])`.

    `x` is `[..., K]` f32 (rank 1 or more), `w` the weight `W [N, K]` as GGUF
    blocks, `ui8 [N, K / block * block_bytes]` in the `scheme`'s layout (see
    `rlx.dequant_matmul`, which documents every layout byte by byte), the
    optional `bias` `[N]` is added to every row; the result is `[..., N]` f32.
    `activation` as `rlx_hir.linear`.

    Expansion (RLX's `DequantMatMul`): `rlx.dequant_matmul`, then `rlx.add`
    (with a bias) and the activation op (unless `none`), under both policies.
    """

    x = operand(TensorOf(("f32",)), "input, `[..., K]`")
    w = operand(ByteTensor, "the weight `[N, K]` as GGUF blocks, `[N, K / block * block_bytes]` bytes")
    bias = operand(TensorOf(("f32",)), "optional bias, `[N]`", optional=True)
    scheme = attribute(StrEnumAttr(*GGUF_SCHEMES), "the block format of `w`")
    activation = same_as(FusedMatmulBiasActOp.activation, doc="the activation applied last")
    result = result(TensorOf(("f32",)), "`[..., N]`")

    @classmethod
    def infer_result_type(
        cls, x: ir.Type, w: ir.Type, bias: Optional[ir.Type], scheme: str, activation: str
    ) -> ir.Type:
        xs, ws = activations_shape("x", x), shape_of(w)
        if len(ws) != 2:
            raise VerifyError(f"w must have rank 2 ([N, bytes per row]), got {format_shape(ws)}")
        check_weight_bytes(scheme, xs[-1], ws[1])
        if bias is not None:
            check_shape("bias", bias, [ws[0]], "[N]")
        return ir.RankedTensorType.get([*xs[:-1], ws[0]], ir.F32Type.get())
