"""Numerics of the normalisation ops against plain float64 numpy references.

rlx.rms_norm, rlx.layer_norm, rlx.fused_residual_rms_norm,
rlx.fused_residual_layer_norm and rlx.fused_swiglu: each case builds a
one-op module as text, compiles it with `rlx_mlir.compile` and compares with
a reference written here.  Nothing but `compile` (and the op classes, for the
builder tests) is imported from the package.
"""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir
from op_cases import compiled, one_op_module, rng_for, shape_id, uniform
from op_cases import placeholder as _placeholder

import rlx_mlir
from rlx_mlir.dialects import rlx

DTYPES = {"f32": np.float32, "f16": np.float16}

# --- tolerances ----------------------------------------------------------------------------
#
# Norms, f32.  With unit roundoff u = 2**-24, a sum of D terms in f32 is within
# D * u of the exact sum relative to the sum of the magnitudes, so each
# statistic (mean, mean of squares, variance) carries a relative error of at
# most ~D * u, and its square root half of that.  The normalised value
# n = (h - mean) / s (s = sqrt(var + eps) or sqrt(mean(h^2) + eps)) then has an
# absolute error of at most ~(D + 2) * u * max|h| / s per row: the error of the
# mean and of h - mean is relative to max|h|, not to |h - mean| (cancellation),
# and the error of s is relative to s.  A factor 8 covers the constant factors
# of these estimates (two passes, a division, a square root).  The affine part
# adds the rounding of n * gamma + beta: 2 u (|n gamma| + |beta|).  So per
# element:  |y - y_exact| <= 8 (D + 2) u max|h| / s |gamma| + 2 u (|n gamma| + |beta|).
# With D <= 64 and max|h| / s <= ~3 this is ~1e-4 at most, while the formula
# mistakes it must catch are far larger (e.g. the unbiased variance changes n
# by sqrt(D / (D - 1)) - 1 >= 0.8 %, eps outside the square root with eps = 0.1
# by more than 1 %).
F32_UNIT_ROUNDOFF = 2.0**-24

# f16 in and out, f32 compute: the f32 error above, plus the single rounding
# to f16 compared with the f16-rounded float64 reference (one f16 ulp, at most
# 2**-10 relative; F16_RTOL = 2e-3 allows two), plus the f16 subnormal spacing
# (6e-8) for results that round near zero.
F16_RTOL = 2e-3
F16_SUBNORMAL = 6e-8

# SwiGLU is elementwise (no accumulation): as the activation tests of
# test_numerics.py, f32 rtol 1e-5 / atol 1e-6 (a few ulps of exp and the
# composite silu formula evaluated as several f32 operations), f16 two ulps
# (2e-3) relative and 1e-5 absolute for results near zero.
SWIGLU_TOL = {"f32": (1e-5, 1e-6), "f16": (2e-3, 1e-5)}


# --- helpers ------------------------------------------------------------------------------------


def param_shape(shape, axis):
    """gamma / beta broadcast along `axis`: `[D]` reshaped to rank(x) with D at `axis`."""
    axis = axis % len(shape)
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return axis, view


def reference_norm(kind, h, gamma, beta, axis, eps):
    """float64 reference: returns (y, n, max|h| / s) with the last broadcast to h's shape."""
    axis, view = param_shape(h.shape, axis)
    g, b = gamma.reshape(view), beta.reshape(view)
    if kind == "rms":
        s = np.sqrt(np.mean(h * h, axis=axis, keepdims=True) + eps)
        n = h / s
    else:
        mean = np.mean(h, axis=axis, keepdims=True)
        var = np.mean((h - mean) ** 2, axis=axis, keepdims=True)  # biased, as F.layer_norm
        s = np.sqrt(var + eps)
        n = (h - mean) / s
    spread = np.max(np.abs(h), axis=axis, keepdims=True) / s
    return n * g + b, n, np.broadcast_to(spread, h.shape), g, b


def assert_norm_close(actual, kind, h, gamma, beta, axis, eps, dtype):
    """The per-element bound of the tolerance notes above."""
    y, n, spread, g, b = reference_norm(kind, h, gamma, beta, axis, eps)
    d = h.shape[axis % h.ndim]
    u = F32_UNIT_ROUNDOFF
    bound = 8 * (d + 2) * u * spread * np.abs(g) + 2 * u * (np.abs(n * g) + np.abs(b))
    if dtype == "f16":
        y = y.astype(np.float16).astype(np.float64)
        bound = bound + F16_RTOL * np.abs(y) + F16_SUBNORMAL
    assert actual.dtype == DTYPES[dtype]
    assert actual.shape == y.shape
    error = np.abs(actual.astype(np.float64) - y)
    worst = np.unravel_index(np.argmax(error - bound), error.shape)
    assert np.all(error <= bound), (
        f"error {error[worst]:.3g} exceeds bound {bound[worst]:.3g} at {worst}: "
        f"got {actual[worst]}, expected {y[worst]}"
    )


