"""Lowering of MIR ops. KV cache: rlx.kv_cache_write, rlx.cached_attention, rlx.rope_at.

Each op reads its runtime position `pos` (tensor.extract, then clamped into
range with arith.maxsi / minsi and cast to index) and uses it as a dynamic
offset or size:

- rlx.kv_cache_write is one `tensor.insert_slice` of `new` into the cache at
  `[0, p, 0]`: one-shot bufferization writes the new rows into the cache's
  buffer (in place when the old cache is dead), moving `S` rows, never `C`.
- rlx.rope_at slices the rows `p .. p + S - 1` of the tables
  (`tensor.extract_slice`, a view after bufferization) and applies the
  `rlx.rope` lowering to them.
- rlx.cached_attention slices the first `L = p + S` positions of the caches
  (a dynamic size: the work follows the filled length, not the capacity) and
  runs the same chain as rlx.attention on `[B, H, S, L]` scores, with the
  causal mask `j <= p + i` built from the runtime `p`.
"""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, linalg, tensor
from mlir.dialects import math as mmath

from ...dialects import rlx
from ...ir.shapes import DYNAMIC, shape_of
from . import builders as lb

# The cache ops extend the attention family: its helpers and its rope lowering are shared.
from .attention import F32_NEG_INF, _dims, _map, _reduce_last, _split_heads
from .attention import LOWERINGS as _ATTENTION_LOWERINGS


def _position(pos: ir.Value, highest: int) -> ir.Value:
    """`clamp(pos[], 0, highest)` as an index."""
    i64 = lb.i64_type()
    value = tensor.extract(pos, [])
    value = arith.maxsi(value, arith.constant(i64, 0))
    value = arith.minsi(value, arith.constant(i64, highest))
    return arith.index_cast(ir.IndexType.get(), value)


def _lower_kv_cache_write(op) -> ir.Value:
    b, c, w = shape_of(op.cache.type)
    s = shape_of(op.new.type)[1]
    p = _position(op.pos, c - s)
    return tensor.InsertSliceOp(
        op.new, op.cache, [p], [], [], [0, DYNAMIC, 0], [b, s, w], [1, 1, 1]
    ).result


def _table_rows(table: ir.Value, p: ir.Value, rows: int) -> ir.Value:
    """`table[p : p + rows]`, a static `[rows, n]` slice at a dynamic offset."""
    n = shape_of(table.type)[1]
    element = ir.RankedTensorType(table.type).element_type
    result = ir.RankedTensorType.get([rows, n], element)
    return tensor.ExtractSliceOp(result, table, [p], [], [], [DYNAMIC, 0], [rows, n], [1, 1]).result


def _lower_rope_at(op) -> ir.Value:
    s = shape_of(op.x.type)[1]
    p = _position(op.pos, shape_of(op.cos.type)[0] - s)
    cos, sin = _table_rows(op.cos, p, s), _table_rows(op.sin, p, s)
    # The rows are plain `[S, n_rot / 2]` tables: rlx.rope's lowering applies.  The
    # temporary rlx.rope only carries the operands and attributes to it.
    rope = rlx.RopeOp(op.x, cos, sin, op.head_dim, op.n_rot)
    value = _ATTENTION_LOWERINGS[rlx.RopeOp](rope)
    rope.operation.erase()
    return value


def _dynamic_empty(shape, dynamic_sizes, element: ir.Type) -> ir.Value:
    """tensor.empty of `shape` whose DYNAMIC dims take `dynamic_sizes`, in order."""
    sizes = iter(dynamic_sizes)
    return tensor.EmptyOp([next(sizes) if d == DYNAMIC else d for d in shape], element).result


