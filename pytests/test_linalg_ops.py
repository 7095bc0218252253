"""Numerics of rlx.dot_general and rlx.fused_matmul_bias_act against plain numpy.

Each case builds a one-op module as text, compiles it with `rlx_mlir.compile`
and compares with a float64 reference written here (np.einsum for
dot_general, np.matmul plus the activation formulas for the fused linear
layer).  Nothing but `compile` (and the op classes, for the builder tests) is
imported from the package.
"""

from __future__ import annotations

import math
import string

import numpy as np
import pytest
from mlir import ir
from op_cases import compiled, one_op_module, rng_for, uniform
from op_cases import placeholder as _placeholder

import rlx_mlir
from rlx_mlir.dialects import rlx

DTYPES = {"f32": np.float32, "f16": np.float16}

# --- tolerances ------------------------------------------------------------------------------
#
# Contractions: the standard dot-product bound, as for rlx.matmul in
# test_numerics.py.  Summing K products in f32 (unit roundoff u = 2**-24) is
# within K * u * (|A| . |B|) of the exact sum elementwise, in any summation
# order; K is the product of the contracting sizes.  f16 operands accumulate in
# f32, so the same bound applies, plus the single final rounding to f16
# compared with the f16-rounded reference: one f16 ulp, within F16_RTOL
# (2e-3, two ulps) of |reference|.  CONTRACTION_ATOL covers exact zeros.
F32_UNIT_ROUNDOFF = 2.0**-24
CONTRACTION_ATOL = 1e-7
F16_RTOL = 2e-3

# fused_matmul_bias_act: the product's bound above, plus one f32 rounding of
# the bias add (u * (|p| + |bias|)), carried through the activation whose
# slope is at most 1.13 (gelu's maximum; relu, tanh and silu are <= 1.1,
# sigmoid 0.25), plus the activation's own evaluation error: rtol 1e-5 / atol
# 1e-6 as for the activation ops (a few ulps of exp / erf / tanh and the
# composite formulas in f32).  f16 adds the final rounding (F16_RTOL) and
# 1e-5 absolute for results near zero (the tails of gelu / silu), as the
# f16 activation tests.
ACT_SLOPE = 1.13
ACT_RTOL, ACT_ATOL = 1e-5, 1e-6
F16_ATOL = 1e-5


# --- helpers ------------------------------------------------------------------------------------


def assert_within(actual, expected, bound, what):
    assert actual.shape == expected.shape
    error = np.abs(actual.astype(np.float64) - expected)
    worst = np.unravel_index(np.argmax(error - bound), error.shape) if error.ndim else ()
    assert np.all(error <= bound), (
        f"{what}: error {error[worst]:.3g} exceeds bound {bound[worst]:.3g} at {worst}: "
        f"got {actual[worst]}, expected {expected[worst]}"
    )


def array_attr(values) -> str:
    return f"array<i64{': ' if values else ''}{', '.join(map(str, values))}>"


# --- dot_general -------------------------------------------------------------------------------


def einsum_spec(a_rank, b_rank, lc, rc, lb, rb):
    """The einsum subscripts of an XLA DotGeneral: batch, lhs free, rhs free."""
    letters = iter(string.ascii_letters)
    a = [None] * a_rank
    b = [None] * b_rank
    for i, j in zip(lb, rb):
        a[i] = b[j] = next(letters)
    for i, j in zip(lc, rc):
        a[i] = b[j] = next(letters)
    for side in (a, b):
        for i, letter in enumerate(side):
            if letter is None:
                side[i] = next(letters)
    batch = [a[i] for i in lb]
    a_free = [a[i] for i in range(a_rank) if i not in lb and i not in lc]
    b_free = [b[i] for i in range(b_rank) if i not in rb and i not in rc]
    return f"{''.join(a)},{''.join(b)}->{''.join(batch + a_free + b_free)}"


