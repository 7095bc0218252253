"""Numerical checks of every MIR op against plain numpy references.

Each case builds a one-op MLIR module as text, compiles it with
`rlx_mlir.compile`, runs it on deterministic random inputs and compares the
result with an independent reference computed in float64 by numpy (and
`math.erf` for gelu).  Nothing but `compile` is imported from the package.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from op_cases import compiled, one_op_module, rng_for, shape_id, uniform

# --- tolerances ----------------------------------------------------------------------
#
# f32 elementwise: the reference is computed in float64 from the same f32
# inputs.  One correctly rounded f32 operation is within 0.5 ulp (6e-8
# relative); libm-backed transcendental functions (exp, log, tanh, erf, pow)
# are within a few ulps.  rtol = 1e-5 (about 80 f32 ulps) leaves room for
# those and for composite formulas (gelu, silu, sigmoid) evaluated as several
# f32 operations, while still catching any wrong formula or wrong element.
# atol = 1e-6 covers results near zero (e.g. log(x) for x close to 1, the
# tails of gelu / silu) where a relative bound is meaningless.
F32_RTOL = 1e-5
F32_ATOL = 1e-6

# f16 elementwise: the op computes in f32 and rounds once to f16, so the
# result should be the float64 reference rounded to f16, give or take one f16
# ulp (double rounding f64 -> f32 -> f16, and the f32 evaluation error).  The
# relative spacing of f16 is 2**-11 .. 2**-10 (4.9e-4 .. 9.8e-4) per ulp, so
# rtol = 2e-3 is two ulps at worst.  atol = 1e-5 only matters for results
# below ~5e-3 in magnitude (tails of gelu / silu, subnormal f16 results,
# spacing 6e-8); it is far below what a wrong formula would produce there.
F16_RTOL = 2e-3
F16_ATOL = 1e-5

# matmul: the standard floating-point dot-product bound.  Summing K products
# in precision u gives |C - C_exact| <= K * u * (|A| @ |B|) elementwise (the
# usual gamma_K bound; any summation order, blocking or vectorization stays
# within it).  So the tolerance grows with K and with the magnitude of the
# terms, not with |C|, which may be small through cancellation.
#   f32: u = 2**-24 (f32 unit roundoff); a tiny atol for exact zeros.
#   f16: operands are f16 but the accumulation is f32, so the same f32 bound
#        applies to the sum, plus the single final rounding to f16 compared
#        with the f16-rounded reference: up to one f16 ulp, bounded by
#        F16_RTOL * |reference| (2 ulps).
F32_UNIT_ROUNDOFF = 2.0**-24
MATMUL_ATOL = 1e-7

DTYPES = {"f32": np.float32, "f16": np.float16}


# --- MLIR text helpers -----------------------------------------------------------------


def assert_close_elementwise(actual: np.ndarray, expected64: np.ndarray, dtype: str) -> None:
    """Compares an op's output with its float64 reference under the tolerances above."""
    np_dtype = DTYPES[dtype]
    assert actual.dtype == np_dtype
    assert actual.shape == expected64.shape
    if dtype == "f16":
        expected = expected64.astype(np.float16).astype(np.float64)
        rtol, atol = F16_RTOL, F16_ATOL
    else:
        expected, rtol, atol = expected64, F32_RTOL, F32_ATOL
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=rtol, atol=atol)


# --- binaries ---------------------------------------------------------------------------


def _positive_or_negative(rng, shape, dtype):
    """Magnitudes in [0.5, 2] with random signs: a safe divisor."""
    magnitude = rng.uniform(0.5, 2.0, size=shape)
    sign = np.where(rng.random(size=shape) < 0.5, -1.0, 1.0)
    return np.asarray(magnitude * sign).astype(dtype)


# name -> (reference on float64, lhs generator, rhs generator)
BINARIES = {
    "add": (np.add, None, None),
    "sub": (np.subtract, None, None),
    "mul": (np.multiply, None, None),
    "div": (np.divide, None, _positive_or_negative),
    "max": (np.maximum, None, None),
    "min": (np.minimum, None, None),
    # pow: positive base (no NaN from fractional exponents), moderate exponents.
    "pow": (np.power, lambda rng, s, d: uniform(rng, s, 0.5, 2.0, d), lambda rng, s, d: uniform(rng, s, -2.0, 2.0, d)),
}

