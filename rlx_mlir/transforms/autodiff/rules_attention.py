"""VJP rules of RoPE and attention.

RoPE is a rotation by the angle of each (position, pair): its transpose is the
rotation by the opposite angle, so `dx = rope(dy, cos, -sin)`, one op.

Attention recomputes the probabilities from q and k (the op keeps none), in heads
layout `[B, H, S, D]`, with kv heads repeated for grouped-query attention, then
the standard backward of `softmax(mask(cap(scale q.k))) . v`:

    dV = P^T dO      dP = dO V^T      dS = P (dP - rowsum(dP P))
    through the soft-cap: dS *= 1 - tanh^2,   dQ = scale dS K,   dK = scale dS^T Q

and the kv-head cotangents summed over each group of query heads.  Masked keys
have `P = 0`, so no cotangent reaches them; a `bias` mask gets `dS` itself.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from ...dialects import rlx
from ...ir.shapes import shape_of
from .emit import Emitter

# --- RoPE -------------------------------------------------------------------------------


def _rope(emit, op, cts):
    (dy,) = cts
    head_dim, n_rot = op.head_dim, op.n_rot
    pairs = [(op.x, rlx.RopeOp(dy, op.cos, emit.neg(op.sin), head_dim=head_dim, n_rot=n_rot, loc=emit.loc, ip=emit.ip).result)]
    if emit.needed(op.cos) or emit.needed(op.sin):
        b, s, c = shape_of(op.x.type)
        half = n_rot // 2

        def halves(value):
            heads = emit.reshape(value, [b, s, c // head_dim, head_dim])
            return emit.narrow(heads, 3, 0, half), emit.narrow(heads, 3, half, half)

        x1, x2 = halves(op.x)
        d1, d2 = halves(dy)
        d_cos = emit.add(emit.mul(d1, x1), emit.mul(d2, x2))
        d_sin = emit.sub(emit.mul(d2, x1), emit.mul(d1, x2))
        pairs += [(op.cos, emit.sum(d_cos, [0, 2])), (op.sin, emit.sum(d_sin, [0, 2]))]
    return pairs


# --- attention ----------------------------------------------------------------------------


def _heads(emit: Emitter, value, heads: int, head_dim: int):
    """`[B, S, heads * D]` -> `[B, heads, S, D]`."""
    b, s, _ = shape_of(value.type)
    return emit.transpose(emit.reshape(value, [b, s, heads, head_dim]), [0, 2, 1, 3])


def _unheads(emit: Emitter, value):
    """`[B, heads, S, D]` -> `[B, S, heads * D]`."""
    b, h, s, d = shape_of(value.type)
    return emit.reshape(emit.transpose(value, [0, 2, 1, 3]), [b, s, h * d])


def _repeat_groups(emit: Emitter, value, groups: int):
    """`[B, Hkv, S, D]` -> `[B, Hkv * groups, S, D]`, kv head `j` serving query heads `j*groups ..`."""
    if groups == 1:
        return value
    b, hkv, s, d = shape_of(value.type)
    stretched = emit.expand(emit.reshape(value, [b, hkv, 1, s, d]), [b, hkv, groups, s, d])
    return emit.reshape(stretched, [b, hkv * groups, s, d])


def _sum_groups(emit: Emitter, value, groups: int):
    """The adjoint of `_repeat_groups`."""
    if groups == 1:
        return value
    b, h, s, d = shape_of(value.type)
    return emit.sum(emit.reshape(value, [b, h // groups, groups, s, d]), [2])


def _visible(emit: Emitter, op, sq: int, sk: int):
    """The i1 mask of visible keys, broadcastable to `[B, H, Sq, Sk]`, or None (all visible)."""
    kind = str(op.mask_kind)
    if kind in ("causal", "sliding_window"):
        # key j is visible to query i iff j <= i + offset (and j > i + offset - window)
        i64 = ir.IntegerType.get_signless(64)
        last = np.arange(sq, dtype=np.int64).reshape(sq, 1) + (sk - sq)
        cols = emit.array(np.arange(sk, dtype=np.int64).reshape(1, sk), i64)
        visible = emit.compare("le", cols, emit.array(last, i64))
        if kind == "sliding_window":
            after = emit.compare("gt", cols, emit.array(last - op.window, i64))
            visible = emit.where(visible, after, visible)
        return visible
    if kind == "custom":
        b = shape_of(op.mask.type)[0]
        valid = emit.compare("ne", op.mask, emit.scalar(0.0, op.mask))
        return emit.reshape(valid, [b, 1, 1, sk])
    return None


def _attention(emit, op, cts):
    (dy,) = cts
    h, d = op.num_heads, op.head_dim
    hkv = shape_of(op.k.type)[2] // d
    groups = h // hkv
    sq, sk = shape_of(op.q.type)[1], shape_of(op.k.type)[1]
    scale = op.scale()
    q = _heads(emit, op.q, h, d)
    k = _repeat_groups(emit, _heads(emit, op.k, hkv, d), groups)
    v = _repeat_groups(emit, _heads(emit, op.v, hkv, d), groups)
    # Batched products in the plain `[.., M, K] x [.., K, N]` form (one 2-D GEMM per head, no
    # operand copied again inside), each transposed operand transposed once here.
    scores = emit.scale(emit.matmul(q, emit.swap_last(k)), scale)  # [B, H, Sq, Sk]
    capped = None
    if op.softcap is not None:
        c = float(op.softcap)
        capped = emit.unary(rlx.TanhOp, emit.scale(scores, 1.0 / c))
        scores = emit.scale(capped, c)
    if str(op.mask_kind) == "bias":
        scores = emit.add(scores, op.mask)
    visible = _visible(emit, op, sq, sk)
    if visible is not None:
        scores = emit.where(visible, scores, emit.scalar(float("-inf"), scores))
    p = rlx.SoftmaxOp(scores, axis=3, loc=emit.loc, ip=emit.ip).result
    if visible is not None:  # rows that see no key: P = 0 (the forward outputs zeros)
        p = emit.where(visible, p, emit.scalar(0.0, p))
    do = _heads(emit, dy, h, d)
    dv = emit.matmul(emit.swap_last(p), do)  # [B, H, Sk, D]
    dp = emit.matmul(do, emit.swap_last(v))  # [B, H, Sq, Sk]
    ds = emit.mul(p, emit.sub(dp, emit.sum(emit.mul(dp, p), [3], keep_dim=True)))
    pairs = []
    if str(op.mask_kind) == "bias":
        pairs.append((op.mask, ds))
    if capped is not None:
        ds = emit.mul(ds, emit.sub(emit.scalar(1.0, ds), emit.mul(capped, capped)))
    ds = emit.scale(ds, scale)
    dq = emit.matmul(ds, k)  # [B, H, Sq, D]
    dk = emit.matmul(emit.swap_last(ds), q)  # [B, H, Sk, D]
    pairs += [
        (op.q, _unheads(emit, dq)),
        (op.k, _unheads(emit, _sum_groups(emit, dk, groups))),
        (op.v, _unheads(emit, _sum_groups(emit, dv, groups))),
    ]
    return pairs


RULES = {
    rlx.RopeOp: _rope,
    rlx.AttentionOp: _attention,
}

