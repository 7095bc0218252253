"""rlx-approximate-math: f32 transcendental `math` ops as inline polynomial code.

Rewrites, anywhere in the module (linalg.generic bodies included), every
`math.exp`, `math.exp2`, `math.log`, `math.tanh` and `math.erf` on `f32` or on a fixed-size
`vector<...xf32>` into `arith` ops and `math.fma`.  Without it the LLVM
lowering turns `math.erf` into libm calls (`erff`) and `math.tanh`,
`math.exp`, `math.log` into `llvm.intr.tanh/exp/log`, which LLVM expands to
one `tanhf`/`expf`/`logf` call per element, even in vector code.  The code
emitted here is branch-free and call-free (selects, integer bit manipulation,
`math.fma`, one `arith.divf` for tanh and erf), so linalg's vectorizer and
LLVM's loop vectorizer turn it into SIMD code.  (MLIR's own
`populateMathPolynomialApproximationPatterns` is reachable from C++ only in
LLVM 22: no registered pass, no transform op in the Python bindings.)

Other element types (f64, f16, bf16: RLX's lowerings compute f16/bf16 in f32),
scalable vectors, tensors and other `math` ops (`sqrt` and `rsqrt` have vector
instructions; `powf`, `sin`, `cos`, ... go to LLVM/libm) are left unchanged.
Fast-math flags of the replaced op are dropped; the results do not depend on them.

Accuracy, measured against float64 references over dense grids of f32 inputs
(pytests/test_approximate_math.py checks these bounds):

- exp: relative error <= 1.2e-7 (about 1 ulp) for x in [-87.3, 88.72], i.e.
  wherever the result is a normal float; below that the result underflows
  gradually through the subnormals (error <= 1 subnormal ulp) to +0 for
  x < -103.97.  +inf for x > 88.7228 (ln FLT_MAX) and x = +inf, +0 for
  x = -inf, NaN for NaN.  Cephes' argument reduction x = n ln2 + r with
  |r| <= ln2/2 (exact with fma), a degree-6 polynomial, and 2^n applied as
  two power-of-two factors so that n = 128 and n < -126 stay exact.
  A `math.exp` marked `rlx.nonpositive` (its operand is <= 0 or NaN: a
  softmax's `x - max`) gives the same bits there with no overflow path
  (18 ops instead of 25); for x > 0 its result is unspecified.
- exp2: relative error <= 8e-8 (below 1 ulp) for x in [-126, 128) (the
  normal results), gradual underflow below (error <= 1 subnormal ulp), +0
  below -150.5 and for -inf, +inf from 128 on, NaN for NaN.  x = n + r with
  n = round(x) and r = x - n exact (no ln 2 to split), Cephes' exp2f
  polynomial (degree 6, Horner down to its constant 1), 2^n as for exp.
  Marked `rlx.nonpositive` (a softmax's `x - max` in log2 units: the tiled
  attention folds log2(e) into its score scale), the same bits in 12 ops: the
  polynomial's coefficients carry the factor 2^-64 (exact: powers of two), so
  2^(n + 64), its exponent field shifted straight out of the rounding sum,
  is the one multiply that rounds.
- log: relative error <= 1.2e-7 (about 1 ulp) for positive normal and
  subnormal x, log(1) = +0; -inf for +-0, NaN for x < 0 (including -inf) and
  NaN, +inf for +inf.  Cephes' logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)),
  a degree-8 polynomial in m - 1 and e ln2 added in two parts.
- tanh: absolute error <= 5e-7 everywhere (Eigen's rational approximation
  x P(x^2) / Q(x^2) for |x| <= 7.9053), exactly +-1 beyond (and for +-inf),
  relative error <= 5e-7 for |x| < 0.01, tanh(x) = x for |x| < 0.0004
  (so +-0 keep their sign), NaN for NaN; |tanh(x)| <= 1.
- erf: absolute error <= 5e-7 everywhere (Eigen's rational approximation
  x P(x^2) / Q(x^2) on x clamped to +-4, then clamped to [-1, 1]);
  erf(+-0) = +-0, +-1 for +-inf, NaN for NaN.

Run it after the MIR -> linalg lowering (which puts these ops into
linalg.generic bodies as scalars) and before `convert-math-to-llvm` /
`convert-math-to-libm`; before or after vectorization both work.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as mmath

from ...ir.attrs import NONPOSITIVE_ATTR
from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass


class _Emitter:
    """Builds arith / math.fma ops at the current insertion point and location, on
    values of one f32-based type (f32 or vector<...xf32>) and its i32 counterpart."""

    def __init__(self, float_type: ir.Type, constants: Optional["_Constants"] = None):
        self.float_type = float_type
        self.constants = constants
        i32 = ir.IntegerType.get_signless(32)
        if isinstance(float_type, ir.VectorType):
            self.int_type = ir.VectorType.get(ir.VectorType(float_type).shape, i32)
        else:
            self.int_type = i32

    def _constant(self, type_: ir.Type, element: ir.Attribute) -> ir.Value:
        if isinstance(type_, ir.VectorType):
            element = ir.DenseElementsAttr.get_splat(type_, element)
        if self.constants is not None:
            return self.constants.get(type_, element)
        return arith.ConstantOp(type_, element).result

    def const(self, value: float) -> ir.Value:
        return self._constant(self.float_type, ir.FloatAttr.get(ir.F32Type.get(), value))

    def int_const(self, value: int) -> ir.Value:
        return self._constant(self.int_type, ir.IntegerAttr.get(ir.IntegerType.get_signless(32), value))

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        """a * b + c, rounded once."""
        return mmath.fma(a, b, c)

    def polynomial(self, x: ir.Value, coefficients: Sequence[float]) -> ir.Value:
        """sum(c_k x^(n-k)): Horner's scheme with fma, highest degree first."""
        p = self.const(coefficients[0])
        for coefficient in coefficients[1:]:
            p = self.fma(p, x, self.const(coefficient))
        return p

    def clamp(self, x: ir.Value, low: float, high: float) -> ir.Value:
        """min(max(x, low), high); NaN stays NaN (arith.maximumf/minimumf propagate it)."""
        return arith.minimumf(arith.maximumf(x, self.const(low)), self.const(high))

    def fcmp(self, predicate: str, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.cmpf(getattr(arith.CmpFPredicate, predicate), a, b)

    def icmp(self, predicate: str, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.cmpi(getattr(arith.CmpIPredicate, predicate), a, b)

    def bits(self, x: ir.Value) -> ir.Value:
        return arith.bitcast(self.int_type, x)

    def from_bits(self, n: ir.Value) -> ir.Value:
        return arith.bitcast(self.float_type, n)

    def if_nan(self, x: ir.Value, value: ir.Value) -> ir.Value:
        """x where x is NaN, else value."""
        return arith.select(self.fcmp("UNO", x, x), x, value)


# --- exp ----------------------------------------------------------------------------------

_LOG2E = 1.4426950408889634
_LN2_HI = 0.693145751953125  # ln 2 in two parts: n * _LN2_HI is exact for |n| < 2^9
_LN2_LO = 1.4286067653301870e-06
_EXP_LOW = -104.0  # below ln(2^-150): every result rounds to +0
_EXP_HIGH = 89.0  # above ln(FLT_MAX): every result overflows to +inf
_ROUND_MAGIC = 12582912.0  # 1.5 * 2^23: t + magic rounds t to an integer, stored in the low bits
_ROUND_MAGIC_BITS = 0x4B400000  # its bit pattern
# Cephes expf: e^r ~ 1 + r + r^2 P(r) on |r| <= ln2 / 2.
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)


def _exp(e: _Emitter, x: ir.Value) -> ir.Value:
    clamped = e.clamp(x, _EXP_LOW, _EXP_HIGH)
    # n = round(x / ln2), as a float and as an integer in [-150, 128].
    shifted = e.fma(clamped, e.const(_LOG2E), e.const(_ROUND_MAGIC))
    n = arith.subf(shifted, e.const(_ROUND_MAGIC))
    n_int = arith.subi(e.bits(shifted), e.int_const(_ROUND_MAGIC_BITS))
    r = e.fma(n, e.const(-_LN2_HI), clamped)
    r = e.fma(n, e.const(-_LN2_LO), r)
    p = e.fma(e.polynomial(r, _EXP_POLY), arith.mulf(r, r), r)
    p = arith.addf(p, e.const(1.0))
    # 2^n = 2^a * 2^b with a = n >> 1, b = n - a, both in [-75, 64]: normal floats; the
    # second product rounds once, to +inf or to a subnormal or +0 when the result is out of range.
    a = arith.shrsi(n_int, e.int_const(1))
    b = arith.subi(n_int, a)

    def power_of_two(k: ir.Value) -> ir.Value:
        return e.from_bits(arith.shli(arith.addi(k, e.int_const(127)), e.int_const(23)))

    value = arith.mulf(arith.mulf(p, power_of_two(a)), power_of_two(b))
    return e.if_nan(x, value)


_POWER_BIAS = 64  # exp of x <= 0: 2^n as 2^(n + 64) * 2^-64, both normal floats for n in [-150, 0]


def _exp_of_nonpositive(e: _Emitter, x: ir.Value) -> ir.Value:
    """`_exp` where x <= 0, -inf or NaN (the `NONPOSITIVE_ATTR` contract: a softmax's `x - max`):
    the same reduction, polynomial and single final rounding, so the same bits, in 18 ops instead
    of 25.  The lower clamp alone, as `x < low ? low : x` (one `vmaxps` that passes a NaN `x`
    through: NaN stays NaN down the chain, no `if_nan`); n in [-150, 0], so 2^n is applied as
    two fixed factors, 2^(n + 64) (its exponent field from `shifted`'s low bits: one shift, one
    add) exact, then 2^-64, which rounds once (to a subnormal or +0 below 2^-126).  For x > 0
    the result is unspecified (beyond about 44, not e^x)."""
    low = e.const(_EXP_LOW)
    clamped = arith.select(e.fcmp("OLT", x, low), low, x)
    shifted = e.fma(clamped, e.const(_LOG2E), e.const(_ROUND_MAGIC))
    n = arith.subf(shifted, e.const(_ROUND_MAGIC))
    r = e.fma(n, e.const(-_LN2_HI), clamped)
    r = e.fma(n, e.const(-_LN2_LO), r)
    p = e.fma(e.polynomial(r, _EXP_POLY), arith.mulf(r, r), r)
    p = arith.addf(p, e.const(1.0))
    # shifted's bits are _ROUND_MAGIC_BITS + n: shifted left by 23, the magic's bits leave the word
    # (its low 9 bits are 0) and n lands in the exponent field, biased by 127 + 64 by the add.
    biased = arith.addi(arith.shli(e.bits(shifted), e.int_const(23)), e.int_const((127 + _POWER_BIAS) << 23))
    return arith.mulf(arith.mulf(p, e.from_bits(biased)), e.const(2.0**-_POWER_BIAS))


_EXP2_LOW = -151.0  # below -150.5 every result rounds to +0
_EXP2_HIGH = 129.0  # from 128 on every result overflows to +inf
# x + _EXP2_MAGIC rounds x to an integer n (|x| < 2^22) held in the low bits as n + 191 (127 +
# _POWER_BIAS): for n in [-151, 0] that is in [40, 191], which a shift by 23 moves into the exponent
# field of 2^(n + 64) (the magic's own bits leave the word), what the nonpositive form multiplies by.
_EXP2_MAGIC = _ROUND_MAGIC + 127 + _POWER_BIAS
_EXP2_MAGIC_BITS = _ROUND_MAGIC_BITS + 127 + _POWER_BIAS
# Cephes exp2f: 2^r ~ 1 + r P(r) on |r| <= 1/2, as a polynomial of degree 6 down to its constant.
_EXP2_POLY = (1.535336188319500e-4, 1.339887440266574e-3, 9.618437357674640e-3, 5.550332471162809e-2,
              2.402264791363012e-1, 6.931472028550421e-1, 1.0)


def _exp2_reduced(e: _Emitter, clamped: ir.Value, scale: float = 1.0) -> tuple[ir.Value, ir.Value]:
    """(`2^r * scale` with r = x - round(x), the rounding sum `x + _EXP2_MAGIC`); `scale` a power
    of two that keeps every Horner step a normal float (each step then rounds as unscaled)."""
    shifted = arith.addf(clamped, e.const(_EXP2_MAGIC))
    r = arith.subf(clamped, arith.subf(shifted, e.const(_EXP2_MAGIC)))  # exact: |r| <= 1/2
    return e.polynomial(r, [c * scale for c in _EXP2_POLY]), shifted


def _exp2(e: _Emitter, x: ir.Value) -> ir.Value:
    p, shifted = _exp2_reduced(e, e.clamp(x, _EXP2_LOW, _EXP2_HIGH))
    # n in [-151, 129]; 2^n = 2^a * 2^b as in `_exp` (normal factors, the second product rounds once).
    n = arith.subi(e.bits(shifted), e.int_const(_EXP2_MAGIC_BITS))
    a = arith.shrsi(n, e.int_const(1))
    b = arith.subi(n, a)

    def power_of_two(k: ir.Value) -> ir.Value:
        return e.from_bits(arith.shli(arith.addi(k, e.int_const(127)), e.int_const(23)))

    return e.if_nan(x, arith.mulf(arith.mulf(p, power_of_two(a)), power_of_two(b)))


def _exp2_of_nonpositive(e: _Emitter, x: ir.Value) -> ir.Value:
    """`_exp2` where x <= 0, -inf or NaN (`NONPOSITIVE_ATTR`), bit for bit, in 12 ops: the lower
    clamp alone, as a select that passes NaN through (NaN then stays NaN down the chain); the
    polynomial scaled by 2^-64 (exact); times 2^(n + 64), n in [-151, 0], a normal float whose
    exponent field is the rounding sum's low bits shifted by 23 (the magic's own bits leave the
    word): that product rounds once, to a subnormal or +0 below 2^-126.  For x > 0 the result is
    unspecified (beyond 63, not 2^x)."""
    low = e.const(_EXP2_LOW)
    clamped = arith.select(e.fcmp("OLT", x, low), low, x)
    p, shifted = _exp2_reduced(e, clamped, 2.0**-_POWER_BIAS)
    return arith.mulf(p, e.from_bits(arith.shli(e.bits(shifted), e.int_const(23))))


# --- log ----------------------------------------------------------------------------------

_SQRT_HALF = 0.7071067811865476
_LN2_HI_LOG = 0.693359375  # Cephes' split of ln 2 for logf
_LN2_LO_LOG = -2.12194440e-4
# Cephes logf: log(1 + m) ~ m - m^2 / 2 + m^3 P(m) on sqrt(1/2) - 1 <= m < sqrt(2) - 1.
_LOG_POLY = (
    7.0376836292e-2,
    -1.1514610310e-1,
    1.1676998740e-1,
    -1.2420140846e-1,
    1.4249322787e-1,
    -1.6668057665e-1,
    2.0000714765e-1,
    -2.4999993993e-1,
    3.3333331174e-1,
)


def _log(e: _Emitter, x: ir.Value) -> ir.Value:
    # Subnormals (and zeros, negatives: fixed up below) are scaled by 2^23 first.
    subnormal = e.icmp("slt", e.bits(x), e.int_const(1 << 23))
    scaled = arith.select(subnormal, arith.mulf(x, e.const(2.0**23)), x)
    bits = e.bits(scaled)
    # scaled = m * 2^exponent with m in [0.5, 1).
    exponent = arith.subi(arith.shrui(bits, e.int_const(23)), e.int_const(126))
    exponent = arith.select(subnormal, arith.subi(exponent, e.int_const(23)), exponent)
    m = e.from_bits(arith.ori(arith.andi(bits, e.int_const(0x007FFFFF)), e.int_const(0x3F000000)))
    # Move m into [sqrt(1/2), sqrt(2)) and subtract 1 (exactly).
    below = e.fcmp("OLT", m, e.const(_SQRT_HALF))
    exponent = arith.select(below, arith.subi(exponent, e.int_const(1)), exponent)
    m = arith.subf(arith.select(below, arith.addf(m, m), m), e.const(1.0))
    k = arith.sitofp(e.float_type, exponent)
    m2 = arith.mulf(m, m)
    y = arith.mulf(arith.mulf(e.polynomial(m, _LOG_POLY), m), m2)
    y = e.fma(k, e.const(_LN2_LO_LOG), y)
    y = e.fma(m2, e.const(-0.5), y)
    value = e.fma(k, e.const(_LN2_HI_LOG), arith.addf(m, y))
    value = arith.select(e.fcmp("OEQ", x, e.const(0.0)), e.const(float("-inf")), value)
    value = arith.select(e.fcmp("OLT", x, e.const(0.0)), e.const(float("nan")), value)
    value = arith.select(e.fcmp("OEQ", x, e.const(float("inf"))), x, value)
    return e.if_nan(x, value)


# --- tanh and erf: rational approximations x P(x^2) / Q(x^2) ---------------------------------

_TANH_CLAMP = 7.90531110763549805
_TANH_LINEAR = 0.0004  # below, tanh(x) = x to f32 precision
_TANH_P = (
    -2.76076847742355e-16,
    2.00018790482477e-13,
    -8.60467152213735e-11,
    5.12229709037114e-08,
    1.48572235717979e-05,
    6.37261928875436e-04,
    4.89352455891786e-03,
)
_TANH_Q = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03)