# name -> (lhs shape, rhs shape, lhs_contracting, rhs_contracting, lhs_batch, rhs_batch)
DOT_GENERAL_CASES = {
    "matmul": ((3, 4), (4, 5), [1], [0], [], []),
    "batch-two-contracting": ((2, 3, 4, 5), (2, 5, 4, 6), [2, 3], [2, 1], [0], [0]),
    "leading-contracting": ((4, 3), (4, 5), [0], [0], [], []),
    # batch dims not leading, listed out of order, a size-1 free dim
    "unordered-batch": ((5, 2, 1, 4), (4, 2, 6, 5), [3], [0], [1, 0], [1, 3]),
    "vector-dot": ((7,), (7,), [0], [0], [], []),
    "outer": ((3,), (1, 4), [], [], [], []),
    "batched-vector-dot": ((3, 8), (8, 3), [1], [0], [0], [1]),
}
DOT_GENERAL_F16 = ["matmul", "batch-two-contracting", "leading-contracting", "unordered-batch"]

DOT_GENERAL_PARAMS = [pytest.param(n, "f32", id=f"{n}-f32") for n in DOT_GENERAL_CASES] + [
    pytest.param(n, "f16", id=f"{n}-f16") for n in DOT_GENERAL_F16
]


@pytest.mark.parametrize("name, dtype", DOT_GENERAL_PARAMS)
def test_dot_general(name, dtype):
    a_shape, b_shape, lc, rc, lb, rb = DOT_GENERAL_CASES[name]
    np_dtype = DTYPES[dtype]
    rng = rng_for("dot_general", name, dtype)
    lhs = uniform(rng, a_shape, -1.0, 1.0, np_dtype)
    rhs = uniform(rng, b_shape, -1.0, 1.0, np_dtype)
    spec = einsum_spec(len(a_shape), len(b_shape), lc, rc, lb, rb)
    a64, b64 = lhs.astype(np.float64), rhs.astype(np.float64)
    exact = np.einsum(spec, a64, b64)
    k = math.prod(a_shape[i] for i in lc)
    bound = k * F32_UNIT_ROUNDOFF * np.einsum(spec, np.abs(a64), np.abs(b64)) + CONTRACTION_ATOL
    if dtype == "f16":
        exact = exact.astype(np.float16).astype(np.float64)
        bound = bound + F16_RTOL * np.abs(exact)
    attrs = (
        f"lhs_contracting = {array_attr(lc)}, rhs_contracting = {array_attr(rc)}, "
        f"lhs_batch = {array_attr(lb)}, rhs_batch = {array_attr(rb)}"
    )
    exe = compiled(one_op_module("dot_general", [a_shape, b_shape], dtype, exact.shape, attrs))
    actual = exe(lhs, rhs)
    assert actual.dtype == np_dtype
    assert_within(np.asarray(actual), exact, bound, f"dot_general {spec}")


def test_dot_general_f16_accumulates_in_f32():
    """4096 products of ones: an f16 accumulator sticks at 2048."""
    lhs = np.ones((4096, 2), np.float16)
    rhs = np.ones((3, 4096), np.float16)
    attrs = (
        "lhs_contracting = array<i64: 0>, rhs_contracting = array<i64: 1>, "
        "lhs_batch = array<i64>, rhs_batch = array<i64>"
    )
    exe = compiled(one_op_module("dot_general", [(4096, 2), (3, 4096)], "f16", (2, 3), attrs))
    np.testing.assert_array_equal(exe(lhs, rhs), np.full((2, 3), 4096.0, np.float16))


def test_dot_general_builder_infers_the_result():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            t = lambda *s: ir.RankedTensorType.get(list(s), ir.F32Type.get())  # noqa: E731
            lhs, rhs = _placeholder(t(5, 2, 1, 4)), _placeholder(t(4, 2, 6, 5))
            op = rlx.DotGeneralOp(lhs, rhs, [3], [0], lhs_batch=[1, 0], rhs_batch=[1, 3])
            plain = rlx.DotGeneralOp(_placeholder(t(3, 4)), _placeholder(t(4, 5)), [1], [0])
            with pytest.raises(ValueError, match=r"'rlx.dot_general' op lhs dimension 1 is used more than once"):
                rlx.DotGeneralOp(lhs, rhs, [1], [1], lhs_batch=[1], rhs_batch=[1])
        assert op.result.type == t(2, 5, 1, 6)
        assert op.lhs_batch == [1, 0] and op.rhs_contracting == [0]
        assert plain.result.type == t(3, 5) and plain.lhs_batch == []