def eps_attr(eps: float) -> str:
    return f"eps = {eps:.6e} : f32"


def f32(value: float) -> float:
    """eps as the op sees it: the F32Attr rounds it to f32."""
    return float(np.float32(value))


# --- rms_norm and layer_norm ---------------------------------------------------------------

# (shape, axis, eps): odd sizes, axis != -1, a size-1 normalised axis, size-1
# leading dims, rank 1, and a large eps that shows it sits under the root.
AXIS_NORM_SHAPES = [
    ((3, 17), -1, 1e-5),
    ((2, 5, 3), 1, 1e-6),  # middle axis: gamma and beta broadcast along dim 1
    ((4, 6), 0, 0.1),  # leading axis, large eps
    ((1, 1, 64), -1, 1e-5),  # size-1 leading dims
    ((3, 1), -1, 0.5),  # size-1 normalised axis
    ((7,), 0, 1e-6),  # rank 1: the statistics are rank 0
]

AXIS_NORM_CASES = [
    pytest.param(op, kind, dtype, shape, axis, eps, id=f"{op}-{dtype}-{shape_id(shape)}-axis{axis}")
    for op, kind in (("rms_norm", "rms"), ("layer_norm", "layer"))
    for dtype in DTYPES
    for shape, axis, eps in AXIS_NORM_SHAPES
]


@pytest.mark.parametrize("op, kind, dtype, shape, axis, eps", AXIS_NORM_CASES)
def test_axis_norm(op, kind, dtype, shape, axis, eps):
    np_dtype = DTYPES[dtype]
    rng = rng_for(op, dtype, shape, axis)
    # An offset mean (0.5) so that layer_norm's centring matters.
    x = uniform(rng, shape, -1.5, 2.5, np_dtype)
    d = shape[axis % len(shape)]
    gamma = uniform(rng, (d,), 0.5, 2.0, np_dtype)
    beta = uniform(rng, (d,), -1.0, 1.0, np_dtype)
    attrs = f"axis = {axis} : i64, {eps_attr(eps)}"
    exe = compiled(one_op_module(op, [shape, (d,), (d,)], dtype, shape, attrs))
    actual = exe(x, gamma, beta)
    as64 = lambda a: a.astype(np.float64)  # noqa: E731
    assert_norm_close(actual, kind, as64(x), as64(gamma), as64(beta), axis, f32(eps), dtype)


def test_axis_norm_default_attributes():
    """axis = -1 and eps = 1e-6 when the builder is not given them."""
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            x = _placeholder(ir.RankedTensorType.get([2, 8], ir.F32Type.get()))
            g = _placeholder(ir.RankedTensorType.get([8], ir.F32Type.get()))
            op = rlx.RmsNormOp(x, g, g)
        assert op.axis == -1
        assert op.eps == f32(1e-6)
        assert op.result.type == x.type


@pytest.mark.parametrize("op, kind", [("rms_norm", "rms"), ("layer_norm", "layer")])
def test_f16_statistics_accumulate_in_f32(op, kind):
    """4096 f16 terms of magnitude 1: an f16 accumulator sticks at 2048 (2048 + 1 rounds
    to 2048), which would halve mean(x^2) (rms) or the variance (layer) and give
    |y| = sqrt(2) instead of 1."""
    d = 4096
    x = np.where(np.arange(d) % 2 == 0, 1.0, -1.0).astype(np.float16).reshape(1, d)
    gamma = np.ones(d, np.float16)
    beta = np.zeros(d, np.float16)
    exe = compiled(one_op_module(op, [(1, d), (d,), (d,)], "f16", (1, d), f"axis = 1 : i64, {eps_attr(1e-6)}"))
    np.testing.assert_array_equal(exe(x, gamma, beta), x)


# --- fused residual norms ----------------------------------------------------------------------

RESIDUAL_SHAPES = [(3, 17), (1, 1, 32), (2, 3, 1), (9,)]  # size-1 leading dims, size-1 D, rank 1

RESIDUAL_CASES = [
    pytest.param(op, kind, dtype, shape, bias, id=f"{op}-{dtype}-{shape_id(shape)}-{'bias' if bias else 'nobias'}")
    for op, kind in (("fused_residual_rms_norm", "rms"), ("fused_residual_layer_norm", "layer"))
    for dtype in DTYPES
    for shape in RESIDUAL_SHAPES
    for bias in (True, False)
]


