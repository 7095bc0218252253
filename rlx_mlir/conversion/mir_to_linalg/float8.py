"""`f8E4M3FN` to and from f32 in integer arithmetic: `rlx.cast`'s conversions of the 8-bit float.

LLVM has no 8-bit float type (the LLVM lowering keeps `f8E4M3FN` values as `i8` bytes), so the
conversions are written on the bits: an `arith.bitcast` between the float and its byte, then
shifts, masks and selects on i32.  The format (OCP FP8 E4M3, ml_dtypes' `float8_e4m3fn`): bit 7
the sign, bits 3-6 the exponent `e` (bias 7), bits 0-2 the mantissa `m`; `e = 0` is subnormal
(`m * 2^-9`), `e = 15, m = 7` is NaN, there are no infinities; the largest finite value is 448.

- to f32 (exact): a normal `(1 + m / 8) 2^(e - 7)` is the f32 with exponent `e + 120` and
  mantissa `m << 20`; a subnormal `m * 2^-9`; NaN stays NaN; the sign carried over.
- from f32 (round to nearest, ties to even, as ml_dtypes converts): at or above 2^-6 (f8's
  smallest normal), the f32 rebiased (exponent - 120) and rounded to 3 mantissa bits on the
  integer bits; a rounded value of 0x7F or more (from 464 up, infinity) or a NaN is NaN (0x7F);
  below 2^-6, `roundeven(|x| * 2^9)` is the subnormal code (8 rounds up to the smallest normal,
  whose code is 8 too); the sign bit is x's.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as mmath


def _i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def _c(value: int) -> ir.Value:
    return arith.constant(_i32(), value)


def is_float8(t: ir.Type) -> bool:
    return isinstance(t, ir.Float8E4M3FNType)


def to_f32(x: ir.Value) -> ir.Value:
    """An `f8E4M3FN` scalar as the f32 of the same value."""
    f32 = ir.F32Type.get()
    bits = arith.extui(_i32(), arith.bitcast(ir.IntegerType.get_signless(8), x))
    sign = arith.shli(arith.andi(bits, _c(0x80)), _c(24))
    exponent, mantissa = arith.andi(arith.shrui(bits, _c(3)), _c(15)), arith.andi(bits, _c(7))
    normal = arith.ori(arith.shli(arith.addi(exponent, _c(120)), _c(23)), arith.shli(mantissa, _c(20)))
    subnormal = arith.bitcast(_i32(), arith.mulf(arith.uitofp(f32, mantissa), arith.constant(f32, 2.0**-9)))
    magnitude = arith.select(arith.cmpi(arith.CmpIPredicate.eq, exponent, _c(0)), subnormal, normal)
    magnitude = arith.select(arith.cmpi(arith.CmpIPredicate.eq, arith.andi(bits, _c(0x7F)), _c(0x7F)), _c(0x7FC00000), magnitude)
    return arith.bitcast(f32, arith.ori(magnitude, sign))


def from_f32(x: ir.Value) -> ir.Value:
    """An f32 scalar rounded to `f8E4M3FN` (to nearest, ties to even; NaN beyond 448)."""
    f32, i8 = ir.F32Type.get(), ir.IntegerType.get_signless(8)
    bits = arith.bitcast(_i32(), x)
    sign = arith.andi(arith.shrui(bits, _c(24)), _c(0x80))
    magnitude = arith.andi(bits, _c(0x7FFFFFFF))
    rebiased = arith.subi(magnitude, _c(120 << 23))
    odd = arith.andi(arith.shrui(rebiased, _c(20)), _c(1))  # the kept mantissa's last bit: ties go even
    normal = arith.minui(arith.shrui(arith.addi(arith.addi(rebiased, _c(0x7FFFF)), odd), _c(20)), _c(0x7F))
    absolute = arith.bitcast(f32, magnitude)
    subnormal = arith.fptoui(_i32(), mmath.roundeven(arith.mulf(absolute, arith.constant(f32, 2.0**9))))
    code = arith.select(arith.cmpi(arith.CmpIPredicate.ult, magnitude, _c(0x3C800000)), subnormal, normal)  # 2^-6
    code = arith.select(arith.cmpi(arith.CmpIPredicate.ugt, magnitude, _c(0x7F800000)), _c(0x7F), code)  # NaN
    return arith.bitcast(ir.Float8E4M3FNType.get(), arith.trunci(i8, arith.ori(code, sign)))


__all__ = ["from_f32", "is_float8", "to_f32"]