# --- fused_matmul_bias_act ----------------------------------------------------------------------


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


ACTIVATIONS = {
    "none": lambda x: x,
    "relu": lambda x: np.maximum(x, 0.0),
    "gelu": lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "gelu_approx": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
    "silu": lambda x: x * _sigmoid(x),
    "sigmoid": _sigmoid,
    "tanh": np.tanh,
}

# (x shape, N): 2-D, batched with odd sizes, size-1 leading dims and M = 1.
FUSED_SHAPES = [((4, 8), 6), ((2, 3, 13), 5), ((1, 1, 1, 16), 3)]

FUSED_CASES = [
    pytest.param(act, dtype, x_shape, n, id=f"{act}-{dtype}-{'x'.join(map(str, x_shape))}-N{n}")
    for act in ACTIVATIONS
    for dtype in DTYPES
    for x_shape, n in (FUSED_SHAPES if act in ("none", "gelu") else FUSED_SHAPES[1:2])
]


@pytest.mark.parametrize("act, dtype, x_shape, n", FUSED_CASES)
def test_fused_matmul_bias_act(act, dtype, x_shape, n):
    np_dtype = DTYPES[dtype]
    rng = rng_for("fused_matmul_bias_act", act, dtype, x_shape, n)
    k = x_shape[-1]
    x = uniform(rng, x_shape, -1.0, 1.0, np_dtype)
    w = uniform(rng, (k, n), -1.0, 1.0, np_dtype)
    bias = uniform(rng, (n,), -1.0, 1.0, np_dtype)
    out_shape = (*x_shape[:-1], n)
    exe = compiled(
        one_op_module("fused_matmul_bias_act", [x_shape, (k, n), (n,)], dtype, out_shape, f'activation = "{act}"')
    )
    actual = exe(x, w, bias)
    assert actual.dtype == np_dtype
    x64, w64, b64 = x.astype(np.float64), w.astype(np.float64), bias.astype(np.float64)
    pre = x64 @ w64 + b64
    expected = ACTIVATIONS[act](pre)
    u = F32_UNIT_ROUNDOFF
    pre_error = k * u * (np.abs(x64) @ np.abs(w64)) + u * (np.abs(pre) + np.abs(b64))
    bound = ACT_SLOPE * pre_error + ACT_RTOL * np.abs(expected) + ACT_ATOL
    if dtype == "f16":
        expected = expected.astype(np.float16).astype(np.float64)
        bound = bound + F16_RTOL * np.abs(expected) + F16_ATOL
    assert_within(actual, expected, bound, f"fused_matmul_bias_act {act}")


def test_fused_matmul_bias_act_rounds_once():
    """f16: x @ w = 2048 + 1 exactly in f32; with bias -1 the result is 2048.  Rounding the
    product to f16 first (2049 -> 2048) and then adding the bias would give 2047."""
    x = np.ones((1, 2), np.float16)
    w = np.array([[2048.0], [1.0]], np.float16)
    bias = np.array([-1.0], np.float16)
    exe = compiled(one_op_module("fused_matmul_bias_act", [(1, 2), (2, 1), (1,)], "f16", (1, 1), 'activation = "none"'))
    np.testing.assert_array_equal(exe(x, w, bias), np.array([[2048.0]], np.float16))


def test_fused_matmul_bias_act_default_activation():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            t = lambda *s: ir.RankedTensorType.get(list(s), ir.BF16Type.get())  # noqa: E731
            op = rlx.FusedMatmulBiasActOp(_placeholder(t(2, 3, 4)), _placeholder(t(4, 5)), _placeholder(t(5)))
        assert op.activation == "none"
        assert op.result.type == t(2, 3, 5)