_ERF_CLAMP = 4.0
_ERF_P = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_Q = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)


def _odd_rational(e: _Emitter, x: ir.Value, bound: float, p: Sequence[float], q: Sequence[float]) -> ir.Value:
    """x P(x^2) / Q(x^2) on x clamped to [-bound, bound]; NaN stays NaN."""
    clamped = e.clamp(x, -bound, bound)
    x2 = arith.mulf(clamped, clamped)
    return arith.divf(arith.mulf(clamped, e.polynomial(x2, p)), e.polynomial(x2, q))


def _tanh(e: _Emitter, x: ir.Value) -> ir.Value:
    value = _odd_rational(e, x, _TANH_CLAMP, _TANH_P, _TANH_Q)
    magnitude = mmath.absf(x)
    saturated = e.fcmp("OGT", magnitude, e.const(_TANH_CLAMP))
    value = arith.select(saturated, mmath.copysign(e.const(1.0), x), value)
    return arith.select(e.fcmp("OLT", magnitude, e.const(_TANH_LINEAR)), x, value)


def _erf(e: _Emitter, x: ir.Value) -> ir.Value:
    # The rational function overshoots 1 by up to 2e-7 near |x| = 3.9.
    return e.clamp(_odd_rational(e, x, _ERF_CLAMP, _ERF_P, _ERF_Q), -1.0, 1.0)


