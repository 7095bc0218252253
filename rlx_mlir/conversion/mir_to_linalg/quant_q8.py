"""`rlx.dequant_matmul {activations = "q8"}`: the activations rounded to 8-bit blocks, integer dot products.

With `activations = "q8"` (opt-in: it changes the numerics) the Q4_K GEMV multiplies the weight's
4-bit codes by 8-bit activations, as llama.cpp's `vec_dot_q4_K_q8_K` does: x is quantised once
per call, per row and block of 256 (the weight's blocks), to `q = roundeven(x * 127 / amax)`
(`amax` the block's largest |x|, so q in -127..127) with the scale `amax / 127`
(`quantize_activations`); then each sub-block of 32 codes times 32 q is summed in i32 by
`dot_u8_i8` (4 products per i32 lane, in portable vector code that rlx-x86-byte-dot turns into
AVX-512 VNNI's `vpdpbusd`, 256 products per instruction, where the CPU has it), converted to f32 and multiplied by the sub-block's
`d * sc` and the x block's scale.  The mins' term stays exact: `dmin * m` times the f32 sums of x
over each sub-block.  See `quant.py` for the kernel around it.

The q8 layout of a block puts next to each other the activations that meet the same 64 bytes of
nibbles: Q4_K's `qs[32 g + l]` (g < 4, l < 32) holds element `64 g + l` in its low nibble and
`64 g + 32 + l` in its high one, so x's block `[c, g', h, l]` (element `128 c + 64 g' + 32 h + l`)
is stored as `[c, h, g', l]`: the 64 bytes at `[c, h]` line up with the nibbles `h` of
`qs[64 c .. 64 c + 63]`.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, vector
from mlir.dialects import math as mmath

from . import builders as lb

ACTIVATION_LEVELS = 127  # q in -127..127, as ggml's q8_K


def quantize_activations(x: ir.Value, m: int, blocks: int) -> tuple[ir.Value, ir.Value]:
    """x `[m, K]` f32 -> (q `[m, blocks, 2, 2, 2, 32]` i8 in the layout of the module doc,
    amax `[m, blocks]` f32, the largest |x| of each block of 256)."""
    f32, i8 = ir.F32Type.get(), ir.IntegerType.get_signless(8)
    grouped = lb.reshape(x, ir.RankedTensorType.get([m, blocks, 256], f32))
    d = [ir.AffineDimExpr.get(i) for i in range(6)]
    amax = lb.generic_results(
        [grouped], [lb.zeros([m, blocks], f32)],
        [ir.AffineMap.get(3, 0, d[:3]), ir.AffineMap.get(3, 0, d[:2])],
        [lb.PARALLEL, lb.PARALLEL, lb.REDUCTION], lambda value, top: [arith.maximumf(mmath.absf(value), top)],
    )[0]
    # element 128 c + 64 g' + 32 h + l of a block, stored at [c, h, g', l]
    x6 = lb.reshape(x, ir.RankedTensorType.get([m, blocks, 2, 2, 2, 32], f32))

    def round_code(value: ir.Value, top: ir.Value, _out: ir.Value) -> list:
        positive = arith.cmpf(arith.CmpFPredicate.OGT, top, arith.constant(f32, 0.0))
        inverse = arith.select(positive, arith.divf(arith.constant(f32, float(ACTIVATION_LEVELS)), top), arith.constant(f32, 0.0))
        code = mmath.roundeven(arith.mulf(value, inverse))
        bound = float(ACTIVATION_LEVELS)
        code = arith.minimumf(arith.maximumf(code, arith.constant(f32, -bound)), arith.constant(f32, bound))
        return [arith.fptosi(i8, code)]

    q = lb.generic_results(
        [x6, amax], [lb.empty([m, blocks, 2, 2, 2, 32], i8)],
        [ir.AffineMap.get(6, 0, d), ir.AffineMap.get(6, 0, d[:2]), ir.AffineMap.get(6, 0, [d[0], d[1], d[2], d[4], d[3], d[5]])],
        [lb.PARALLEL] * 6, round_code,
    )[0]
    return q, amax


def dot_u8_i8(codes: ir.Value, activations: ir.Value) -> ir.Value:
    """vector<64 x i8> unsigned codes . vector<64 x i8> signed activations -> vector<16 x i32>:
    lane i the sum of the 4 products of bytes 4 i .. 4 i + 3 (what `vpdpbusd` computes from zero),
    written portably: widened products, then the 4 strided shuffles added up, the pattern that
    rlx-x86-byte-dot turns into `vpdpbusd` on the LLVM dialect where the CPU has AVX-512 VNNI."""
    i32x16 = ir.VectorType.get([16], ir.IntegerType.get_signless(32))
    zero = arith.constant(i32x16, ir.DenseElementsAttr.get_splat(i32x16, ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 0)))
    i32x64 = ir.VectorType.get([64], ir.IntegerType.get_signless(32))
    products = arith.muli(arith.extui(i32x64, codes), arith.extsi(i32x64, activations))
    total = zero
    for k in range(4):
        total = arith.addi(total, vector.shuffle(products, products, list(range(k, 64, 4))))
    return total


__all__ = ["ACTIVATION_LEVELS", "dot_u8_i8", "quantize_activations"]
