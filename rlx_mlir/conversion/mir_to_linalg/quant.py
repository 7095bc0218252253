"""Lowering of `rlx.dequant_matmul`: the blocks are decoded inside the contraction.

One `linalg.generic` over `(p, c, r, i)`: panel `p` of the weight's rows (`PANEL_ROWS` at most)
and row `i` in it (output column `n = p * panel + i`), chunk `c` of K (a run of blocks) and tile
`r` of x's rows (`tile` rows: 8, 4, 2 or 1, whichever divides M).  Its body walks the chunk's
blocks `b` and their sub-blocks `s` (the weights that share a scale: 32 for Q4_K / Q5_K, 16 for
Q2_K / Q3_K / Q6_K; Q4_0 uses its two nibble halves, Q8_0 one sub-block) in `scf.for` loops:
it reads what the sub-block shares (scales, mins) from `w` as scalars (`tensor.extract` at
`[n, b * block_bytes + offset]`), the sub-block's codes as one vector of bytes per byte array
(`vector.transfer_read`), decodes all its weights lane-wise (nibble and bit unpacking, scales
broadcast) once, and adds `x[row, b, s, :] * weights` (`vector.fma`) into one vector accumulator
per row of the tile (loop-carried values, so they stay in registers).  One `vector.reduction` per
accumulator at the end of the chunk adds into the partial product.  No f32 copy of the weight is
materialised.  Q4_K decodes a whole block at once: the 8 sub-blocks' 6-bit scales and mins
lane-wise from the 12 scale bytes (vector shuffles, shifts and masks), each 32 bytes of nibbles
read once for the two sub-blocks that share them; with one row of x per body (a GEMV, M odd or
1) it factors the scales out of the sums (`FACTORED`): x . codes per sub-block, times its scale,
and the mins once per block against the sums of x over each sub-block (one small reduction per
call, before the kernel), the nibbles read as i32 words, each taken where it lies in its word,
against x rearranged and scaled by powers of two once per call to meet them
(`_q4_k_nibble_order`, `NIBBLE_SCALE`: no widening of bytes, a mask and a conversion per 16
codes, the scales of two sub-blocks per FMA); that body takes up to 4 weight rows (`WEIGHT_ROWS`), which share the
reads of x and one vector decoding of their blocks' scales and mins, and stream side by side from
memory (with one or two rows per body it waited on memory: 0.75 against 0.59 ms at K = N = 4096);
while a group of rows runs, its body prefetches the bytes of the group two further
(`PREFETCH_AHEAD`, `memref.prefetch` on the weight's buffer), which the hardware prefetchers,
following 4 short streams, fetch late.
The byte decoding follows the layouts in `rlx.dequant_matmul`'s description
(ggml's `dequantize_row_*`).

Why this shape:
- a horizontal reduction per sub-block into a scalar sum (the first version) chains every block
  through that scalar: LLVM cannot overlap the blocks, and Q8_0 (a reduction per 32 weights) ran
  at a tenth of its memory bandwidth; vector accumulators leave one reduction per output;
- a decoded sub-block is multiplied into `tile` rows, so with M rows each weight is decoded
  M / tile times (8 rows of 32 lanes take 16 AVX-512 registers);
- with several row tiles, K is cut into chunks of at most `X_TILE_BYTES` of a tile's x (which
  stays in L1 while the panel's rows pass) and the rows into panels (whose chunk of bytes stays in
  L2 while the row tiles pass): otherwise every weight row streams all of x from L2 / L3;
- `p` outermost is the loop rlx-parallelize-linalg splits, so threads share out the weight's
  row panels; the products `[N / panel, M / tile, panel]` (one per row of the tile) are put
  together and transposed into `[M, N]` at the end (a reshape when M = 1).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from mlir import ir
from mlir.dialects import arith, bufferization, linalg, memref, scf, tensor, vector

from ...dialects import rlx
from ...dialects.rlx.quant import GGUF_SCHEMES
from ...ir.shapes import shape_of
from . import builders as lb
from . import quant_affine, quant_q8
from .unsigned import to_signless

# Sub-blocks per block (S) and weights per sub-block (J) of each scheme's loop nest.
_SUBBLOCKS = {"q4_0": (2, 16), "q8_0": (1, 32), "q2_k": (16, 16), "q3_k": (16, 16), "q4_k": (8, 32), "q5_k": (8, 32), "q6_k": (16, 16)}


def _i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


class _Block:
    """Scalar reads of the bytes of block `b` of row `n` of `w`, inside the generic's body."""

    def __init__(self, w: ir.Value, n: ir.Value, b: ir.Value, block_bytes: int):
        self.w, self.n = w, n
        self.base = arith.muli(b, lb.index_constant(block_bytes))

    def byte(self, offset: ir.Value, signed: bool = False) -> ir.Value:
        """The byte at `offset` (an index) in the block, as an i32 (zero- or sign-extended)."""
        column = arith.addi(self.base, offset)
        raw = to_signless(tensor.ExtractOp(self.w, [self.n, column]).result)
        return arith.extsi(_i32(), raw) if signed else arith.extui(_i32(), raw)

    def raw(self, offset: ir.Value, lanes: int) -> ir.Value:
        """The `lanes` bytes from `offset` (an index) in the block, as a vector of i8."""
        column = arith.addi(self.base, offset)
        raw_type = ir.VectorType.get([lanes], ir.RankedTensorType(self.w.type).element_type)
        identity = ir.AffineMapAttr.get(ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(1)]))
        padding = arith.constant(ir.RankedTensorType(self.w.type).element_type, 0)
        in_bounds = ir.ArrayAttr.get([ir.BoolAttr.get(True)])
        return to_signless(vector.TransferReadOp(raw_type, self.w, [self.n, column], identity, padding, in_bounds).result)

    def bytes(self, offset: ir.Value, lanes: int, signed: bool = False) -> ir.Value:
        """The `lanes` bytes from `offset` (an index) in the block, as a vector of i32."""
        raw = self.raw(offset, lanes)
        wide = ir.VectorType.get([lanes], _i32())
        return arith.extsi(wide, raw) if signed else arith.extui(wide, raw)

    def f16(self, offset: int) -> ir.Value:
        """The little-endian f16 at byte `offset`, as an f32."""
        low, high = self.byte(lb.index_constant(offset)), self.byte(lb.index_constant(offset + 1))
        bits = arith.ori(low, arith.shli(high, _c32(8)))
        half = arith.bitcast(ir.F16Type.get(), arith.trunci(ir.IntegerType.get_signless(16), bits))
        return arith.extf(ir.F32Type.get(), half)


def _c32(value: int) -> ir.Value:
    return arith.constant(_i32(), value)


def _as_i32(index: ir.Value) -> ir.Value:
    return arith.index_cast(_i32(), index)


def _to_f32(value: ir.Value) -> ir.Value:
    return arith.sitofp(ir.F32Type.get(), value)


