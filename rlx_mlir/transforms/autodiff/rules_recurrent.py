"""VJP rules of the sequence ops that have a closed form here: causal depthwise conv, RoPE at
runtime positions, the quantised matmul with respect to its activations.

`rlx.selective_scan` and `rlx.gated_delta_net` are unrolled into primitives (one step per
position, the state of every step kept) and differentiated by the driver's reverse sweep, as
RLX does for AD.
"""

from __future__ import annotations

import numpy as np

from ...dialects import rlx
from ...ir.shapes import element_of, shape_of
from .rules_control import recorded


def _depthwise_conv1d_causal(emit, op, cts):
    # xp = concat(left_pad, x); out[b, s, c] = sum_k w[c, k] xp[b, s + k, c]:
    #   dxp[b, s + k, c] += w[c, k] dy[b, s, c],   dw[c, k] = sum_{b, s} dy[b, s, c] xp[b, s + k, c]
    (dy,) = cts
    b, s, c = shape_of(op.x.type)
    k = op.kernel_size
    element = element_of(dy.type)
    taps = emit.reshape(op.weight, [c, k])
    pieces, weight_columns = [], []
    xp = emit.concat([op.left_pad, op.x], 1) if k > 1 else op.x
    for tap in range(k):
        w_tap = emit.reshape(emit.narrow(taps, 1, tap, 1), [c])
        spread = emit.mul(dy, w_tap)
        parts = []
        if tap:
            parts.append(emit.splat(0.0, [b, tap, c], element))
        parts.append(spread)
        if k - 1 - tap:
            parts.append(emit.splat(0.0, [b, k - 1 - tap, c], element))
        pieces.append(emit.concat(parts, 1))
        if emit.needed(op.weight):
            weight_columns.append(emit.reshape(emit.sum(emit.mul(dy, emit.narrow(xp, 1, tap, s)), [0, 1]), [c, 1]))
    d_xp = pieces[0]
    for piece in pieces[1:]:
        d_xp = emit.add(d_xp, piece)
    pairs = [(op.x, emit.narrow(d_xp, 1, k - 1, s))]
    if k > 1:
        pairs.append((op.left_pad, emit.narrow(d_xp, 1, 0, k - 1)))
    if weight_columns:
        pairs.append((op.weight, emit.reshape(emit.concat(weight_columns, 1), [c, 1, 1, k])))
    return pairs


def _rope_at(emit, op, cts):
    # A rotation: its transpose rotates by the opposite angle (see rules_attention._rope).
    (dy,) = cts
    if emit.needed(op.cos) or emit.needed(op.sin):
        raise NotImplementedError("its cos / sin tables")
    rotated = rlx.RopeAtOp(dy, op.cos, emit.neg(op.sin), op.pos, head_dim=op.head_dim, n_rot=op.n_rot,
                           loc=emit.loc, ip=emit.ip).result
    return [(op.x, rotated)]


def _dequant_matmul(emit, op, cts):
    """dx = dy @ W with W [N, K] the decoded weight.  MIR decodes W only inside
    rlx.dequant_matmul, so W^T is formed as `dequant_matmul(I_K, w)` (K^2 N multiply-adds per
    call: fine for adapters and small layers, a closed-form kernel is future work).  The bytes
    of `w` and the scheme's side tensors (scales, zero points) get no cotangent."""
    (dy,) = cts
    x_shape = shape_of(op.x.type)
    k, n = x_shape[-1], shape_of(dy.type)[-1]
    identity = emit.array(np.eye(k, dtype=np.float32), element_of(op.x.type))
    w_t = rlx.DequantMatmulOp(identity, op.w, list(op.side), scheme=op.scheme, global_scale=op.global_scale,
                              loc=emit.loc, ip=emit.ip).result  # [K, N]
    rows = emit.reshape(dy, [int(np.prod(x_shape[:-1], dtype=np.int64)), n])
    return [(op.x, emit.reshape(emit.matmul(rows, emit.swap_last(w_t)), x_shape))]


def _selective_scan_steps(emit, op):
    """The op's recurrence in primitives: per step t, with x_t, dt_t [b, h] (dt = softplus(delta)
    with delta_softplus), B_t, C_t [b, n]: st = exp(dt_t a) st + (dt_t x_t) B_t (outer, [b, h, n]);
    y_t = sum_j C_t st (+ d x_t) (* silu(z_t)).  Returns (y, the final state)."""
    b, s, h = shape_of(op.x.type)
    n = op.state_size
    delta = emit.unary(rlx.SoftplusOp, op.delta) if op.delta_softplus else op.delta

    def at(value, t, width):
        return emit.reshape(emit.narrow(value, 1, t, 1), [b, width])

    state, outputs = op.state, []
    for t in range(s):
        x_t, d_t = at(op.x, t, h), at(delta, t, h)
        b_t, c_t = at(op.b_in, t, n), at(op.c, t, n)
        decay = emit.unary(rlx.ExpOp, emit.mul(emit.reshape(d_t, [b, h, 1]), op.a))  # [b, h, n]
        drive = emit.mul(emit.reshape(emit.mul(d_t, x_t), [b, h, 1]), emit.reshape(b_t, [b, 1, n]))
        state = drive if state is None else emit.add(emit.mul(decay, state), drive)
        y_t = emit.sum(emit.mul(state, emit.reshape(c_t, [b, 1, n])), [2])  # [b, h]
        if op.d is not None:
            y_t = emit.add(y_t, emit.mul(x_t, emit.reshape(op.d, [1, h])))
        if op.z is not None:
            y_t = emit.mul(y_t, emit.unary(rlx.SiluOp, at(op.z, t, h)))
        outputs.append(emit.reshape(y_t, [b, 1, h]))
    if state is None:  # an empty sequence without an initial state
        state = emit.splat(0.0, [b, h, n], element_of(op.x.type))
    return emit.concat(outputs, 1), state


