"""Lowering of `rlx.dequant_matmul`: the blocks are decoded inside the contraction.

One `linalg.generic` over `(n, b, s, m, j)`: output column `n`, block `b` of the weight row,
sub-block `s` of the block, row `m` of `x` and weight `j` of the sub-block (sub-blocks are the
scheme's units that share a scale: 32 weights for Q4_K / Q5_K, 16 for Q2_K / Q3_K / Q6_K; Q4_0 uses its
two nibble halves, Q8_0 one sub-block).  `x` is viewed as `[M, K/block, S, J]` and read
through an indexing map; the body reads the block's bytes from `w` (`tensor.extract` at
`[n, b * block_bytes + offset]`), decodes its weight and accumulates `x * weight` into
`[M, N]` in f32.  No f32 copy of the weight is materialised.  The byte decoding follows
the layouts in `rlx.dequant_matmul`'s description (ggml's `dequantize_row_*`).
"""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from ...dialects import rlx
from ...dialects.rlx.quant import GGUF_SCHEMES
from ...ir.shapes import shape_of
from . import builders as lb
from .unsigned import to_signless

# The generic's loops, outermost first: output column n, block b, sub-block s, row m of x, weight j
# of the sub-block.  n outermost splits the weight between threads (rlx-parallelize-linalg splits
# the first loop); the scales of a sub-block depend on (n, b, s) only, so LLVM computes them once
# for all rows m; only the codes are decoded again per row.  (With m outermost every row decoded the
# whole weight again: 2x slower at M = 8, and the threads split the rows, not the weight.)
LOOP_ORDER = "nbsmj"

# Sub-blocks per block (S) and weights per sub-block (J) of each scheme's loop nest.
_SUBBLOCKS = {"q4_0": (2, 16), "q8_0": (1, 32), "q2_k": (16, 16), "q3_k": (16, 16), "q4_k": (8, 32), "q5_k": (8, 32), "q6_k": (16, 16)}


def _i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


class _Block:
    """Scalar reads of the bytes of block `b` of row `n` of `w`, inside the generic's body."""

    def __init__(self, w: ir.Value, n: ir.Value, b: ir.Value, block_bytes: int):
        self.w, self.n = w, n
        self.base = arith.muli(b, _index(block_bytes))

    def byte(self, offset: ir.Value, signed: bool = False) -> ir.Value:
        """The byte at `offset` (an index) in the block, as an i32 (zero- or sign-extended)."""
        column = arith.addi(self.base, offset)
        raw = to_signless(tensor.ExtractOp(self.w, [self.n, column]).result)
        return arith.extsi(_i32(), raw) if signed else arith.extui(_i32(), raw)

    def f16(self, offset: int) -> ir.Value:
        """The little-endian f16 at byte `offset`, as an f32."""
        low, high = self.byte(_index(offset)), self.byte(_index(offset + 1))
        bits = arith.ori(low, arith.shli(high, _c32(8)))
        half = arith.bitcast(ir.F16Type.get(), arith.trunci(ir.IntegerType.get_signless(16), bits))
        return arith.extf(ir.F32Type.get(), half)


def _index(value: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), value)


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
        value = _index(term) if isinstance(term, int) else term
        total = value if total is None else arith.addi(total, value)
    return total


def _mul(value: ir.Value, factor: int) -> ir.Value:
    return arith.muli(value, _index(factor))


def _div(value: ir.Value, divisor: int) -> ir.Value:
    return arith.divui(value, _index(divisor))


def _rem(value: ir.Value, divisor: int) -> ir.Value:
    return arith.remui(value, _index(divisor))


# --- per scheme: the f32 weight at (sub-block s, weight j) of a block ----------------------


def _q4_0(block: _Block, s: ir.Value, j: ir.Value) -> ir.Value:
    d = block.f16(0)
    code = _bits(block.byte(_idx(2, j)), _as_i32(_mul(s, 4)), 15)
    return arith.mulf(d, _to_f32(arith.subi(code, _c32(8))))


def _q8_0(block: _Block, s: ir.Value, j: ir.Value) -> ir.Value:
    return arith.mulf(block.f16(0), _to_f32(block.byte(_idx(2, j), signed=True)))


