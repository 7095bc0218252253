"""Lowering of MIR ops. Attention as a tiled loop nest with an online softmax (the CPU form).

`rlx.attention` and `rlx.cached_attention` as FlashAttention computes them: no `[Sq, Sk]` score
matrix is ever written, only `[Bk, Bq]` tiles that stay in cache, and a causal (or sliding-window)
query block never visits the key blocks it cannot see.  The tiles are transposed (a key per row, a
query per column), so that everything computed per query (the running max, its correction, the
sum of the weights) is a vector of `Bq` lanes carried in registers down the rows of a tile:
`[Bq, Bk]` tiles would need a horizontal reduction per query row, with NaN-propagating `maximumf`
blends, a serial chain of ~50 instructions per row (a fifth of the time at 2048 tokens).

    scf.forall (b, g, kb) over the key blocks below L   K and V packed once per kv head, f32:
      k'[b, g, kb*Bk : +Bk] = k[b, kb*Bk : +Bk, g, :]    [Bk, D] (the scores' GEMM A operand)
      vt[b, g, kb] = v[b, kb*Bk : +Bk, g, :]^T           [D, Bk], columns at or past L zeroed
    scf.forall (b, h, query block qb)                    threads share the (b, h, qb) tiles out; the
                                                         blocks of a head from both ends in turn
                                                         (`_from_both_ends`: equal work per thread)
      qt = (q[b, qb*Bq : +Bq, h, :] * scale log2 e)^T    [D, Bq] f32: the scores in log2 units, the
                                                         softmax's weights 2^(s - m) (exp2: no ln 2 reduction)
      m = -inf, l = 0, acc = 0                           [Bq], [Bq], [D, Bq]
      scf.for kb in [first visible, first masked)        blocks every query of qb sees whole: no mask
      scf.for kb in [first masked, last + 1)             the diagonal (and window) blocks: masked; an aligned
                                                         diagonal block (`Bq == Bk`, offset a multiple of
                                                         `Bk`) skips the 16-wide strips of only hidden pairs
        s   = k'[b, h // G, kb*Bk : +Bk] @ qt            [Bk, Bq], register tiles from zero (`_product`)
        s   = softcap, mask (-inf where hidden, from the absolute positions; causal: per row, in registers)
        m'  = max(m, max over rows of s);  c = exp2(m - m')  (c = 1 while both are -inf)
        p   = exp2(s - m'), row by row                   (0 in a column that has seen no key)
        l   = l * c + sum over rows of p
        acc = acc * c + vt[b, h // G, kb] @ p            register tiles of acc, rescaled as they are loaded
      out[b, qb*Bq : +Bq, h, :] = (acc / l)^T            (0 where l = 0), rounded once

`Bq` and `Bk` are the largest divisors of `Sq` and of the key count (`Sk`, or the cache's capacity
`C`) up to `BLOCK`; the op keeps the plain lowering of `attention.py` / `cache.py` (one chain of
`[B, H, Sq, Sk]` generics) when either block would be shorter than `MIN_BLOCK` (a decode step's
single query: the plain chain reads the keys once and is several times faster there) or the scores
have at most `MIN_SCORES` elements.  The keys and values are packed once, before the query blocks:
key rows per head contiguous (f32 keys copied a row vector at a time, `_copied`), value blocks transposed and each `[D, Bk]` block contiguous (a
`[D, C]` layout would put the rows of a block `C` floats apart, a power of two that thrashes the
cache sets).  Transposes (the value blocks, the queries, the output) go through a compact tile,
16 x 16 blocks at a time in registers (`_transposed`): gathering columns straight from `[S, H, D]`
rows `H * D` floats apart hits a few cache sets, and LLVM's gathers or scatters cost more than the
GEMMs' per-element work.  Over a cache, the filled length `L = p + S` is a runtime value: only the
`ceil(L / Bk)` blocks below it are packed and read; the last may reach past `L` (inside the
capacity, which `Bk` divides): its keys are masked by causality (every key there lies after every
query, so such a block is never one seen whole) and its value columns are zeroed when packed, so
what the cache holds past `L` (it may hold anything, even NaN) never reaches the result.

The two products are `[64, 64] @ [64, 64]` tiles, all in L1: `_product` builds each as register
tiles of 16 vector accumulators (4 rows x 64 queries), a row of the `B` tile loaded and an
element of `A` broadcast per K step, `vector.fma`; the scores' tiles start from zero (no
zero-filled tile) and acc's are rescaled by the correction as they are loaded (no pass over acc
of its own); where the logits are the scores (no softcap, no mask), the block's max per query is
taken from the scores' registers as they are written (no pass over the tile of its own).  They run at the FMA peak (perf: ~70% of a 2048-token call, at ~275 GFLOP/s on a
core of this Zen 5, the peak `benchmarks/cpu.py` measures); the rest is the softmax's exp, the
block max and the packing.  Query blocks that are not whole vectors (`Bq % 16`) use
`linalg.matmul`, which `rlx-pack-matmul` / `rlx-tile-gemv` turn into the GEMM kernels.

The loop nest is built on tensors, the per-query vectors with the `vector` dialect; one-shot
bufferization keeps the tiles as views of q and of the packed keys and values.  The
GPU pipeline keeps the plain lowering (this form is selected by the CPU pipeline:
`rlx-lower-to-llvm{tiled-attention}`).
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor, vector
from mlir.dialects import math as mmath

from ...dialects import rlx
from ...ir.attrs import NONPOSITIVE_ATTR
from ...ir.shapes import shape_of
from . import builders as lb
from .attention import F32_NEG_INF, _dims, _map, _split_heads
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
        # Both products as `_product`'s register tiles where whole vectors span a query block;
        # else linalg.matmul (the GEMM kernel) into tiles of their own.
        self.register_products = self.bq % LANES == 0
        # A causal mask whose diagonal falls on block corners (`Bq == Bk`, a static offset that `Bk`
        # divides: self-attention): the one masked block of a query block is the diagonal one, its
        # keys at the block's queries' positions (key row j hides query column i < j); both products
        # there skip the `LANES`-wide strips that only hidden pairs fill (`_diagonal_scores`,
        # `_diagonal_values`).
        self.aligned_diagonal = (mask_kind == "causal" and self.register_products and self.bq == self.bk
                                 and isinstance(offset, int) and offset % self.bk == 0)

    # -- the block range a query block sees ---------------------------------------------------

    def _block_range(self, q0: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
        """(first, unmasked_end, end): the key blocks `[first, end)` some query of the block at `q0`
        may see; those in `[first, unmasked_end)` every query sees whole (no mask to apply)."""
        bk = lb.index_constant(self.bk)
        length = lb.index_value(self.length)
        end = arith.ceildivsi(length, bk)
        first = lb.index_constant(0)
        unmasked_end = end if self.mask_kind == "none" else first
        if self.mask_kind in ("causal", "sliding_window"):
            first_query = arith.addi(q0, lb.index_value(self.offset))  # the key position of query q0
            last_query = arith.addi(first_query, lb.index_constant(self.bq - 1))
            end = arith.minsi(end, arith.addi(arith.floordivsi(last_query, bk), lb.index_constant(1)))
            if self.mask_kind == "sliding_window":
                oldest = arith.subi(first_query, lb.index_constant(self.window - 1))
                first = arith.maxsi(first, arith.floordivsi(oldest, bk))
                unmasked_end = first
            else:  # the blocks whose last key is at or before the first query: below the diagonal
                below = arith.floordivsi(arith.addi(first_query, lb.index_constant(1)), bk)
                unmasked_end = arith.minsi(arith.maxsi(below, first), end)
        return first, unmasked_end, end

    # -- one key block, keys along the rows and queries along the columns -------------------------

    def _scores(self, queries: ir.Value, b: ir.Value, kv_head: ir.Value, k0: ir.Value,
                with_peak: bool, diagonal: bool = False) -> tuple[ir.Value, Optional[ir.Value]]:
        """`k_block @ queries`: the scores transposed, `[Bk, Bq]`; with `with_peak` (register
        products only), also their max over the rows (`_Lanes.larger`, row by row), a `[Bq]` vector
        taken from the register tiles as they are written (no pass over the tile of its own).  With
        `diagonal` (an aligned diagonal block), only the scores of the strips some visible pair
        fills (`_diagonal_scores`); the rest of the tile is left undefined (the mask hides it)."""
        keys = lb.extract_slice(self.packed_keys, [b, kv_head, k0, 0], [1, 1, self.bk, self.d], [self.bk, self.d])
        if diagonal:
            return _diagonal_scores(keys, queries), None
        if self.register_products:
            return _product(keys, queries, lb.empty([self.bk, self.bq], lb.f32_type()), column_peak=with_peak)
        return linalg.matmul(keys, queries, outs=[lb.zeros([self.bk, self.bq], lb.f32_type())]), None

    def _logits(self, scores: ir.Value, b: ir.Value, h: ir.Value, q0: ir.Value, k0: ir.Value,
                masked: bool) -> ir.Value:
        """Soft-capped scores `[Bk, Bq]`, with the mask applied (-inf where a key is hidden) when
        `masked` (a block some query sees only in part)."""
        if masked and self.mask_kind == "causal":
            masked = False  # applied by `_visit`, row by row, in registers
        if self.softcap is None and not (masked and self.mask_kind != "none"):
            return scores
        j, i = _dims(2)
        inputs, maps = [scores], [_map(2, [j, i])]
        if masked and self.mask_kind == "custom":  # mask [B, Sk]: key j of batch b
            inputs.append(lb.extract_slice(self.mask, [b, k0], [1, self.bk], [self.bk]))
            maps.append(_map(2, [j]))
        elif masked and self.mask_kind == "bias":  # mask [B, H, Sq, Sk]
            inputs.append(lb.extract_slice(self.mask, [b, h, q0, k0], [1, 1, self.bq, self.bk], [self.bq, self.bk]))
            maps.append(_map(2, [i, j]))
        maps.append(_map(2, [j, i]))

        def body(score, *rest):
            value = score
            if self.softcap is not None:  # cap tanh(s / cap) in log2 units: the cap times log2(e)
                cap = lb.f32_constant(self.softcap * LOG2E)
                value = arith.mulf(cap, mmath.tanh(arith.divf(value, cap)))
            if not masked:
                return value
            if self.mask_kind == "bias":  # in log2 units, as the scores
                return mmath.fma(lb.widen(rest[0]), lb.f32_constant(LOG2E), value)
            if self.mask_kind == "custom":
                visible = arith.cmpf(arith.CmpFPredicate.UNE, lb.widen(rest[0]), lb.f32_constant(0.0))
            elif self.mask_kind in ("causal", "sliding_window"):
                query = arith.addi(arith.addi(q0, lb.loop_index(1)), lb.index_value(self.offset))
                key = arith.addi(k0, lb.loop_index(0))
                visible = arith.cmpi(arith.CmpIPredicate.sle, key, query)
                if self.mask_kind == "sliding_window":
                    oldest = arith.subi(query, lb.index_constant(self.window))
                    visible = arith.andi(visible, arith.cmpi(arith.CmpIPredicate.sgt, key, oldest))
            else:
                return value
            return arith.select(visible, value, lb.f32_constant(F32_NEG_INF))

        return lb.generic(inputs, lb.empty([self.bk, self.bq], lb.f32_type()), maps, [lb.PARALLEL] * 2, body)

    def _values(self, b: ir.Value, kv_head: ir.Value, kb: ir.Value) -> ir.Value:
        """The value block transposed, `[D, Bk]` f32: a view of the values packed once."""
        return lb.extract_slice(self.packed_values, [b, kv_head, kb, 0, 0], [1, 1, 1, self.d, self.bk],
                                [self.d, self.bk])

    # -- K and V packed once per head -----------------------------------------------------------

    def _pack_keys_values(self) -> tuple[ir.Value, ir.Value]:
        """The keys as `[B, Hkv, C, D]` and the values as `[B, Hkv, C / Bk, D, Bk]` (each value block
        transposed, contiguous), both f32 and contiguous per head, written once (an `scf.forall`
        over the key blocks below the filled length) and read by every query block of the heads
        that share them: the key blocks are the `A` operand of the scores' GEMM, the value blocks
        that of the output's, their columns at or past the filled length zeroed (the cache may hold
        anything there, even NaN; its keys are hidden by causality).  Blocks past the filled length
        are neither written nor read."""
        f32 = lb.f32_type()
        kv_heads = self.heads // self.group
        bk = lb.index_constant(self.bk)
        length = lb.index_value(self.length)
        filled_blocks = arith.ceildivsi(length, bk)
        statically_full = isinstance(self.length, int) and self.length % self.bk == 0
        packing = scf.ForallOp([0, 0, 0], [self.batch, kv_heads, filled_blocks], [1, 1, 1],
                               [lb.empty([self.batch, kv_heads, self.capacity, self.d], f32),
                                lb.empty([self.batch, kv_heads, self.capacity // self.bk, self.d, self.bk], f32)])
        with ir.InsertionPoint(packing.body):
            (b, g, kb), (keys_out, values_out) = packing.induction_variables, packing.inner_iter_args
            k0 = arith.muli(kb, bk)
            j, d = _dims(2)
            keys = lb.extract_slice(self.k, [b, k0, g, 0], [1, self.bk, 1, self.d], [self.bk, self.d])
            if self.k.type.element_type == f32:  # an f32 copy would fold away (a scalar memref.copy): rows as vectors
                keys = _copied(keys)
            else:
                keys = lb.generic([keys], lb.empty([self.bk, self.d], f32), [_map(2, [j, d])] * 2,
                                  [lb.PARALLEL] * 2, lambda key, _out: lb.widen(key))

            def value_row(value, _out):
                value = lb.widen(value)
                if statically_full:
                    return value
                filled = arith.cmpi(arith.CmpIPredicate.slt, arith.addi(k0, lb.loop_index(0)), length)
                return arith.select(filled, value, lb.f32_constant(0.0))

            # Widened (and zeroed past the filled length) into a compact tile, then transposed from it.
            values = lb.extract_slice(self.v, [b, k0, g, 0], [1, self.bk, 1, self.d], [self.bk, self.d])
            values = _transposed(lb.generic([values], lb.empty([self.bk, self.d], f32), [_map(2, [j, d])] * 2,
                                            [lb.PARALLEL] * 2, value_row))
            terminator = scf.InParallelOp()
            with ir.InsertionPoint(terminator.region.blocks[0]):
                tensor.ParallelInsertSliceOp(keys, keys_out, [b, g, k0], [], [],
                                             [_DYNAMIC, _DYNAMIC, _DYNAMIC, 0], [1, 1, self.bk, self.d], [1, 1, 1, 1])
                tensor.ParallelInsertSliceOp(values, values_out, [b, g, kb], [], [],
                                             [_DYNAMIC, _DYNAMIC, _DYNAMIC, 0, 0], [1, 1, 1, self.d, self.bk],
                                             [1, 1, 1, 1, 1])
        return packing.results[0], packing.results[1]

    def _visit(self, kb: ir.Value, carried: Sequence[ir.Value], queries: ir.Value, b: ir.Value, h: ir.Value,
               kv_head: ir.Value, q0: ir.Value, masked: bool) -> list[ir.Value]:
        """One step of the online softmax: (m, l, acc^T) after key block `kb`, each written over its
        old value (one-shot bufferization keeps loop-carried tensors in their buffers).  The tiles
        hold a query per column: the per-query max and sum are vectors of `Bq` lanes carried in
        registers down the rows (no horizontal reduction, no memory round trip per row)."""
        peak, total, acc = carried
        k0 = arith.muli(kb, lb.index_constant(self.bk))
        # The logits are the scores themselves (no softcap, no mask): their max comes with them.
        plain = self.softcap is None and not masked
        diagonal = masked and self.aligned_diagonal
        scores, scores_peak = self._scores(queries, b, kv_head, k0, with_peak=plain and self.register_products,
                                           diagonal=diagonal)
        logits = self._logits(scores, b, h, q0, k0, masked)
        causal_mask = masked and self.mask_kind == "causal"  # applied row by row below, in registers
        lanes = _Lanes(self.bq)
        hidden_below = None
        if causal_mask:  # row j hides the queries before key k0 + j: lanes i < k0 + j - (q0 + offset)
            hidden_below = arith.subi(k0, arith.addi(q0, lb.index_value(self.offset)))

        def row_of(tile: ir.Value, j: ir.Value) -> ir.Value:
            row = lanes.read(tile, [j, lb.index_constant(0)])
            if hidden_below is None:
                return row
            return lanes.select(lanes.before(arith.addi(hidden_below, j)), lanes.splat(F32_NEG_INF), row)

        block_peak = scores_peak
        if block_peak is None:
            block_peak = lb.for_loop(0, self.bk, [lanes.splat(F32_NEG_INF)],
                                     lambda j, top: [lanes.larger(row_of(logits, j), top)])[0]
        old_peak = lanes.read(peak, [lb.index_constant(0)])
        new_peak = arith.maximumf(old_peak, block_peak)
        unseen = arith.cmpf(arith.CmpFPredicate.OEQ, new_peak, lanes.splat(F32_NEG_INF))  # no key seen yet
        correction = lanes.select(unseen, lanes.splat(1.0), _exp2_of_nonpositive(arith.subf(old_peak, new_peak)))
        # The weights 2^(s - m'); where a column has seen no key, 2^(s - 0): its logits are all -inf
        # (hidden), so its weights are 0 with no select (nor its mask) per element.
        reference = lanes.select(unseen, lanes.splat(0.0), new_peak)

        def weigh(j, tile, block_total):  # row j of the logits read, then its weights written over it
            weight = _exp2_of_nonpositive(arith.subf(row_of(tile, j), reference))
            return [lanes.write(weight, tile, [j, lb.index_constant(0)]), arith.addf(block_total, weight)]

        f32 = lb.f32_type()
        # The weights overwrite the logits (one tile less in L1 beside the GEMMs' operands).
        probs, block_total = lb.for_loop(0, self.bk, [logits, lanes.splat(0.0)], weigh)
        new_total = arith.addf(arith.mulf(lanes.read(total, [lb.index_constant(0)]), correction), block_total)
        values = self._values(b, kv_head, kb)
        if diagonal:  # the same, the weights of hidden pairs (exact zeros) left out
            new_acc = _diagonal_values(values, probs, acc, correction)
        elif self.register_products:  # acc^T * c + v^T @ p^T, the rescaling in the product's prologue
            new_acc, _ = _product(values, probs, acc, scale=correction)
        else:  # v^T @ p^T into a tile of its own (the GEMM kernel pads it), then added
            added = linalg.matmul(values, probs, outs=[lb.zeros([self.d, self.bq], f32)])

            def accumulate(d, acc):
                origin = [d, lb.index_constant(0)]
                value = arith.addf(arith.mulf(lanes.read(acc, origin), correction), lanes.read(added, origin))
                return [lanes.write(value, acc, origin)]

            new_acc = lb.for_loop(0, self.d, [acc], accumulate)[0]
        zero = lb.index_constant(0)
        return [lanes.write(new_peak, peak, [zero]), lanes.write(new_total, total, [zero]), new_acc]

    # -- the loop nest -----------------------------------------------------------------------------

    def _query_block(self, b: ir.Value, h: ir.Value, q0: ir.Value) -> ir.Value:
        """`[Bq, D]` outputs of the queries `q0 .. q0 + Bq - 1` of head `h`."""
        f32 = lb.f32_type()
        i, d = _dims(2)
        queries = lb.extract_slice(self.q, [b, q0, h, 0], [1, self.bq, 1, self.d], [self.bq, self.d])
        scale = lb.f32_constant(self.scale * LOG2E)  # the scores in log2 units: exp2 weighs them
        # The scaled queries transposed, `[D, Bq]`: the scores' GEMM `B` operand, one query per column.
        # Scaled into a compact tile first (rows read whole), then transposed from it: gathered straight
        # from `q`, whose rows lie `H * D` floats apart, a column's reads would fall in a few cache sets.
        queries = lb.generic([queries], lb.empty([self.bq, self.d], f32), [_map(2, [i, d])] * 2, [lb.PARALLEL] * 2,
                             lambda x, _out: arith.mulf(lb.widen(x), scale))
        queries = _transposed(queries)
        kv_head = arith.floordivsi(h, lb.index_constant(self.group))
        carried = [linalg.fill(lb.f32_constant(F32_NEG_INF), outs=[lb.empty([self.bq], f32)]),
                   lb.zeros([self.bq], f32), lb.zeros([self.d, self.bq], f32)]
        first, unmasked_end, end = self._block_range(q0)
        for lower, upper, masked in ((first, unmasked_end, False), (unmasked_end, end, True)):
            carried = lb.for_loop(lower, upper, carried,
                                  lambda kb, *state, masked=masked: self._visit(kb, state, queries, b, h, kv_head,
                                                                                q0, masked))
        _, total, acc = carried

        def normalise(value, query_total, _out):
            no_key = arith.cmpf(arith.CmpFPredicate.OEQ, query_total, lb.f32_constant(0.0))
            return arith.select(no_key, lb.f32_constant(0.0), arith.divf(value, query_total))

        d, i = _dims(2)
        out = _transposed(lb.generic([acc, total], lb.empty([self.d, self.bq], f32),
                                     [_map(2, [d, i]), _map(2, [i]), _map(2, [d, i])], [lb.PARALLEL] * 2, normalise))
        if self.element == f32:
            return out
        return lb.generic([out], lb.empty([self.bq, self.d], self.element), [_map(2, [d, i])] * 2, [lb.PARALLEL] * 2,
                          lambda value, _out: lb.narrow(value, self.element))

    def lower(self) -> ir.Value:
        self.packed_keys, self.packed_values = self._pack_keys_values()
        shape = [self.batch, self.sq, self.heads, self.d]
        blocks = self.sq // self.bq
        tiles = scf.ForallOp([0, 0, 0], [self.batch, self.heads, blocks], [1, 1, 1], [lb.empty(shape, self.element)])
        with ir.InsertionPoint(tiles.body):
            (b, h, j), (shared,) = tiles.induction_variables, tiles.inner_iter_args
            q0 = arith.muli(_from_both_ends(j, blocks), lb.index_constant(self.bq))
            out = self._query_block(b, h, q0)
            terminator = scf.InParallelOp()
            with ir.InsertionPoint(terminator.region.blocks[0]):
                tensor.ParallelInsertSliceOp(out, shared, [b, q0, h], [], [], [_DYNAMIC, _DYNAMIC, _DYNAMIC, 0],
                                             [1, self.bq, 1, self.d], [1, 1, 1, 1])
        return tiles.results[0]


def _from_both_ends(j: ir.Value, count: int) -> ir.Value:
    """The `j`-th of `count` query blocks taken from both ends in turn: 0, count - 1, 1, count - 2, ...
    A causal query block's work grows with its index; OpenMP's static schedule gives each thread
    a contiguous range of the (head, block) iterations, so with fewer heads than threads (or a
    count of heads they do not divide) a range of a head's blocks in order would put the
    triangle's short rows on one thread and its long ones on another (3x the work, split in
    halves); in this order every range of pairs holds about the same work."""
    half = arith.floordivsi(j, lb.index_constant(2))
    odd = arith.cmpi(arith.CmpIPredicate.ne, arith.remsi(j, lb.index_constant(2)), lb.index_constant(0))
    return arith.select(odd, arith.subi(lb.index_constant(count - 1), half), half)


class _Lanes:
    """`vector<N x f32>` values over the last dimension of f32 tensors: one lane per query."""

    def __init__(self, n: int):
        self.n = n
        self.type = ir.VectorType.get([n], lb.f32_type())
        self.in_bounds = ir.ArrayAttr.get([ir.BoolAttr.get(True)])
        # Lane numbers as i32 (an index vector is i64: twice the registers and compares).
        self.i32 = ir.IntegerType.get_signless(32)
        lanes_i32 = ir.VectorType.get([n], self.i32)
        self.iota = arith.constant(lanes_i32, ir.DenseElementsAttr.get(np.arange(n, dtype=np.int32), type=lanes_i32))

    def _last(self, rank: int) -> ir.AffineMapAttr:
        return ir.AffineMapAttr.get(ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(rank - 1)]))

    def read(self, tensor_: ir.Value, origin: Sequence[ir.Value]) -> ir.Value:
        return vector.TransferReadOp(self.type, tensor_, list(origin), self._last(len(origin)),
                                     lb.f32_constant(0.0), self.in_bounds).result

    def write(self, value: ir.Value, tensor_: ir.Value, origin: Sequence[ir.Value]) -> ir.Value:
        return vector.TransferWriteOp(tensor_.type, value, tensor_, list(origin), self._last(len(origin)),
                                      self.in_bounds).result

    def splat(self, value: float) -> ir.Value:
        return vector.BroadcastOp(self.type, lb.f32_constant(value)).result

    def before(self, bound: ir.Value) -> ir.Value:
        """The mask of the lanes below `bound` (an index; clamped to [0, n], then exact in i32)."""
        bound = arith.minsi(arith.maxsi(bound, lb.index_constant(0)), lb.index_constant(self.n))
        splat = vector.BroadcastOp(ir.VectorType.get([self.n], self.i32), arith.index_cast(self.i32, bound)).result
        return arith.cmpi(arith.CmpIPredicate.slt, self.iota, splat)

    def larger(self, value: ir.Value, than: ir.Value) -> ir.Value:
        """`value` where it is larger than `than`, else `than` (one `vmaxps`; a NaN `value` is
        passed over, where `arith.maximumf` would propagate it at several times the cost: a NaN
        score still reaches the output through its weight, exp(NaN) = NaN)."""
        return arith.select(arith.cmpf(arith.CmpFPredicate.OGT, value, than), value, than)

    def select(self, mask: ir.Value, if_true: ir.Value, if_false: ir.Value) -> ir.Value:
        return arith.select(mask, if_true, if_false)


LOG2E = 1.4426950408889634  # 2^(x log2 e) = e^x: the scores scaled by it are in log2 units, weighed by exp2


def _exp2_of_nonpositive(x: ir.Value) -> ir.Value:
    """`math.exp2` of `x - max` (<= 0, -inf where a key is hidden, or NaN; log2 units), marked so:
    the approximation expands it without the overflow path (`NONPOSITIVE_ATTR`,
    rlx-approximate-math: 12 ops, where exp's needs 18 for its ln 2 reduction)."""
    exp = mmath.Exp2Op(x)
    exp.operation.attributes[NONPOSITIVE_ATTR] = ir.UnitAttr.get()
    return exp.result


LANES = 16  # f32 lanes of one AVX-512 register
ACCUMULATORS = 16  # `_product`'s register tile: 16 of the 32 vector registers, the rest for b's row and a's broadcasts
K_UNROLL = 4  # `_product`'s K steps per loop iteration


def _product(a: ir.Value, b: ir.Value, c: ir.Value, scale: Optional[ir.Value] = None,
             column_peak: bool = False, c_column: int = 0) -> tuple[ir.Value, Optional[ir.Value]]:
    """`a @ b` (c's contents unused) or, with `scale` (a vector over c's columns), `c * scale + a @ b`:
    `[M, K] @ [K, N]` f32 tiles, `LANES` dividing `N <= BLOCK`, all in L1.  With `c_column`, the
    product is the `N` columns of the wider `c` from that static column on (read and written in
    place, the other columns kept: no `extract_slice` / `insert_slice` of a strip, which bufferizes
    to a copy of the strip out and back when the strips are hoisted out of a loop).  A register tile of
    `ACCUMULATORS` vectors (rows x all N columns: 4 x 64 for 64-query blocks) is started from zero
    (no zero-filled tile, no memset) or from `c * scale` (the online softmax's rescaling in the
    prologue, no pass over acc of its own), then K steps of one row of `b` loaded as vectors and
    an element of `a` broadcast per row, `vector.fma` each (k in order, each product rounded once
    into its sum: what the GEMM kernel computes), and the tile written once.  With `column_peak`,
    also the max of each column (`_Lanes.larger` over the rows in order), carried in registers
    as the tiles are written, as one `N`-lane vector; else None."""
    m, k_size = shape_of(a.type)
    _, n = shape_of(b.type)
    vectors = n // LANES
    rows = lb.largest_divisor(m, max(1, ACCUMULATORS // vectors))
    unroll = K_UNROLL if k_size % K_UNROLL == 0 else 1
    lanes = _Lanes(LANES)
    columns = [lb.index_constant(v * LANES) for v in range(vectors)]
    c_columns = [lb.index_constant(c_column + v * LANES) for v in range(vectors)]
    scales = None
    if scale is not None:
        scales = [vector.extract_strided_slice(lanes.type, scale, [v * LANES], [LANES], [1]) for v in range(vectors)]

    def row_block(i, c, *peaks):
        i0 = arith.muli(i, lb.index_constant(rows))
        tile_rows = [arith.addi(i0, lb.index_constant(r)) for r in range(rows)]
        if scales is None:
            tile = [lanes.splat(0.0)] * (rows * vectors)
        else:
            tile = [arith.mulf(lanes.read(c, [row, column]), column_scale)
                    for row in tile_rows for column, column_scale in zip(c_columns, scales)]

        def k_steps(step, *tile):
            tile = list(tile)
            for u in range(unroll):
                k = arith.addi(arith.muli(step, lb.index_constant(unroll)), lb.index_constant(u))
                b_row = [lanes.read(b, [k, column]) for column in columns]
                for r, row in enumerate(tile_rows):
                    a_element = vector.BroadcastOp(lanes.type, tensor.extract(a, [row, k])).result
                    for v in range(vectors):
                        tile[r * vectors + v] = vector.fma(a_element, b_row[v], tile[r * vectors + v])
            return tile

        tile = lb.for_loop(0, k_size // unroll, tile, k_steps)
        peaks = list(peaks)
        for r, row in enumerate(tile_rows):
            for v, column in enumerate(c_columns):
                c = lanes.write(tile[r * vectors + v], c, [row, column])
                if peaks:
                    peaks[v] = lanes.larger(tile[r * vectors + v], peaks[v])
        return [c, *peaks]

    peaks = [lanes.splat(F32_NEG_INF)] * vectors if column_peak else []
    c, *peaks = lb.for_loop(0, m // rows, [c, *peaks], row_block)
    if not peaks:
        return c, None
    peak = vector.BroadcastOp(ir.VectorType.get([n], lb.f32_type()), lb.f32_constant(F32_NEG_INF)).result
    for v, part in enumerate(peaks):
        peak = vector.insert_strided_slice(part, peak, [v * LANES], [1])
    return c, peak


def _diagonal_scores(keys: ir.Value, queries: ir.Value) -> ir.Value:
    """`keys @ queries` (`[B, D] @ [D, B]`, `LANES` dividing `B`) of a diagonal block, where key
    row j hides query column i < j: computed in bands of `LANES` key rows, band t only over the
    query columns from `t * LANES` on (`_product`); the columns before, hidden from every key of
    the band, are left undefined (a triangle of `B^2 (1 - LANES / B) / 2` of the products skipped:
    37.5% of a 64-block's).  Each computed score is `_product`'s (the same FMAs in the same order)."""
    block, depth = shape_of(keys.type)
    f32 = lb.f32_type()
    scores = lb.empty([block, block], f32)
    for start in range(0, block, LANES):
        width = block - start
        band = lb.extract_slice(keys, [start, 0], [LANES, depth])
        columns = lb.extract_slice(queries, [0, start], [depth, width])
        part, _ = _product(band, columns, lb.empty([LANES, width], f32))
        scores = _inserted(part, scores, [start, start])
    return scores


def _diagonal_values(values: ir.Value, weights: ir.Value, acc: ir.Value, scale: ir.Value) -> ir.Value:
    """`acc * scale + values @ weights` (`[D, B] @ [B, B]`, `LANES` dividing `B`) of a diagonal
    block, whose weight row j is zero in the columns i < j (hidden pairs): computed in strips of
    `LANES` query columns, strip s summing only the keys up to its last query, `(s + 1) * LANES`
    (`_product`, written over its columns of `acc`); the keys after it would add exact zeros (and
    a hidden key's NaN value NaN)."""
    depth, block = shape_of(values.type)
    lanes = _Lanes(LANES)
    for start in range(0, block, LANES):
        keys = start + LANES
        acc, _ = _product(lb.extract_slice(values, [0, 0], [depth, keys]),
                          lb.extract_slice(weights, [0, start], [keys, LANES]), acc,
                          scale=vector.extract_strided_slice(lanes.type, scale, [start], [LANES], [1]),
                          c_column=start)
    return acc


def _inserted(part: ir.Value, into: ir.Value, offsets: Sequence[int]) -> ir.Value:
    """`into` with the tile `part` written at the static `offsets`."""
    return tensor.InsertSliceOp(part, into, [], [], [], list(offsets), shape_of(part.type),
                                [1] * len(offsets)).result


def _copied(tile: ir.Value) -> ir.Value:
    """A `[R, C]` f32 tile (a strided view) copied into a compact one, a row read and written as
    one vector at a time.  (The copy as a linalg op folds into the destination's insert, which
    bufferizes to a `memref.copy` between strided views: a loop of scalar moves that LLVM does
    not vectorize.)"""
    rows, columns = shape_of(tile.type)
    lanes = _Lanes(columns)
    zero = lb.index_constant(0)
    return lb.for_loop(0, rows, [lb.empty([rows, columns], lb.f32_type())],
                       lambda r, out: [lanes.write(lanes.read(tile, [r, zero]), out, [r, zero])])[0]


TRANSPOSE_BLOCK = 16  # f32 lanes of one AVX-512 register: tiles are transposed 16 x 16 in registers


def _transposed(tile: ir.Value) -> ir.Value:
    """A compact `[R, C]` f32 tile transposed, `[C, R]`.  Where 16 divides both sides, 16 x 16
    blocks are transposed in registers: 16 rows read as vectors, four rounds of 16 two-source
    shuffles (`vpermt2ps`), 16 rows written.  A transposing loop nest would gather (or scatter)
    every vector, 16 cache lines a time, several times slower.  Other shapes: `linalg.transpose`."""
    rows, columns = shape_of(tile.type)
    n = TRANSPOSE_BLOCK
    f32 = lb.f32_type()
    if rows % n or columns % n:
        return linalg.transpose(tile, outs=[lb.empty([columns, rows], f32)], permutation=[1, 0]).results[0]
    lanes = _Lanes(n)

    def block(r0: ir.Value, c0: ir.Value, out: ir.Value) -> ir.Value:
        vectors = [lanes.read(tile, [arith.addi(r0, lb.index_constant(i)), c0]) for i in range(n)]
        step = n // 2
        while step:  # swap the off-diagonal step x step blocks of every 2step x 2step block
            for i in range(n):
                if i & step:
                    continue
                upper, lower = vectors[i], vectors[i + step]
                keep_upper = [c if not c & step else n + c - step for c in range(n)]
                keep_lower = [c + step if not c & step else n + c for c in range(n)]
                vectors[i] = vector.shuffle(upper, lower, keep_upper)
                vectors[i + step] = vector.shuffle(upper, lower, keep_lower)
            step //= 2
        for i, row in enumerate(vectors):
            out = lanes.write(row, out, [arith.addi(c0, lb.index_constant(i)), r0])
        return out

    def row_of_blocks(r, out):
        r0 = arith.muli(r, lb.index_constant(n))
        return lb.for_loop(0, columns // n, [out],
                           lambda c, out: [block(r0, arith.muli(c, lb.index_constant(n)), out)])

    return lb.for_loop(0, rows // n, [lb.empty([columns, rows], f32)], row_of_blocks)[0]


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