APPROXIMATIONS: dict[type, Callable[[_Emitter, ir.Value], ir.Value]] = {
    mmath.ExpOp: _exp,
    mmath.Exp2Op: _exp2,
    mmath.LogOp: _log,
    mmath.TanhOp: _tanh,
    mmath.ErfOp: _erf,
}
_APPROXIMATED = tuple(APPROXIMATIONS)
# Marked `rlx.nonpositive` (the operand is <= 0 or NaN): the shorter expansions.
NONPOSITIVE: dict[type, Callable[[_Emitter, ir.Value], ir.Value]] = {
    mmath.ExpOp: _exp_of_nonpositive,
    mmath.Exp2Op: _exp2_of_nonpositive,
}


def _is_f32_or_fixed_f32_vector(type_: ir.Type) -> bool:
    if isinstance(type_, ir.VectorType):
        vector = ir.VectorType(type_)
        return isinstance(vector.element_type, ir.F32Type) and not vector.scalable
    return isinstance(type_, ir.F32Type)


def _approximable(op: ir.Operation) -> bool:
    return is_op(op, _APPROXIMATED) and _is_f32_or_fixed_f32_vector(op.results[0].type)


class _Constants:
    """The constants of one function, each created once at the start of its entry block
    (where canonicalize would hoist and merge them): a long fused chain of exp/tanh then
    carries one copy of each coefficient, not one per op (ops for every later pass to walk)."""

    def __init__(self, function: ir.Operation):
        self.entry = function.regions[0].blocks[0]
        self.values: dict = {}

    def get(self, type_: ir.Type, value: ir.Attribute) -> ir.Value:
        key = (type_, value)
        found = self.values.get(key)
        if found is None:
            with ir.InsertionPoint.at_block_begin(self.entry):
                found = self.values[key] = arith.ConstantOp(type_, value).result
        return found