def _selective_scan(emit, op, cts):
    dy, d_state = cts
    loc = emit.loc
    ops, (y, final) = recorded(emit, lambda: _selective_scan_steps(emit, op))
    seeds = {value: ct for value, ct in ((y, dy), (final, d_state)) if ct is not None}
    operands = [v for v in (op.x, op.delta, op.a, op.b_in, op.c, op.d, op.z, op.state) if v is not None]
    grads = emit.reverse(ops, seeds, operands, ["an operand of selective_scan"] * len(operands))
    emit.loc = loc
    return list(zip(operands, grads))


def _query_key(emit, value, heads: int, l2norm: bool):
    """q or k `[b, s, hk, dk]` as the op reads it: L2-normalised with `l2norm`, and each of the
    `heads` value heads given its key head (`hh // (heads / hk)`): `[b, s, heads, dk]`."""
    b, s, hk, dk = shape_of(value.type)
    if l2norm:
        squares = emit.sum(emit.mul(value, value), [3], keep_dim=True)  # [b, s, hk, 1]
        value = emit.mul(value, emit.unary(rlx.RsqrtOp, emit.add(squares, emit.scalar(1e-6, squares))))
    if heads != hk:
        group = heads // hk
        value = emit.reshape(emit.expand(emit.reshape(value, [b, s, hk, 1, dk]), [b, s, hk, group, dk]),
                             [b, s, heads, dk])
    return value


def _gated_delta_net_steps(emit, op):
    """The gated delta rule in primitives, per step t with q_t, k_t [b, h, dk], v_t [b, h, dv],
    g_t, beta_t [b, h] (q and k read as the op does: grouped heads, the optional L2 norm), the
    state S [b, h, dv, dk]: S = exp(g_t) S;  u = beta_t (v_t - S k_t);  S += outer(u, k_t);
    out_t = S q_t / sqrt(dk).  The state enters and leaves in the op's `state_layout`."""
    b, s, h, dv = shape_of(op.v.type)
    dk = shape_of(op.q.type)[3]
    element = element_of(op.q.type)
    l2norm = bool(op.use_qk_l2norm)
    keys_first = op.state_layout == "k_v"
    q, k = _query_key(emit, op.q, h, l2norm), _query_key(emit, op.k, h, l2norm)

    def at(value, t, tail):
        return emit.reshape(emit.narrow(value, 1, t, 1), [b, h, *tail])

    if op.state is None:
        state = emit.splat(0.0, [b, h, dv, dk], element)
    else:
        state = emit.swap_last(op.state) if keys_first else op.state
    outputs = []
    for t in range(s):
        q_t, k_t = at(q, t, [dk]), at(k, t, [dk])
        v_t = at(op.v, t, [dv])
        alpha = emit.unary(rlx.ExpOp, at(op.g, t, [1, 1]))
        state = emit.mul(alpha, state)
        k_row = emit.reshape(k_t, [b, h, 1, dk])
        read = emit.sum(emit.mul(state, k_row), [3])  # S k_t, [b, h, dv]
        u = emit.mul(at(op.beta, t, [1]), emit.sub(v_t, read))
        state = emit.add(state, emit.mul(emit.reshape(u, [b, h, dv, 1]), k_row))
        q_row = emit.reshape(emit.scale(q_t, 1.0 / float(np.sqrt(dk))), [b, h, 1, dk])
        outputs.append(emit.reshape(emit.sum(emit.mul(state, q_row), [3]), [b, 1, h, dv]))
    return emit.concat(outputs, 1), (emit.swap_last(state) if keys_first else state)


def _gated_delta_net(emit, op, cts):
    d_out, d_state = cts
    loc = emit.loc
    ops, (out, final) = recorded(emit, lambda: _gated_delta_net_steps(emit, op))
    seeds = {value: ct for value, ct in ((out, d_out), (final, d_state)) if ct is not None}
    operands = [v for v in (op.q, op.k, op.v, op.g, op.beta, op.state) if v is not None]
    grads = emit.reverse(ops, seeds, operands, ["an operand of gated_delta_net"] * len(operands))
    emit.loc = loc
    return list(zip(operands, grads))


RULES = {
    rlx.GatedDeltaNetOp: _gated_delta_net,
    rlx.SelectiveScanOp: _selective_scan,
    rlx.DepthwiseConv1dCausalOp: _depthwise_conv1d_causal,
    rlx.RopeAtOp: _rope_at,
    rlx.DequantMatmulOp: _dequant_matmul,
}