def _lower_cached_attention(op) -> ir.Value:
    num_heads, head_dim = op.num_heads, op.head_dim
    scale = op.score_scale if op.score_scale is not None else 1.0 / head_dim**0.5
    element = ir.RankedTensorType(op.result.type).element_type
    batch, sq, _ = shape_of(op.q.type)
    _, capacity, kv_width = shape_of(op.k_cache.type)
    kv_heads = kv_width // head_dim
    group = num_heads // kv_heads
    f32 = lb.f32_type()

    p = _position(op.pos, capacity - sq)
    length = arith.addi(p, lb.index_constant(sq))  # L = p + S keys are read

    def filled(cache: ir.Value) -> ir.Value:  # [B, L, Hkv, D]: the first L positions
        heads = _split_heads(cache, head_dim)
        kv_element = ir.RankedTensorType(cache.type).element_type
        sliced = ir.RankedTensorType.get([batch, DYNAMIC, kv_heads, head_dim], kv_element)
        return tensor.ExtractSliceOp(
            sliced, heads, [], [length], [], [0, 0, 0, 0], [batch, DYNAMIC, kv_heads, head_dim], [1, 1, 1, 1]
        ).result

    q = _split_heads(op.q, head_dim)  # [B, S, H, D]
    k, v = filled(op.k_cache), filled(op.v_cache)
    scores_shape = [batch, num_heads, sq, DYNAMIC]

    # scores[b, h, i, j] = sum_d q[b, i, h, d] * k[b, j, h floordiv G, d]
    b, h, i, j, d = _dims(5)
    kv_head = ir.AffineExpr.get_floor_div(h, group)
    zero = lb.f32_constant(0.0)
    scores = lb.generic(
        [q, k],
        linalg.fill(zero, outs=[_dynamic_empty(scores_shape, [length], f32)]),
        [_map(5, [b, i, h, d]), _map(5, [b, j, kv_head, d]), _map(5, [b, h, i, j])],
        [lb.PARALLEL] * 4 + [lb.REDUCTION],
        lambda x, y, acc: arith.addf(acc, arith.mulf(lb.widen(x), lb.widen(y))),
    )

    # logits: scaled, -inf where key j lies after query i's position p + i.
    b, h, i, j = _dims(4)
    identity = _map(4, [b, h, i, j])

    def logits_body(score, _out):
        visible = arith.cmpi(arith.CmpIPredicate.sle, lb.loop_index(3), arith.addi(lb.loop_index(2), p))
        return arith.select(visible, arith.mulf(score, lb.f32_constant(scale)), lb.f32_constant(F32_NEG_INF))

    logits = lb.generic(
        [scores], _dynamic_empty(scores_shape, [length], f32), [identity, identity], [lb.PARALLEL] * 4, logits_body
    )

    # Stable softmax over the keys; key 0 is visible to every query, so no row is all -inf.
    row_max = _reduce_last(logits, arith.maximumf, F32_NEG_INF)
    row = _map(4, [b, h, i])
    probs = lb.generic(
        [logits, row_max],
        _dynamic_empty(scores_shape, [length], f32),
        [identity, row, identity],
        [lb.PARALLEL] * 4,
        lambda logit, peak, _out: mmath.exp(arith.subf(logit, peak)),
    )
    row_sum = _reduce_last(probs, arith.addf, 0.0)

    # acc[b, i, h, d] = sum_j p[b, h, i, j] * v[b, j, h floordiv G, d], the loop over the
    # head feature d innermost: parallel and contiguous in v and acc, so it vectorizes
    # (a reduction innermost would accumulate one scalar at a time).
    b, i, h, j, d = _dims(5)
    heads_shape = [batch, sq, num_heads, head_dim]
    acc = lb.generic(
        [probs, v],
        lb.zeros(heads_shape, f32),
        [_map(5, [b, h, i, j]), _map(5, [b, j, ir.AffineExpr.get_floor_div(h, group), d]), _map(5, [b, i, h, d])],
        [lb.PARALLEL] * 3 + [lb.REDUCTION, lb.PARALLEL],
        lambda weight, x, out: arith.addf(out, arith.mulf(weight, lb.widen(x))),
    )

    b, i, h, d = _dims(4)
    out = lb.generic(
        [acc, row_sum],
        lb.empty(heads_shape, element),
        [_map(4, [b, i, h, d]), _map(4, [b, h, i]), _map(4, [b, i, h, d])],
        [lb.PARALLEL] * 4,
        lambda value, total, _out: lb.narrow(arith.divf(value, total), element),
    )
    return tensor.collapse_shape(op.result.type, out, [[0], [1], [2, 3]])


LOWERINGS: dict[type, Callable] = {
    rlx.KvCacheWriteOp: _lower_kv_cache_write,
    rlx.CachedAttentionOp: _lower_cached_attention,
    rlx.RopeAtOp: _lower_rope_at,
}
