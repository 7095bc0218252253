"""Lowering of the mixture-of-experts ops: scatter-add, grouped (and quantised grouped) matmuls.

`rlx.scatter_add` is an `scf.for` over the update rows (duplicates must add in order): row `u`
adds into the destination row, `select`ed to zero when its index is out of range, in place (an
extract_slice / generic / insert_slice of the same row, which bufferization updates in place).

`rlx.grouped_matmul` and `rlx.dequant_grouped_matmul` bucket the rows by expert with a counting
sort, so each expert's weight multiplies only its own rows:

1. `scf.for` over the rows counts the rows of each expert; a loop over the experts gives each
   expert `ceil(count / T)` tiles of `T` rows (its first tile and tile count), and a second loop
   over the rows gives every row its slot (`tile * T + place`) and every slot its row (or -1:
   the padding of an expert's last tile, and the rows of out-of-range experts, which get none);
2. a gather generic puts the rows in slot order, `xs [tiles * T, K]` (padding slots zero);
3. f32 (`rlx.grouped_matmul`): one `scf.forall` over chunks of `COLUMN_CHUNK` output columns (a
   multiple of the thread count of chunks where the lowering knows it: `_column_chunk`)
   (threads share the chunks out: one parallel region for the op, and rlx-tile-gemv /
   rlx-tile-matmul leave the kernels inside it serial), the chunk of `ys [tiles * T, N]` zeroed,
   then per expert with rows (`scf.if`: an expert without rows is not read), per block of
   `depth` rows of the expert's weight (`[depth, chunk]`, at most `WEIGHT_BLOCK_BYTES`), per
   tile of that expert: one static `[T, depth] x [depth, chunk]` `linalg.matmul` (rlx-tile-gemv's
   kernel for 8 rows, stepping 8 rows of the block per pass: the loop over the tiles is tagged
   `rlx.gemv_rows`) adding into the tile's rows of ys, k in order block after block.  The chunks
   of the second half (the second thread's) cut K half a block later (a half block first and
   last), so the threads' memory-bound first tiles fall at different moments.  The block
   is read in place: rows of `chunk` contiguous floats, which the hardware prefetchers stream while
   the expert's first tile multiplies (a strided `[K, 128]` column block copied contiguous before
   the tiles, as before, was a memory-bound phase the arithmetic waited for: 5 ms per matmul of the
   MoE benchmark); it stays in L2 while the other tiles pass, so each weight is read from memory
   once.  With `T` the kernel's 8 rows, an expert's last tile with at most 4 rows multiplies 4
   slots (`TAIL_ROWS`; both tile heights in the loop tagged `rlx.gemv_rows`, so the same passes
   over k): at most 3 padding rows per expert are computed.
   With more than one thread (the count known, 8-row tiles, at least as many experts as threads,
   N whole AVX-512 vectors), the threads share out the experts instead (`_f32_products_per_thread`):
   one `scf.forall` over the threads, each a contiguous range of experts (balanced by the tiles
   and the weights it reads) and so of slots, the same blocks and tiles over whole weight rows
   (contiguous memory; chunks of at most `EXPERT_COLUMNS_MAX` columns for a wider N): each thread
   streams its own experts' weights in long runs, the same sums bit for bit.  On one thread (the
   count known, same conditions) the same path runs on one worker with its loops reordered
   (`_expert_pieces`): per block of 32 whole weight rows, per piece of at most 512 columns, every
   tile of the expert, so each piece is read from memory once and from L1 by the expert's other
   tiles, and the weights stream at an even pace under the arithmetic (xs and ys rows padded by
   `ROW_PAD` floats against 4 KiB strides); without a thread count, the column chunks above.
   On this experts path a tile's product is not a `linalg.matmul` but `register_tile.accumulate`
   (`REGISTER_TILE`): C's tile in registers down the whole block of weight rows (loaded and stored
   once per block, not every 8 rows as rlx-tile-gemv's kernel does), read and written in place in
   the worker's slice of ys, and each k step prefetching the same columns of the next block of the
   weight (`_next_window`: the next rows, or the next expert's first), so the weight streams into
   L2 under the arithmetic of the block before.  The same sums bit for bit as rlx-tile-gemv's
   kernel (k in order, one fma per k from the partial sum).
   Quantised (`rlx.dequant_grouped_matmul`): one `scf.forall` over blocks of `COLUMN_BLOCK` slab
   rows (output columns), per expert with rows, per tile: `rlx.dequant_matmul`'s lowering
   (`quant.packed_matmul`: blocks decoded inside the product) on the tile and the expert's block;
   an N with no divisor near a chunk's or block's limit (a prime N) keeps full-size chunks and
   blocks and one static tail after the forall (`lb.tile_and_tail`), and a K with none near the
   weight block's depth one tail block of rows;
4. a gather generic reads each row's result back from its slot (zeros for rows without one).

The tile count is bounded statically (`ceil(M / T) + min(E, M) - 1`), so every tensor is static;
the loops run over the experts' actual tiles only.

`rlx.dequant_moe_weights` decodes every sub-block of every row with the decoders of
`rlx.dequant_matmul` (`vector.transfer_write` into `[E, N, K]`), then transposes to `[E, K, N]`.
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor, vector

from ...dialects import rlx
from ...dialects.rlx.quant import GGUF_SCHEMES
from ...ir.attrs import GEMV_ROWS_ATTR
from ...ir.shapes import shape_of
from . import builders as lb
from . import quant, register_tile

# Rows per GEMM tile: the GEMM kernel's register block (rlx-pack-matmul's MR); an expert's last
# tile is padded to it.
ROW_TILE = 8
# rlx.dequant_grouped_matmul: slab rows (output columns) per pass over an expert's tiles.
COLUMN_BLOCK = 128
# rlx.grouped_matmul (f32): output columns per chunk (the threads share the chunks out: at most
# COLUMN_CHUNK and at least MIN_CHUNKS chunks where N allows), and the bytes of one block of an
# expert's weight (`[depth, chunk]`, read in place) that its tiles reuse from L2.  A chunk wider
# than the GEMV kernel's 16 KiB block of C (512 columns for 8 rows) is two or more kernel blocks
# side by side; its weight rows are longer runs (gate / up of benchmarks/moe.py: 4 chunks of 704
# columns, 2816 bytes a row, instead of 8 of 352): those matmuls 0.92-0.95x the CPU time (median of
# per-round ratios, 31 interleaved rounds, 1 and 2 threads, load 5); the down matmul (N = 1024)
# keeps 4 chunks of 256 (without a thread count: see THREAD_CHUNK_MAX for the lowering that knows it).
COLUMN_CHUNK = 1024
MIN_CHUNKS = 4
# rlx.grouped_matmul (f32) where the compile's thread count is known (rlx-mir-to-linalg{threads}, which
# rlx-lower-to-llvm sets): the fewest chunks that are a multiple of the thread count (every thread
# gets as many) of at most THREAD_CHUNK_MAX columns, whole AVX-512 vectors whose weight rows are at
# least THREAD_CHUNK_MIN_BYTES; else as without a count.  benchmarks/moe.py's down matmul (N = 1024):
# one chunk of 1024 (whole contiguous weight rows) at 1 thread, two of 512 at 2 threads, instead of
# four of 256: the routed block 0.92-0.94x the time at 1 thread and 0.97-0.99x at 2 (median of
# per-round ratios, 60 interleaved rounds, load about 1.5; at load 3-4, when its two threads shared
# about one core, 1.00-1.09x).  Gate / up (N = 2816) keep four chunks of 704: one chunk of 2816 at
# 1 thread (blocks only 16 weight rows deep) measured 1.03x, two of 1408 at 2 threads 1.01-1.20x.
THREAD_CHUNK_MIN_BYTES = 1024
THREAD_CHUNK_MAX = COLUMN_CHUNK
WEIGHT_BLOCK_BYTES = 256 * 1024
# rlx.grouped_matmul (f32): where N has no divisor near the chunk limit, full chunks are a multiple
# of this many columns (one AVX-512 vector) and the rest a tail chunk (`lb.tile_and_tail`).
TAIL_COLUMN_MULTIPLE = 16
# rlx.grouped_matmul (f32), the column chunks (no thread count, or fewer experts than threads):
# rows of the weight block per pass of rlx-tile-gemv's kernel over a tile
# (`rlx.gemv_rows` on the loop over an expert's tiles; the block is in L2 for all but the first
# tile, so C's 8-row tile is loaded and stored once per 8 rows of B rather than per 4).
GEMV_ROWS = 8
# rlx.grouped_matmul (f32): whether the second half of the column chunks cuts K at blocks shifted
# by half a block (see _f32_expert_products).
STAGGER = True
# rlx.grouped_matmul (f32) on more than one thread (the count known, 8-row tiles, at least one
# expert per thread, whole AVX-512 vectors of columns: `_shares_experts`): the threads share out
# the experts instead of the columns (`_f32_products_per_thread`), each a contiguous range of
# experts balanced by cost (`_Buckets.share`: EXPERT_STREAM_TILES 8-row tiles' worth for reading an
# expert's weight from memory, the time of 4 K N bytes at half the copy bandwidth over 16 K N flops
# at one core's rate, and one per tile), its weight read in blocks of whole rows (at most
# EXPERT_BLOCK_BYTES, contiguous in memory) where N is at most EXPERT_COLUMNS_MAX (else chunks of
# at most that many columns per expert).  On 2 threads each thread streamed its own memory instead
# of the two reading 2.8 KB runs of the same weight rows side by side: benchmarks/moe.py's routed
# block 0.84-0.90x the time (median over 40 interleaved calls in one process, load 6-9; blocks of
# 128 KiB against 64 and 256 KiB: 0.95-0.96x of those, with rlx-tile-gemv's kernel).  With the
# register kernel and its prefetch of the next block (REGISTER_TILE), 256 KiB (gate / up of
# benchmarks/moe.py, N = 2816: C's tile stored every 16 weight rows instead of 8) was faster only
# while another process held about one core (benchmarks/moe.py, 2 threads, alternating runs, routed
# ms best: 52.6, 52.5, 49.7 against 59.7, 57.0, 57.8 at load 2.3-2.6) and slower on a quiet machine
# (30.9, 30.3 against 28.8, 28.2 at load 0.6-1.2); 512 KiB (32 rows) made the gate matmul 34 ms
# against 22 under load (benchmarks/moe_breakdown.py --threads 2).  128 KiB kept.
EXPERT_BLOCK_BYTES = 128 * 1024
# rlx.grouped_matmul (f32) on one thread (the count known, 8-row tiles, N whole AVX-512 vectors):
# the same experts path on one worker, its loops reordered (`_expert_pieces`): per block of
# PIECE_DEPTH whole weight rows, per piece of at most PIECE_COLUMNS columns of the block, every tile
# of the expert, so a piece (32 x 512 floats, 64 KiB) is read from memory by the first tile and
# from L1 by the others, and the weight streams at an even pace under the arithmetic instead of in
# bursts (each block's first tile memory-bound, the others compute-bound).  The rows of xs and ys
# are ROW_PAD floats longer than K and N there: rows 4 KiB apart (K or N = 1024) put a tile's 8
# rows in one L1 set, and the tiles' rows of ys on the same 4 KiB offsets (stores to one tile, loads
# of the next, falsely dependent).  benchmarks/moe.py's gate / up matmul 24.7 -> 21.7 ms CPU, the
# whole block 76.3 -> 68.4 ms (best of 7 interleaved calls in one process, load 3.3; without the
# padding 78.4 against 70.2; pieces of 256 columns or 16 rows, or 16 weight rows per kernel pass,
# were 1-4 ms slower).  More threads keep blocks of whole rows per tile (not measured quietly yet).
PIECE_COLUMNS = 512
PIECE_DEPTH = 32
ROW_PAD = 16
EXPERT_STREAM_TILES = 3.5
EXPERT_COLUMNS_MAX = 4096
# rlx.grouped_matmul (f32): the row counts (under ROW_TILE) an expert's last tile may shrink to: a
# tile with `r` rows multiplies the fewest of these slots that hold them (else ROW_TILE), so fewer
# padding rows are computed (4: at most 3 per expert instead of 7; the MoE benchmark's routing
# computes 268 slot rows instead of 280 for its 256 rows; its down matmul 0.94-0.98x the CPU time of
# 8-row tiles throughout, 1 thread, median of per-round ratios over 31 interleaved rounds, load 5).
TAIL_ROWS = (4,)
# rlx.grouped_matmul (f32), the experts path (`_shares_experts`: the thread count known): 8-row
# tiles of whole AVX-512 vectors multiply with `register_tile.accumulate` (C's tile in registers
# down the whole block of weight rows) instead of rlx-tile-gemv's kernel (C loaded and stored every
# GEMV_ROWS rows), and each k step prefetches the same columns of the next block (`_next_window`,
# prefetcht1), so the weight streams into L2 under the arithmetic of the block before.  The kernel
# alone changed little (1 thread, benchmarks/moe_breakdown.py, CPU ms best: gate 24.0 against
# 23.9, down 21.6 against 21.1; the gate with every row on one cached expert already ran at 95
# GFLOP/s, 81% of the FMA peak); with the prefetch gate 17.0, down 16.7 (with rlx-tile-gemv's
# kernel, earlier sessions found prefetch 5-12% slower).  benchmarks/moe.py against the previous
# code, alternating runs (16:28-16:35 UTC, load 2.3-2.6), 1 thread CPU ms best: routed 53.4, 52.7,
# 51.3 against 66.8, 67.0, 67.9 (dense-masked 3.86-4.20x routed's time, previously 3.11-3.28x).
# Quiet (16:52-16:56 UTC, load 0.6-1.2, wall ms best): 1 thread 50.8, 51.9 against 66.7, 68.1
# (dense-masked 4.05x, 3.97x routed's time, previously 3.05x, 3.18x); 2 threads 28.8, 28.2 against
# 33.6, 33.3, the one GEMM of the same FLOPs 24.2, 24.9 in the same runs: routed 1.19x, 1.13x its
# time (previously 1.33x, 1.33x).
REGISTER_TILE = True

Offset = lb.Offset
_DYNAMIC = ir.ShapedType.get_dynamic_size()


def _insert(value: ir.Value, dest: ir.Value, offsets: Sequence[Offset], sizes: Sequence[int]) -> ir.Value:
    dynamic = [o for o in offsets if isinstance(o, ir.Value)]
    static = [_DYNAMIC if isinstance(o, ir.Value) else o for o in offsets]
    return tensor.InsertSliceOp(value, dest, dynamic, [], [], static, list(sizes), [1] * len(sizes)).result


def _element(t: ir.Value, *indices: Offset) -> ir.Value:
    return tensor.ExtractOp(t, [lb.index_value(i) for i in indices]).result


def _store(scalar: ir.Value, t: ir.Value, *indices: Offset) -> ir.Value:
    return tensor.InsertOp(scalar, t, [lb.index_value(i) for i in indices]).result


def _i64(value: int) -> ir.Value:
    return arith.constant(lb.i64_type(), value)


def _in_range(index: ir.Value, size: int) -> ir.Value:
    """`0 <= index < size` for an i64 `index` (one unsigned compare)."""
    return arith.cmpi(arith.CmpIPredicate.ult, index, _i64(size))


def _product(shape: Sequence[int]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


# --- rlx.scatter_add ------------------------------------------------------------------------


def _lower_scatter_add(op) -> ir.Value:
    f32 = lb.f32_type()
    updates_shape, result_shape = shape_of(op.updates.type), shape_of(op.result.type)
    rows, width, out_rows = updates_shape[0], _product(updates_shape[1:]), result_shape[0]
    flat_type = ir.RankedTensorType.get([out_rows, width], f32)
    start = lb.reshape(op.init, flat_type) if op.init is not None else lb.zeros([out_rows, width], f32)
    if rows == 0 or width == 0:
        return lb.reshape(start, op.result.type)
    updates = lb.reshape(op.updates, ir.RankedTensorType.get([rows, width], f32))
    identity = ir.AffineMap.get_identity(2)

    def add_row(u: ir.Value, acc: ir.Value) -> list[ir.Value]:
        index = _element(op.indices, u)
        valid = _in_range(index, out_rows)
        row = arith.index_cast(ir.IndexType.get(), arith.select(valid, index, _i64(0)))
        zero = lb.f32_constant(0.0)
        target = lb.extract_slice(acc, [row, 0], [1, width])
        added = lb.generic(
            [lb.extract_slice(updates, [u, 0], [1, width])], target, [identity, identity], [lb.PARALLEL] * 2,
            lambda update, old: arith.addf(old, arith.select(valid, update, zero)),
        )
        return [_insert(added, acc, [row, 0], [1, width])]

    (total,) = lb.for_loop(0, rows, [start], add_row)
    return lb.reshape(total, op.result.type)


# --- bucketing rows by expert -----------------------------------------------------------------


class _Buckets:
    """The counting sort of `rows` rows by expert (`expert_idx i64 [rows]`, `experts` experts)
    into tiles of `tile` rows: per expert its first tile and tile count (index tensors `[E]`),
    per row its slot (or -1), per slot its row (or -1)."""

    def __init__(self, expert_idx: ir.Value, rows: int, experts: int, tile: int):
        index = ir.IndexType.get()
        self.rows, self.experts, self.tile = rows, experts, tile
        self.tiles = -(-rows // tile) + min(experts, rows) - 1  # sum over experts of ceil(count / tile)
        self.slots = self.tiles * tile
        zero, one = lb.index_constant(0), lb.index_constant(1)

        def expert_of(m: ir.Value) -> tuple[ir.Value, ir.Value]:
            e = _element(expert_idx, m)
            valid = _in_range(e, experts)
            return valid, arith.index_cast(index, arith.select(valid, e, _i64(0)))

        def count(m, counts):
            valid, e = expert_of(m)
            added = arith.addi(_element(counts, e), arith.select(valid, one, zero))
            return [_store(added, counts, e)]

        counts = _filled([experts], index, 0)
        (counts,) = lb.for_loop(0, rows, [counts], count)
        self.counts = counts

        def place_expert(e, first, tiles, running):
            n = arith.ceildivui(_element(counts, e), lb.index_constant(tile))
            return [_store(running, first, e), _store(n, tiles, e), arith.addi(running, n)]

        self.first_tile, self.tile_count, _ = lb.for_loop(
            0, experts, [_filled([experts], index, 0), _filled([experts], index, 0), zero], place_expert
        )

        def place_row(m, row_slot, slot_row, filled):
            valid, e = expert_of(m)
            place = _element(filled, e)
            slot = arith.addi(arith.muli(_element(self.first_tile, e), lb.index_constant(tile)), place)
            minus_one = lb.index_constant(-1)
            # An out-of-range expert's row takes no slot: it writes -1 over itself and slot_row[0]
            # stays as it was (the store of slot_row[slot] goes to a slot the row owns, or is skipped).
            row_slot = _store(arith.select(valid, slot, minus_one), row_slot, m)
            kept = _element(slot_row, arith.select(valid, slot, zero))
            slot_row = _store(arith.select(valid, m, kept), slot_row, arith.select(valid, slot, zero))
            filled = _store(arith.addi(place, arith.select(valid, one, zero)), filled, e)
            return [row_slot, slot_row, filled]

        self.row_slot, self.slot_row, _ = lb.for_loop(
            0, rows, [_filled([rows], index, -1), _filled([self.slots], index, -1), _filled([experts], index, 0)], place_row
        )

    def gather_rows(self, x: ir.Value, width: int, element: ir.Type, pad: int = 0) -> ir.Value:
        """`x [rows, width]` in slot order, `[slots, width + pad]`; padding slots are zero (the
        `pad` columns after each row repeat its last value and are not meant to be read)."""

        def body(source_row, _):
            k = lb.loop_index(1)
            if pad:
                k = arith.minui(k, lb.index_constant(width - 1))
            valid = arith.cmpi(arith.CmpIPredicate.sge, source_row, lb.index_constant(0))
            row = arith.select(valid, source_row, lb.index_constant(0))
            value = tensor.ExtractOp(x, [row, k]).result
            return arith.select(valid, value, arith.constant(element, 0.0))

        maps = [ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(0)]), ir.AffineMap.get_identity(2)]
        return lb.generic([self.slot_row], lb.empty([self.slots, width + pad], element), maps, [lb.PARALLEL] * 2, body)

    def scatter_rows(self, ys: ir.Value, width: int) -> ir.Value:
        """Each row's result read back from its slot of `ys [slots, width]`: `[rows, width]`,
        zeros for rows without a slot."""
        f32 = lb.f32_type()

        def body(slot, _):
            n = lb.loop_index(1)
            valid = arith.cmpi(arith.CmpIPredicate.sge, slot, lb.index_constant(0))
            value = tensor.ExtractOp(ys, [arith.select(valid, slot, lb.index_constant(0)), n]).result
            return arith.select(valid, value, lb.f32_constant(0.0))

        maps = [ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(0)]), ir.AffineMap.get_identity(2)]
        return lb.generic([self.row_slot], lb.empty([self.rows, width], f32), maps, [lb.PARALLEL] * 2, body)

    def over_tiles(self, e: ir.Value, carried: Sequence[ir.Value], body: Callable) -> list[ir.Value]:
        """`scf.for` over the tiles of expert `e`; `body(first_slot, *carried)`."""
        first = _element(self.first_tile, e)
        last = arith.addi(first, _element(self.tile_count, e))
        return lb.for_loop(first, last, carried, lambda t, *c: body(arith.muli(t, lb.index_constant(self.tile)), *c))

    def end_slot(self, e: ir.Value) -> ir.Value:
        """The slot after expert `e`'s last row (its tiles' padding slots follow)."""
        first = arith.muli(_element(self.first_tile, e), lb.index_constant(self.tile))
        return arith.addi(first, _element(self.counts, e))

    def share(self, w: ir.Value, workers: int, stream_tiles: float) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
        """Worker `w`'s experts `lo .. hi` (of `workers`) and their tiles `first .. end` (index
        values): each worker a contiguous range of experts, the ranges split where the experts'
        costs balance.  An expert's cost is its tile count plus `stream_tiles` if it has rows (the
        reading of its weight), counted in half tiles; expert `e` goes to the worker its cost's
        midpoint falls in, `min(workers - 1, workers * (2 * before_e + cost_e) // (2 * total))`
        (`before_e`: the costs of the experts before it), which never decreases with `e`."""
        zero, one = lb.index_constant(0), lb.index_constant(1)
        stream = lb.index_constant(round(2 * stream_tiles))

        def cost(e):
            tiles = _element(self.tile_count, e)
            has_rows = arith.cmpi(arith.CmpIPredicate.ugt, tiles, zero)
            return arith.addi(arith.addi(tiles, tiles), arith.select(has_rows, stream, zero))

        (total,) = lb.for_loop(0, self.experts, [zero], lambda e, acc: [arith.addi(acc, cost(e))])
        scale = arith.maxui(arith.addi(total, total), one)
        last = lb.index_constant(workers - 1)

        def place(e, before, lo, hi, first, end):
            c = cost(e)
            mid = arith.addi(arith.addi(before, before), c)
            worker = arith.minui(arith.divui(arith.muli(mid, lb.index_constant(workers)), scale), last)
            tiles = _element(self.tile_count, e)
            below = arith.cmpi(arith.CmpIPredicate.ult, worker, w)
            upto = arith.cmpi(arith.CmpIPredicate.ule, worker, w)
            return [arith.addi(before, c),
                    arith.addi(lo, arith.select(below, one, zero)), arith.addi(hi, arith.select(upto, one, zero)),
                    arith.addi(first, arith.select(below, tiles, zero)), arith.addi(end, arith.select(upto, tiles, zero))]

        _, lo, hi, first, end = lb.for_loop(0, self.experts, [zero] * 5, place)
        return lo, hi, first, end


def _filled(shape: Sequence[int], element: ir.Type, value: int) -> ir.Value:
    return linalg.fill(arith.constant(element, value), outs=[lb.empty(shape, element)])


def _row_tile(rows: int) -> int:
    """Rows per tile: `ROW_TILE`, or the power of two at or above `rows` when there are fewer
    (a decode step's one or two rows per expert are not padded to eight)."""
    tile = 1
    while tile < min(rows, ROW_TILE):
        tile *= 2
    return tile


def _if_expert_has_rows(buckets, e, columns: ir.Value, products) -> list[ir.Value]:
    """`columns` updated by `products()` (the values it yields, built inside the branch) when expert `e` has
    rows, unchanged otherwise (`scf.if`): an expert no token chose reads none of its weights."""
    has_rows = arith.cmpi(arith.CmpIPredicate.ugt, _element(buckets.tile_count, e), lb.index_constant(0))
    branch = scf.IfOp(has_rows, [columns.type], has_else=True)
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([columns])
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp(products())
    return [branch.results[0]]


def _packed_expert_products(buckets: _Buckets, xs: ir.Value, k: int, n: int, block: int, tail: int,
                            weight_block: Callable, multiply: Callable) -> ir.Value:
    """`ys [slots, n]`: each tile of rows of `xs [slots, k]` times its expert's weight.

    One `scf.forall` over the blocks of `block` columns (threads share them out; each block's
    products are a disjoint `[slots, block]` slice of ys), then per expert with rows (`scf.if`: an
    expert without rows is not read) its `weight_block(e, column, width)`, and per tile of that
    expert `multiply(rows of the tile, that block, width)` `[tile, width]`.  One parallel region
    for the whole op: a region per expert (E barriers per matmul) costs more than it gains on a
    loaded machine.  `tail` columns (`n % block`, where N has no divisor near the block) follow as
    one static tail block after the forall (serial).
    """
    f32 = lb.f32_type()
    slots, tile = buckets.slots, buckets.tile

    def block_products(column: Offset, width: int, out: ir.Value) -> ir.Value:
        def per_expert(e, columns):
            def products():
                weights = weight_block(e, column, width)

                def per_tile(slot, columns):
                    product = multiply(lb.extract_slice(xs, [slot, 0], [tile, k]), weights, width)
                    return [_insert(product, columns, [slot, 0], [tile, width])]

                return buckets.over_tiles(e, [columns], per_tile)

            return _if_expert_has_rows(buckets, e, columns, products)

        (columns,) = lb.for_loop(0, buckets.experts, [lb.extract_slice(out, [0, column], [slots, width])], per_expert)
        return columns

    blocks = scf.ForallOp([0], [n // block], [1], [lb.empty([slots, n], f32)])
    with ir.InsertionPoint(blocks.body):
        (b,), (shared,) = blocks.induction_variables, blocks.inner_iter_args
        column = arith.muli(b, lb.index_constant(block))
        columns = block_products(column, block, shared)
        terminator = scf.InParallelOp()
        with ir.InsertionPoint(terminator.region.blocks[0]):
            tensor.ParallelInsertSliceOp(columns, shared, [column], [], [], [0, _DYNAMIC], [slots, block], [1, 1])
    ys = blocks.results[0]
    if tail:
        ys = _insert(block_products(n - tail, tail, ys), ys, [0, n - tail], [slots, tail])
    return ys


# --- rlx.grouped_matmul ---------------------------------------------------------------------


def _column_chunk(n: int, threads: int) -> tuple[int, int]:
    """The output columns of one chunk of `rlx.grouped_matmul` (f32), and of the tail chunk (0:
    none).  With the thread count known (`threads` > 0): `n / c` for the smallest multiple `c` of
    `threads` where that is whole 16-float vectors, at most THREAD_CHUNK_MAX and at least
    THREAD_CHUNK_MIN_BYTES a weight row, no tail.  Else (no count, or no such `c`): at most
    COLUMN_CHUNK with at least MIN_CHUNKS chunks where N allows, which any number of threads
    shares out, and a tail where N has no divisor near that (`lb.tile_and_tail`)."""
    if threads > 0:
        for chunks in range(threads, n + 1, threads):
            chunk = n // chunks
            if 4 * chunk < THREAD_CHUNK_MIN_BYTES:
                break
            if n % chunks == 0 and chunk % 16 == 0 and chunk <= THREAD_CHUNK_MAX:
                return chunk, 0
    return lb.tile_and_tail(n, min(COLUMN_CHUNK, max(n // MIN_CHUNKS, ROW_TILE)), TAIL_COLUMN_MULTIPLE)


def _next_window(weight: ir.Value, e: ir.Value, row: Offset, size: int, column: Offset) -> list[Offset]:
    """The origin `[e', row', column]` of the weight window after `[e, row, column]` (`size` rows):
    the next `size` rows of the same columns, else (past K) the next expert's first (the last
    expert's stand for those past the end), clamped so the window lies inside the weight."""
    experts, k, _ = shape_of(weight.type)
    following = arith.addi(lb.index_value(row), lb.index_constant(size))
    past = arith.cmpi(arith.CmpIPredicate.uge, following, lb.index_constant(k))
    one, zero = lb.index_constant(1), lb.index_constant(0)
    e_next = arith.minui(arith.addi(e, arith.select(past, one, zero)), lb.index_constant(experts - 1))
    row_next = arith.minui(arith.select(past, arith.subi(following, lb.index_constant(k)), following),
                           lb.index_constant(max(k - size, 0)))
    return [e_next, row_next, column]


def _register_tiled(tile: int, width: int) -> bool:
    """Whether `_multiply_block` multiplies with `register_tile.accumulate` (8-row tiles, whole
    AVX-512 vectors of columns) rather than a `linalg.matmul` for rlx-tile-gemv."""
    return REGISTER_TILE and tile == ROW_TILE and width % register_tile.LANES == 0


def _multiply_block(buckets: _Buckets, xs: ir.Value, weight: ir.Value, e: ir.Value, row: Offset, size: int,
                    column: Offset, width: int, columns: ir.Value, tail_rows: Sequence[int],
                    first: ir.Value | None = None, c_column: Offset = 0) -> list[ir.Value]:
    """`columns` (a slice of ys: the slots from `first`, or all slots; its columns `c_column ..
    c_column + width` are the weight's `column ..`) plus, for each tile of expert `e`, the tile's
    rows of `xs [slots, k]` times the expert's weight rows `row .. row + size` (a static size) in
    those columns (`tail_rows`: the smaller heights an expert's last tile may take, see
    `_fewest_rows`).  On the experts path (`first` given) with 8-row tiles of whole vectors
    (`_register_tiled`): `register_tile.accumulate` per tile, in place in `columns`, prefetching
    the next window of the weight (`_next_window`), its last tile 4 rows where they hold its rows.
    Else one static `[tile, size] x [size, width]` `linalg.matmul` per tile (`c_column` 0), the
    loop over the tiles tagged `rlx.gemv_rows` for 8-row tiles (fewer rows: a decode step's,
    streamed from memory as any GEMV)."""
    tile = buckets.tile
    registers = first is not None and _register_tiled(tile, width)
    if registers:
        tail_rows = [r for r in TAIL_ROWS if r < tile]
        prefetch = (register_tile.prefetchable(weight), _next_window(weight, e, row, size, column))
    else:
        assert c_column == 0, "a strip of columns for rlx-tile-gemv is its own slice"
        block = lb.extract_slice(weight, [e, row, column], [1, size, width], [size, width])

    def multiply_tile(slot, rows: int, columns):
        """Rows `slot .. slot + rows` of ys += those of xs times the block."""
        local = slot if first is None else arith.subi(slot, first)
        if registers:
            return [register_tile.accumulate(columns, [local, c_column], xs, [slot, row], weight, [e, row, column],
                                             rows, size, width, prefetch)]
        partial = lb.extract_slice(columns, [local, 0], [rows, width])
        product = linalg.matmul(lb.extract_slice(xs, [slot, row], [rows, size]), block, outs=[partial])
        return [_insert(product, columns, [local, 0], [rows, width])]

    end = buckets.end_slot(e) if tail_rows else None

    def per_tile(slot, columns):
        if not tail_rows:
            return multiply_tile(slot, tile, columns)
        return _fewest_rows(arith.subi(end, slot), columns, tail_rows, lambda rows: multiply_tile(slot, rows, columns), tile)

    tiles = buckets.over_tiles(e, [columns], per_tile)
    if tile == ROW_TILE and not registers:
        tiles[0].owner.attributes[GEMV_ROWS_ATTR] = ir.IntegerAttr.get(lb.i64_type(), GEMV_ROWS)
    return tiles


def _f32_expert_products(buckets: _Buckets, xs: ir.Value, weight: ir.Value, k: int, n: int,
                         threads: int) -> ir.Value:
    """`ys [slots, n]`: each tile of rows of `xs [slots, k]` times its expert's `weight [E, k, n]`.

    One `scf.forall` over chunks of `chunk` output columns (threads share them out; each chunk is
    a disjoint `[slots, chunk]` slice of ys, zeroed first), then per expert with rows (`scf.if`),
    per block of `depth` weight rows (`[depth, chunk]`, read in place: rows of `chunk` floats that
    follow each other in memory, which the hardware prefetchers stream while the expert's first
    tile multiplies), per tile of that expert: `ys[tile, chunk] += xs[tile, block] x block`, a
    static `linalg.matmul` that `rlx-pack-matmul` turns into the GEMM kernel.  The block stays in
    L2 while the expert's tiles pass, so each weight is read from memory once; the sums run over
    k in order, block after block (the kernel's register tile starts from the partial sum).
    Where N or K has no divisor near its limit (`lb.tile_and_tail`: a prime N gave 1-column
    chunks, 26x the time per element), the chunks and blocks keep a full size and the rest is one
    static tail: a last chunk of `N % chunk` columns after the forall (serial), a last block of
    `K % depth` rows after the whole blocks (k still in order; no staggered blocks then).
    """
    f32 = lb.f32_type()
    slots, tile = buckets.slots, buckets.tile
    chunk, column_tail = _column_chunk(n, threads)
    depth, depth_tail = lb.tile_and_tail(k, max(1, WEIGHT_BLOCK_BYTES // (4 * chunk)), GEMV_ROWS)

    def chunk_products(c: ir.Value | None, column: Offset, width: int, out: ir.Value) -> ir.Value:
        """The `[slots, width]` products of columns `column ..` (chunk `c` of the forall, or None
        for the tail chunk), starting from `out`'s slice zeroed."""
        zero = lb.f32_constant(0.0)
        start = linalg.fill(zero, outs=[lb.extract_slice(out, [0, column], [slots, width])])
        # The second half of the chunks (the second thread's, under OpenMP's static schedule) cut
        # K at blocks shifted by half a block: a half block, whole blocks, a half block.  The two
        # threads' memory-bound first tiles of a block then fall in the other's L2-bound tiles
        # instead of both streaming at once.  Only where the blocks are cut changes: each sum
        # still runs over k in order, so the results are the same (bit for bit).  Only where the
        # half block is still rlx-tile-gemv's kernel: 8-row tiles, whole AVX-512 vectors of
        # columns, at least its 32^3 multiply-adds.
        shift = depth // 2
        if not (STAGGER and c is not None and not depth_tail and depth % 2 == 0 and k > depth and tile == ROW_TILE
                and width % 16 == 0 and tile * width * shift >= 32 ** 3):
            shift = 0
        if c is not None:
            staggered = arith.cmpi(arith.CmpIPredicate.uge, c, lb.index_constant((n // chunk + 1) // 2))
        # The smaller last tiles that stay rlx-tile-gemv's kernel on the smallest block (its 32^3
        # multiply-adds).
        tail_rows = [r for r in TAIL_ROWS if r < tile and r * width * (shift or depth) >= 32 ** 3]

        def per_expert(e, columns):
            def multiply_block(row: Offset, size: int, columns: ir.Value) -> list[ir.Value]:
                return _multiply_block(buckets, xs, weight, e, row, size, column, width, columns, tail_rows)

            def aligned(columns):
                columns = lb.for_loop(0, k // depth, [columns],
                                      lambda b, cols: multiply_block(arith.muli(b, lb.index_constant(depth)), depth, cols))
                return multiply_block(k - depth_tail, depth_tail, columns[0]) if depth_tail else columns

            if not shift:
                return _if_expert_has_rows(buckets, e, columns, lambda: aligned(columns))

            def shifted(columns):
                (columns,) = multiply_block(0, shift, columns)
                (columns,) = lb.for_loop(0, k // depth - 1, [columns], lambda b, cols: multiply_block(
                    arith.addi(arith.muli(b, lb.index_constant(depth)), lb.index_constant(shift)), depth, cols))
                return multiply_block(k - shift, shift, columns)

            def products():
                branch = scf.IfOp(staggered, [columns.type], has_else=True)
                with ir.InsertionPoint(branch.then_block):
                    scf.YieldOp(shifted(columns))
                with ir.InsertionPoint(branch.else_block):
                    scf.YieldOp(aligned(columns))
                return [branch.results[0]]

            return _if_expert_has_rows(buckets, e, columns, products)

        (columns,) = lb.for_loop(0, buckets.experts, [start], per_expert)
        return columns

    chunks = scf.ForallOp([0], [n // chunk], [1], [lb.empty([slots, n], f32)])
    with ir.InsertionPoint(chunks.body):
        (c,), (shared,) = chunks.induction_variables, chunks.inner_iter_args
        column = arith.muli(c, lb.index_constant(chunk))
        columns = chunk_products(c, column, chunk, shared)
        terminator = scf.InParallelOp()
        with ir.InsertionPoint(terminator.region.blocks[0]):
            tensor.ParallelInsertSliceOp(columns, shared, [column], [], [], [0, _DYNAMIC], [slots, chunk], [1, 1])
    ys = chunks.results[0]
    if column_tail:
        ys = _insert(chunk_products(None, n - column_tail, column_tail, ys), ys, [0, n - column_tail], [slots, column_tail])
    return ys


def _f32_products_per_thread(buckets: _Buckets, xs: ir.Value, weight: ir.Value, k: int, n: int,
                             threads: int) -> ir.Value:
    """`ys [slots, n]`: each tile of rows of `xs [slots, k]` times its expert's `weight [E, k, n]`,
    the threads sharing out the experts.

    One `scf.forall` over `min(threads, E)` workers; worker `w` takes a contiguous range of experts
    (`_Buckets.share`: their costs balanced), whose tiles are a contiguous range of slots: the
    worker's `[tiles * T, n]` slice of ys (a dynamic size), zeroed, then per expert with rows
    (`scf.if`), per chunk of columns (all n where n <= EXPERT_COLUMNS_MAX: one chunk), per block
    of `depth` weight rows (`[depth, chunk]`, at most EXPERT_BLOCK_BYTES; whole rows of the
    weight, one contiguous run of memory, where the chunk is all n), per tile:
    `_multiply_block`'s product (`register_tile.accumulate`) adding into the tile's rows.  Each
    thread reads only its own experts' weights, in long runs, while the other thread streams other
    experts (sharing out the columns, both threads read short runs of the same weight rows at
    once).  The sums run over k in order, block after block, as in `_f32_expert_products` and
    with the same fma per k as its kernel (whole AVX-512 vectors of columns: rlx-tile-gemv's, no
    column split off to rlx-pack-matmul), so the results are the same bit for bit where both
    paths' blocks step at least 2 weight rows per kernel pass and are rlx-tile-gemv's (its 32^3
    multiply-adds) there (a block of 17 rows steps 1 at a time, and those sums round differently:
    K = 136 cut into blocks of 34 and the column chunks' staggered half blocks of 17 differ in the
    last bit, as the staggered and aligned chunks of one thread already do)."""
    f32 = lb.f32_type()
    slots, tile = buckets.slots, buckets.tile
    chunk, column_tail = (n, 0) if n <= EXPERT_COLUMNS_MAX else lb.tile_and_tail(n, EXPERT_COLUMNS_MAX, TAIL_COLUMN_MULTIPLE)
    pad = ROW_PAD if threads == 1 else 0
    forall = scf.ForallOp([0], [min(threads, buckets.experts)], [1], [lb.empty([slots, n + pad], f32)])
    with ir.InsertionPoint(forall.body):
        (w,), (shared,) = forall.induction_variables, forall.inner_iter_args
        lo, hi, first_tile, end_tile = buckets.share(w, min(threads, buckets.experts), EXPERT_STREAM_TILES)
        t = lb.index_constant(tile)
        first, size = arith.muli(first_tile, t), arith.muli(arith.subi(end_tile, first_tile), t)
        part_type = ir.RankedTensorType.get([_DYNAMIC, n], f32)
        part = tensor.ExtractSliceOp(part_type, shared, [first], [size], [], [_DYNAMIC, 0], [_DYNAMIC, n], [1, 1]).result
        start = linalg.fill(lb.f32_constant(0.0), outs=[part])

        def per_expert(e, columns):
            def over_columns(column: Offset, width: int, columns):
                depth, depth_tail = lb.tile_and_tail(k, max(1, EXPERT_BLOCK_BYTES // (4 * width)), GEMV_ROWS)
                tail_rows = [r for r in TAIL_ROWS if r < tile and r * width * min(depth, depth_tail or depth) >= 32 ** 3]
                local = ir.RankedTensorType.get([_DYNAMIC, width], f32)
                dynamic_column = [column] if isinstance(column, ir.Value) else []
                static_column = _DYNAMIC if isinstance(column, ir.Value) else column
                rows = tensor.DimOp(columns, lb.index_constant(0)).result
                piece = tensor.ExtractSliceOp(local, columns, dynamic_column, [rows], [], [0, static_column],
                                              [_DYNAMIC, width], [1, 1]).result if width != n else columns

                def multiply_block(row, size, cols):
                    return _multiply_block(buckets, xs, weight, e, row, size, column, width, cols, tail_rows, first)

                (piece,) = lb.for_loop(0, k // depth, [piece],
                                       lambda b, cols: multiply_block(arith.muli(b, lb.index_constant(depth)), depth, cols))
                if depth_tail:
                    (piece,) = multiply_block(k - depth_tail, depth_tail, piece)
                if width == n:
                    return piece
                return tensor.InsertSliceOp(piece, columns, dynamic_column, [rows], [], [0, static_column],
                                            [_DYNAMIC, width], [1, 1]).result

            def products():
                if chunk == n:
                    return [over_columns(0, n, columns)]
                (cols,) = lb.for_loop(0, n // chunk, [columns], lambda c, cols: [
                    over_columns(arith.muli(c, lb.index_constant(chunk)), chunk, cols)])
                return [over_columns(n - column_tail, column_tail, cols) if column_tail else cols]

            return _if_expert_has_rows(buckets, e, columns, products)

        if threads == 1:
            (result,) = lb.for_loop(lo, hi, [start], lambda e, columns: _if_expert_has_rows(
                buckets, e, columns, lambda: [_expert_pieces(buckets, xs, weight, e, k, n, columns, first)]))
        else:
            (result,) = lb.for_loop(lo, hi, [start], per_expert)
        terminator = scf.InParallelOp()
        with ir.InsertionPoint(terminator.region.blocks[0]):
            tensor.ParallelInsertSliceOp(result, shared, [first], [size], [], [_DYNAMIC, 0], [_DYNAMIC, n], [1, 1])
    return forall.results[0]


def _piece_depth(k: int, piece: int) -> tuple[int, int]:
    """`_expert_pieces`' weight rows per block and in its tail block: at least PIECE_DEPTH and
    enough for rlx-tile-gemv's kernel on a tile (its 32^3 multiply-adds: `8 x depth x piece`), a
    multiple of its GEMV_ROWS rows per pass (a block of 17 rows would step 1 row at a time, which
    rounds differently from the other paths); the largest such multiple down to half the limit
    that divides K, else blocks of the limit and a tail of `K % limit` rows (all of K if shorter)."""
    limit = max(PIECE_DEPTH, -(-32 ** 3 // (ROW_TILE * piece)))
    limit = -(-limit // GEMV_ROWS) * GEMV_ROWS
    if k <= limit:
        return k, 0
    for depth in range(limit, limit // 2 - 1, -GEMV_ROWS):
        if k % depth == 0:
            return depth, 0
    return limit, k % limit


def _expert_pieces(buckets: _Buckets, xs: ir.Value, weight: ir.Value, e: ir.Value, k: int, n: int,
                   columns: ir.Value, first: ir.Value) -> ir.Value:
    """`columns` (the worker's slots of ys, from slot `first`, `[?, n]`) plus expert `e`'s tiles of
    `xs` times its weight, on one thread: per block of `depth` whole weight rows (PIECE_DEPTH), per
    piece of `piece` columns (PIECE_COLUMNS), every tile of the expert (`_multiply_block`'s
    `[8, depth] x [depth, piece]` product, `register_tile.accumulate` in place in `columns`).  A
    piece is read from memory by the expert's first tile and from L1 by the others, so the weight
    streams at an even pace under the arithmetic.  Each sum still runs over k in order, block after block, 8 rows per kernel pass:
    the same bits as on more threads and as the column chunks for the MoE benchmark's shapes (odd
    shapes, cut into other blocks there, may differ in the last bit).  N or K with no divisor near the limits: a
    last piece of `piece + N % piece` columns, a last block of `K % depth` rows (`_piece_depth`)."""
    f32 = lb.f32_type()
    # Whole AVX-512 vectors of columns (N is: _shares_experts), so every piece is rlx-tile-gemv's
    # kernel: the most that divide N (N = 1040: 5 pieces of 208), else (N / 16 prime or so) full
    # pieces and the rest added to the last one (N = 1072: 512 and 560 columns).
    vectors = n // TAIL_COLUMN_MULTIPLE
    most = lb.largest_divisor(vectors, PIECE_COLUMNS // TAIL_COLUMN_MULTIPLE)
    if 4 * most < min(vectors, PIECE_COLUMNS // TAIL_COLUMN_MULTIPLE):
        most = PIECE_COLUMNS // TAIL_COLUMN_MULTIPLE
    piece, piece_tail = most * TAIL_COLUMN_MULTIPLE, vectors % most * TAIL_COLUMN_MULTIPLE
    depth, depth_tail = _piece_depth(k, piece)
    rows = tensor.DimOp(columns, lb.index_constant(0)).result

    def over_piece(row: Offset, size: int, column: Offset, width: int, cols: ir.Value) -> ir.Value:
        # The last tile's smaller heights where they stay rlx-tile-gemv's kernel (its 32^3 multiply-adds;
        # the register kernel, whole vectors of columns, takes them all: `_multiply_block`).
        tail_rows = [r for r in TAIL_ROWS if r < buckets.tile and r * width * size >= 32 ** 3]
        if _register_tiled(buckets.tile, width):
            (cols,) = _multiply_block(buckets, xs, weight, e, row, size, column, width, cols, tail_rows, first,
                                      c_column=column)
            return cols
        dynamic = [column] if isinstance(column, ir.Value) else []
        static = _DYNAMIC if isinstance(column, ir.Value) else column
        part_type = ir.RankedTensorType.get([_DYNAMIC, width], f32)
        part = tensor.ExtractSliceOp(part_type, cols, dynamic, [rows], [], [0, static], [_DYNAMIC, width], [1, 1]).result
        (part,) = _multiply_block(buckets, xs, weight, e, row, size, column, width, part, tail_rows, first)
        return tensor.InsertSliceOp(part, cols, dynamic, [rows], [], [0, static], [_DYNAMIC, width], [1, 1]).result

    def over_block(row: Offset, size: int, cols: ir.Value) -> ir.Value:
        whole = n // piece - (1 if piece_tail else 0)
        (cols,) = lb.for_loop(0, whole, [cols], lambda c, cs: [
            over_piece(row, size, arith.muli(c, lb.index_constant(piece)), piece, cs)])
        return over_piece(row, size, whole * piece, piece + piece_tail, cols) if piece_tail else cols

    (columns,) = lb.for_loop(0, k // depth, [columns], lambda b, cs: [
        over_block(arith.muli(b, lb.index_constant(depth)), depth, cs)])
    return over_block(k - depth_tail, depth_tail, columns) if depth_tail else columns


def _fewest_rows(rows: ir.Value, columns: ir.Value, sizes: Sequence[int], multiply: Callable, tile: int) -> list[ir.Value]:
    """`multiply(r)` (the tile's product on its first `r` slots) for the fewest `r` of `sizes` that
    hold the tile's `rows` (at least 1), else `tile`: an scf.if per size, smallest first, so the
    last tile of an expert computes fewer padding rows (they are zero in xs, and never read back)."""
    if not sizes:
        return multiply(tile)
    smallest, rest = min(sizes), [r for r in sizes if r != min(sizes)]
    fits = arith.cmpi(arith.CmpIPredicate.ule, rows, lb.index_constant(smallest))
    branch = scf.IfOp(fits, [columns.type], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp(multiply(smallest))
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp(_fewest_rows(rows, columns, rest, multiply, tile))
    return [branch.results[0]]


def _shares_experts(n: int, threads: int, tile: int, experts: int) -> bool:
    """Whether the threads share out `rlx.grouped_matmul`'s experts (`_f32_products_per_thread`;
    one thread, the count known: all of them, in `_expert_pieces`' order) rather than its columns
    (`_f32_expert_products`)."""
    return threads >= 1 and tile == ROW_TILE and experts >= threads and n % TAIL_COLUMN_MULTIPLE == 0


def _lower_grouped_matmul(op, threads: int = 0) -> ir.Value:
    """`threads`: the compile's thread count where known (its column chunks, see _column_chunk, or
    the experts shared out, see _shares_experts), else 0."""
    f32 = lb.f32_type()
    (rows, k), (experts, _, n) = shape_of(op.x.type), shape_of(op.weight.type)
    if k == 0 or experts == 0:
        return lb.zeros([rows, n], f32)
    buckets = _Buckets(op.expert_idx, rows, experts, _row_tile(rows))
    if _shares_experts(n, threads, buckets.tile, experts):
        xs = buckets.gather_rows(op.x, k, f32, ROW_PAD if threads == 1 else 0)
        return buckets.scatter_rows(_f32_products_per_thread(buckets, xs, op.weight, k, n, threads), n)
    xs = buckets.gather_rows(op.x, k, f32)
    return buckets.scatter_rows(_f32_expert_products(buckets, xs, op.weight, k, n, threads), n)


# --- quantised experts ----------------------------------------------------------------------


def _lower_dequant_grouped_matmul(op) -> ir.Value:
    f32 = lb.f32_type()
    (rows, k), (experts, n, row_bytes) = shape_of(op.x.type), shape_of(op.w.type)
    if k == 0 or experts == 0:
        return lb.zeros([rows, n], f32)
    tile = _row_tile(rows)
    buckets = _Buckets(op.expert_idx, rows, experts, tile)
    xs = buckets.gather_rows(op.x, k, f32)
    block, tail = lb.tile_and_tail(n, COLUMN_BLOCK, TAIL_COLUMN_MULTIPLE)

    def weight_block(e, column, width):  # rows column .. column + width of the expert's slab: output columns
        return lb.extract_slice(op.w, [e, column, 0], [1, width, row_bytes], [width, row_bytes])

    def multiply(rows_of_tile, slab, width):
        return quant.packed_matmul(rows_of_tile, slab, op.scheme, ir.RankedTensorType.get([tile, width], f32))

    ys = _packed_expert_products(buckets, xs, k, n, block, tail, weight_block, multiply)
    return buckets.scatter_rows(ys, n)


def _lower_dequant_moe_weights(op) -> ir.Value:
    f32 = lb.f32_type()
    scheme = GGUF_SCHEMES[op.scheme]
    experts, n, row_bytes = shape_of(op.w.type)
    blocks = row_bytes // scheme.block_bytes
    k = blocks * scheme.block
    subblocks, subblock_size = quant.subblock_layout(scheme.name)
    in_bounds = ir.ArrayAttr.get([ir.BoolAttr.get(True)])
    last_dim = ir.AffineMapAttr.get(ir.AffineMap.get(3, 0, [ir.AffineDimExpr.get(2)]))

    def per_expert(e, out):
        slab = lb.extract_slice(op.w, [e, 0, 0], [1, n, row_bytes], [n, row_bytes])

        def per_row(row, out):
            def per_block(b, out):
                def per_subblock(s, out):
                    weights = quant.decode_subblock(slab, row, b, s, scheme.name)
                    column = arith.addi(
                        arith.muli(b, lb.index_constant(scheme.block)), arith.muli(s, lb.index_constant(subblock_size))
                    )
                    return [vector.TransferWriteOp(out.type, weights, out, [e, row, column], last_dim, in_bounds).result]

                return lb.for_loop(0, subblocks, [out], per_subblock)

            return lb.for_loop(0, blocks, [out], per_block)

        return lb.for_loop(0, n, [out], per_row)

    (decoded,) = lb.for_loop(0, experts, [lb.empty([experts, n, k], f32)], per_expert)
    return linalg.transpose(decoded, outs=[lb.empty([experts, k, n], f32)], permutation=[0, 2, 1]).results[0]


LOWERINGS: dict[type, Callable] = {
    rlx.ScatterAddOp: _lower_scatter_add,
    rlx.GroupedMatmulOp: _lower_grouped_matmul,
    rlx.DequantGroupedMatmulOp: _lower_dequant_grouped_matmul,
    rlx.DequantMoeWeightsOp: _lower_dequant_moe_weights,
}


def threaded_lowerings(threads: int) -> dict[type, Callable]:
    """The lowerings that depend on the compile's thread count (rlx-mir-to-linalg{threads})."""
    return {rlx.GroupedMatmulOp: functools.partial(_lower_grouped_matmul, threads=threads)}
