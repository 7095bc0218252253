"""Lowering of `rlx.dequant_matmul` for the side-tensor schemes (`int8/B`, `int8_asym/B`, `int4/B`, `nvfp4`).

Their weight is K-major, `W [K, N]`: for each k a contiguous row of codes along N, and per block
of B consecutive k a row of scales (and zero points) along N.  So the kernel vectorises along N,
the way a GEMV over an f32 `[K, N]` weight does: `out[m, n] += x[m, k] * W[k, n]` for k in order,
with W decoded in the loop body from its code and its block's side values, never stored.

Small M (fewer than `GEMM_ROWS` rows of x: the decode regime): one `linalg.generic` over

    (p, b, j, m, c, h)     n = p * P + c * H + h,  k = b * B + j

with `p` a panel of P output columns (parallel, outermost: the loop rlx-parallelize-linalg
splits across threads), `b` the K block and `j` the k in it (reductions), `m` the row of x,
and `c`, `h` the byte of `w` in the panel's row and the code in the byte (H = 2 codes per byte
for int4 / nvfp4, 1 for int8).  The body decodes the one code it reads (sign-/zero-extension,
nibble `h` of the byte, the E2M1 value of an nvfp4 code), applies its block's scale
(and zero point), and adds `x[m, k] * W[k, n]` into the output element.  convert-linalg-to-loops
makes `h` (unrolled, two interleaved columns) and `c` the innermost loops, so LLVM vectorises
along N over the panel: contiguous loads of codes, scales and the panel's row of the output
(P f32, in L1), one FMA per weight.  The output is laid out `[N / P, M, P / H, H]` (the
panel dimension first, so the thread split has something to split) and transposed to
`[M, N]` after, a reshape when M = 1.

NVFP4 first decodes its E4M3 block scales (times the global scale) into f32, once per call (a
sixteenth as many values as weights), laid out `[K / 16, N / P, 2, P / 2]`: each panel's even
columns, then its odd ones.  Its generic puts `h` outside `c`, `(p, b, j, m, h, c)`, so the
innermost loop reads codes, scales and outputs contiguously with the nibble fixed; with the E2M1
and E4M3 decodes inside an interleaved (`h` innermost) loop LLVM did not vectorise it, and the GEMV
ran at a sixth of int4's speed.  Its output `[N / P, M, 2, P / 2]` is transposed into `[M, N]`.

Large M (prefill): decoding every weight once per row would cost M decodes per weight, so the
weight is decoded once into an f32 `[K, N]` tensor (a parallel `linalg.generic` with the same
body) and multiplied by `linalg.matmul`, which rlx-pack-matmul and rlx-tile-matmul turn into
the packed, register-tiled f32 GEMM kernel.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, linalg

from ...dialects.rlx.quant_affine import NVFP4, AffineScheme, affine_scheme
from ...ir.diagnostics import CompileError
from ...ir.shapes import is_static, shape_of
from . import builders as lb
from .unsigned import to_signless

# x with at least this many rows: decode the weight once into f32 and run the f32 GEMM kernel.
# Measured on int8/32, K = N = 4096, 1 thread (loaded 2-core machine): the decoding kernel takes
# 1.5 / 2.7 / 14 / 39 / 55 / 160 ms at M = 2 / 4 / 8 / 16 / 32 / 64, decode-once + GEMM 110-140 ms.
GEMM_ROWS = 48
# Output columns per panel: at most MAX_PANEL (its row of the output, P f32, stays in L1), and
# small enough that a weight has at least MIN_PANELS panels for the threads to share.
MAX_PANEL = 256
MIN_PANELS = 16


def _i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def _c32(value: int) -> ir.Value:
    return arith.constant(_i32(), value)


def _f32c(value: float) -> ir.Value:
    return arith.constant(ir.F32Type.get(), value)


def _bits_to_f32(bits: ir.Value) -> ir.Value:
    return arith.bitcast(ir.F32Type.get(), bits)


def e2m1_value(code: ir.Value) -> ir.Value:
    """The f32 an E2M1 code (an i32 0..15) stands for: `v = code & 7` as a float is 0, 0.5, 1,
    1.5 as `v / 2` (v < 4), 2, 3 as `v - 2` (v < 6), 4, 6 as `2 (v - 4)`; bit 3 is the sign."""
    f32 = ir.F32Type.get()
    magnitude = arith.andi(code, _c32(7))
    v = arith.uitofp(f32, magnitude)
    low = arith.mulf(v, _f32c(0.5))
    middle = arith.subf(v, _f32c(2.0))
    high = arith.mulf(arith.subf(v, _f32c(4.0)), _f32c(2.0))
    below_six = arith.select(arith.cmpi(arith.CmpIPredicate.ult, magnitude, _c32(6)), middle, high)
    value = arith.select(arith.cmpi(arith.CmpIPredicate.ult, magnitude, _c32(4)), low, below_six)
    negative = arith.cmpi(arith.CmpIPredicate.ne, arith.andi(code, _c32(8)), _c32(0))
    return arith.select(negative, arith.negf(value), value)


def e4m3_value(byte: ir.Value) -> ir.Value:
    """The f32 an FP8 E4M3FN byte (an i32 0..255) stands for: `(1 + m / 8) 2^(e - 7)` (f32
    exponent field `e + 120`, mantissa `m << 20`), `m 2^-9` when e = 0, NaN for 0x7F / 0xFF."""
    exponent = arith.andi(arith.shrui(byte, _c32(3)), _c32(15))
    mantissa = arith.andi(byte, _c32(7))
    normal = arith.ori(arith.shli(arith.addi(exponent, _c32(120)), _c32(23)), arith.shli(mantissa, _c32(20)))
    subnormal = arith.bitcast(_i32(), arith.mulf(arith.uitofp(ir.F32Type.get(), mantissa), _f32c(2.0**-9)))
    is_subnormal = arith.cmpi(arith.CmpIPredicate.eq, exponent, _c32(0))
    bits = arith.ori(arith.select(is_subnormal, subnormal, normal), arith.shli(arith.andi(byte, _c32(0x80)), _c32(24)))
    is_nan = arith.cmpi(arith.CmpIPredicate.eq, arith.andi(byte, _c32(0x7F)), _c32(0x7F))
    return _bits_to_f32(arith.select(is_nan, _c32(0x7FC00000), bits))


def _byte(value: ir.Value) -> ir.Value:
    """A ui8 / i8 element zero-extended to i32."""
    return arith.extui(_i32(), to_signless(value))


def decode(scheme: AffineScheme, code_byte: ir.Value, half: ir.Value, side: list) -> ir.Value:
    """The f32 weight of one code: `code_byte` the element of `w`, `half` the index (an i32, 0 or
    1) of the code in the byte for the 4-bit schemes, `side` the elements of the side tensors
    (for nvfp4, the f32 block scale: the E4M3 byte's value times the global scale)."""
    f32 = ir.F32Type.get()
    if scheme.codes_per_byte == 2:
        code = arith.andi(arith.shrui(_byte(code_byte), arith.muli(half, _c32(4))), _c32(15))
    if scheme.kind == NVFP4:
        (scale,) = side  # the E4M3 byte's value times the global scale, decoded before the loop
        return arith.mulf(e2m1_value(code), scale)
    if scheme.kind == "int8":
        (scale,) = side
        return arith.mulf(arith.sitofp(f32, code_byte), scale)
    scale, zp = side
    value = arith.uitofp(f32, to_signless(code_byte)) if scheme.kind == "int8_asym" else arith.uitofp(f32, code)
    return arith.mulf(arith.subf(value, zp), scale)


def _panel(n: int, per_byte: int) -> int:
    """Output columns per panel: a divisor of N, a multiple of `per_byte`, at most MAX_PANEL, and
    leaving MIN_PANELS panels where N allows."""
    limit = max(per_byte, min(MAX_PANEL, n // MIN_PANELS))
    return max(d for d in range(per_byte, min(limit, n) + 1, per_byte) if n % d == 0)


def _dims(count: int):
    return [ir.AffineDimExpr.get(d) for d in range(count)]


def lower_dequant_matmul(op) -> ir.Value:
    scheme = affine_scheme(op.scheme)
    side = list(op.side)
    x_shape, w_shape = shape_of(op.x.type), shape_of(op.w.type)
    if not (is_static(x_shape) and is_static(w_shape)):
        raise CompileError(f"rlx.dequant_matmul with scheme '{scheme.name}' needs static shapes, got x {x_shape}, w {w_shape}")
    k, per_byte, block = x_shape[-1], scheme.codes_per_byte, scheme.block
    n = w_shape[1] * per_byte
    m = 1
    for size in x_shape[:-1]:
        m *= size
    f32 = ir.F32Type.get()
    panel = _panel(n, per_byte)
    # Views: w [K/B, B, N/P, P/H]; the side tensors [K/B, N/P, P/H, H].
    w = lb.reshape(op.w, ir.RankedTensorType.get([k // block, block, n // panel, panel // per_byte],
                                                 ir.RankedTensorType(op.w.type).element_type))
    halves_outer = scheme.kind == NVFP4 and m < GEMM_ROWS
    if scheme.kind == NVFP4:
        side = [_nvfp4_scales(side[0], op.global_scale, k // block, n // panel, panel // per_byte, halves_outer)]
    side_views = side if halves_outer else [
        lb.reshape(value, ir.RankedTensorType.get([k // block, n // panel, panel // per_byte, per_byte],
                                                  ir.RankedTensorType(value.type).element_type))
        for value in side
    ]

    def side_maps(b, p, c, h, rank):
        return [ir.AffineMap.get(rank, 0, [b, p, c, h])] * len(side)

    def body(weight_index: int):
        def compute(code_byte, *rest):
            side_values, tail = list(rest[: len(side)]), list(rest[len(side):])
            half = arith.index_cast(_i32(), linalg.IndexOp(weight_index).result) if per_byte == 2 else None
            weight = decode(scheme, code_byte, half, side_values)
            if not tail:  # the decoding generic: the weight is the result
                return weight
            xv, acc = tail
            fast = ir.Attribute.parse("#arith.fastmath<contract>")
            return arith.addf(acc, arith.mulf(xv, weight, fastmath=fast), fastmath=fast)

        return compute

    if m >= GEMM_ROWS:
        # W [K/B, B, N/P, P/H, H] f32 = [K, N], decoded once; then the f32 GEMM kernel.
        b, j, p, c, h = _dims(5)
        maps = [ir.AffineMap.get(5, 0, [b, j, p, c]), *side_maps(b, p, c, h, 5), ir.AffineMap.get_identity(5)]
        out = lb.empty([k // block, block, n // panel, panel // per_byte, per_byte], f32)
        weight = lb.generic([w, *side_views], out, maps, [lb.PARALLEL] * 5, lambda *args: body(4)(*args[:-1]))
        weight = lb.reshape(weight, ir.RankedTensorType.get([k, n], f32))
        x = lb.reshape(op.x, ir.RankedTensorType.get([m, k], f32))
        product = linalg.matmul(x, weight, outs=[lb.zeros([m, n], f32)])
        return lb.reshape(product, op.result.type)

    x = lb.reshape(op.x, ir.RankedTensorType.get([m, k // block, block], f32))
    iterators = [lb.PARALLEL, lb.REDUCTION, lb.REDUCTION, lb.PARALLEL, lb.PARALLEL, lb.PARALLEL]
    target = [m, n // panel, panel // per_byte, per_byte]
    if halves_outer:
        # (p, b, j, m, h, c): out[p, m, h, c] += x[m, b, j] * W(w[b, j, p, c], scale[b, p, h, c]): the
        # innermost loop reads bytes, scales and outputs contiguously (nibble h fixed in it).
        p, b, j, r, h, c = _dims(6)
        maps = [ir.AffineMap.get(6, 0, e) for e in ([b, j, p, c], [b, p, h, c], [r, b, j], [p, r, h, c])]
        shape = [n // panel, m, per_byte, panel // per_byte]
        product = lb.generic([w, *side_views, x], lb.zeros(shape, f32), maps, iterators, body(4))
        # [N/P, M, 2, P/2] -> [M, N/P, P/2, 2]
        product = linalg.transpose(product, outs=[lb.empty(target, f32)], permutation=[1, 0, 3, 2]).results[0]
        return lb.reshape(product, op.result.type)
    # (p, b, j, m, c, h): out[p, m, c, h] += x[m, b, j] * W(w[b, j, p, c], side[b, p, c, h]).
    p, b, j, r, c, h = _dims(6)
    maps = [
        ir.AffineMap.get(6, 0, [b, j, p, c]),
        *side_maps(b, p, c, h, 6),
        ir.AffineMap.get(6, 0, [r, b, j]),
        ir.AffineMap.get(6, 0, [p, r, c, h]),
    ]
    shape = [n // panel, m, panel // per_byte, per_byte]
    product = lb.generic([w, *side_views, x], lb.zeros(shape, f32), maps, iterators, body(5))
    if m > 1:  # [N/P, M, P/H, H] -> [M, N/P, P/H, H]; with one row it already is [1, N]
        product = linalg.transpose(product, outs=[lb.empty(target, f32)], permutation=[1, 0, 2, 3]).results[0]
    return lb.reshape(product, op.result.type)


def _nvfp4_scales(scales: ir.Value, global_scale: float, blocks: int, panels: int, half_panel: int,
                  halves_outer: bool) -> ir.Value:
    """The E4M3 block scales `[K / 16, N]` decoded once, times the global scale, as f32 (a
    sixteenth as many values as weights, instead of a decode per weight in the loop): `[K / 16,
    N]`, or with `halves_outer` `[K / 16, N / P, 2, P / 2]`, the even columns of each panel, then
    the odd ones."""
    f32 = ir.F32Type.get()
    if not halves_outer:
        decoded_type = ir.RankedTensorType.get(shape_of(scales.type), f32)
        return lb.elementwise([scales], decoded_type, lambda s: arith.mulf(e4m3_value(_byte(s)), _f32c(global_scale)))
    view = lb.reshape(scales, ir.RankedTensorType.get([blocks, panels, half_panel, 2], ir.RankedTensorType(scales.type).element_type))
    b, p, h, c = _dims(4)
    maps = [ir.AffineMap.get(4, 0, [b, p, c, h]), ir.AffineMap.get_identity(4)]
    out = lb.empty([blocks, panels, 2, half_panel], f32)
    return lb.generic([view], out, maps, [lb.PARALLEL] * 4,
                      lambda s, _: arith.mulf(e4m3_value(_byte(s)), _f32c(global_scale)))


__all__ = ["GEMM_ROWS", "decode", "e2m1_value", "e4m3_value", "lower_dequant_matmul"]