def _bits(value: ir.Value, shift: ir.Value, mask: int) -> ir.Value:
    """`(value >> shift) & mask` on i32."""
    return arith.andi(arith.shrui(value, shift), _c32(mask))


def _idx(*terms) -> ir.Value:
    """The sum of index `terms`; an int term is a constant."""
    total = None
    for term in terms:
        value = lb.index_constant(term) if isinstance(term, int) else term
        total = value if total is None else arith.addi(total, value)
    return total


def _mul(value: ir.Value, factor: int) -> ir.Value:
    return arith.muli(value, lb.index_constant(factor))


def _div(value: ir.Value, divisor: int) -> ir.Value:
    return arith.divui(value, lb.index_constant(divisor))


def _rem(value: ir.Value, divisor: int) -> ir.Value:
    return arith.remui(value, lb.index_constant(divisor))


# --- per scheme: the f32 weights of sub-block s of a block ---------------------------------
#
# A decoder reads what the sub-block's weights share (scales, mins, where its codes are) as
# scalars, then its codes as one vector of `lanes` bytes per byte array, and returns the
# sub-block's weights as a vector<lanes x f32>.


class _Lanes:
    """Vector helpers for a sub-block of `count` weights: i32 lanes, scalars broadcast."""

    def __init__(self, count: int):
        self.count = count
        self.i32 = ir.VectorType.get([count], _i32())
        self.f32 = ir.VectorType.get([count], ir.F32Type.get())

    def const(self, value: int) -> ir.Value:
        return arith.constant(self.i32, ir.DenseElementsAttr.get_splat(self.i32, ir.IntegerAttr.get(_i32(), value)))

    def spread(self, scalar: ir.Value) -> ir.Value:
        return vector.BroadcastOp(self.f32 if isinstance(scalar.type, ir.F32Type) else self.i32, scalar).result

    def bits(self, value: ir.Value, shift: ir.Value, mask: int) -> ir.Value:
        """`(value >> shift) & mask` per lane; `shift` a scalar i32."""
        return arith.andi(arith.shrui(value, self.spread(shift)), self.const(mask))

    def affine(self, scale: ir.Value, code: ir.Value, minimum: ir.Value = None) -> ir.Value:
        """`scale * code [- minimum]` per lane, f32; `scale` and `minimum` scalars, `code` i32 lanes."""
        value = arith.mulf(self.spread(scale), arith.sitofp(self.f32, code))
        return value if minimum is None else arith.subf(value, self.spread(minimum))


Decoder = Callable[["_Block", ir.Value, _Lanes], ir.Value]


def _q4_0(block: _Block, s: ir.Value, v: _Lanes) -> ir.Value:
    d, shift = block.f16(0), _as_i32(_mul(s, 4))
    return v.affine(d, arith.subi(v.bits(block.bytes(lb.index_constant(2), v.count), shift, 15), v.const(8)))


def _q8_0(block: _Block, s: ir.Value, v: _Lanes) -> ir.Value:
    return v.affine(block.f16(0), block.bytes(lb.index_constant(2), v.count, signed=True))


def _q2_q3_layout(s: ir.Value, qs_offset: int) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    """Q2_K / Q3_K: weight 16 s + j = 128 h + 32 g + 16 t + j; its 2 low bits are bits 2 g, 2 g + 1
    of qs[32 h + 16 t + j].  Returns (h, g, t, the byte offset of qs[32 h + 16 t])."""
    h, g, t = _div(s, 8), _rem(_div(s, 2), 4), _rem(s, 2)
    return h, g, t, _idx(qs_offset, _mul(h, 32), _mul(t, 16))


def _q2_k(block: _Block, s: ir.Value, v: _Lanes) -> ir.Value:
    _, g, _, codes = _q2_q3_layout(s, 16)
    scales = block.byte(s)
    scale = arith.mulf(block.f16(80), _to_f32(arith.andi(scales, _c32(15))))
    minimum = arith.mulf(block.f16(82), _to_f32(arith.shrui(scales, _c32(4))))
    return v.affine(scale, v.bits(block.bytes(codes, v.count), _as_i32(_mul(g, 2)), 3), minimum)


def _q3_k(block: _Block, s: ir.Value, v: _Lanes) -> ir.Value:
    h, g, t, codes = _q2_q3_layout(s, 32)
    scale_low = _bits(block.byte(_idx(96, _rem(s, 8))), _as_i32(_mul(_div(s, 8), 4)), 15)
    scale_high = _bits(block.byte(_idx(104, _rem(s, 4))), _as_i32(_mul(_div(s, 4), 2)), 3)
    scale6 = arith.subi(arith.ori(scale_low, arith.shli(scale_high, _c32(4))), _c32(32))
    scale = arith.mulf(block.f16(108), _to_f32(scale6))
    low = v.bits(block.bytes(codes, v.count), _as_i32(_mul(g, 2)), 3)
    high = v.bits(block.bytes(_mul(t, 16), v.count), _as_i32(_idx(_mul(h, 4), g)), 1)
    code = arith.subi(low, arith.shli(arith.xori(high, v.const(1)), v.const(2)))  # low - 4 unless the bit is set
    return v.affine(scale, code)


def _k_scale_min(block: _Block, s: ir.Value) -> tuple[ir.Value, ir.Value]:
    """ggml's `get_scale_min_k4(s)` on the 12 scale bytes at offset 4: 6-bit scale and min, i32."""
    a = block.byte(_idx(4, s))  # scales[s]
    b = block.byte(_idx(8, s))  # scales[s + 4]
    c = block.byte(_idx(4, _rem(s, 4)))  # scales[s - 4] when s >= 4 (in bounds always)
    low = arith.cmpi(arith.CmpIPredicate.ult, s, lb.index_constant(4))
    six, four = _c32(6), _c32(4)
    scale_low, min_low = arith.andi(a, _c32(63)), arith.andi(b, _c32(63))
    scale_high = arith.ori(arith.andi(b, _c32(15)), arith.shli(arith.shrui(c, six), four))
    min_high = arith.ori(arith.shrui(b, four), arith.shli(arith.shrui(a, six), four))
    return arith.select(low, scale_low, scale_high), arith.select(low, min_low, min_high)


def _q4_q5_k(block: _Block, s: ir.Value, v: _Lanes, qs_offset: int, qh_offset) -> ir.Value:
    """`d * sc * code - dmin * m`; the code is a nibble of qs[32 (s / 2) + j] (low for even s), plus
    16 * bit s of qh[j] for Q5_K (`qh_offset` not None)."""
    sc, mn = _k_scale_min(block, s)
    scale = arith.mulf(block.f16(0), _to_f32(sc))
    minimum = arith.mulf(block.f16(2), _to_f32(mn))
    codes = block.bytes(_idx(qs_offset, _mul(_div(s, 2), 32)), v.count)
    code = v.bits(codes, _as_i32(_mul(_rem(s, 2), 4)), 15)
    if qh_offset is not None:
        high = v.bits(block.bytes(lb.index_constant(qh_offset), v.count), _as_i32(s), 1)
        code = arith.ori(code, arith.shli(high, v.const(4)))
    return v.affine(scale, code, minimum)


