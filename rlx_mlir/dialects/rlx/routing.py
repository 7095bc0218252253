"""Routing (mixture of experts): row scatter-add, matmuls whose weight is picked per row from a stack of experts."""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...dsl import ByteTensor, I64Attr, Pure, StrEnumAttr, TensorOf, VerifyError, attribute, operand, result
from ...ir.shapes import DYNAMIC, format_shape, shape_of
from .dialect import Rlx, same_element_type
from .quant import GGUF_SCHEMES, check_weight_bytes, packed_row_weights

__all__ = ["ScatterAddOp", "GroupedMatmulOp", "DequantGroupedMatmulOp", "DequantMoeWeightsOp"]

I64Tensor = TensorOf(("i64",))
F32Tensor = TensorOf(("f32",))


def _known(*sizes: int) -> bool:
    return all(s != DYNAMIC for s in sizes)


class ScatterAddOp(Rlx.Operation, name="scatter_add", traits=[Pure]):
    """Adds rows of `updates` into the rows of a tensor named by `indices` (RLX's `ScatterAdd`).

    `updates [U, T...]` (f32), `indices i64 [U]`; the result is `[D, T...]`:
    `init` when given (the tensor accumulated into), else zeros of `D =
    out_dim` rows.  Exactly one of `init` and `out_dim` is given.  Then, for
    every `u` in `0 .. U-1` whose index is in range (`0 <= indices[u] < D`):

        result[indices[u], ...] += updates[u, ...]

    Duplicate indices accumulate (each update is added once; rows are added
    in ascending `u`, in f32).  An index outside `[0, D)` (negative ones
    included: they do not count from the end) drops its row: it adds nothing,
    and never writes out of bounds.  This is the combine step of a routed
    mixture of experts: expert outputs, one row per (token, choice), added
    back into their token's row.
    """

    updates = operand(F32Tensor, "the rows to add, `[U, T...]`")
    indices = operand(I64Tensor, "the destination row of each update, `i64 [U]`")
    init = operand(F32Tensor, "the tensor added into, `[D, T...]`; absent: zeros of `out_dim` rows", optional=True)
    out_dim = attribute(I64Attr, "`D`, the rows of the result when there is no `init`", optional=True)
    result = result(F32Tensor, "`[D, T...]`")

    @classmethod
    def infer_result_type(cls, updates: ir.Type, indices: ir.Type, init: Optional[ir.Type], out_dim: Optional[int]) -> ir.Type:
        us, idx = shape_of(updates), shape_of(indices)
        if not us:
            raise VerifyError("requires updates of rank 1 or more, [U, T...], got a rank 0 updates []")
        if len(idx) != 1:
            raise VerifyError(f"requires indices of rank 1, [U], got {format_shape(idx)}")
        if _known(us[0], idx[0]) and us[0] != idx[0]:
            raise VerifyError(f"indices {format_shape(idx)} must have one index per row of updates {format_shape(us)}")
        if (init is None) == (out_dim is None):
            raise VerifyError("requires exactly one of an init operand and an out_dim attribute")
        if init is not None:
            shape = shape_of(init)
            if len(shape) != len(us) or any(_known(a, b) and a != b for a, b in zip(shape[1:], us[1:])):
                raise VerifyError(
                    f"init {format_shape(shape)} must be [D, T...] with the row shape of updates {format_shape(us)}"
                )
            return ir.RankedTensorType.get(list(shape), ir.F32Type.get())
        if out_dim < 0:
            raise VerifyError(f"out_dim {out_dim} must not be negative")
        return ir.RankedTensorType.get([out_dim, *us[1:]], ir.F32Type.get())


def _check_rows(x_shape, idx_shape) -> None:
    if len(x_shape) != 2:
        raise VerifyError(f"requires x of rank 2, [M, K], got {format_shape(x_shape)}")
    if len(idx_shape) != 1:
        raise VerifyError(f"requires expert_idx of rank 1, [M], got {format_shape(idx_shape)}")
    if _known(x_shape[0], idx_shape[0]) and x_shape[0] != idx_shape[0]:
        raise VerifyError(f"expert_idx {format_shape(idx_shape)} must have one expert per row of x {format_shape(x_shape)}")


