"""Lowering of MIR ops. Attention as a tiled loop nest with an online softmax (the CPU form).

`rlx.attention` and `rlx.cached_attention` as FlashAttention computes them: no `[Sq, Sk]` score
matrix is ever written, only `[Bq, Bk]` tiles that stay in cache, and a causal (or sliding-window)
query block never visits the key blocks it cannot see.

    scf.forall (b, g, kb) over the key blocks below L   K and V packed once per kv head, f32:
      kt[b, g, kb] = k[b, kb*Bk : +Bk, g, :]^T           [D, Bk] (the GEMM's B operand, contiguous)
      vt[b, g, kb*Bk : +Bk] = v[b, kb*Bk : +Bk, g, :]    [Bk, D], rows at or past L zeroed
    scf.forall (b, h, query block qb)                    threads share the (b, h, qb) tiles out
      qs = q[b, qb*Bq : +Bq, h, :] * scale               [Bq, D] f32
      m = -inf, l = 0, acc = 0                           [Bq], [Bq], [Bq, D]
      scf.for kb in [first visible block, last + 1)      only the blocks some query of qb sees
        s   = qs @ kt[b, h // G, kb]                     linalg.matmul (the GEMM kernel), [Bq, Bk]
        s   = softcap, mask (-inf where hidden, from the absolute positions)
        m'  = max(m, rowmax(s));  c = exp(m - m')        (c = 1 while both are -inf)
        p   = exp(s - m')                                (0 in a row that has seen no key)
        l   = l * c + rowsum(p)
        acc = acc * c + p @ vt[b, h // G, kb*Bk : +Bk]   linalg.matmul accumulating into acc
      out[b, qb*Bq : +Bq, h, :] = acc / l                (0 where l = 0), rounded once

`Bq` and `Bk` are the largest divisors of `Sq` and of the key count (`Sk`, or the cache's capacity
`C`) up to `BLOCK`; the op keeps the plain lowering of `attention.py` / `cache.py` (one chain of
`[B, H, Sq, Sk]` generics) when either block would be shorter than `MIN_BLOCK` (a decode step's
single query: the plain chain reads the keys once and is several times faster there) or the scores
have at most `MIN_SCORES` elements.  The keys and values are packed once, before the query blocks
(each query block used to transpose every key block it visits: `Sq / Bq` times the same copy):
key blocks transposed and each `[D, Bk]` block contiguous (a `[D, C]` layout would put the rows of
a block `C` floats apart, a power of two that thrashes the cache sets), value rows per head
contiguous.  Over a cache, the filled length `L = p + S` is a runtime value: only the `ceil(L / Bk)`
blocks below it are packed and read; the last may reach past `L` (inside the capacity, which `Bk`
divides): its keys are masked by causality (every key there lies after every query) and its value
rows are zeroed when packed, so what the cache holds past `L` (it may hold anything, even NaN) never
reaches the result.

The loop nest is built on tensors; one-shot bufferization keeps the tiles as views of q and of the
packed keys and values, and `rlx-pack-matmul` / `rlx-tile-gemv` turn the two products into the
register-blocked kernels.  The GPU pipeline keeps the plain lowering (this form is selected by the CPU pipeline:
`rlx-lower-to-llvm{tiled-attention}`).
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor
from mlir.dialects import math as mmath

from ...dialects import rlx
from ...ir.shapes import shape_of
from . import builders as lb
from .attention import F32_NEG_INF, _dims, _map, _reduce_last, _split_heads
from .attention import _lower_attention as _lower_attention_plainly
from .cache import _lower_cached_attention as _lower_cached_attention_plainly
from .cache import _position

BLOCK = 64  # largest query / key block: a [64, 64] f32 score tile is 16 KiB, L1-resident
MIN_SCORES = 64 * 64  # score matrices of at most this many elements: the plain lowering (one tile)
MIN_BLOCK = 16  # shorter query or key blocks: the plain lowering (the per-block overhead would dominate)

_DYNAMIC = ir.ShapedType.get_dynamic_size()


class _Attention:
    """One attention op's tiled loop nest; `lower()` returns `[B, Sq, H, D]` in `element`."""

    def __init__(self, q: ir.Value, k: ir.Value, v: ir.Value, *, num_heads: int, head_dim: int, scale: float,
                 softcap: Optional[float], mask_kind: str, window: Optional[int], mask: Optional[ir.Value],
                 offset: lb.Offset, length: lb.Offset, element: ir.Type):
        self.q, self.k, self.v = q, k, v  # [B, Sq, H, D], [B, C, Hkv, D], [B, C, Hkv, D]
        self.batch, self.sq, self.heads, self.d = shape_of(q.type)
        _, self.capacity, kv_heads, _ = shape_of(k.type)
        self.group = num_heads // kv_heads
        self.scale, self.softcap, self.mask_kind, self.window, self.mask = scale, softcap, mask_kind, window, mask
        self.offset, self.length, self.element = offset, length, element  # query i sits at key position i + offset
        self.bq = lb.largest_divisor(self.sq, BLOCK)
        self.bk = lb.largest_divisor(self.capacity, BLOCK)

    # -- the block range a query block sees ---------------------------------------------------

    def _block_range(self, q0: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(first, end): the key blocks `[first, end)` some query of the block at `q0` may see."""
        bk = lb.index_constant(self.bk)
        length = lb.index_value(self.length)
        end = arith.ceildivsi(length, bk)
        first = lb.index_constant(0)
        if self.mask_kind in ("causal", "sliding_window"):
            first_query = arith.addi(q0, lb.index_value(self.offset))  # the key position of query q0
            last_query = arith.addi(first_query, lb.index_constant(self.bq - 1))
            end = arith.minsi(end, arith.addi(arith.floordivsi(last_query, bk), lb.index_constant(1)))
            if self.mask_kind == "sliding_window":
                oldest = arith.subi(first_query, lb.index_constant(self.window - 1))
                first = arith.maxsi(first, arith.floordivsi(oldest, bk))
        return first, end

    # -- one key block --------------------------------------------------------------------------

    def _scores(self, qs: ir.Value, b: ir.Value, kv_head: ir.Value, kb: ir.Value) -> ir.Value:
        """`qs @ k_block^T` with the GEMM kernel, the key block a `[D, Bk]` view of the keys packed once."""
        keys = lb.extract_slice(self.packed_keys, [b, kv_head, kb, 0, 0], [1, 1, 1, self.d, self.bk],
                                [self.d, self.bk])
        return linalg.matmul(qs, keys, outs=[lb.zeros([self.bq, self.bk], lb.f32_type())])

    def _logits(self, scores: ir.Value, b: ir.Value, h: ir.Value, q0: ir.Value, k0: ir.Value) -> ir.Value:
        """Soft-capped scores with the mask applied (-inf where a key is hidden), `[Bq, Bk]`."""
        i, j = _dims(2)
        inputs, maps = [scores], [_map(2, [i, j])]
        if self.mask_kind == "custom":  # mask [B, Sk]: key j of batch b
            inputs.append(lb.extract_slice(self.mask, [b, k0], [1, self.bk], [self.bk]))
            maps.append(_map(2, [j]))
        elif self.mask_kind == "bias":  # mask [B, H, Sq, Sk]
            inputs.append(lb.extract_slice(self.mask, [b, h, q0, k0], [1, 1, self.bq, self.bk], [self.bq, self.bk]))
            maps.append(_map(2, [i, j]))
        maps.append(_map(2, [i, j]))

        def body(score, *rest):
            value = score
            if self.softcap is not None:
                cap = lb.f32_constant(self.softcap)
                value = arith.mulf(cap, mmath.tanh(arith.divf(value, cap)))
            if self.mask_kind == "bias":
                return arith.addf(value, lb.widen(rest[0]))
            if self.mask_kind == "custom":
                visible = arith.cmpf(arith.CmpFPredicate.UNE, lb.widen(rest[0]), lb.f32_constant(0.0))
            elif self.mask_kind in ("causal", "sliding_window"):
                query = arith.addi(arith.addi(q0, lb.loop_index(0)), lb.index_value(self.offset))
                key = arith.addi(k0, lb.loop_index(1))
                visible = arith.cmpi(arith.CmpIPredicate.sle, key, query)
                if self.mask_kind == "sliding_window":
                    oldest = arith.subi(query, lb.index_constant(self.window))
                    visible = arith.andi(visible, arith.cmpi(arith.CmpIPredicate.sgt, key, oldest))
            else:
                return value
            return arith.select(visible, value, lb.f32_constant(F32_NEG_INF))

        return lb.generic(inputs, lb.empty([self.bq, self.bk], lb.f32_type()), maps, [lb.PARALLEL] * 2, body)

    def _values(self, b: ir.Value, kv_head: ir.Value, k0: ir.Value) -> ir.Value:
        """The value block `[Bk, D]` f32, a view of the values packed once."""
        return lb.extract_slice(self.packed_values, [b, kv_head, k0, 0], [1, 1, self.bk, self.d], [self.bk, self.d])

    # -- K and V packed once per head -----------------------------------------------------------

    def _pack_keys_values(self) -> tuple[ir.Value, ir.Value]:
        """The keys as `[B, Hkv, C / Bk, D, Bk]` (each key block transposed, contiguous) and the values as `[B, Hkv, C, D]`, both f32 and contiguous per
        head, written once (an `scf.forall` over the key blocks below the filled length) and read by
        every query block of the heads that share them: the key blocks are the GEMM's `B` operand
        transposed, the value blocks rows at or past the filled length zeroed (the cache may hold
        anything there, even NaN; its keys are hidden by causality).  Blocks past the filled length
        are neither written nor read."""
        f32 = lb.f32_type()
        kv_heads = self.heads // self.group
        bk = lb.index_constant(self.bk)
        length = lb.index_value(self.length)
        filled_blocks = arith.ceildivsi(length, bk)
        statically_full = isinstance(self.length, int) and self.length % self.bk == 0
        packing = scf.ForallOp([0, 0, 0], [self.batch, kv_heads, filled_blocks], [1, 1, 1],
                               [lb.empty([self.batch, kv_heads, self.capacity // self.bk, self.d, self.bk], f32),
                                lb.empty([self.batch, kv_heads, self.capacity, self.d], f32)])
        with ir.InsertionPoint(packing.body):
            (b, g, kb), (keys_out, values_out) = packing.induction_variables, packing.inner_iter_args
            k0 = arith.muli(kb, bk)
            j, d = _dims(2)
            keys = lb.extract_slice(self.k, [b, k0, g, 0], [1, self.bk, 1, self.d], [self.bk, self.d])
            keys = lb.generic([keys], lb.empty([self.d, self.bk], f32), [_map(2, [j, d]), _map(2, [d, j])],
                              [lb.PARALLEL] * 2, lambda key, _out: lb.widen(key))

            def value_row(value, _out):
                value = lb.widen(value)
                if statically_full:
                    return value
                filled = arith.cmpi(arith.CmpIPredicate.slt, arith.addi(k0, lb.loop_index(0)), length)
                return arith.select(filled, value, lb.f32_constant(0.0))

            values = lb.extract_slice(self.v, [b, k0, g, 0], [1, self.bk, 1, self.d], [self.bk, self.d])
            values = lb.generic([values], lb.empty([self.bk, self.d], f32), [_map(2, [j, d])] * 2,
                                [lb.PARALLEL] * 2, value_row)
            terminator = scf.InParallelOp()
            with ir.InsertionPoint(terminator.region.blocks[0]):
                tensor.ParallelInsertSliceOp(keys, keys_out, [b, g, kb], [], [], [_DYNAMIC, _DYNAMIC, _DYNAMIC, 0, 0],
                                             [1, 1, 1, self.d, self.bk], [1, 1, 1, 1, 1])
                tensor.ParallelInsertSliceOp(values, values_out, [b, g, k0], [], [],
                                             [_DYNAMIC, _DYNAMIC, _DYNAMIC, 0], [1, 1, self.bk, self.d], [1, 1, 1, 1])
        return packing.results[0], packing.results[1]

    def _visit(self, kb: ir.Value, carried: Sequence[ir.Value], qs: ir.Value, b: ir.Value, h: ir.Value,
               kv_head: ir.Value, q0: ir.Value) -> list[ir.Value]:
        """One step of the online softmax: (m, l, acc) after key block `kb`, each written over its
        old value (one-shot bufferization keeps loop-carried tensors in their buffers)."""
        peak, total, acc = carried
        k0 = arith.muli(kb, lb.index_constant(self.bk))
        logits = self._logits(self._scores(qs, b, kv_head, kb), b, h, q0, k0)
        i, j = _dims(2)  # [Bq, Bk] tiles and, with j as the feature, [Bq, D] ones
        row_peak = _reduce_last(logits, arith.maximumf, F32_NEG_INF)
        neg_inf = lb.f32_constant(F32_NEG_INF)

        def rescale(old, new_in_block, _peak, _correction):  # the new running max, the old terms' factor
            new = arith.maximumf(old, new_in_block)
            unseen = arith.cmpf(arith.CmpFPredicate.OEQ, new, neg_inf)
            return [new, arith.select(unseen, lb.f32_constant(1.0), mmath.exp(arith.subf(old, new)))]

        f32 = lb.f32_type()
        new_peak, correction = lb.generic_results(
            [peak, row_peak], [peak, lb.empty([self.bq], f32)], [_map(1, [i])] * 4,
            [lb.PARALLEL], rescale)

        def weight(logit, row_max, _out):
            unseen = arith.cmpf(arith.CmpFPredicate.OEQ, row_max, neg_inf)
            return arith.select(unseen, lb.f32_constant(0.0), mmath.exp(arith.subf(logit, row_max)))

        probs = lb.generic([logits, new_peak], lb.empty([self.bq, self.bk], f32),
                           [_map(2, [i, j]), _map(2, [i]), _map(2, [i, j])], [lb.PARALLEL] * 2, weight)
        block_total = _reduce_last(probs, arith.addf, 0.0)
        new_total = lb.generic([total, correction, block_total], total, [_map(1, [i])] * 4,
                               [lb.PARALLEL], lambda old, c, added, _out: arith.addf(arith.mulf(old, c), added))
        # p @ v into a tile of its own, then added: the GEMM kernel may pad its accumulator (D < its
        # vector width), which would not keep `acc` in its buffer.
        added = linalg.matmul(probs, self._values(b, kv_head, k0), outs=[lb.zeros([self.bq, self.d], f32)])
        new_acc = lb.generic([acc, correction, added], acc, [_map(2, [i, j]), _map(2, [i]), _map(2, [i, j]),
                                                            _map(2, [i, j])],
                             [lb.PARALLEL] * 2, lambda value, c, product, _out: arith.addf(arith.mulf(value, c), product))
        return [new_peak, new_total, new_acc]

    # -- the loop nest -----------------------------------------------------------------------------

    def _query_block(self, b: ir.Value, h: ir.Value, q0: ir.Value) -> ir.Value:
        """`[Bq, D]` outputs of the queries `q0 .. q0 + Bq - 1` of head `h`."""
        f32 = lb.f32_type()
        i, d = _dims(2)
        queries = lb.extract_slice(self.q, [b, q0, h, 0], [1, self.bq, 1, self.d], [self.bq, self.d])
        scale = lb.f32_constant(self.scale)
        qs = lb.generic([queries], lb.empty([self.bq, self.d], f32), [_map(2, [i, d])] * 2, [lb.PARALLEL] * 2,
                        lambda x, _out: arith.mulf(lb.widen(x), scale))
        kv_head = arith.floordivsi(h, lb.index_constant(self.group))
        carried = [linalg.fill(lb.f32_constant(F32_NEG_INF), outs=[lb.empty([self.bq], f32)]),
                   lb.zeros([self.bq], f32), lb.zeros([self.bq, self.d], f32)]
        first, end = self._block_range(q0)
        _, total, acc = lb.for_loop(first, end, carried,
                                    lambda kb, *state: self._visit(kb, state, qs, b, h, kv_head, q0))

        def normalise(value, row_total, _out):
            empty_row = arith.cmpf(arith.CmpFPredicate.OEQ, row_total, lb.f32_constant(0.0))
            return lb.narrow(arith.select(empty_row, lb.f32_constant(0.0), arith.divf(value, row_total)), self.element)

        return lb.generic([acc, total], lb.empty([self.bq, self.d], self.element),
                          [_map(2, [i, d]), _map(2, [i]), _map(2, [i, d])], [lb.PARALLEL] * 2, normalise)

    def lower(self) -> ir.Value:
        self.packed_keys, self.packed_values = self._pack_keys_values()
        shape = [self.batch, self.sq, self.heads, self.d]
        tiles = scf.ForallOp([0, 0, 0], [self.batch, self.heads, self.sq // self.bq], [1, 1, 1],
                             [lb.empty(shape, self.element)])
        with ir.InsertionPoint(tiles.body):
            (b, h, qb), (shared,) = tiles.induction_variables, tiles.inner_iter_args
            q0 = arith.muli(qb, lb.index_constant(self.bq))
            out = self._query_block(b, h, q0)
            terminator = scf.InParallelOp()
            with ir.InsertionPoint(terminator.region.blocks[0]):
                tensor.ParallelInsertSliceOp(out, shared, [b, q0, h], [], [], [_DYNAMIC, _DYNAMIC, _DYNAMIC, 0],
                                             [1, self.bq, 1, self.d], [1, 1, 1, 1])
        return tiles.results[0]


def _worth_tiling(sq: int, keys: int) -> bool:
    """Tiles pay when query and key blocks are long enough for the GEMM kernels (a decode step's
    one query per head is faster as the plain chain: a few hundred keys, read once) and the
    scores span more than one tile."""
    blocks = min(lb.largest_divisor(sq, BLOCK), lb.largest_divisor(keys, BLOCK))
    return blocks >= MIN_BLOCK and sq * keys > MIN_SCORES


def _lower_attention(op) -> ir.Value:
    batch, sq, _ = shape_of(op.q.type)
    _, sk, _ = shape_of(op.k.type)
    if not _worth_tiling(sq, sk):
        return _lower_attention_plainly(op)
    element = ir.RankedTensorType(op.result.type).element_type
    attention = _Attention(
        _split_heads(op.q, op.head_dim), _split_heads(op.k, op.head_dim), _split_heads(op.v, op.head_dim),
        num_heads=op.num_heads, head_dim=op.head_dim, scale=op.scale(), softcap=op.softcap, mask_kind=op.mask_kind,
        window=op.window, mask=op.mask, offset=sk - sq, length=sk, element=element)
    return tensor.collapse_shape(op.result.type, attention.lower(), [[0], [1], [2, 3]])


def _lower_cached_attention(op) -> ir.Value:
    _, sq, _ = shape_of(op.q.type)
    _, capacity, _ = shape_of(op.k_cache.type)
    if min(lb.largest_divisor(sq, BLOCK), lb.largest_divisor(capacity, BLOCK)) < MIN_BLOCK:
        return _lower_cached_attention_plainly(op)
    head_dim = op.head_dim
    scale = op.score_scale if op.score_scale is not None else 1.0 / head_dim**0.5
    p = _position(op.pos, capacity - sq)
    attention = _Attention(
        _split_heads(op.q, head_dim), _split_heads(op.k_cache, head_dim), _split_heads(op.v_cache, head_dim),
        num_heads=op.num_heads, head_dim=head_dim, scale=scale, softcap=None, mask_kind="causal", window=None,
        mask=None, offset=p, length=arith.addi(p, lb.index_constant(sq)),
        element=ir.RankedTensorType(op.result.type).element_type)
    return tensor.collapse_shape(op.result.type, attention.lower(), [[0], [1], [2, 3]])


# Selected over the plain lowerings by `rlx-mir-to-linalg{tiled-attention}` (the CPU pipeline).
LOWERINGS: dict[type, Callable] = {
    rlx.AttentionOp: _lower_attention,
    rlx.CachedAttentionOp: _lower_cached_attention,
}