BINARY_SHAPES = {
    "f32": [
        ((2, 3), (3,)),  # trailing broadcast
        ((4, 1), (1, 5)),  # both sides stretch
        ((2, 1, 3), (4, 1)),  # rank extension + stretch on both sides -> 2x4x3
        ((), (3, 17)),  # rank-0 lhs, odd inner size
    ],
    "f16": [
        ((2, 3), (3,)),
        ((4, 1), (1, 5)),
        ((2, 1, 3), (4, 1)),
        ((1,), (3, 9)),  # rank-1 size-1 lhs
    ],
}

BINARY_CASES = [
    pytest.param(op, dtype, a, b, id=f"{op}-{dtype}-{shape_id(a)}-{shape_id(b)}")
    for dtype, pairs in BINARY_SHAPES.items()
    for op in BINARIES
    for a, b in pairs
]


@pytest.mark.parametrize("op, dtype, lhs_shape, rhs_shape", BINARY_CASES)
def test_binary(op, dtype, lhs_shape, rhs_shape):
    reference, make_lhs, make_rhs = BINARIES[op]
    np_dtype = DTYPES[dtype]
    rng = rng_for("binary", op, dtype, lhs_shape, rhs_shape)
    default = lambda r, s, d: uniform(r, s, -2.0, 2.0, d)  # noqa: E731
    lhs = (make_lhs or default)(rng, lhs_shape, np_dtype)
    rhs = (make_rhs or default)(rng, rhs_shape, np_dtype)
    out_shape = np.broadcast_shapes(lhs_shape, rhs_shape)
    exe = compiled(one_op_module(op, [lhs_shape, rhs_shape], dtype, out_shape))
    actual = exe(lhs, rhs)
    expected = reference(lhs.astype(np.float64), rhs.astype(np.float64))
    assert_close_elementwise(actual, expected, dtype)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_propagate_nan(op):
    """`rlx.max` / `rlx.min` behave like np.maximum / np.minimum, NaN included."""
    lhs = np.array([1.0, np.nan, -2.0, np.nan], np.float32)
    rhs = np.array([np.nan, 3.0, 5.0, np.nan], np.float32)
    exe = compiled(one_op_module(op, [(4,), (4,)], "f32", (4,)))
    expected = {"max": np.maximum, "min": np.minimum}[op](lhs, rhs)
    np.testing.assert_array_equal(exe(lhs, rhs), expected)


# --- activations --------------------------------------------------------------------------


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# name -> (float64 reference, input range)
ACTIVATIONS = {
    "relu": (lambda x: np.maximum(x, 0.0), (-4.0, 4.0)),
    "gelu": (lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))), (-5.0, 5.0)),
    "gelu_approx": (
        lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
        (-5.0, 5.0),
    ),
    "silu": (lambda x: x * _sigmoid(x), (-6.0, 6.0)),
    "sigmoid": (_sigmoid, (-6.0, 6.0)),
    "tanh": (np.tanh, (-3.0, 3.0)),
    "exp": (np.exp, (-4.0, 4.0)),
    "log": (np.log, (0.05, 8.0)),  # positive domain
    "sqrt": (np.sqrt, (0.0, 8.0)),  # non-negative domain
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), (0.05, 8.0)),  # positive domain
    "neg": (np.negative, (-4.0, 4.0)),
    "abs": (np.abs, (-4.0, 4.0)),
}

ACTIVATION_SHAPES = [(), (7,), (2, 1, 33)]  # rank 0, rank 1, size-1 dim with an odd inner size

ACTIVATION_CASES = [
    pytest.param(op, dtype, shape, id=f"{op}-{dtype}-{shape_id(shape)}")
    for dtype in DTYPES
    for op in ACTIVATIONS
    for shape in ACTIVATION_SHAPES
]


@pytest.mark.parametrize("op, dtype, shape", ACTIVATION_CASES)
def test_activation(op, dtype, shape):
    reference, (low, high) = ACTIVATIONS[op]
    x = uniform(rng_for("activation", op, dtype, shape), shape, low, high, DTYPES[dtype])
    exe = compiled(one_op_module(op, [shape], dtype, shape))
    actual = exe(x)
    expected = reference(x.astype(np.float64))
    assert_close_elementwise(actual, np.asarray(expected, np.float64), dtype)