def _q4_k(block: _Block, s: ir.Value, v: _Lanes) -> ir.Value:
    return _q4_q5_k(block, s, v, 16, None)


def _q5_k(block: _Block, s: ir.Value, v: _Lanes) -> ir.Value:
    return _q4_q5_k(block, s, v, 48, 16)


def _q6_k(block: _Block, s: ir.Value, v: _Lanes) -> ir.Value:
    # weight 16 s + j = 128 h + 32 g + l with l = 16 (s % 2) + j
    h, g, half = _div(s, 8), _rem(_div(s, 2), 4), _mul(_rem(s, 2), 16)
    low = v.bits(block.bytes(_idx(_mul(h, 64), _mul(_rem(g, 2), 32), half), v.count), _as_i32(_mul(_div(g, 2), 4)), 15)
    high = v.bits(block.bytes(_idx(128, _mul(h, 32), half), v.count), _as_i32(_mul(g, 2)), 3)
    scale = arith.mulf(block.f16(208), _to_f32(block.byte(_idx(192, s), signed=True)))
    return v.affine(scale, arith.subi(arith.ori(low, arith.shli(high, v.const(4))), v.const(32)))


def _vector_i32(values: list[int]) -> ir.Value:
    """A constant vector<len(values) x i32>."""
    type_ = ir.VectorType.get([len(values)], _i32())
    return arith.constant(type_, ir.DenseElementsAttr.get(np.array(values, dtype=np.int32), type=type_))


def _concat(parts: list[ir.Value]) -> ir.Value:
    """The 1-D vectors `parts` (one type) back to back, by pairwise shuffles."""
    while len(parts) > 1:
        size = ir.VectorType(parts[0].type).shape[0]
        parts = [vector.shuffle(parts[j], parts[j + 1], list(range(2 * size))) for j in range(0, len(parts), 2)]
    return parts[0]


def _q4_k_scales(blocks: list[_Block], scale_factor: float = 1.0) -> tuple[ir.Value, ir.Value]:
    """The `d * scale` and `-dmin * min` of the 8 sub-blocks of each Q4_K block of `blocks` (one
    block per weight row, 1, 2 or 4 of them), two vector<8 * len(blocks) x f32> (lanes 8 t .. 8 t + 7:
    block t): the 6-bit scales and mins decoded lane-wise (ggml's `get_scale_min_k4` as byte
    shuffles of the 12 scale bytes, then shifts and masks per lane) instead of 8 times in scalar
    code, for all the rows' blocks in the same vector operations.  `scale_factor` (a power of two)
    multiplies the `d * scale`."""
    rows = len(blocks)
    raw = [block.raw(lb.index_constant(4), 12) for block in blocks]
    q = raw[0] if rows == 1 else _concat(raw)
    lanes_i32 = ir.VectorType.get([8 * rows], _i32())
    lanes_f32 = ir.VectorType.get([8 * rows], ir.F32Type.get())

    def lanes(*indices: int) -> ir.Value:  # bytes q[indices] of each block, zero-extended
        return arith.extui(lanes_i32, vector.shuffle(q, q, [12 * t + j for t in range(rows) for j in indices]))

    def tiled(values: list[int]) -> ir.Value:
        return _vector_i32(values * rows)

    low_mask, high_bits = tiled([63] * 4 + [15] * 4), tiled([0] * 4 + [48] * 4)
    six, four = tiled([6] * 8), tiled([4] * 8)

    def high(source: ir.Value) -> ir.Value:  # (byte >> 6) << 4 for sub-blocks 4..7, 0 for 0..3
        return arith.andi(arith.shli(arith.shrui(source, six), four), high_bits)

    def per_block(scalar) -> ir.Value:  # lanes 8 t .. 8 t + 7: scalar(block t)
        f32x8 = ir.VectorType.get([8], ir.F32Type.get())
        return _concat([vector.BroadcastOp(f32x8 if rows > 1 else lanes_f32, scalar(block)).result for block in blocks])

    # scale j < 4: q[j] & 63;       j >= 4: (q[j + 4] & 15) | (q[j - 4] >> 6) << 4
    # min   j < 4: q[j + 4] & 63;   j >= 4: (q[j + 4] >> 4) | (q[j] >> 6) << 4
    scale6 = arith.ori(arith.andi(lanes(0, 1, 2, 3, 8, 9, 10, 11), low_mask), high(lanes(0, 1, 2, 3, 0, 1, 2, 3)))
    min_shift = tiled([0] * 4 + [4] * 4)
    min6 = arith.ori(arith.andi(arith.shrui(lanes(4, 5, 6, 7, 8, 9, 10, 11), min_shift), low_mask), high(lanes(0, 1, 2, 3, 4, 5, 6, 7)))
    def d(block: _Block) -> ir.Value:  # times scale_factor, a power of two: exact
        value = block.f16(0)
        return value if scale_factor == 1.0 else arith.mulf(value, arith.constant(ir.F32Type.get(), scale_factor))

    scales = arith.mulf(per_block(d), arith.sitofp(lanes_f32, scale6))
    negative_mins = arith.mulf(per_block(lambda block: arith.negf(block.f16(2))), arith.sitofp(lanes_f32, min6))
    return scales, negative_mins


def _q4_k_block(block: _Block, v: _Lanes) -> list[ir.Value]:
    """All 8 sub-blocks of a Q4_K block decoded at once: the scales and mins by `_q4_k_scales`,
    each 32 bytes of nibbles read once for the two sub-blocks that share them (low nibbles:
    sub-block 2 p, high: 2 p + 1), each weight `code * (d * scale) - dmin * min` in one FMA."""
    scales, negative_mins = _q4_k_scales([block])
    i8x32 = ir.VectorType.get([v.count], ir.IntegerType.get_signless(8))
    nibble = arith.constant(i8x32, ir.DenseElementsAttr.get_splat(i8x32, ir.IntegerAttr.get(ir.IntegerType.get_signless(8), 15)))
    shift = arith.constant(i8x32, ir.DenseElementsAttr.get_splat(i8x32, ir.IntegerAttr.get(ir.IntegerType.get_signless(8), 4)))
    weights = []
    for pair in range(4):
        codes = block.raw(lb.index_constant(16 + 32 * pair), v.count)
        for s, code in ((2 * pair, arith.andi(codes, nibble)), (2 * pair + 1, arith.shrui(codes, shift))):
            scale = v.spread(vector.ExtractOp(scales, [], [s]).result)
            offset = v.spread(vector.ExtractOp(negative_mins, [], [s]).result)
            weights.append(vector.FMAOp(arith.uitofp(v.f32, code), scale, offset).result)
    return weights