FUNCTIONS = ("func.func", "llvm.func", "gpu.func")  # isolated from above: constants in their entry block
# Ops whose regions see the values of the enclosing function (not isolated from above).
OPEN_REGIONS = ("linalg.", "scf.", "affine.", "memref.", "tensor.", "vector.", "omp.")
ISOLATED = ("omp.declare_reduction", "omp.private")


def _function_of(op: ir.Operation) -> Optional[ir.Operation]:
    """The function whose entry block dominates `op` and is visible from it: None when `op`
    is nested in an op not known to see the function's values (its constants then stay local)."""
    parent = op.parent
    while parent is not None:
        parent = parent.operation
        name = parent.name
        if name in FUNCTIONS:
            return parent
        if name in ISOLATED or not name.startswith(OPEN_REGIONS):
            return None
        parent = parent.parent
    return None


@dataclasses.dataclass(frozen=True)
class ApproximateMath(RlxPass):
    name = "rlx-approximate-math"
    summary = "Replace f32 math.exp/exp2/log/tanh/erf by inline polynomial code (arith + math.fma) that vectorizes"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> bool:
        constants: dict = {}
        approximable = collect_ops(module, _approximable)
        if not approximable:
            return False  # nothing changed: the pass manager need not verify the module again
        for op in approximable:
            view = op.opview
            approximation = next(f for op_class, f in APPROXIMATIONS.items() if isinstance(view, op_class))
            if NONPOSITIVE_ATTR in op.attributes and type(view) in NONPOSITIVE:
                approximation = NONPOSITIVE[type(view)]
            function = _function_of(op)
            shared = None
            if function is not None:
                shared = constants.get(function)
                if shared is None:
                    shared = constants[function] = _Constants(function)
            emitter = _Emitter(op.results[0].type, shared)
            with ir.InsertionPoint(op), op.location:
                value = approximation(emitter, op.operands[0])
            op.results[0].replace_all_uses_with(value)
            op.erase()
