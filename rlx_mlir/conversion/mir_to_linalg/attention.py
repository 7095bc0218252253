"""Lowering of MIR ops. Attention and rotary position embedding (RoPE).

Both lower to linalg.generic on static shapes; f16 / bf16 operands are
widened to f32 inside the generic bodies and the result is rounded once.

rlx.rope views `x` as `[B, S, H, head_dim]` and its two rotated halves as slices
`x1 = x[..., :half]`, `x2 = x[..., half:n_rot]`; one generic over `(b, s, h, t, j)`
writes half `t` of the rotated features of each head.  Every indexing map is a
projected permutation (no partner index with `floordiv` / `mod`), so the inner
loop over `j` is contiguous in x, the tables and the result, and any backend can
tile it; the choice of formula depends on `t` only, an outer loop.

rlx.attention is a short chain over `[B, H, Sq, Sk]` scores, f32 throughout:

    scores = generic (b, h, i, j, d): sum_d q[b, i, h, d] * k[b, j, h floordiv G, d]
    logits = generic (b, h, i, j): scale, softcap, mask (-inf where masked)
    rowmax = linalg.reduce max over j
    p      = generic (b, h, i, j): exp(logit - rowmax), 0 in fully masked rows
    rowsum = linalg.reduce add over j
    acc    = generic (b, i, h, d, j): sum_j p[b, h, i, j] * v[b, j, h floordiv G, d]
    out    = generic (b, i, h, d): acc / rowsum (0 when rowsum is 0), rounded

with `G = H / Hkv` (grouped-query attention); q, k and v are viewed as
`[B, S, heads, D]` by tensor.expand_shape and the output collapsed back.
"""

from __future__ import annotations

from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, tensor
from mlir.dialects import math as mmath

from ...dialects import rlx
from ...ir.shapes import shape_of
from . import builders as lb

F32_NEG_INF = float("-inf")


# --- local helpers ---------------------------------------------------------------


def _dims(count: int) -> list[ir.AffineExpr]:
    return [ir.AffineDimExpr.get(i) for i in range(count)]


def _map(count: int, results: Sequence[ir.AffineExpr]) -> ir.AffineMap:
    return ir.AffineMap.get(count, 0, list(results))


def _full(shape: Sequence[int], value: float) -> ir.Value:
    """An f32 tensor filled with `value` (a reduction's initial value)."""
    return linalg.fill(lb.f32_constant(value), outs=[lb.empty(shape, lb.f32_type())])


def _reduce_last(input_: ir.Value, combine: Callable[[ir.Value, ir.Value], ir.Value], init: float) -> ir.Value:
    """linalg.reduce of an f32 tensor over its last dimension."""
    shape = shape_of(input_.type)
    out = _full(shape[:-1], init)
    op = linalg.ReduceOp([out.type], [input_], [out], ir.DenseI64ArrayAttr.get([len(shape) - 1]))
    f32 = lb.f32_type()
    block = op.regions[0].blocks.append(f32, f32)
    with ir.InsertionPoint(block):
        linalg.YieldOp([combine(block.arguments[0], block.arguments[1])])
    return op.results[0]


