"""VJP rules of the products: matmul (broadcast batches), dot_general, fused matmul + bias + activation."""

from __future__ import annotations

from ...dialects import rlx
from ...ir.shapes import num_elements, shape_of
from .emit import Emitter
from .rules_elementwise import activation_derivative


def matmul_cotangents(emit: Emitter, a, b, dy):
    """(da, db) of `y = a @ b` with NumPy-broadcast batches, each summed back to its operand's shape.

    The forms the fast kernels take: a 2-D weight `b` gets `a^T dy` as one 2-D product over every
    row of every batch (a dot_general contracting the rows: the GEMM reads `a` transposed in
    place, no transposed copy), and equal batches use `dot_general` with batch dimensions (a batched
    `rlx.matmul` with a transposed operand lowers to a much slower loop nest)."""
    a_shape, b_shape, dy_shape = shape_of(a.type), shape_of(b.type), shape_of(dy.type)
    if len(b_shape) == 2:
        rows = num_elements(dy_shape[:-1])
        flat_dy = emit.reshape(dy, [rows, b_shape[-1]])
        da = emit.reshape(_times_transposed_weight(emit, flat_dy, b), [*dy_shape[:-1], b_shape[0]])
        flat_a = emit.reshape(emit.expand(a, [*dy_shape[:-2], *a_shape[-2:]]), [rows, a_shape[-1]])
        db = emit.matmul_transposed(flat_a, flat_dy, transpose_a=True)
        return emit.unbroadcast(da, a_shape), db
    if a_shape[:-2] == b_shape[:-2]:
        batch = list(range(len(a_shape) - 2))
        rank = len(a_shape)
        da = emit.dot_general(dy, b, [rank - 1], [rank - 1], batch, batch)  # [..., M, K]
        db = emit.dot_general(a, dy, [rank - 2], [rank - 2], batch, batch)  # [..., K, N]
        return da, db
    da = emit.matmul(dy, emit.swap_last(b))
    db = emit.matmul(emit.swap_last(a), dy)
    return emit.unbroadcast(da, a_shape), emit.unbroadcast(db, b_shape)


def _times_transposed_weight(emit: Emitter, dy, w):
    """`dy @ w^T` for 2-D `dy` [R, N] and `w` [K, N], transposing whichever side is smaller.

    A transposed copy is a strided pass over memory, far slower per element than a GEMM's
    (a [1408, 512] weight: 1.5 ms, the [128, 512] x [512, 1408] product it feeds 0.8 ms).  With
    fewer rows than the weight has (a training step's tokens against hidden x ffn weights),
    `(w @ dy^T)^T` keeps `w` in place as the GEMM's row operand and transposes the two
    activation-sized matrices instead (0.97 against 2.4 ms for that down projection); `dy^T` is
    no copy of its own but the GEMM's packing, reading `dy` transposed (`matmul_transposed`)."""
    (rows, n), (k, _) = shape_of(dy.type), shape_of(w.type)
    if rows * (n + k) < k * n:
        return emit.swap_last(emit.matmul_transposed(w, dy, transpose_b=True))
    return emit.matmul_transposed(dy, w, transpose_b=True)


def _matmul(emit, op, cts):
    (dy,) = cts
    da, db = matmul_cotangents(emit, op.lhs, op.rhs, dy)
    return [(op.lhs, da), (op.rhs, db)]


def _dot_general_side(emit, dy, other, nb, own_free, other_free, own_contracting, other_contracting,
                      own_batch, other_batch, own_rank, dy_free_offset):
    """The cotangent of one operand of dot_general: contract dy's dimensions of the other operand's
    free dimensions against them, batch in lockstep, then permute into the operand's layout."""
    dy_other_free = [dy_free_offset + i for i in range(len(other_free))]
    raw = emit.dot_general(dy, other, dy_other_free, other_free, list(range(nb)), other_batch)
    # raw dims: batch (own_batch order), own free (dy order), then the other's remaining dims
    # (its contracting dims, ascending), each standing for the paired contracting dim of this operand.
    remaining = sorted(other_contracting)
    raw_dims = [*own_batch, *own_free, *(own_contracting[list(other_contracting).index(d)] for d in remaining)]
    return emit.transpose(raw, [raw_dims.index(t) for t in range(own_rank)])


def _dot_general(emit, op, cts):
    (dy,) = cts
    lc, rc = list(op.lhs_contracting), list(op.rhs_contracting)
    lb, rb = list(op.lhs_batch), list(op.rhs_batch)
    lr, rr = len(shape_of(op.lhs.type)), len(shape_of(op.rhs.type))
    lf = [d for d in range(lr) if d not in lb and d not in lc]
    rf = [d for d in range(rr) if d not in rb and d not in rc]
    nb = len(lb)
    d_lhs = _dot_general_side(emit, dy, op.rhs, nb, lf, rf, lc, rc, lb, rb, lr, nb + len(lf))
    d_rhs = _dot_general_side(emit, dy, op.lhs, nb, rf, lf, rc, lc, rb, lb, rr, nb)
    return [(op.lhs, d_lhs), (op.rhs, d_rhs)]


def _fused_matmul_bias_act(emit, op, cts):
    # y = act(z), z = x @ w + bias: z is recomputed (the fused op does not keep it).
    (dy,) = cts
    z = emit.add(emit.matmul(op.x, op.w), op.bias)
    y = op.result
    dz = emit.mul(dy, activation_derivative(emit, str(op.activation), z, y)) if op.activation != "none" else dy
    dx, dw = matmul_cotangents(emit, op.x, op.w, dz)
    rank = len(shape_of(dz.type))
    d_bias = emit.sum(dz, list(range(rank - 1)))
    return [(op.x, dx), (op.w, dw), (op.bias, d_bias)]


RULES = {
    rlx.MatmulOp: _matmul,
    rlx.DotGeneralOp: _dot_general,
    rlx.FusedMatmulBiasActOp: _fused_matmul_bias_act,
}