def _q2_q3_low_bits(block: _Block, qs_offset: int, s: ir.Value, j: ir.Value) -> ir.Value:
    """Q2_K / Q3_K: bits 2 g, 2 g + 1 of qs[32 h + 16 t + l] for weight 16 s + j = 128 h + 32 g + 16 t + l."""
    h, g, t = _div(s, 8), _rem(_div(s, 2), 4), _rem(s, 2)
    byte = block.byte(_idx(qs_offset, _mul(h, 32), _mul(t, 16), j))
    return _bits(byte, _as_i32(_mul(g, 2)), 3)


def _q2_k(block: _Block, s: ir.Value, j: ir.Value) -> ir.Value:
    code = _q2_q3_low_bits(block, 16, s, j)
    scales = block.byte(s)
    scale, minimum = arith.andi(scales, _c32(15)), arith.shrui(scales, _c32(4))
    d, dmin = block.f16(80), block.f16(82)
    return arith.subf(
        arith.mulf(arith.mulf(d, _to_f32(scale)), _to_f32(code)), arith.mulf(dmin, _to_f32(minimum))
    )


def _q3_k(block: _Block, s: ir.Value, j: ir.Value) -> ir.Value:
    h, g, t = _div(s, 8), _rem(_div(s, 2), 4), _rem(s, 2)
    low = _q2_q3_low_bits(block, 32, s, j)
    high = _bits(block.byte(_idx(_mul(t, 16), j)), _as_i32(_idx(_mul(h, 4), g)), 1)
    code = arith.subi(low, arith.shli(arith.xori(high, _c32(1)), _c32(2)))  # low - 4 unless the bit is set
    scale_low = _bits(block.byte(_idx(96, _rem(s, 8))), _as_i32(_mul(_div(s, 8), 4)), 15)
    scale_high = _bits(block.byte(_idx(104, _rem(s, 4))), _as_i32(_mul(_div(s, 4), 2)), 3)
    scale = arith.subi(arith.ori(scale_low, arith.shli(scale_high, _c32(4))), _c32(32))
    return arith.mulf(arith.mulf(block.f16(108), _to_f32(scale)), _to_f32(code))


def _k_scale_min(block: _Block, s: ir.Value) -> tuple[ir.Value, ir.Value]:
    """ggml's `get_scale_min_k4(s)` on the 12 scale bytes at offset 4: 6-bit scale and min, i32."""
    a = block.byte(_idx(4, s))  # scales[s]
    b = block.byte(_idx(8, s))  # scales[s + 4]
    c = block.byte(_idx(4, _rem(s, 4)))  # scales[s - 4] when s >= 4 (in bounds always)
    low = arith.cmpi(arith.CmpIPredicate.ult, s, _index(4))
    six, four = _c32(6), _c32(4)
    scale_low, min_low = arith.andi(a, _c32(63)), arith.andi(b, _c32(63))
    scale_high = arith.ori(arith.andi(b, _c32(15)), arith.shli(arith.shrui(c, six), four))
    min_high = arith.ori(arith.shrui(b, four), arith.shli(arith.shrui(a, six), four))
    return arith.select(low, scale_low, scale_high), arith.select(low, min_low, min_high)


def _k_affine(block: _Block, s: ir.Value, code: ir.Value) -> ir.Value:
    """`d * sc * code - dmin * m` for Q4_K / Q5_K."""
    scale, minimum = _k_scale_min(block, s)
    d, dmin = block.f16(0), block.f16(2)
    return arith.subf(
        arith.mulf(arith.mulf(d, _to_f32(scale)), _to_f32(code)), arith.mulf(dmin, _to_f32(minimum))
    )


def _q4_k_nibble(block: _Block, qs_offset: int, s: ir.Value, j: ir.Value) -> ir.Value:
    byte = block.byte(_idx(qs_offset, _mul(_div(s, 2), 32), j))
    return _bits(byte, _as_i32(_mul(_rem(s, 2), 4)), 15)


def _q4_k(block: _Block, s: ir.Value, j: ir.Value) -> ir.Value:
    return _k_affine(block, s, _q4_k_nibble(block, 16, s, j))