class GroupedMatmulOp(Rlx.Operation, name="grouped_matmul", traits=[Pure]):
    """Per-row expert matmul: row `m` of `x` times the weight of expert `expert_idx[m]` (RLX's `GroupedMatMul`).

    `x [M, K]`, `weight [E, K, N]` (a stack of `E` weights in RLX's `[K, N]`
    layout), `expert_idx i64 [M]`; the result is `[M, N]` with

        result[m, n] = sum_k x[m, k] * weight[expert_idx[m], k, n]

    accumulated in f32.  A row whose expert index is outside `[0, E)`
    (negative ones included) gives a row of zeros.  The rows may come in any
    order; the lowering buckets them by expert (a counting sort), so each
    expert's weight is multiplied only into the rows routed to it, by the
    GEMM kernel, and the cost is that of the rows' own products, not `E`
    times it.
    """

    x = operand(F32Tensor, "the rows, `[M, K]`")
    weight = operand(F32Tensor, "one `[K, N]` weight per expert, `[E, K, N]`")
    expert_idx = operand(I64Tensor, "the expert of each row, `i64 [M]`")
    result = result(F32Tensor, "`[M, N]`")

    @classmethod
    def infer_result_type(cls, x: ir.Type, weight: ir.Type, expert_idx: ir.Type) -> ir.Type:
        same_element_type(x, weight)
        xs, ws = shape_of(x), shape_of(weight)
        _check_rows(xs, shape_of(expert_idx))
        if len(ws) != 3:
            raise VerifyError(f"requires weight of rank 3, [E, K, N], got {format_shape(ws)}")
        if _known(xs[1], ws[1]) and xs[1] != ws[1]:
            raise VerifyError(f"contracting dimensions differ: x {format_shape(xs)} has K = {xs[1]}, weight {format_shape(ws)} has K = {ws[1]}")
        return ir.RankedTensorType.get([xs[0], ws[2]], ir.F32Type.get())


def _check_stack(scheme: str, k: int, w_shape, name: str) -> None:
    if len(w_shape) != 3:
        raise VerifyError(f"requires {name} of rank 3, [E, N, bytes per row], got {format_shape(w_shape)}")
    check_weight_bytes(scheme, k, w_shape[2])


_STACK_LAYOUT = """
    The packed stack is `ui8 [E, N, K / block * block_bytes]`: expert `e`'s
    weight `W_e [N, K]` in GGUF's orientation and byte layout exactly as
    `rlx.dequant_matmul` takes it (each row its `K / block` blocks back to
    back, the rows back to back), the `E` slabs back to back, expert
    outermost, as a GGUF file stores a `*_exps` tensor.  Blocks and schemes are
    those of `rlx.dequant_matmul` (its description gives every layout)."""


class DequantGroupedMatmulOp(Rlx.Operation, name="dequant_grouped_matmul", traits=[Pure]):
    __doc__ = (
        """`rlx.grouped_matmul` over quantised experts (RLX's `DequantGroupedMatMul`).

    `x [M, K]` f32, `w` the packed stack below, `expert_idx i64 [M]`; the
    result is `[M, N]` f32 with

        result[m, n] = sum_k x[m, k] * W_{expert_idx[m]}[n, k]

    i.e. `rlx.grouped_matmul(x, rlx.dequant_moe_weights(w), expert_idx)`, with
    each block decoded inside the product (no f32 copy of a weight).  A row
    whose expert index is outside `[0, E)` gives zeros.  K must be a multiple
    of the scheme's block and each row exactly the scheme's bytes.
"""
        + _STACK_LAYOUT
    )

    x = operand(F32Tensor, "the rows, `[M, K]`")
    w = operand(ByteTensor, "the packed experts, `ui8 [E, N, K / block * block_bytes]`")
    expert_idx = operand(I64Tensor, "the expert of each row, `i64 [M]`")
    scheme = attribute(StrEnumAttr(*GGUF_SCHEMES), "the block format of `w`")
    result = result(F32Tensor, "`[M, N]`")

    @classmethod
    def infer_result_type(cls, x: ir.Type, w: ir.Type, expert_idx: ir.Type, scheme: str) -> ir.Type:
        xs, ws = shape_of(x), shape_of(w)
        _check_rows(xs, shape_of(expert_idx))
        _check_stack(scheme, xs[1], ws, "w")
        return ir.RankedTensorType.get([xs[0], ws[1]], ir.F32Type.get())


class DequantMoeWeightsOp(Rlx.Operation, name="dequant_moe_weights", traits=[Pure]):
    __doc__ = (
        """Decodes a stack of packed expert weights to f32 `[E, K, N]` (RLX's `DequantMoEWeights`).

    `w` is the packed stack below; the result is `[E, K, N]` with `result[e,
    k, n] = W_e[n, k]`: RLX's `[K, N]` layout, the operand `rlx.grouped_matmul`
    takes.  `K = bytes per row / block_bytes * block`; the bytes per row
    must be a whole number of blocks.
"""
        + _STACK_LAYOUT
    )

    w = operand(ByteTensor, "the packed experts, `ui8 [E, N, K / block * block_bytes]`")
    scheme = attribute(StrEnumAttr(*GGUF_SCHEMES), "the block format of `w`")
    result = result(F32Tensor, "`f32 [E, K, N]`")

    @classmethod
    def infer_result_type(cls, w: ir.Type, scheme: str) -> ir.Type:
        ws = shape_of(w)
        if len(ws) != 3:
            raise VerifyError(f"requires w of rank 3, [E, N, bytes per row], got {format_shape(ws)}")
        return ir.RankedTensorType.get([ws[0], packed_row_weights(scheme, ws[2], "w"), ws[1]], ir.F32Type.get())