@pytest.mark.parametrize("op, kind, dtype, shape, with_bias", RESIDUAL_CASES)
def test_fused_residual_norm(op, kind, dtype, shape, with_bias):
    np_dtype = DTYPES[dtype]
    rng = rng_for(op, dtype, shape, with_bias)
    d = shape[-1]
    x = uniform(rng, shape, -1.0, 2.0, np_dtype)
    residual = uniform(rng, shape, -1.5, 1.5, np_dtype)
    bias = uniform(rng, (d,), -1.0, 1.0, np_dtype)
    gamma = uniform(rng, (d,), 0.5, 2.0, np_dtype)
    beta = uniform(rng, (d,), -1.0, 1.0, np_dtype)
    eps = 1e-5
    operands = [x, residual] + ([bias] if with_bias else []) + [gamma, beta]
    shapes = [a.shape for a in operands]
    exe = compiled(one_op_module(op, shapes, dtype, shape, eps_attr(eps)))
    actual = exe(*operands)
    as64 = lambda a: a.astype(np.float64)  # noqa: E731
    # h is formed in f32 from the f16 operands and never rounded to f16: the
    # float64 sum of the same values is the reference (its f32 rounding is one
    # more u * |h| on h, inside the bound's (D + 2) u max|h| term).
    h = as64(x) + as64(residual) + (as64(bias) if with_bias else 0.0)
    assert_norm_close(actual, kind, h, as64(gamma), as64(beta), -1, f32(eps), dtype)


def test_fused_residual_norm_builder_optional_bias():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            t = lambda *s: ir.RankedTensorType.get(list(s), ir.F16Type.get())  # noqa: E731
            x, r, v = _placeholder(t(2, 8)), _placeholder(t(2, 8)), _placeholder(t(8))
            without = rlx.FusedResidualLayerNormOp(x, r, v, v)
            with_bias = rlx.FusedResidualRmsNormOp(x, r, v, v, bias=v, eps=1e-5)
        assert without.bias is None and with_bias.bias == v
        assert with_bias.result.type == t(2, 8)
        assert len(with_bias.operation.operands) == 5 and len(without.operation.operands) == 4


# --- fused_swiglu ---------------------------------------------------------------------------------

SWIGLU_SHAPES = [(3, 10), (1, 1, 34), (2, 2), (5, 1, 8)]  # N = 5, 17, 1, 4


@pytest.mark.parametrize(
    "dtype, shape", [pytest.param(d, s, id=f"{d}-{shape_id(s)}") for d in DTYPES for s in SWIGLU_SHAPES]
)
def test_fused_swiglu(dtype, shape):
    x = uniform(rng_for("swiglu", dtype, shape), shape, -5.0, 5.0, DTYPES[dtype])
    n = shape[-1] // 2
    out_shape = (*shape[:-1], n)
    exe = compiled(one_op_module("fused_swiglu", [shape], dtype, out_shape))
    actual = exe(x)
    x64 = x.astype(np.float64)
    up, gate = x64[..., :n], x64[..., n:]
    expected = up * gate / (1.0 + np.exp(-gate))
    rtol, atol = SWIGLU_TOL[dtype]
    if dtype == "f16":
        expected = expected.astype(np.float16).astype(np.float64)
    assert actual.dtype == DTYPES[dtype] and actual.shape == out_shape
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=rtol, atol=atol)


# --- builders reject bad attributes at the call -------------------------------------------------


def test_builders_raise_with_the_offending_values():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            t = lambda *s: ir.RankedTensorType.get(list(s), ir.F32Type.get())  # noqa: E731
            x, g = _placeholder(t(2, 8)), _placeholder(t(8))
            with pytest.raises(ValueError, match=r"'rlx.rms_norm' op eps must be positive, got -1.0"):
                rlx.RmsNormOp(x, g, g, eps=-1.0)
            with pytest.raises(ValueError, match=r"axis 2 is out of range for rank 2 input \[2, 8\]"):
                rlx.LayerNormOp(x, g, g, axis=2)
            with pytest.raises(ValueError, match=r"gamma must have shape \[2\] \(dimension 0 of input \[2, 8\]\)"):
                rlx.LayerNormOp(x, g, g, axis=-2)
            with pytest.raises(ValueError, match=r"'rlx.fused_swiglu' op requires an even last dimension"):
                rlx.FusedSwigluOp(_placeholder(t(2, 7)))
