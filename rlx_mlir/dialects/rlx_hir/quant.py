"""Linear layers over quantised weights."""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...dsl import Pure, TensorOf, VerifyError, operand, result, same_as
from ...ir.shapes import shape_of
from ..rlx.linalg import FusedMatmulBiasActOp
from ..rlx.quant import DequantMatmulOp, check_activations, weight_columns
from ..rlx.quant_affine import check_global_scale, side_count
from .dialect import RlxHir, activations_shape, check_shape

__all__ = ["DequantLinearOp"]


class DequantLinearOp(RlxHir.Operation, name="dequant_linear", traits=[Pure]):
    """Linear layer with a quantised weight: `act(x @ W [+ bias])`, `W` decoded from `w` (and side tensors).

    `x` is `[..., K]` f32 (rank 1 or more); `w` holds the weight in the
    `scheme`'s layout (see `rlx.dequant_matmul`, which documents every layout
    byte by byte): GGUF blocks `ui8 [N, K / block * block_bytes]` of `W [N,
    K]`, or the codes `[K, N]` of the side-tensor schemes.  The operands after
    `w` (one variadic operand, so that the GGUF form `(x, w[, bias])` needs no
    segment sizes) are, for a GGUF scheme, the optional `bias` `[N]`, added to
    every row; for a side-tensor scheme, its side tensors in
    `rlx.dequant_matmul`'s order, and no bias: IRDL holds the tensors of a
    variadic operand to one type, which a bias `[N]` and the scales `[K / B,
    N]` do not share (the builder's `dequant_linear` adds such a bias with
    `rlx.add`).  The result is `[..., N]` f32.  `activation` as
    `rlx_hir.linear`; `global_scale` and `activations` as `rlx.dequant_matmul`'s.

    Expansion (RLX's `DequantMatMul`): `rlx.dequant_matmul`, then `rlx.add`
    (with a bias) and the activation op (unless `none`), under both policies.
    """

    x = operand(TensorOf(("f32",)), "input, `[..., K]`")
    w = same_as(DequantMatmulOp.w)
    extra = operand(
        TensorOf(("f32", "ui8")),
        "GGUF: the optional bias `[N]` f32; side-tensor schemes: the side tensors (`rlx.dequant_matmul`'s `side`)",
        variadic=True,
    )
    scheme = same_as(DequantMatmulOp.scheme)
    global_scale = same_as(DequantMatmulOp.global_scale)
    activations = same_as(DequantMatmulOp.activations)
    activation = same_as(FusedMatmulBiasActOp.activation, doc="the activation applied last")
    result = result(TensorOf(("f32",)), "`[..., N]`")

    @property
    def side(self) -> list:
        """The scheme's side tensors (none for a GGUF scheme)."""
        return list(self.extra) if side_count(self.scheme) else []

    @property
    def bias(self) -> Optional[ir.Value]:
        """The bias (a GGUF scheme's only operand after `w`), or None."""
        extra = list(self.extra)
        return extra[0] if extra and not side_count(self.scheme) else None

    @classmethod
    def infer_result_type(
        cls, x: ir.Type, w: ir.Type, extra: list, scheme: str, global_scale, activations, activation: str
    ) -> ir.Type:
        xs = activations_shape("x", x)
        count = side_count(scheme)
        if count == 0 and len(extra) > 1:
            raise VerifyError(f"scheme '{scheme}' takes one optional bias after w, but {len(extra)} operands follow w")
        if count and len(extra) == count + 1:
            raise VerifyError(
                f"scheme '{scheme}' takes its {count} side tensor{'s' if count != 1 else ''} after w and no bias "
                "(the operands after w share one type); add the bias with rlx.add"
            )
        side, bias = (extra, None) if count else ([], extra[0] if extra else None)
        n = weight_columns(scheme, xs[-1], w, side, types=False)
        check_global_scale(scheme, global_scale)
        check_activations(scheme, activations)
        if bias is not None:
            check_shape("bias", bias, [n], "[N]")
        return ir.RankedTensorType.get([*xs[:-1], n], ir.F32Type.get())

    def verify(self) -> None:
        weight_columns(self.scheme, shape_of(self.x.type)[-1], self.w.type, [v.type for v in self.side])