# The factored GEMV takes each nibble where it lies in its i32 word, `code * 2^shift` (shift = 4 j
# for nibble j: a mask and a conversion, no shift), against x scaled by 2^(NIBBLE_SCALE - shift)
# once per call, and multiplies the sums by scales scaled by 2^-NIBBLE_SCALE: every product is
# 2^NIBBLE_SCALE times the exact one, so the sums are those of `code * x` times a power of two,
# bit for bit (as long as they stay below 2^(128 - NIBBLE_SCALE), about 1e30: x . codes of a
# sub-block; subnormal x is even kept exact).  The shift it saves was a quarter of the body's
# time (1 thread, weight in L2: 125 -> 95 ns per row of K = 4096).
NIBBLE_SCALE = 28


def _nibbles_in_place(words: ir.Value, shift: int) -> ir.Value:
    """Bits `shift` .. `shift` + 3 of each i32 lane of `words` (a vector<16 x i32>) where they lie,
    as f32: `uitofp(words & (15 << shift))`, the nibble times 2^shift (4 significant bits: exact)."""
    lanes = ir.VectorType(words.type).shape[0]
    mask = int(np.array([15 << shift], dtype=np.uint32).view(np.int32)[0])  # bit 31 set for shift 28
    return arith.uitofp(ir.VectorType.get([lanes], ir.F32Type.get()), arith.andi(words, _vector_i32([mask] * lanes)))