# --- matmul --------------------------------------------------------------------------------


def matmul_shape(a, b):
    batch = np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
    return (*batch, a[-2], b[-1])


def assert_matmul_close(actual, lhs, rhs, dtype):
    """|C - ref| <= K * u32 * (|A| @ |B|) [+ F16_RTOL * |ref| for f16]; see the tolerance notes."""
    a64, b64 = lhs.astype(np.float64), rhs.astype(np.float64)
    exact = np.matmul(a64, b64)
    k = lhs.shape[-1]
    bound = k * F32_UNIT_ROUNDOFF * np.matmul(np.abs(a64), np.abs(b64)) + MATMUL_ATOL
    if dtype == "f16":
        exact = exact.astype(np.float16).astype(np.float64)
        bound = bound + F16_RTOL * np.abs(exact)
    assert actual.dtype == DTYPES[dtype]
    assert actual.shape == exact.shape
    error = np.abs(actual.astype(np.float64) - exact)
    worst = np.unravel_index(np.argmax(error - bound), error.shape)
    assert np.all(error <= bound), (
        f"matmul error {error[worst]:.3g} exceeds bound {bound[worst]:.3g} at {worst}: "
        f"got {actual[worst]}, expected {exact[worst]}"
    )


MATMUL_SHAPES = {
    "2d": ((3, 4), (4, 5)),
    "odd-7x13x5": ((7, 13), (13, 5)),
    "gemv-1x8x1": ((1, 8), (8, 1)),
    "BMK-KN": ((2, 3, 33), (33, 17)),
    "BBMK-KN": ((2, 2, 3, 4), (4, 5)),
    "BMK-BKN": ((4, 3, 6), (4, 6, 5)),
    "bcast-2x1MK-3KN": ((2, 1, 3, 4), (3, 4, 5)),
    "BMK-1KN": ((2, 3, 4), (1, 4, 5)),
    "MK-BKN": ((3, 4), (2, 4, 5)),
    "1MK-BKN": ((1, 3, 4), (2, 4, 5)),
}
MATMUL_F16 = ["2d", "odd-7x13x5", "BMK-KN", "BMK-BKN", "bcast-2x1MK-3KN", "BMK-1KN"]

MATMUL_CASES = [pytest.param(name, "f32", id=f"{name}-f32") for name in MATMUL_SHAPES] + [
    pytest.param(name, "f16", id=f"{name}-f16") for name in MATMUL_F16
]


@pytest.mark.parametrize("name, dtype", MATMUL_CASES)
def test_matmul(name, dtype):
    a_shape, b_shape = MATMUL_SHAPES[name]
    np_dtype = DTYPES[dtype]
    rng = rng_for("matmul", name, dtype)
    lhs = uniform(rng, a_shape, -1.0, 1.0, np_dtype)
    rhs = uniform(rng, b_shape, -1.0, 1.0, np_dtype)
    out_shape = matmul_shape(a_shape, b_shape)
    exe = compiled(one_op_module("matmul", [a_shape, b_shape], dtype, out_shape))
    assert_matmul_close(exe(lhs, rhs), lhs, rhs, dtype)


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        pytest.param((2, 4096), (4096, 3), id="2d"),
        pytest.param((2, 1, 4096), (4096, 3), id="BMK-KN"),
        pytest.param((2, 1, 4096), (2, 4096, 3), id="BMK-BKN"),
        pytest.param((2, 1, 1, 4096), (3, 4096, 1), id="bcast"),
    ],
)
def test_matmul_f16_accumulates_in_f32(a_shape, b_shape):
    """Sum of 4096 ones: 4096 is an f16 value, but an f16 accumulator sticks at 2048
    (2048 + 1 rounds back to 2048)."""
    lhs = np.ones(a_shape, np.float16)
    rhs = np.ones(b_shape, np.float16)
    out_shape = matmul_shape(a_shape, b_shape)
    exe = compiled(one_op_module("matmul", [a_shape, b_shape], "f16", out_shape))
    actual = exe(lhs, rhs)
    assert actual.dtype == np.float16
    np.testing.assert_array_equal(actual, np.full(out_shape, 4096.0, np.float16))