def _q5_k(block: _Block, s: ir.Value, j: ir.Value) -> ir.Value:
    high = _bits(block.byte(_idx(16, j)), _as_i32(s), 1)
    code = arith.ori(_q4_k_nibble(block, 48, s, j), arith.shli(high, _c32(4)))
    return _k_affine(block, s, code)


def _q6_k(block: _Block, s: ir.Value, j: ir.Value) -> ir.Value:
    # weight e = 16 s + j = 128 h + 32 g + l
    h, g = _div(s, 8), _rem(_div(s, 2), 4)
    l = _idx(_mul(_rem(s, 2), 16), j)
    low = _bits(block.byte(_idx(_mul(h, 64), _mul(_rem(g, 2), 32), l)), _as_i32(_mul(_div(g, 2), 4)), 15)
    high = _bits(block.byte(_idx(128, _mul(h, 32), l)), _as_i32(_mul(g, 2)), 3)
    code = arith.subi(arith.ori(low, arith.shli(high, _c32(4))), _c32(32))
    scale = block.byte(_idx(192, s), signed=True)
    return arith.mulf(arith.mulf(block.f16(208), _to_f32(scale)), _to_f32(code))


_DECODERS: dict[str, Callable[[_Block, ir.Value, ir.Value], ir.Value]] = {
    "q4_0": _q4_0,
    "q8_0": _q8_0,
    "q2_k": _q2_k,
    "q3_k": _q3_k,
    "q4_k": _q4_k,
    "q5_k": _q5_k,
    "q6_k": _q6_k,
}


def _lower_dequant_matmul(op) -> ir.Value:
    scheme = GGUF_SCHEMES[op.scheme]
    subblocks, per_subblock = _SUBBLOCKS[scheme.name]
    x_shape, w_shape = shape_of(op.x.type), shape_of(op.w.type)
    k, n = x_shape[-1], w_shape[0]
    m = 1
    for size in x_shape[:-1]:
        m *= size
    f32 = ir.F32Type.get()
    x = lb.reshape(op.x, ir.RankedTensorType.get([m, k // scheme.block, subblocks, per_subblock], f32))
    pos = {name: LOOP_ORDER.index(name) for name in "mnbsj"}
    d = {name: ir.AffineDimExpr.get(pos[name]) for name in "mnbsj"}
    # The product is accumulated as [N, M] so that its dims lead the loops (n, ..., m, ...) as
    # rlx-parallelize-linalg expects of a generic: it splits the weight rows between threads.
    # `w` is also an input, read at the first byte of block (n, b): the body decodes from the whole
    # tensor (tensor.extract), but as an operand it shows the op's true size (the parallelizer
    # skips small ops) and that a chunk of rows n reads the rows n of w.  LLVM drops the unused load.
    block_start = ir.AffineMap.get(5, 0, [d["n"], d["b"] * scheme.block_bytes])
    maps = [ir.AffineMap.get(5, 0, [d["m"], d["b"], d["s"], d["j"]]), block_start, ir.AffineMap.get(5, 0, [d["n"], d["m"]])]
    iterators = [lb.PARALLEL if name in "mn" else lb.REDUCTION for name in LOOP_ORDER]
    decode = _DECODERS[scheme.name]

    def body(x_element: ir.Value, _first_byte: ir.Value, acc: ir.Value) -> ir.Value:
        n_index, b, s, j = (linalg.IndexOp(pos[name]).result for name in "nbsj")
        weight = decode(_Block(op.w, n_index, b, scheme.block_bytes), s, j)
        return arith.addf(acc, arith.mulf(x_element, weight))

    product = lb.generic([x, op.w], lb.zeros([n, m], f32), maps, iterators, body)
    if m > 1:  # [N, M] -> [M, N]; with one row the two layouts are the same bytes (a reshape)
        product = linalg.transpose(product, outs=[lb.empty([m, n], f32)], permutation=[1, 0]).results[0]
    return lb.reshape(product, op.result.type)


LOWERINGS: dict[type, Callable] = {
    rlx.DequantMatmulOp: _lower_dequant_matmul,
}