def _q4_k_nibble_order(rows: ir.Value, m: int, blocks: int, chunk: int) -> ir.Value:
    """x `[..., K]` (`m` rows) rearranged and scaled to meet the Q4_K codes as the factored GEMV
    reads them: `[m, blocks / chunk, chunk, h, high, k, i]` (h, high < 2, k < 4, i < 16).  That
    GEMV reads the 128 bytes of nibbles of a block as two halves `h` of 16 i32 words; byte `4 i + k`
    of half h is `qs[64 h + 4 i + k]`, whose nibble `high` holds weight `64 g + 32 high + l` with
    g = 2 h + i / 8 and l = 4 (i % 8) + k, and lies at bit `8 k + 4 high` of word i, read in place
    (`_nibbles_in_place`).  So x element `256 b + 128 h + 64 (i / 8) + 32 high + 4 (i % 8) + k`
    goes to `[b, h, high, k, i]`, times 2^(NIBBLE_SCALE - 8 k - 4 high) (exact: a power of two up
    to 2^28): one pass, once per call, shared by all weight rows."""
    f32 = ir.F32Type.get()
    # [m, b, h, i / 8, high, i % 8, k] -> [m, b, h, high, k, i / 8, i % 8]
    split = lb.reshape(rows, ir.RankedTensorType.get([m, blocks, 2, 2, 2, 8, 4], f32))
    d = [ir.AffineDimExpr.get(j) for j in range(7)]  # the loops over the result

    def scaled(value: ir.Value, _) -> list:
        # 2^(NIBBLE_SCALE - 8 k - 4 high): the f32 of biased exponent 127 + NIBBLE_SCALE - 8 k - 4 high
        k, high = (arith.index_cast(_i32(), linalg.IndexOp(dim).result) for dim in (4, 3))
        exponent = arith.subi(_c32(127 + NIBBLE_SCALE), arith.addi(arith.shli(k, _c32(3)), arith.shli(high, _c32(2))))
        return [arith.mulf(value, arith.bitcast(f32, arith.shli(exponent, _c32(23))))]

    moved = lb.generic_results(
        [split], [lb.empty([m, blocks, 2, 2, 4, 2, 8], f32)],
        [ir.AffineMap.get(7, 0, [d[0], d[1], d[2], d[5], d[3], d[6], d[4]]), ir.AffineMap.get(7, 0, d)],
        [lb.PARALLEL] * 7, scaled,
    )[0]
    return lb.reshape(moved, ir.RankedTensorType.get([m, blocks // chunk, chunk, 2, 2, 4, 16], f32))


# Schemes whose whole block is decoded at once (what the sub-blocks share decoded lane-wise):
# a function of (block, lanes) -> the weights of every sub-block, in order.
_BLOCK_DECODERS: dict[str, Callable[["_Block", _Lanes], list]] = {
    "q4_k": _q4_k_block,
}

_DECODERS: dict[str, Decoder] = {
    "q4_0": _q4_0,
    "q8_0": _q8_0,
    "q2_k": _q2_k,
    "q3_k": _q3_k,
    "q4_k": _q4_k,
    "q5_k": _q5_k,
    "q6_k": _q6_k,
}


# Rows of x per body: the largest that divides M.  Each decoded sub-block is multiplied into that
# many rows' accumulators (8 rows x 32 lanes: 16 AVX-512 registers), so a weight row is decoded
# M / tile times instead of M times.
ROW_TILES = (8, 4, 2, 1)
# The slice of K one body sums over is at most X_TILE_BYTES of a tile's rows of x (they stay in L1
# while the body runs for every weight row of a panel), and a panel at most PANEL_ROWS weight rows
# (their slices stay in L2 while the bodies run for every row tile).
X_TILE_BYTES = 16 * 1024
PANEL_ROWS = 64
# Schemes whose GEMV (one row of x per body) factors the scales out of the sums: for Q4_K,
# sum_j x_j (d sc code_j - dmin m) = d sc (x . code) - dmin m sum(x): per 32 weights one multiply
# and one FMA of x with the codes and one FMA by the scale, the mins once per block against the
# sums of x over each sub-block (computed once per call, for all weight rows).  With several rows
# per body the decoded weights are shared by the rows instead.
FACTORED = ("q4_k",)
# Weight rows per body of a factored GEMV, the first of these that divides the panel: they share
# the reads of x and the vector operations that decode their blocks' scales and mins (8 lanes per
# row), and their rows stream from memory side by side.  Measured (1 thread, M = 1, K = N = 4096,
# the weight from DRAM): 1 or 2 rows 0.75 ms, 4 rows 0.59 ms, 8 rows 0.77-0.85 ms.
WEIGHT_ROWS = (4, 2, 1)


# The factored GEMV prefetches the weight rows PREFETCH_AHEAD groups (of WEIGHT_ROWS rows) ahead
# of the group it multiplies, as one sequential run: the group's rows are back to back in memory
# (4 rows of 2304 bytes at K = 4096: 9 KiB), so while it walks its blocks, block b prefetches the
# b-th of `blocks` equal slices of that run (9 lines of 64 bytes at K = 4096).  The body reads 4
# short streams that cross a 4 KiB page every other block, which the hardware prefetchers follow
# late.  `prefetcht1` (locality 2: into L2); the compute-bound body (0.39 ms with the weight in
# cache) then overlaps the reads.  Measured (1 thread, M = 1, K = N = 4096, weight from DRAM, CPU
# time, best / median of 21 interleaved calls, machine loaded): none 0.51 / 0.58 ms, 1 group ahead
# 0.48 / 0.55, 2 groups 0.44 / 0.46-0.48 (t0 and t1 alike), 4 groups 0.44 / 0.46.
PREFETCH_AHEAD = 2
PREFETCH_LOCALITY = 2


def _prefetch_group(weight: ir.Value, first: ir.Value, bc: ir.Value, weight_rows: int, block_bytes: int) -> None:
    """In the factored GEMV's body for block `bc` of rows `first` .. `first + weight_rows - 1`:
    prefetch the `bc`-th slice of `weight_rows * block_bytes` bytes of the rows PREFETCH_AHEAD
    groups further (`weight` the weight's bytes as a memref [N, row bytes]; the last group of
    rows stands for those past the end).  One `memref.prefetch` per 64 bytes."""
    rows, row_bytes = ir.MemRefType(weight.type).shape
    run = weight_rows * block_bytes  # the slice of the group's bytes per block of this group
    start_row = arith.minui(_idx(first, weight_rows * PREFETCH_AHEAD), lb.index_constant(rows - weight_rows))
    for line in range(0, run, 64):
        offset = _idx(_mul(bc, run), line) if line else _mul(bc, run)
        row, column = _idx(start_row, _div(offset, row_bytes)), _rem(offset, row_bytes)
        memref.PrefetchOp(weight, [row, column], False, PREFETCH_LOCALITY, True)


def _prefetchable(packed: ir.Value) -> ir.Value:
    """`packed` (a tensor [N, row bytes]) as the memref `_prefetch_group` prefetches from: read only,
    any strides (a slice of an expert's rows stays a view, not a copy)."""
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    packed_type = ir.RankedTensorType(packed.type)
    layout = ir.StridedLayoutAttr.get(dynamic, [dynamic, dynamic])
    buffer_type = ir.MemRefType.get(packed_type.shape, packed_type.element_type, layout)
    return bufferization.ToBufferOp(buffer_type, packed, read_only=True).result


def _activations(op) -> str:
    """The op's `activations` attribute ("f32" where absent; the MoE tiles carry none)."""
    return getattr(op, "activations", None) or "f32"


def _lower_dequant_matmul(op) -> ir.Value:
    if op.scheme not in GGUF_SCHEMES:  # int8/B, int8_asym/B, int4/B, nvfp4: codes with side tensors
        return quant_affine.lower_dequant_matmul(op)
    if shape_of(op.x.type)[-1] == 0:  # K = 0 (rows of no bytes): a sum over nothing, as rlx.matmul's
        result = ir.RankedTensorType(op.result.type)
        return lb.zeros(result.shape, result.element_type)
    return packed_matmul(op.x, op.w, op.scheme, op.result.type, _activations(op))


def packed_matmul(rows: ir.Value, packed: ir.Value, scheme_name: str, result_type: ir.Type, activations: str = "f32") -> ir.Value:
    """`rows [..., K] @ W.T` of type `result_type` (`[..., N]`), `W [N, K]` given as GGUF blocks
    `packed [N, row bytes]` in `scheme_name`, decoded inside the contraction (the module doc): the
    computation of `rlx.dequant_matmul` for a GGUF scheme, on values (`rlx.dequant_grouped_matmul`
    runs it per tile of an expert's rows on that expert's slab).  `activations = "q8"` (Q4_K only)
    multiplies 8-bit activations (`quant_q8`)."""
    scheme = GGUF_SCHEMES[scheme_name]
    subblocks, per_subblock = _SUBBLOCKS[scheme.name]
    x_shape, w_shape = shape_of(rows.type), shape_of(packed.type)
    k, n = x_shape[-1], w_shape[0]
    m = 1
    for size in x_shape[:-1]:
        m *= size
    q8 = scheme.name == "q4_k" and activations == "q8"
    tile = 1 if q8 else next(t for t in ROW_TILES if m % t == 0)
    # Panels matter with several row tiles (x's tile stays in L1 while a panel's rows pass): a prime
    # N there gets whole panels and one panel of the rows left (with one tile, a 1-row panel costs
    # nothing more, and the second product would).
    panel, tail = lb.tile_and_tail(n, PANEL_ROWS, WEIGHT_ROWS[0])
    if tail and m > tile:
        return _with_tail_rows(rows, packed, scheme_name, result_type, activations, n - tail)
    if tail:
        panel = lb.largest_divisor(n, PANEL_ROWS)
    blocks = k // scheme.block
    chunk = blocks  # blocks per body: all of K, unless x has several row tiles to keep in L1 in turn
    if m > tile:
        limit = max(1, X_TILE_BYTES // (4 * tile * scheme.block))
        chunk = lb.largest_divisor(blocks, limit)
        if 4 * chunk < min(limit, blocks):  # no divisor near the limit: a sum per few blocks costs more
            chunk = blocks
    f32 = ir.F32Type.get()
    # x viewed as [M, K chunk, block of the chunk, sub-block, weight of the sub-block]
    x = lb.reshape(rows, ir.RankedTensorType.get([m, blocks // chunk, chunk, subblocks, per_subblock], f32))
    # Loops (panel p, K chunk c, row tile r, weight row i of the panel): weight row n = p * panel + i.
    p, c, r, i = (ir.AffineDimExpr.get(d) for d in range(4))
    zero = ir.AffineConstantExpr.get(0)
    # x and w are inputs read at a body's first element: the body reads them through tensor.extract
    # and vector.transfer_read, but as operands they show the op's size (rlx-parallelize-linalg
    # leaves small ops serial) and that a chunk of panels reads their rows of w.  LLVM drops the
    # unused loads.  One result [N / panel, M / tile, panel] per row of the tile.
    factored = scheme.name in FACTORED and tile == 1
    # Weight rows per body: WEIGHT_ROWS for the factored GEMV.
    weight_rows = next(rows for rows in WEIGHT_ROWS if panel % rows == 0) if factored and not q8 else 1
    maps = [
        ir.AffineMap.get(4, 0, [r * tile, c, zero, zero, zero]),  # x[first row of the tile, chunk c, 0, 0, 0]
        ir.AffineMap.get(4, 0, [p * panel + i * weight_rows, c * (chunk * scheme.block_bytes)]),  # w[n, first byte]
    ] + [ir.AffineMap.get(4, 0, [p, r, i])] * (tile * weight_rows)
    decode = _DECODERS[scheme.name]
    fast = ir.Attribute.parse("#arith.fastmath<reassoc,contract>")
    lanes = _Lanes(per_subblock)
    x_identity = ir.AffineMapAttr.get(ir.AffineMap.get(5, 0, [ir.AffineDimExpr.get(4)]))
    in_bounds = ir.ArrayAttr.get([ir.BoolAttr.get(True)])

    def block_of(n_index: ir.Value, c: ir.Value, bc: ir.Value) -> _Block:
        """Block b = c * chunk + bc of weight row n."""
        return _Block(packed, n_index, _idx(_mul(c, chunk), bc), scheme.block_bytes)

    def accumulate(n_index: ir.Value, first_row: ir.Value, c: ir.Value, bc: ir.Value, s: ir.Value, sums: list, weights=None) -> list:
        """`sums[t] + x[first_row + t, c, bc, s, :] * weights of sub-block s of block b = c * chunk + bc
        of row n`, lane-wise (`weights`: the sub-block's, when already decoded)."""
        if weights is None:
            weights = decode(block_of(n_index, c, bc), s, lanes)
        updated = []
        for t, partial in enumerate(sums):
            xs = vector.TransferReadOp(
                lanes.f32, x, [_idx(first_row, t), c, bc, s, lb.index_constant(0)], x_identity, arith.constant(f32, 0.0), in_bounds
            ).result
            updated.append(vector.FMAOp(xs, weights, partial).result)
        return updated

    def factored_body(*args: ir.Value) -> list:
        """Q4_K, one row of x and `weight_rows` rows of w: per row `sum_s d sc_s (x_s . code_s) -
        dmin m_s sum(x_s)`, see FACTORED; the rows share the reads of x and the decoding of their
        blocks' scales and mins (one vector<8 * weight_rows> per block)."""
        partials = args[2:]
        p_index, c_index, row, i_index = (linalg.IndexOp(d).result for d in range(4))  # row tiles of 1: r is the row
        first = _idx(_mul(p_index, panel), _mul(i_index, weight_rows))
        n_indices = [_idx(first, t) if t else first for t in range(weight_rows)]
        f32x16 = ir.VectorType.get([16], f32)
        f32x8, mins_type = ir.VectorType.get([8], f32), ir.VectorType.get([8 * weight_rows], f32)
        zero16 = arith.constant(f32x16, ir.DenseElementsAttr.get_splat(f32x16, ir.FloatAttr.get(f32, 0.0)))
        zero_mins = arith.constant(mins_type, ir.DenseElementsAttr.get_splat(mins_type, ir.FloatAttr.get(f32, 0.0)))
        i32x16 = ir.VectorType.get([16], _i32())
        nibbles_row = ir.AffineMapAttr.get(ir.AffineMap.get(7, 0, [ir.AffineDimExpr.get(6)]))
        sums_row = ir.AffineMapAttr.get(ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(3)]))
        # carried: (low, high nibble) accumulators per weight row, then the mins of all rows
        over_blocks = scf.ForOp(lb.index_constant(0), lb.index_constant(chunk), lb.index_constant(1), [zero16] * (2 * weight_rows) + [zero_mins])
        with ir.InsertionPoint(over_blocks.body):
            bc = over_blocks.induction_variable
            *accumulators, mins = over_blocks.inner_iter_args
            accumulators = [list(accumulators[2 * t:2 * t + 2]) for t in range(weight_rows)]
            blocks_ = [block_of(n_index, c_index, bc) for n_index in n_indices]
            if prefetched is not None:
                _prefetch_group(prefetched, first, bc, weight_rows, scheme.block_bytes)
            scales, negative_mins = _q4_k_scales(blocks_, 2.0 ** -NIBBLE_SCALE)
            zero = lb.index_constant(0)
            x_sums = vector.TransferReadOp(f32x8, sub_sums, [row, c_index, bc, zero], sums_row, arith.constant(f32, 0.0), in_bounds).result
            if weight_rows > 1:
                x_sums = vector.shuffle(x_sums, x_sums, list(range(8)) * weight_rows)
            mins = vector.FMAOp(negative_mins, x_sums, mins).result
            # Each 64 bytes of nibbles (half `h` of the codes) as 16 i32 words: nibble `2 k + high`
            # of word i is the code that meets x_nibbles[.., h, high, k, i] (see _q4_k_nibble_order).
            for h in range(2):
                words = [vector.BitCastOp(i32x16, block.raw(lb.index_constant(16 + 64 * h), 64)).result for block in blocks_]
                for high in range(2):
                    xs = [vector.TransferReadOp(f32x16, x_nibbles, [row, c_index, bc, lb.index_constant(h), lb.index_constant(high),
                                                                    lb.index_constant(k), zero], nibbles_row, arith.constant(f32, 0.0),
                                                in_bounds).result for k in range(4)]
                    for t in range(weight_rows):
                        dot = None
                        for k in range(4):
                            code = _nibbles_in_place(words[t], 8 * k + 4 * high)
                            dot = arith.mulf(xs[k], code, fastmath=fast) if dot is None else vector.FMAOp(xs[k], code, dot).result
                        # lanes 0-7: sub-block 4 h + high, lanes 8-15: sub-block 4 h + 2 + high
                        first = 8 * t + 4 * h + high
                        lane_scales = vector.shuffle(scales, scales, [first] * 8 + [first + 2] * 8)
                        accumulators[t][high] = vector.FMAOp(lane_scales, dot, accumulators[t][high]).result
            scf.YieldOp([*(a for pair_ in accumulators for a in pair_), mins])
        *accumulators, mins = over_blocks.results
        totals = []
        for t, partial in enumerate(partials):
            even, odd = accumulators[2 * t:2 * t + 2]
            row_mins = mins if weight_rows == 1 else vector.ExtractStridedSliceOp(f32x8, mins, [8 * t], [8], [1]).result
            total = vector.ReductionOp(f32, vector.CombiningKind.ADD, arith.addf(even, odd, fastmath=fast), acc=partial, fastmath=fast).result
            totals.append(vector.ReductionOp(f32, vector.CombiningKind.ADD, row_mins, acc=total, fastmath=fast).result)
        return totals

    def q8_body(*args: ir.Value) -> list:
        """Q4_K on 8-bit activations (`activations = "q8"`, quant_q8): per 64 bytes of nibbles two
        integer dot products (low and high nibbles) of four sub-blocks, each lane's i32 sum times
        its sub-block's `d * sc` and the x block's scale; the mins as in `factored_body`."""
        partial = args[-1]
        p_index, c_index, row, i_index = (linalg.IndexOp(d).result for d in range(4))
        n_index = _idx(_mul(p_index, panel), i_index)
        f32x16, f32x8 = ir.VectorType.get([16], f32), ir.VectorType.get([8], f32)
        i8x64 = ir.VectorType.get([64], ir.IntegerType.get_signless(8))
        zero16 = arith.constant(f32x16, ir.DenseElementsAttr.get_splat(f32x16, ir.FloatAttr.get(f32, 0.0)))
        zero8 = arith.constant(f32x8, ir.DenseElementsAttr.get_splat(f32x8, ir.FloatAttr.get(f32, 0.0)))
        nibble = arith.constant(i8x64, ir.DenseElementsAttr.get_splat(i8x64, ir.IntegerAttr.get(i8x64.element_type, 15)))
        four = arith.constant(i8x64, ir.DenseElementsAttr.get_splat(i8x64, ir.IntegerAttr.get(i8x64.element_type, 4)))
        sums_row = ir.AffineMapAttr.get(ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(3)]))
        q_row = ir.AffineMapAttr.get(ir.AffineMap.get(6, 0, [ir.AffineDimExpr.get(5)]))
        over_blocks = scf.ForOp(lb.index_constant(0), lb.index_constant(chunk), lb.index_constant(1), [zero16] * 4 + [zero8])
        with ir.InsertionPoint(over_blocks.body):
            bc = over_blocks.induction_variable
            *accumulators, mins = over_blocks.inner_iter_args
            accumulators = list(accumulators)
            block = block_of(n_index, c_index, bc)
            scales, negative_mins = _q4_k_scales([block])
            zero = lb.index_constant(0)
            x_sums = vector.TransferReadOp(f32x8, sub_sums, [row, c_index, bc, zero], sums_row, arith.constant(f32, 0.0), in_bounds).result
            mins = vector.FMAOp(negative_mins, x_sums, mins).result
            x_scale = arith.mulf(tensor.ExtractOp(amax, [row, c_index, bc]).result, arith.constant(f32, 1.0 / quant_q8.ACTIVATION_LEVELS))
            scales = arith.mulf(scales, vector.BroadcastOp(f32x8, x_scale).result)
            for half in range(2):
                raw = block.raw(lb.index_constant(16 + 64 * half), 64)
                for h, codes in enumerate((arith.andi(raw, nibble), arith.shrui(raw, four))):
                    xq = vector.TransferReadOp(i8x64, x_q8, [row, c_index, bc, lb.index_constant(half), lb.index_constant(h), zero],
                                               q_row, arith.constant(i8x64.element_type, 0), in_bounds).result
                    dot = arith.sitofp(f32x16, quant_q8.dot_u8_i8(codes, xq))
                    # lanes 0-7: sub-block 4 half + h, lanes 8-15: sub-block 4 half + 2 + h
                    lane_scales = vector.shuffle(scales, scales, [4 * half + h] * 8 + [4 * half + 2 + h] * 8)
                    accumulators[2 * half + h] = vector.FMAOp(dot, lane_scales, accumulators[2 * half + h]).result
            scf.YieldOp([*accumulators, mins])
        *accumulators, mins = over_blocks.results
        pairs = [arith.addf(accumulators[0], accumulators[1], fastmath=fast), arith.addf(accumulators[2], accumulators[3], fastmath=fast)]
        total = vector.ReductionOp(f32, vector.CombiningKind.ADD, arith.addf(*pairs, fastmath=fast), acc=partial, fastmath=fast).result
        return [vector.ReductionOp(f32, vector.CombiningKind.ADD, mins, acc=total, fastmath=fast).result]

    def body(*args: ir.Value) -> list:
        partials = args[2:]  # the sums over the previous K chunks
        p_index, c_index, r_index, i_index = (linalg.IndexOp(d).result for d in range(4))
        n_index, first_row = _idx(_mul(p_index, panel), i_index), _mul(r_index, tile)
        zeros = arith.constant(lanes.f32, ir.DenseElementsAttr.get_splat(lanes.f32, ir.FloatAttr.get(f32, 0.0)))
        over_blocks = scf.ForOp(lb.index_constant(0), lb.index_constant(chunk), lb.index_constant(1), [zeros] * tile)
        with ir.InsertionPoint(over_blocks.body):
            bc, sums = over_blocks.induction_variable, list(over_blocks.inner_iter_args)
            if scheme.name in _BLOCK_DECODERS:
                decoded = _BLOCK_DECODERS[scheme.name](block_of(n_index, c_index, bc), lanes)
                for s, weights in enumerate(decoded):
                    sums = accumulate(n_index, first_row, c_index, bc, lb.index_constant(s), sums, weights)
            elif subblocks == 1:
                sums = accumulate(n_index, first_row, c_index, bc, lb.index_constant(0), sums)
            else:
                over_subblocks = scf.ForOp(lb.index_constant(0), lb.index_constant(subblocks), lb.index_constant(1), sums)
                with ir.InsertionPoint(over_subblocks.body):
                    s = over_subblocks.induction_variable
                    scf.YieldOp(accumulate(n_index, first_row, c_index, bc, s, list(over_subblocks.inner_iter_args)))
                sums = list(over_subblocks.results)
            scf.YieldOp(sums)
        return [
            vector.ReductionOp(f32, vector.CombiningKind.ADD, total, acc=partial, fastmath=fast).result
            for total, partial in zip(over_blocks.results, partials)
        ]

    shape = [n // panel, m // tile, panel // weight_rows]
    iterators = [lb.PARALLEL, lb.REDUCTION, lb.PARALLEL, lb.PARALLEL]
    if q8:
        x_q8, amax = quant_q8.quantize_activations(lb.reshape(rows, ir.RankedTensorType.get([m, k], f32)), m, blocks)
        x_q8 = lb.reshape(x_q8, ir.RankedTensorType.get([m, blocks // chunk, chunk, 2, 2, 64], ir.IntegerType.get_signless(8)))
        amax = lb.reshape(amax, ir.RankedTensorType.get([m, blocks // chunk, chunk], f32))
    if factored or q8:
        # sum(x) over each sub-block of 32: [M, K / 32] viewed as [M, K chunk, block of the chunk, sub-block]
        groups = lb.reshape(rows, ir.RankedTensorType.get([m, k // 32, 32], f32))
        d0, d1, d2 = (ir.AffineDimExpr.get(d) for d in range(3))
        summed = lb.generic_results(
            [groups], [lb.zeros([m, k // 32], f32)],
            [ir.AffineMap.get(3, 0, [d0, d1, d2]), ir.AffineMap.get(3, 0, [d0, d1])],
            [lb.PARALLEL, lb.PARALLEL, lb.REDUCTION], lambda value, total: [arith.addf(value, total)],
        )[0]
        sub_sums = lb.reshape(summed, ir.RankedTensorType.get([m, blocks // chunk, chunk, subblocks], f32))
    if factored:
        x_nibbles = _q4_k_nibble_order(rows, m, blocks, chunk)
    # The factored GEMV over all of K (a body walks whole rows) prefetches the rows ahead.
    prefetched = _prefetchable(packed) if factored and chunk == blocks and PREFETCH_AHEAD else None
    products = lb.generic_results(
        [x, packed], [lb.zeros(shape, f32) for _ in range(tile * weight_rows)], maps, iterators,
        q8_body if q8 else factored_body if factored else body,
    )
    # Part t is row t of each row tile ([N / panel, M / tile, panel] each) or weight row t of each
    # group of weight_rows ([N / panel, M, panel / weight_rows] each): stacked on a last axis, then
    # [M, N] (a reshape when M = 1).
    product = products[0]
    if tile > 1:
        product = lb.empty([*shape, tile], f32)
        for t, part in enumerate(products):
            product = tensor.insert_slice(part, product, [], [], [], [0, 0, 0, t], [*shape, 1], [1, 1, 1, 1])
    elif weight_rows > 1:  # one pass over the parts (inserting them would fill and write strided views)
        d = [ir.AffineDimExpr.get(j) for j in range(4)]

        def pick(*args: ir.Value) -> list:
            row, picked = linalg.IndexOp(3).result, args[0]
            for t in range(1, weight_rows):
                picked = arith.select(arith.cmpi(arith.CmpIPredicate.eq, row, lb.index_constant(t)), args[t], picked)
            return [picked]

        product = lb.generic_results(
            products, [lb.empty([*shape, weight_rows], f32)],
            [ir.AffineMap.get(4, 0, d[:3])] * weight_rows + [ir.AffineMap.get(4, 0, d)], [lb.PARALLEL] * 4, pick,
        )[0]
    if m > 1:  # with one row, [N / panel, 1, ...] is already the bytes of [1, N]
        if tile > 1:  # [N / panel, M / tile, panel, tile] -> [M / tile, tile, N / panel, panel]
            permutation, target = [1, 3, 0, 2], [shape[1], tile, shape[0], panel]
        elif weight_rows > 1:  # [N / panel, M, panel / rows, rows] -> [M, N / panel, panel / rows, rows]
            permutation, target = [1, 0, 2, 3], [shape[1], shape[0], shape[2], weight_rows]
        else:
            permutation, target = [1, 0, 2], [shape[1], shape[0], panel]
        product = linalg.transpose(product, outs=[lb.empty(target, f32)], permutation=permutation).results[0]
    return lb.reshape(product, result_type)


def _with_tail_rows(rows: ir.Value, packed: ir.Value, scheme_name: str, result_type: ir.Type, activations: str,
                    head: int) -> ir.Value:
    """`packed_matmul` of a weight whose N has no divisor near PANEL_ROWS (a vocabulary of 50257),
    with several row tiles of x: its first `head` rows (whole panels) and the `N - head` rows
    after them (one panel) as two products, side by side in the result.  One panel of all N rows would be 1 row (a prime N), and
    the rows of x, kept in L1 for a panel's rows, would be read again for every weight row (Q8_0,
    M = 32, K = 4096: 2.2x the time per element of N = 4096)."""
    n, row_bytes = shape_of(packed.type)
    result = ir.RankedTensorType(result_type)
    outer = list(result.shape[:-1])
    out = lb.empty(result.shape, result.element_type)
    for first, count in ((0, head), (head, n - head)):
        part_type = ir.RankedTensorType.get([*outer, count], result.element_type)
        part = packed_matmul(rows, lb.extract_slice(packed, [first, 0], [count, row_bytes]), scheme_name, part_type, activations)
        offsets = [0] * len(outer) + [first]
        out = tensor.insert_slice(part, out, [], [], [], offsets, [*outer, count], [1] * (len(outer) + 1))
    return out


def subblock_layout(scheme_name: str) -> tuple[int, int]:
    """(sub-blocks per block, weights per sub-block) of a GGUF scheme: the unit `decode_subblock` decodes."""
    return _SUBBLOCKS[scheme_name]


def decode_subblock(packed: ir.Value, row: ir.Value, block: ir.Value, subblock: ir.Value, scheme_name: str) -> ir.Value:
    """The f32 weights (a vector of `subblock_layout(scheme_name)[1]`) of sub-block `subblock` of
    block `block` of row `row` of the GGUF rows `packed [N, row bytes]`, decoded as
    `rlx.dequant_matmul` decodes them (`rlx.dequant_moe_weights` writes them out)."""
    scheme = GGUF_SCHEMES[scheme_name]
    return _DECODERS[scheme_name](_Block(packed, row, block, scheme.block_bytes), subblock, _Lanes(_SUBBLOCKS[scheme_name][1]))


def write_decoded_row(scheme_name: str, table: ir.Value, row: ir.Value, out: ir.Value, position: list) -> ir.Value:
    """`out` with row `row` of the packed 2-D `table` decoded into it: weight `k` of the row at
    `out[*position, k]` (one `vector.transfer_write` per sub-block).  `position` holds index values."""
    scheme = GGUF_SCHEMES[scheme_name]
    subblocks, per_subblock = _SUBBLOCKS[scheme_name]
    lanes = _Lanes(per_subblock)
    rank = len(position) + 1
    last_dim = ir.AffineMapAttr.get(ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(rank - 1)]))
    in_bounds = ir.ArrayAttr.get([ir.BoolAttr.get(True)])

    def write(out: ir.Value, weights: ir.Value, b: ir.Value, s) -> ir.Value:
        column = _idx(_mul(b, scheme.block), _mul(s, per_subblock) if isinstance(s, ir.Value) else s * per_subblock)
        return vector.TransferWriteOp(out.type, weights, out, [*position, column], last_dim, in_bounds).result

    def per_block(b: ir.Value, out: ir.Value) -> list:
        block = _Block(table, row, b, scheme.block_bytes)
        if scheme_name in _BLOCK_DECODERS:
            for s, weights in enumerate(_BLOCK_DECODERS[scheme_name](block, lanes)):
                out = write(out, weights, b, s)
            return [out]
        return lb.for_loop(0, subblocks, [out], lambda s, out: [write(out, _DECODERS[scheme_name](block, s, lanes), b, s)])

    blocks = shape_of(table.type)[1] // scheme.block_bytes
    return lb.for_loop(0, blocks, [out], per_block)[0]


def _lower_dequant_gather(op) -> ir.Value:
    """A loop over the picked rows (indices flattened), each clamped and decoded into its row of the result."""
    rows, _ = shape_of(op.table.type)
    indices_shape = shape_of(op.indices.type)
    count = int(np.prod(indices_shape, dtype=np.int64))
    k = shape_of(op.result.type)[-1]
    f32 = ir.F32Type.get()
    index_type = ir.IndexType.get()
    flat = lb.reshape(op.indices, ir.RankedTensorType.get([count], ir.RankedTensorType(op.indices.type).element_type))

    def per_index(t: ir.Value, out: ir.Value) -> list:
        row = arith.index_cast(index_type, tensor.extract(flat, [t]))
        row = arith.minsi(arith.maxsi(row, lb.index_constant(0)), lb.index_constant(rows - 1))
        return [write_decoded_row(op.scheme, op.table, row, out, [t])]

    (decoded,) = lb.for_loop(0, count, [lb.empty([count, k], f32)], per_index)
    return lb.reshape(decoded, op.result.type)


LOWERINGS: dict[type, Callable] = {
    rlx.DequantMatmulOp: _lower_dequant_matmul,
    rlx.DequantGatherOp: _lower_dequant_gather,
}
