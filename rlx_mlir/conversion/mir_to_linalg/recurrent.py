"""Lowering of recurrent MIR ops: scf.for over the sequence carrying the state.

rlx.selective_scan and rlx.gated_delta_net are one scf.for over the sequence
(batch and heads stay inside the per-step linalg.generics).  The loop carries
the f32 state and an f32 output tensor; each step reads the step's operand
rows with tensor.extract_slice (rank-reduced, offset = the induction
variable) and updates the carried tensors in place: the state update is a
generic whose `outs` is the carried state itself, and the step's read-out is
a linalg.fill + reduction generic into `extract_slice(out, t)` followed by
tensor.insert_slice back into the carried output.  One-shot bufferization
then keeps one buffer per carried tensor for the whole loop (nothing of the
size of the state is copied per step).  f16 / bf16 are widened when read and
the outputs are rounded once after the loop.

Both states are carried transposed so that the innermost loop of every
per-step generic runs along contiguous memory with no loop-carried
dependence (the reductions are over a middle dimension), which LLVM
vectorises:

    selective_scan, st[b, j, i] (state j, channel i; a transposed once to [n, h]):
      st[b, j, i] = exp(dt[b, i] * aT[j, i]) * st[b, j, i] + dt[b, i] * bt[b, j] * xt[b, i]
      y[b, t, i]  = sum_j ct[b, j] * st[b, j, i]
    with exp by arith ops (`_exp`, Cephes' expf) instead of a libm call, so
    that loop vectorises too.

    gated_delta_net, T[b, h, j, i] = S[b, h, i, j] (key feature j, value feature i),
    alpha = exp(g) computed once for the whole sequence; per step:
      u[b, h, i]      = sum_j T[b, h, j, i] * k[b, h, j]            (carried scratch)
      u[b, h, i]      = beta * (v[b, h, i] - alpha * u[b, h, i])    (in place)
      T[b, h, j, i]   = alpha * T + u[b, h, i] * k[b, h, j]         (in place)
      out[b, t, h, i] = sum_j T[b, h, j, i] * q[b, h, j] * (1 / sqrt(n))
    (the decay is folded in: (alpha S) @ k = alpha (S @ k)); an initial state
    is transposed in once and the final state transposed back once.

rlx.depthwise_conv1d_causal needs no loop: `xp` = left_pad and x inserted
into one tensor (two tensor.insert_slice), then one generic over
(b, s, c, k), k a reduction, reading `xp` at `(b, s + k, c)`.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor
from mlir.dialects import math as mmath

from ...dialects import rlx
from ...ir.shapes import shape_of
from . import builders as lb
from .elementwise import sigmoid, softplus

# --- local helpers ---------------------------------------------------------------------


def _dims(count: int) -> list[ir.AffineExpr]:
    return [ir.AffineDimExpr.get(i) for i in range(count)]


def _map(count: int, results: Sequence[ir.AffineExpr]) -> ir.AffineMap:
    return ir.AffineMap.get(count, 0, list(results))


def _element(value: ir.Value) -> ir.Type:
    return ir.RankedTensorType(value.type).element_type


def _zeros_f32(shape: Sequence[int]) -> ir.Value:
    return lb.zeros(shape, lb.f32_type())


def _fill_zero(dest: ir.Value) -> ir.Value:
    """`dest` (an f32 tensor, typically a slice of a carried tensor) overwritten with zeros."""
    return linalg.fill(lb.f32_constant(0.0), outs=[dest])


def _step_slice(source: ir.Value, axis: int, position: ir.Value) -> ir.Value:
    """`source` at index `position` of `axis`, that axis dropped (a rank-reduced extract_slice)."""
    shape = list(shape_of(source.type))
    sizes = [1 if d == axis else s for d, s in enumerate(shape)]
    offsets = [ir.ShapedType.get_dynamic_size() if d == axis else 0 for d in range(len(shape))]
    dynamic = [position]
    result = ir.RankedTensorType.get([s for d, s in enumerate(shape) if d != axis], _element(source))
    return tensor.ExtractSliceOp(
        result, source, dynamic, [], [], offsets, sizes, [1] * len(shape)
    ).result


def _insert_step(value: ir.Value, dest: ir.Value, axis: int, position: ir.Value) -> ir.Value:
    """`value` written into `dest` at index `position` of `axis` (the inverse of `_step_slice`)."""
    shape = list(shape_of(dest.type))
    sizes = [1 if d == axis else s for d, s in enumerate(shape)]
    offsets = [ir.ShapedType.get_dynamic_size() if d == axis else 0 for d in range(len(shape))]
    return tensor.InsertSliceOp(
        value, dest, [position], [], [], offsets, sizes, [1] * len(shape)
    ).result


def _convert(value: ir.Value, element: ir.Type) -> ir.Value:
    """`value` with every element converted to `element` (a copy; the same value when types agree)."""
    if _element(value) == element:
        return value
    shape = list(shape_of(value.type))
    identity = ir.AffineMap.get_identity(len(shape))
    return lb.generic(
        [value], lb.empty(shape, element), [identity, identity], [lb.PARALLEL] * len(shape),
        lambda v, _out: lb.narrow(lb.widen(v), element),
    )


def _sequence_loop(length: int, inits: Sequence[ir.Value], step: Callable) -> list[ir.Value]:
    """scf.for t in [0, length) carrying `inits`; `step(t, *carried)` returns the next carried values."""
    index = ir.IndexType.get()
    zero, one = arith.constant(index, 0), arith.constant(index, 1)
    loop = scf.ForOp(zero, arith.constant(index, length), one, list(inits))
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(list(step(loop.induction_variable, *loop.inner_iter_args)))
    return list(loop.results)


# --- exp ------------------------------------------------------------------------------------

# Cephes' expf: exp(x) = 2^m * exp(r), m = round(x / ln 2), r = x - m ln 2 (ln 2 split in two so that
# m * C1 is exact), exp(r) on |r| <= ln(2) / 2 by a polynomial; relative error ~1e-7 (about 1 ulp).
# 2^m is applied as 2^e1 * 2^e2 with e1 = floor(m / 2), e2 = m - e1, both normal f32 for
# m in [-150, 128], so results near the overflow threshold stay finite and tiny results underflow
# gradually to subnormals.  Only arith ops (no libm call), so LLVM vectorises the loops it sits in.
_EXP_HI = 88.72283905206835  # ln(FLT_MAX): above, +inf
_EXP_LO = -103.97207708399179  # ln(2^-150): below, 0
_LOG2E = 1.44269504088896341
_EXP_C1 = 0.693359375
_EXP_C2 = -2.12194440e-4
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)


def _exp(x: ir.Value) -> ir.Value:
    """exp of an f32 scalar, by arith ops only (see above); NaN stays NaN, +inf gives inf, -inf 0."""
    f32, i32 = lb.f32_type(), ir.IntegerType.get_signless(32)
    c = lambda value: arith.constant(f32, value)  # noqa: E731

    def power_of_two(e: ir.Value) -> ir.Value:  # 2^e for an integral f32 e in [-126, 127]
        biased = arith.addi(arith.fptosi(i32, e), arith.constant(i32, 127))
        return arith.bitcast(f32, arith.shli(biased, arith.constant(i32, 23)))

    clamped = arith.minimumf(arith.maximumf(x, c(_EXP_LO)), c(_EXP_HI))
    m = mmath.floor(arith.addf(arith.mulf(clamped, c(_LOG2E)), c(0.5)))
    r = arith.subf(arith.subf(clamped, arith.mulf(m, c(_EXP_C1))), arith.mulf(m, c(_EXP_C2)))
    p = c(_EXP_POLY[0])
    for coefficient in _EXP_POLY[1:]:
        p = arith.addf(arith.mulf(p, r), c(coefficient))
    p = arith.addf(arith.addf(arith.mulf(arith.mulf(p, r), r), r), c(1.0))  # p r^2 + r + 1
    e1 = mmath.floor(arith.mulf(m, c(0.5)))
    value = arith.mulf(arith.mulf(p, power_of_two(e1)), power_of_two(arith.subf(m, e1)))
    value = arith.select(arith.cmpf(arith.CmpFPredicate.OGT, x, c(_EXP_HI)), c(math.inf), value)
    value = arith.select(arith.cmpf(arith.CmpFPredicate.OLT, x, c(_EXP_LO)), c(0.0), value)
    return arith.select(arith.cmpf(arith.CmpFPredicate.UNO, x, x), x, value)


# --- selective scan --------------------------------------------------------------------


def _lower_selective_scan(op) -> list[ir.Value]:
    """The loop carries the state transposed, `st[b, j, i]` (`[b, n, h]`, f32), and `a` is transposed
    (and widened) once to `[n, h]`, so the per-step generics run the channel `i` innermost, contiguously.
    softplus(delta) is computed once before the loop; the `d` skip and the `z` gate once after it."""
    element = _element(op.y)
    batch, length, channels = shape_of(op.x.type)
    n = op.state_size
    x, delta, b_in, c = op.x, op.delta, op.b_in, op.c
    f32 = lb.f32_type()
    i2, j2 = _dims(2)
    a_t = lb.generic(
        [op.a], lb.empty([n, channels], f32), [_map(2, [j2, i2]), _map(2, [i2, j2])], [lb.PARALLEL] * 2,
        lambda a_el, _out: lb.widen(a_el),
    )
    if op.delta_softplus:
        delta = lb.elementwise([delta], ir.RankedTensorType.get([batch, length, channels], f32),
                               lambda d_el: softplus(lb.widen(d_el)))
    # Dims (b, j, i): j the state index (reduced in the read-out), i the channel (innermost).
    b, j, i = _dims(3)
    bi, ji, bj, bji = _map(3, [b, i]), _map(3, [j, i]), _map(3, [b, j]), _map(3, [b, j, i])

    def step(t, state, y):
        xt = _step_slice(x, 1, t)  # [b, h]
        dt = _step_slice(delta, 1, t)  # [b, h]
        bt = _step_slice(b_in, 1, t)  # [b, n]
        ct = _step_slice(c, 1, t)  # [b, n]

        def update(x_el, d_el, a_el, b_el, s_el):
            dv = lb.widen(d_el)
            decay = _exp(arith.mulf(dv, a_el))
            drive = arith.mulf(arith.mulf(dv, lb.widen(b_el)), lb.widen(x_el))
            return arith.addf(arith.mulf(decay, s_el), drive)

        state = lb.generic([xt, dt, a_t, bt], state, [bi, bi, ji, bj, bji], [lb.PARALLEL] * 3, update)
        yt = lb.generic(
            [ct, state], _fill_zero(_step_slice(y, 1, t)), [bj, bji, bi],
            [lb.PARALLEL, lb.REDUCTION, lb.PARALLEL],
            lambda c_el, s_el, acc: arith.addf(acc, arith.mulf(lb.widen(c_el), s_el)),
        )
        return state, _insert_step(yt, y, 1, t)

    state0 = _zeros_f32([batch, n, channels]) if op.state is None else _transpose_last2(op.state, f32, rank=3)
    state, y = _sequence_loop(length, [state0, lb.empty([batch, length, channels], f32)], step)
    return [_skip_and_gate(y, x, op.d, op.z, element), _transpose_last2(state, element, rank=3)]


def _skip_and_gate(y: ir.Value, x: ir.Value, d, z, element: ir.Type) -> ir.Value:
    """`(y + d * x) * silu(z)` (each part only when given) rounded to `element`: one generic."""
    if d is None and z is None:
        return _convert(y, element)
    shape = list(shape_of(y.type))
    b, t, i = _dims(3)
    full, channel = _map(3, [b, t, i]), _map(3, [i])
    inputs, maps = [y], [full]
    if d is not None:
        inputs += [x, d]
        maps += [full, channel]
    if z is not None:
        inputs.append(z)
        maps.append(full)

    def body(*elements):
        value, rest = elements[0], list(elements[1:-1])
        if d is not None:
            x_el, d_el, rest = rest[0], rest[1], rest[2:]
            value = arith.addf(value, arith.mulf(lb.widen(d_el), lb.widen(x_el)))
        if z is not None:
            gate = lb.widen(rest[0])
            value = arith.mulf(value, arith.mulf(gate, sigmoid(gate)))
        return lb.narrow(value, element)

    return lb.generic(inputs, lb.empty(shape, element), maps + [full], [lb.PARALLEL] * 3, body)


# --- gated delta net ----------------------------------------------------------------


def _transpose_last2(value: ir.Value, element: ir.Type, rank: int = 4) -> ir.Value:
    """`[.., x, y]` to `[.., y, x]` converted to `element` (one generic, run once outside the loop)."""
    shape = list(shape_of(value.type))
    dims = _dims(rank)
    swapped = dims[:-2] + [dims[-1], dims[-2]]
    return lb.generic(
        [value], lb.empty(shape[:-2] + [shape[-1], shape[-2]], element),
        [_map(rank, swapped), _map(rank, dims)],
        [lb.PARALLEL] * rank, lambda v, _out: lb.narrow(lb.widen(v), element),
    )


def _prepare_query_key(value: ir.Value, value_heads: int, l2norm: bool) -> ir.Value:
    """q or k `[b, s, hk, dk]` as f32 `[b, s, hv, dk]`: head `h` reads head `h // (hv / hk)`, and with
    `l2norm` is divided by `sqrt(sum_d x^2 + 1e-6)` (FLA's l2norm). Done once, before the loop."""
    batch, length, heads, dim = shape_of(value.type)
    group = value_heads // heads
    f32 = lb.f32_type()
    b, t, h, d = _dims(4)
    source = _map(4, [b, t, ir.AffineExpr.get_floor_div(h, group) if group > 1 else h, d])
    inputs, maps = [value], [source]
    if l2norm:
        b3, t3, h3, d3 = _dims(4)
        squares = lb.generic(
            [value], linalg.fill(lb.f32_constant(0.0), outs=[lb.empty([batch, length, heads], f32)]),
            [_map(4, [b3, t3, h3, d3]), _map(4, [b3, t3, h3])],
            [lb.PARALLEL, lb.PARALLEL, lb.PARALLEL, lb.REDUCTION],
            lambda x_el, acc: arith.addf(acc, arith.mulf(lb.widen(x_el), lb.widen(x_el))),
        )
        inputs.append(squares)
        maps.append(_map(4, [b, t, ir.AffineExpr.get_floor_div(h, group) if group > 1 else h]))

    def body(x_el, *rest):
        x_el = lb.widen(x_el)
        if not l2norm:
            return x_el
        return arith.mulf(x_el, mmath.rsqrt(arith.addf(rest[0], lb.f32_constant(1e-6))))

    return lb.generic(inputs, lb.empty([batch, length, value_heads, dim], f32), maps + [_map(4, [b, t, h, d])],
                      [lb.PARALLEL] * 4, body)


def _lower_gated_delta_net(op) -> list[ir.Value]:
    """The loop carries the state as `T[b, h, j, i] = S[b, h, i, j]` (`[dk, dv]`, f32: the `k_v`
    layout), so that every per-step generic has the value feature `i` innermost and reads and writes
    contiguously; a `v_k` initial state is transposed in once and the final state transposed back
    once. Grouped heads and the q / k L2 norm are applied to q and k once, before the loop."""
    element = _element(op.out)
    batch, length, key_heads, dk = shape_of(op.q.type)
    _, _, heads, dv = shape_of(op.v.type)
    q, k, v, beta = op.q, op.k, op.v, op.beta
    l2norm = bool(op.use_qk_l2norm)  # absent: false
    if heads != key_heads or l2norm:
        q = _prepare_query_key(q, heads, l2norm)
        k = _prepare_query_key(k, heads, l2norm)
    f32 = lb.f32_type()
    scale = 1.0 / math.sqrt(dk)
    keys_first = op.state_layout == "k_v"  # absent: v_k

    # alpha = exp(g) for the whole sequence, once.
    alpha = lb.elementwise(
        [op.g], ir.RankedTensorType.get([batch, length, heads], f32), lambda g_el: mmath.exp(lb.widen(g_el))
    )
    if op.state is None:
        state0 = _zeros_f32([batch, heads, dk, dv])
    else:
        state0 = _convert(op.state, f32) if keys_first else _transpose_last2(op.state, f32)

    # Dims (b, h, j, i): j the key feature (reduced in the two read-outs), i the value feature (innermost).
    b, h, j, i = _dims(4)
    bh, bhi, bhj, bhji = _map(4, [b, h]), _map(4, [b, h, i]), _map(4, [b, h, j]), _map(4, [b, h, j, i])
    reduce_j = [lb.PARALLEL, lb.PARALLEL, lb.REDUCTION, lb.PARALLEL]
    b3, h3, i3 = _dims(3)
    bh3, bhi3 = _map(3, [b3, h3]), _map(3, [b3, h3, i3])

    def step(t, state, out, u):
        qt = _step_slice(q, 1, t)  # [b, h, dk]
        kt = _step_slice(k, 1, t)
        vt = _step_slice(v, 1, t)  # [b, h, dv]
        at = _step_slice(alpha, 1, t)  # [b, h], f32
        bt = _step_slice(beta, 1, t)  # [b, h]

        # u = S @ k (before the decay), into the carried scratch ...
        u = lb.generic(
            [state, kt], _fill_zero(u), [bhji, bhj, bhi], reduce_j,
            lambda s_el, k_el, acc: arith.addf(acc, arith.mulf(s_el, lb.widen(k_el))),
        )
        # ... then, in place, u = beta * (v - alpha * S @ k).
        u = lb.generic(
            [vt, at, bt], u, [bhi3, bh3, bh3, bhi3], [lb.PARALLEL] * 3,
            lambda v_el, a_el, b_el, sk: arith.mulf(lb.widen(b_el), arith.subf(lb.widen(v_el), arith.mulf(a_el, sk))),
        )
        # S = alpha * S + outer(u, k), in place.
        state = lb.generic(
            [kt, at, u], state, [bhj, bh, bhi, bhji], [lb.PARALLEL] * 4,
            lambda k_el, a_el, u_el, s_el: arith.addf(arith.mulf(a_el, s_el), arith.mulf(u_el, lb.widen(k_el))),
        )
        # out[:, t] = S @ (q * scale), into the carried output's row t.
        scale_c = arith.constant(f32, scale)
        ot = lb.generic(
            [state, qt], _fill_zero(_step_slice(out, 1, t)), [bhji, bhj, bhi], reduce_j,
            lambda s_el, q_el, acc: arith.addf(acc, arith.mulf(s_el, arith.mulf(lb.widen(q_el), scale_c))),
        )
        return state, _insert_step(ot, out, 1, t), u

    state, out, _ = _sequence_loop(
        length,
        [state0, lb.empty([batch, length, heads, dv], f32), lb.empty([batch, heads, dv], f32)],
        step,
    )
    out = _convert(out, element)
    return [out, _convert(state, element) if keys_first else _transpose_last2(state, element)]


# --- causal depthwise conv1d -------------------------------------------------------------


def _lower_depthwise_conv1d_causal(op) -> ir.Value:
    element = _element(op.result)
    batch, length, channels = shape_of(op.x.type)
    kernel = op.kernel_size
    padded_shape = [batch, length + kernel - 1, channels]
    xp = lb.empty(padded_shape, _element(op.x))
    if kernel > 1:
        xp = tensor.insert_slice(op.left_pad, xp, [], [], [], [0, 0, 0], [batch, kernel - 1, channels], [1, 1, 1])
    xp = tensor.insert_slice(op.x, xp, [], [], [], [0, kernel - 1, 0], [batch, length, channels], [1, 1, 1])

    # out[b, s, c] = sum_k w[c, 0, 0, k] * xp[b, s + k, c]
    b, s, c, k = _dims(4)
    zero = ir.AffineConstantExpr.get(0)
    maps = [_map(4, [b, s + k, c]), _map(4, [c, zero, zero, k]), _map(4, [b, s, c])]
    acc = lb.generic(
        [xp, op.weight], _zeros_f32([batch, length, channels]), maps,
        [lb.PARALLEL, lb.PARALLEL, lb.PARALLEL, lb.REDUCTION],
        lambda x_el, w_el, acc_el: arith.addf(acc_el, arith.mulf(lb.widen(w_el), lb.widen(x_el))),
    )
    return _convert(acc, element)


LOWERINGS: dict[type, Callable] = {
    rlx.SelectiveScanOp: _lower_selective_scan,
    rlx.GatedDeltaNetOp: _lower_gated_delta_net,
    rlx.DepthwiseConv1dCausalOp: _lower_depthwise_conv1d_causal,
}