# --- reshape and transpose (exact: data movement only) ----------------------------------------


RESHAPE_CASES = [
    pytest.param((2, 3), (3, 2), "f32", id="2x3-to-3x2"),
    pytest.param((2, 3, 4), (4, 6), "f32", id="2x3x4-to-4x6"),
    pytest.param((6,), (2, 1, 3), "f32", id="6-to-2x1x3"),
    pytest.param((1,), (), "f32", id="1-to-scalar"),
    pytest.param((), (1, 1), "f32", id="scalar-to-1x1"),
    pytest.param((1, 1, 1), (), "f32", id="1x1x1-to-scalar"),
    pytest.param((3, 5), (5, 3), "f16", id="3x5-to-5x3-f16"),
]


@pytest.mark.parametrize("src, dst, dtype", RESHAPE_CASES)
def test_reshape(src, dst, dtype):
    x = uniform(rng_for("reshape", src, dst, dtype), src, -4.0, 4.0, DTYPES[dtype])
    exe = compiled(one_op_module("reshape", [src], dtype, dst))
    actual = exe(x)
    assert actual.dtype == x.dtype
    np.testing.assert_array_equal(actual, x.reshape(dst))


TRANSPOSE_CASES = [
    pytest.param((2, 3), (1, 0), "f32", id="2x3-perm10"),
    # (2, 0, 1) and (1, 2, 0) are inverses of each other: an implementation that
    # applied the inverse permutation would fail one of them.
    pytest.param((2, 3, 4), (2, 0, 1), "f32", id="2x3x4-perm201"),
    pytest.param((2, 3, 4), (1, 2, 0), "f32", id="2x3x4-perm120"),
    pytest.param((1, 4, 1, 3), (3, 1, 0, 2), "f32", id="1x4x1x3-perm3102"),
    pytest.param((5,), (0,), "f32", id="5-identity"),
    pytest.param((3, 2, 5), (2, 0, 1), "f16", id="3x2x5-perm201-f16"),
]


@pytest.mark.parametrize("shape, perm, dtype", TRANSPOSE_CASES)
def test_transpose(shape, perm, dtype):
    x = uniform(rng_for("transpose", shape, perm, dtype), shape, -4.0, 4.0, DTYPES[dtype])
    out_shape = tuple(shape[p] for p in perm)
    attrs = f"perm = array<i64: {', '.join(map(str, perm))}>"
    exe = compiled(one_op_module("transpose", [shape], dtype, out_shape, attrs=attrs))
    actual = exe(x)
    assert actual.dtype == x.dtype
    np.testing.assert_array_equal(actual, np.transpose(x, perm))


# --- several ops in one function -----------------------------------------------------------


MLP = """
func.func @mlp(%x: tensor<4x8x{t}>, %w: tensor<8x16x{t}>, %b: tensor<16x{t}>) -> tensor<4x16x{t}> {{
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8x{t}>, tensor<8x16x{t}>) -> tensor<4x16x{t}>
  %1 = "rlx.add"(%0, %b) : (tensor<4x16x{t}>, tensor<16x{t}>) -> tensor<4x16x{t}>
  %2 = "rlx.gelu"(%1) : (tensor<4x16x{t}>) -> tensor<4x16x{t}>
  return %2 : tensor<4x16x{t}>
}}
"""


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_mlp_gelu(dtype):
    np_dtype = DTYPES[dtype]
    rng = rng_for("mlp", dtype)
    x = uniform(rng, (4, 8), -1.0, 1.0, np_dtype)
    w = uniform(rng, (8, 16), -1.0, 1.0, np_dtype)
    b = uniform(rng, (16,), -1.0, 1.0, np_dtype)
    exe = compiled(MLP.format(t=dtype), "mlp")
    actual = exe(x, w, b)
    assert actual.dtype == np_dtype and actual.shape == (4, 16)
    # Reference mirroring the op-by-op rounding of the compiled function: the
    # matmul and the add each round to the element type, gelu is then applied
    # to that rounded value.
    h = np.matmul(x.astype(np.float64), w.astype(np.float64)).astype(np_dtype)
    h = (h.astype(np.float64) + b.astype(np.float64)).astype(np_dtype).astype(np.float64)
    expected = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))
    if dtype == "f32":
        # The f32 matmul may differ from the rounded float64 product by K * u * |x||w|
        # (<= 8 * 6e-8 * 8 here), which gelu (slope <= 1.13) can pass on: well inside rtol/atol
        # of 1e-5 / 1e-5 for outputs of size ~1.
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)
    else:
        # One f16 rounding of h may differ by an ulp (2**-10 relative) in the intermediate,
        # then one more in the output: allow 4 f16 ulps relative, and 2e-3 absolute for
        # outputs near zero where gelu's slope (about 0.5) carries an ulp of h ~ 1e-3.
        np.testing.assert_allclose(
            actual.astype(np.float64), expected.astype(np.float16).astype(np.float64), rtol=4e-3, atol=2e-3
        )