def _split_heads(value: ir.Value, head_dim: int) -> ir.Value:
    """`[B, S, heads * D]` viewed as `[B, S, heads, D]`."""
    b, s, c = shape_of(value.type)
    shape = [b, s, c // head_dim, head_dim]
    element = ir.RankedTensorType(value.type).element_type
    return tensor.expand_shape(ir.RankedTensorType.get(shape, element), value, [[0], [1], [2, 3]], [], shape)


# --- rope --------------------------------------------------------------------------


def _lower_rope(op) -> ir.Value:
    """The split-halves form: the rotated features of each head viewed as `[2, half]`, the halves
    `x1 = x[..., :half]` and `x2 = x[..., half:n_rot]` as slices, and one generic over
    `(b, s, h, t, j)` writing `x1 cos - x2 sin` (t = 0) or `x2 cos + x1 sin` (t = 1), every map
    a projected permutation (no partner index, no select on the feature).  With partial rotary
    the rotated features are inserted into a copy of x."""
    x, cos, sin = op.x, op.cos, op.sin
    batch, seq, width = shape_of(op.result.type)
    element = ir.RankedTensorType(op.result.type).element_type
    head_dim, n_rot = op.head_dim, op.n_rot
    half = n_rot // 2
    heads = width // head_dim
    heads_shape = [batch, seq, heads, head_dim]
    x_heads = tensor.expand_shape(ir.RankedTensorType.get(heads_shape, element), x, [[0], [1], [2, 3]], [], heads_shape)
    half_type = ir.RankedTensorType.get([batch, seq, heads, half], element)

    def half_of(first: int) -> ir.Value:  # features first .. first + half of every head, [B, S, H, half]
        return tensor.extract_slice(half_type, x_heads, [], [], [], [0, 0, 0, first], [batch, seq, heads, half], [1, 1, 1, 1])

    b, s, h, t, j = _dims(5)
    halves_map, table_map, out_map = _map(5, [b, s, h, j]), _map(5, [s, j]), _map(5, [b, s, h, t, j])

    def body(first, second, cos_el, sin_el, _out):
        first, second, c, sn = (lb.widen(v) for v in (first, second, cos_el, sin_el))
        is_first = arith.cmpi(arith.CmpIPredicate.eq, lb.loop_index(3), lb.index_constant(0))
        rotated_first = arith.subf(arith.mulf(first, c), arith.mulf(second, sn))
        rotated_second = arith.addf(arith.mulf(second, c), arith.mulf(first, sn))
        return lb.narrow(arith.select(is_first, rotated_first, rotated_second), element)

    rotated = lb.generic(
        [half_of(0), half_of(half), cos, sin], lb.empty([batch, seq, heads, 2, half], element),
        [halves_map, halves_map, table_map, table_map, out_map], [lb.PARALLEL] * 5, body,
    )
    result_type = ir.RankedTensorType.get([batch, seq, width], element)
    if n_rot == head_dim:
        return tensor.collapse_shape(result_type, rotated, [[0], [1], [2, 3, 4]])
    rotated_heads = tensor.collapse_shape(
        ir.RankedTensorType.get([batch, seq, heads, n_rot], element), rotated, [[0], [1], [2], [3, 4]])
    out = tensor.insert_slice(rotated_heads, x_heads, [], [], [], [0, 0, 0, 0], [batch, seq, heads, n_rot], [1, 1, 1, 1])
    return tensor.collapse_shape(result_type, out, [[0], [1], [2, 3]])


# --- attention ----------------------------------------------------------------------


def _lower_attention(op) -> ir.Value:
    num_heads, head_dim = op.num_heads, op.head_dim
    mask_kind, window, softcap, scale = op.mask_kind, op.window, op.softcap, op.scale()
    element = ir.RankedTensorType(op.result.type).element_type
    batch, sq, _ = shape_of(op.q.type)
    _, sk, kv_width = shape_of(op.k.type)
    group = num_heads // (kv_width // head_dim)
    f32 = lb.f32_type()

    q = _split_heads(op.q, head_dim)  # [B, Sq, H, D]
    k = _split_heads(op.k, head_dim)  # [B, Sk, Hkv, D]
    v = _split_heads(op.v, head_dim)  # [B, Sk, Hkv, D]
    scores_shape = [batch, num_heads, sq, sk]

    # scores[b, h, i, j] = sum_d q[b, i, h, d] * kt[b, h floordiv G, d, j], with the keys
    # transposed once so that the innermost loop (over keys j) is parallel and contiguous
    # in kt and scores: it vectorizes as an axpy per (i, d) (a reduction over d innermost
    # would accumulate through memory, one scalar at a time).
    kv_heads = kv_width // head_dim
    key_element = ir.RankedTensorType(k.type).element_type
    kt_init = lb.empty([batch, kv_heads, head_dim, sk], key_element)
    kt = linalg.transpose(k, outs=[kt_init], permutation=[0, 2, 3, 1]).results[0]
    b, h, i, d, j = _dims(5)
    kv_head = ir.AffineExpr.get_floor_div(h, group)
    scores = lb.generic(
        [q, kt],
        lb.zeros(scores_shape, f32),
        [_map(5, [b, i, h, d]), _map(5, [b, kv_head, d, j]), _map(5, [b, h, i, j])],
        [lb.PARALLEL] * 3 + [lb.REDUCTION, lb.PARALLEL],
        lambda x, y, acc: arith.addf(acc, arith.mulf(lb.widen(x), lb.widen(y))),
    )

    # logits: scale, soft-cap, then the mask (-inf where a key is hidden).
    b, h, i, j = _dims(4)
    identity = _map(4, [b, h, i, j])
    inputs, maps = [scores], [identity]
    if mask_kind == "custom":
        inputs.append(op.mask)
        maps.append(_map(4, [b, j]))
    elif mask_kind == "bias":
        inputs.append(op.mask)
        maps.append(identity)
    maps.append(identity)
    offset = sk - sq

    def logits_body(score, *rest):
        value = arith.mulf(score, lb.f32_constant(scale))
        if softcap is not None:
            cap = lb.f32_constant(softcap)
            value = arith.mulf(cap, mmath.tanh(arith.divf(value, cap)))
        if mask_kind == "bias":
            return arith.addf(value, lb.widen(rest[0]))
        if mask_kind == "custom":
            visible = arith.cmpf(arith.CmpFPredicate.UNE, lb.widen(rest[0]), lb.f32_constant(0.0))
        elif mask_kind in ("causal", "sliding_window"):
            # The last query sits at key position Sk - 1: query i is at i + (Sk - Sq).
            query_pos = arith.addi(lb.loop_index(2), lb.index_constant(offset))
            key = lb.loop_index(3)
            visible = arith.cmpi(arith.CmpIPredicate.sle, key, query_pos)
            if mask_kind == "sliding_window":
                oldest = arith.subi(query_pos, lb.index_constant(window))
                recent = arith.cmpi(arith.CmpIPredicate.sgt, key, oldest)
                visible = arith.andi(visible, recent)
        else:
            return value
        return arith.select(visible, value, lb.f32_constant(F32_NEG_INF))

    logits = lb.generic(inputs, lb.empty(scores_shape, f32), maps, [lb.PARALLEL] * 4, logits_body)

    # Numerically stable softmax over keys; a row with every key masked has
    # max -inf and gets all-zero probabilities (instead of exp(-inf + inf) = NaN).
    row_max = _reduce_last(logits, arith.maximumf, F32_NEG_INF)
    row = _map(4, [b, h, i])

    def exp_body(logit, peak, _out):
        hidden_row = arith.cmpf(arith.CmpFPredicate.OEQ, peak, lb.f32_constant(F32_NEG_INF))
        return arith.select(hidden_row, lb.f32_constant(0.0), mmath.exp(arith.subf(logit, peak)))

    probs = lb.generic(
        [logits, row_max], lb.empty(scores_shape, f32), [identity, row, identity], [lb.PARALLEL] * 4, exp_body
    )
    row_sum = _reduce_last(probs, arith.addf, 0.0)

    # acc[b, i, h, d] = sum_j p[b, h, i, j] * v[b, j, h floordiv G, d], in the output layout;
    # the head feature d innermost (parallel, contiguous in v and acc) vectorizes.
    b, i, h, j, d = _dims(5)
    heads_shape = [batch, sq, num_heads, head_dim]
    acc = lb.generic(
        [probs, v],
        lb.zeros(heads_shape, f32),
        [
            _map(5, [b, h, i, j]),
            _map(5, [b, j, ir.AffineExpr.get_floor_div(h, group), d]),
            _map(5, [b, i, h, d]),
        ],
        [lb.PARALLEL] * 3 + [lb.REDUCTION, lb.PARALLEL],
        lambda p, x, out: arith.addf(out, arith.mulf(p, lb.widen(x))),
    )

    # Normalise by the row sum (zero rows stay zero) and round once.
    b, i, h, d = _dims(4)

    def normalise(value, total, _out):
        empty_row = arith.cmpf(arith.CmpFPredicate.OEQ, total, lb.f32_constant(0.0))
        return lb.narrow(arith.select(empty_row, lb.f32_constant(0.0), arith.divf(value, total)), element)

    out = lb.generic(
        [acc, row_sum],
        lb.empty(heads_shape, element),
        [_map(4, [b, i, h, d]), _map(4, [b, h, i]), _map(4, [b, i, h, d])],
        [lb.PARALLEL] * 4,
        normalise,
    )
    return tensor.collapse_shape(op.result.type, out, [[0], [1], [2, 3]])


LOWERINGS: dict[type, Callable] = {
    rlx.RopeOp: _lower_rope,
    rlx.AttentionOp: _lower_attention,
}