TWO_RESULTS = """
func.func @two(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> (tensor<3x4xf32>, tensor<4x3xf32>) {
  %0 = "rlx.mul"(%a, %b) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %1 = "rlx.relu"(%0) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %2 = "rlx.transpose"(%a) {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  return %1, %2 : tensor<3x4xf32>, tensor<4x3xf32>
}
"""


def test_two_results_tuple():
    rng = rng_for("two")
    a = uniform(rng, (3, 4), -2.0, 2.0, np.float32)
    b = uniform(rng, (4,), -2.0, 2.0, np.float32)
    exe = compiled(TWO_RESULTS, "two")
    result = exe(a, b)
    assert isinstance(result, tuple) and len(result) == 2
    first, second = result
    assert first.shape == (3, 4) and first.dtype == np.float32
    assert second.shape == (4, 3) and second.dtype == np.float32
    # a * b is one correctly rounded f32 multiply, so it equals numpy's f32 product exactly.
    np.testing.assert_array_equal(first, np.maximum(a * b, np.float32(0)))
    np.testing.assert_array_equal(second, a.T)


ATTENTION_SCORES = """
func.func @scores(%q: tensor<2x6x8xf32>, %k: tensor<2x6x8xf32>, %scale: tensor<f32>) -> tensor<2x2x6x6xf32> {
  %q4 = "rlx.reshape"(%q) : (tensor<2x6x8xf32>) -> tensor<2x6x2x4xf32>
  %k4 = "rlx.reshape"(%k) : (tensor<2x6x8xf32>) -> tensor<2x6x2x4xf32>
  %qh = "rlx.transpose"(%q4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x6x2x4xf32>) -> tensor<2x2x6x4xf32>
  %kh = "rlx.transpose"(%k4) {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x6x2x4xf32>) -> tensor<2x2x4x6xf32>
  %s = "rlx.matmul"(%qh, %kh) : (tensor<2x2x6x4xf32>, tensor<2x2x4x6xf32>) -> tensor<2x2x6x6xf32>
  %c = "rlx.reshape"(%s) : (tensor<2x2x6x6xf32>) -> tensor<2x2x6x6xf32>
  %r = "rlx.mul"(%c, %scale) : (tensor<2x2x6x6xf32>, tensor<f32>) -> tensor<2x2x6x6xf32>
  return %r : tensor<2x2x6x6xf32>
}
"""


def test_attention_scores_chain():
    """reshape -> transpose -> 4-D batched matmul -> scale by a rank-0 tensor."""
    rng = rng_for("attention")
    q = uniform(rng, (2, 6, 8), -1.0, 1.0, np.float32)
    k = uniform(rng, (2, 6, 8), -1.0, 1.0, np.float32)
    scale = np.array(0.5, np.float32)
    actual = compiled(ATTENTION_SCORES, "scores")(q, k, scale)
    qh = q.astype(np.float64).reshape(2, 6, 2, 4).transpose(0, 2, 1, 3)
    kh = k.astype(np.float64).reshape(2, 6, 2, 4).transpose(0, 2, 3, 1)
    expected = np.matmul(qh, kh) * 0.5
    # K = 4 terms of size <= 1, then an exact scaling by 0.5.
    np.testing.assert_allclose(actual, expected, rtol=0, atol=4 * F32_UNIT_ROUNDOFF * 4 + MATMUL_ATOL)
