"""Reductions: reduce (sum, mean, max, min, prod), softmax, cumsum, argmax.

Each case compiles a one-op module with `rlx_mlir.compile`, runs it on
deterministic inputs and compares with an independent plain-numpy reference
computed in float64 from the same (f32 or f16) inputs.  Nothing but the public
package API is imported.

Tolerances (u = 2**-24, the f32 unit roundoff):
- Sums of n terms accumulated in f32, in any order, are within
  n * u * sum(|x|) of the exact sum (the standard gamma_n bound), so sum, mean
  and cumsum are checked against that bound rather than a relative tolerance:
  it holds whatever the summation order, and cancellation cannot break it.
  Products of n factors are within about n * u * |product| (each multiply
  adds at most u relative error).
- max, min and argmax select an element: exact.
- f16 results are the f32 value rounded once to f16: the reference is rounded
  to f16 too and one f16 rounding is allowed on top, F16_RTOL = 2e-3 (two f16
  ulps, 2**-10 relative each at worst), plus the f32 bound.
- softmax: x - max is exact where it matters (Sterbenz: close values), exp is
  within a few f32 ulps, the sum of n positive terms within n * u relative,
  the division 0.5 ulp: rtol = 1e-5 (~80 ulps) is ample for n <= 64
  (64 * u = 3.8e-6) and catches any wrong formula.  atol = 1e-7 only matters for
  probabilities that are tiny anyway (f32 exp underflows to denormals there).
"""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir
from op_cases import compiled, rng_for, shape_id, tensor_type
from op_cases import mlir_tensor as _tensor
from op_cases import placeholder as _placeholder

import rlx_mlir
from rlx_mlir.dialects import rlx

NUMPY = {"f32": np.float32, "f16": np.float16, "i64": np.int64}
U32 = 2.0**-24
F16_RTOL = 2e-3
ATOL = 1e-7  # exact zeros and tiny results


def one_op(op: str, shape, dtype: str, out_shape, out_dtype: str, attrs: str) -> str:
    in_type, out_type = tensor_type(shape, dtype), tensor_type(out_shape, out_dtype)
    return (
        f"func.func @f(%x: {in_type}) -> {out_type} {{\n"
        f'  %0 = "rlx.{op}"(%x) {{{attrs}}} : ({in_type}) -> {out_type}\n'
        f"  return %0 : {out_type}\n}}\n"
    )


def uniform(key, shape, low, high, dtype: str) -> np.ndarray:
    return np.asarray(rng_for(*key).uniform(low, high, size=shape)).astype(NUMPY[dtype])


def bool_attr(value: bool) -> str:
    return "true" if value else "false"


def assert_within(actual: np.ndarray, exact: np.ndarray, bound: np.ndarray, dtype: str) -> None:
    """|actual - exact| <= bound, with one f16 rounding allowed on top for f16."""
    assert actual.dtype == NUMPY[dtype]
    assert actual.shape == exact.shape
    if dtype == "f16":
        exact = exact.astype(np.float16).astype(np.float64)
        bound = bound + F16_RTOL * np.abs(exact)
    error = np.abs(actual.astype(np.float64) - exact)
    assert np.all(error <= bound), (
        f"max error {np.max(error - bound):.3g} over the bound; got {actual}, expected {exact}"
    )


# --- reduce ---------------------------------------------------------------------------------------

KINDS = ["sum", "mean", "max", "min", "prod"]

# shape, axes, keep_dim
REDUCE_SHAPES = [
    ((7,), (0,), False),  # to rank 0
    ((2, 3, 4), (-1,), False),  # negative axis
    ((2, 3, 4), (0, 2), True),  # several axes, keep_dim
    ((3, 1, 5), (1,), True),  # a size-1 axis
    ((3, 1, 5), (-1, 0), False),  # several axes, unsorted and negative
    ((4, 6), (0, 1), True),  # every axis, keep_dim
]
REDUCE_F16 = [1, 2, 4]

REDUCE_CASES = [
    pytest.param(kind, dtype, *REDUCE_SHAPES[i], id=f"{kind}-{dtype}-{shape_id(REDUCE_SHAPES[i][0])}-axes{i}")
    for kind in KINDS
    for dtype, indices in (("f32", range(len(REDUCE_SHAPES))), ("f16", REDUCE_F16))
    for i in indices
]


def reduce_reference(kind, x64, axes, keep_dim):
    """(exact result, error bound before the f16 rounding) in float64."""
    axes = tuple(axes)
    count = int(np.prod([x64.shape[a] for a in axes]))
    abs_sum = np.sum(np.abs(x64), axis=axes, keepdims=keep_dim)
    if kind == "sum":
        return np.sum(x64, axis=axes, keepdims=keep_dim), count * U32 * abs_sum + ATOL
    if kind == "mean":
        # The sum's bound divided by count, plus the division's rounding.
        exact = np.mean(x64, axis=axes, keepdims=keep_dim)
        return exact, U32 * abs_sum + U32 * np.abs(exact) + ATOL
    if kind == "prod":
        exact = np.prod(x64, axis=axes, keepdims=keep_dim)
        return exact, count * U32 * np.abs(exact) + ATOL
    fn = {"max": np.max, "min": np.min}[kind]
    return fn(x64, axis=axes, keepdims=keep_dim), np.zeros(())


@pytest.mark.parametrize("kind, dtype, shape, axes, keep_dim", REDUCE_CASES)
def test_reduce(kind, dtype, shape, axes, keep_dim):
    # prod: magnitudes in [0.5, 1.5] keep products of up to 24 factors well inside f16's range.
    low, high = (0.5, 1.5) if kind == "prod" else (-2.0, 2.0)
    x = uniform(("reduce", kind, dtype, shape, axes), shape, low, high, dtype)
    if kind == "prod":
        x = x * np.where(rng_for("sign", shape).random(shape) < 0.5, -1, 1).astype(x.dtype)
    exact, bound = reduce_reference(kind, x.astype(np.float64), axes, keep_dim)
    attrs = f'kind = "{kind}", axes = array<i64: {", ".join(map(str, axes))}>, keep_dim = {bool_attr(keep_dim)}'
    exe = compiled(one_op("reduce", shape, dtype, exact.shape, dtype, attrs))
    assert_within(exe(x), exact, bound, dtype)


@pytest.mark.parametrize("kind", ["sum", "mean"])
def test_reduce_f16_accumulates_in_f32(kind):
    """4096 ones: an f16 accumulator sticks at 2048 (2048 + 1 rounds back to 2048)."""
    x = np.ones((2, 4096), np.float16)
    attrs = f'kind = "{kind}", axes = array<i64: 1>, keep_dim = false'
    exe = compiled(one_op("reduce", (2, 4096), "f16", (2,), "f16", attrs))
    expected = {"sum": 4096.0, "mean": 1.0}[kind]
    np.testing.assert_array_equal(exe(x), np.full((2,), expected, np.float16))


@pytest.mark.parametrize("kind, fn", [("max", np.max), ("min", np.min)])
def test_reduce_max_min_propagate_nan(kind, fn):
    x = np.array([[1.0, np.nan, 3.0], [-1.0, -np.inf, 2.0]], np.float32)
    attrs = f'kind = "{kind}", axes = array<i64: 1>, keep_dim = false'
    exe = compiled(one_op("reduce", (2, 3), "f32", (2,), "f32", attrs))
    np.testing.assert_array_equal(exe(x), fn(x, axis=1))


def test_reduction_builders_infer_and_check():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            x = _placeholder(_tensor((2, 3, 4), "bf16"))
            op = rlx.ReduceOp(x, "max", [0, -1], keep_dim=True)
            assert op.result.type == _tensor((1, 3, 1), "bf16")
            assert (op.kind, op.axes, op.keep_dim) == ("max", [0, -1], True)
            assert rlx.ReduceOp(x, "sum", [1]).result.type == _tensor((2, 4), "bf16")
            assert rlx.ArgmaxOp(x, -2).result.type == _tensor((2, 4), "i64")
            assert rlx.ArgmaxOp(x, 1, keep_dim=True).result.type == _tensor((2, 1, 4), "i64")
            assert rlx.SoftmaxOp(x, -1).result.type == x.type
            assert rlx.CumsumOp(x, 0).exclusive is False
            with pytest.raises(ValueError, match=r"axes \[1, -2\] name a dimension of \[2, 3, 4\] more than once"):
                rlx.ReduceOp(x, "sum", [1, -2])
            with pytest.raises(ValueError, match="requires at least one axis to reduce over"):
                rlx.ReduceOp(x, "sum", [])
            with pytest.raises(ValueError, match=r"axis -4 is out of range for rank 3 input \[2, 3, 4\]"):
                rlx.SoftmaxOp(x, -4)


# --- softmax --------------------------------------------------------------------------------------


def softmax_reference(x64, axis):
    shifted = x64 - np.max(x64, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


SOFTMAX_CASES = [
    # shape, axis, dtype
    ((7,), 0, "f32"),
    ((2, 1, 5), -1, "f32"),
    ((3, 4), 0, "f32"),
    ((2, 3, 1), -1, "f32"),  # a size-1 axis: all ones
    ((4, 64), -1, "f32"),
    ((7,), -1, "f16"),
    ((3, 4), 0, "f16"),
    ((2, 1, 33), 2, "f16"),
]


def assert_softmax_close(actual, x, axis, dtype):
    expected = softmax_reference(x.astype(np.float64), axis)
    assert actual.dtype == NUMPY[dtype] and actual.shape == x.shape
    assert np.all(np.isfinite(actual))
    if dtype == "f16":
        np.testing.assert_allclose(
            actual.astype(np.float64), expected.astype(np.float16).astype(np.float64), rtol=F16_RTOL, atol=1e-5
        )
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=ATOL)


@pytest.mark.parametrize(
    "shape, axis, dtype", [pytest.param(*c, id=f"{shape_id(c[0])}-axis{c[1]}-{c[2]}") for c in SOFTMAX_CASES]
)
def test_softmax(shape, axis, dtype):
    x = uniform(("softmax", shape, axis, dtype), shape, -4.0, 4.0, dtype)
    exe = compiled(one_op("softmax", shape, dtype, shape, dtype, f"axis = {axis} : i64"))
    assert_softmax_close(exe(x), x, axis, dtype)


@pytest.mark.parametrize(
    "dtype, center, spread",
    [
        ("f32", 1.0e4, 20.0),  # exp(1e4) overflows: without subtracting the max this is inf / inf
        ("f32", -1.0e4, 20.0),  # exp(-1e4) underflows to 0: 0 / 0 without the shift
        ("f32", 0.0, 3.0e4),  # a huge spread: the small entries underflow to exactly 0
        ("f16", 6.0e4, 8.0),  # near f16's largest value (65504)
        ("f16", -6.0e4, 8.0),
    ],
)
def test_softmax_is_stable_for_large_magnitudes(dtype, center, spread):
    shape = (3, 16)
    x = (center + uniform(("softmax-large", dtype, center), shape, -spread, spread, "f32")).astype(NUMPY[dtype])
    exe = compiled(one_op("softmax", shape, dtype, shape, dtype, "axis = -1 : i64"))
    actual = exe(x)
    assert_softmax_close(actual, x, -1, dtype)
    np.testing.assert_allclose(np.sum(actual.astype(np.float64), axis=-1), 1.0, rtol=16 * F16_RTOL)


# --- cumsum ---------------------------------------------------------------------------------------

CUMSUM_CASES = [
    # shape, axis, dtype
    ((7,), 0, "f32"),
    ((3, 4), 0, "f32"),
    ((3, 4), -1, "f32"),
    ((2, 1, 5), 1, "f32"),  # a size-1 axis: the input itself (or zeros, exclusive)
    ((4, 3, 2), -2, "f32"),
    ((33,), -1, "f16"),
    ((3, 5, 2), 1, "f16"),
]


def cumsum_reference(x64, axis, exclusive):
    inclusive = np.cumsum(x64, axis=axis)
    abs_prefix = np.cumsum(np.abs(x64), axis=axis)
    n = x64.shape[axis]
    # Entry i sums i + 1 terms (inclusive): bound (i + 1) * u * sum |x_0..x_i|.
    terms = np.arange(1, n + 1).reshape([-1 if d == axis % x64.ndim else 1 for d in range(x64.ndim)])
    bound = terms * U32 * abs_prefix + ATOL
    if not exclusive:
        return inclusive, bound
    return inclusive - x64, np.concatenate(
        [np.zeros_like(np.take(bound, [0], axis=axis)), np.take(bound, np.arange(n - 1), axis=axis)], axis=axis
    )


@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize(
    "shape, axis, dtype", [pytest.param(*c, id=f"{shape_id(c[0])}-axis{c[1]}-{c[2]}") for c in CUMSUM_CASES]
)
def test_cumsum(shape, axis, dtype, exclusive):
    x = uniform(("cumsum", shape, axis, dtype), shape, -2.0, 2.0, dtype)
    exact, bound = cumsum_reference(x.astype(np.float64), axis, exclusive)
    exe = compiled(
        one_op("cumsum", shape, dtype, shape, dtype, f"axis = {axis} : i64, exclusive = {bool_attr(exclusive)}")
    )
    actual = exe(x)
    assert_within(actual, exact, bound, dtype)
    if exclusive:
        assert np.all(np.take(actual, 0, axis=axis) == 0)


@pytest.mark.parametrize("exclusive", [False, True])
def test_cumsum_f16_accumulates_in_f32(exclusive):
    """Running sums of 4096 ones: an f16 accumulator would stick at 2048.  Each
    output is the exact count rounded once to f16."""
    x = np.ones((4096,), np.float16)
    attrs = f"axis = 0 : i64, exclusive = {bool_attr(exclusive)}"
    exe = compiled(one_op("cumsum", (4096,), "f16", (4096,), "f16", attrs))
    counts = np.arange(4096) if exclusive else np.arange(1, 4097)
    np.testing.assert_array_equal(exe(x), counts.astype(np.float16))


# --- argmax ---------------------------------------------------------------------------------------

ARGMAX_CASES = [
    # shape, axis, keep_dim, dtype
    ((7,), 0, False, "f32"),
    ((3, 4), 0, False, "f32"),
    ((3, 4), -1, True, "f32"),
    ((2, 1, 5), 1, False, "f32"),  # a size-1 axis: all zeros
    ((4, 3, 6), -2, True, "f32"),
    ((9,), -1, False, "f16"),
    ((3, 5, 2), 1, True, "f16"),
]


@pytest.mark.parametrize(
    "shape, axis, keep_dim, dtype",
    [pytest.param(*c, id=f"{shape_id(c[0])}-axis{c[1]}-keep{int(c[2])}-{c[3]}") for c in ARGMAX_CASES],
)
def test_argmax(shape, axis, keep_dim, dtype):
    # Few distinct values (multiples of 0.5 in [-2, 2]): ties are frequent.
    x = (np.round(uniform(("argmax", shape, axis), shape, -2.0, 2.0, "f32") * 2) / 2).astype(NUMPY[dtype])
    expected = np.argmax(x, axis=axis, keepdims=keep_dim).astype(np.int64)
    exe = compiled(
        one_op("argmax", shape, dtype, expected.shape, "i64", f"axis = {axis} : i64, keep_dim = {bool_attr(keep_dim)}")
    )
    actual = exe(x)
    assert actual.dtype == np.int64
    np.testing.assert_array_equal(actual, expected)


ARGMAX_TIES = [
    pytest.param([1.0, 3.0, 3.0, 2.0, 3.0], 1, id="repeated-max"),
    pytest.param([5.0, 5.0, 5.0, 5.0, 5.0], 0, id="all-equal"),
    pytest.param([-np.inf] * 5, 0, id="all-minus-inf"),
    pytest.param([-np.inf, -np.inf, 0.0, -np.inf, 0.0], 2, id="after-minus-inf"),
    pytest.param([1.0, np.nan, 7.0, np.nan, 2.0], 1, id="first-nan"),
    pytest.param([-0.0, 0.0, -1.0, 0.0, -0.0], 0, id="signed-zeros-tie"),
]


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("row, expected", ARGMAX_TIES)
def test_argmax_ties_go_to_the_lowest_index(row, expected, dtype):
    x = np.array(row, NUMPY[dtype])
    assert np.argmax(x) == expected  # the reference agrees with NumPy
    exe = compiled(one_op("argmax", (5,), dtype, (), "i64", "axis = 0 : i64, keep_dim = false"))
    assert exe(x) == expected


def test_argmax_ties_in_a_long_row():
    """The maximum repeated across a long axis: the first occurrence, in every row."""
    x = np.zeros((3, 1000), np.float32)
    x[0, [17, 500, 999]] = 1.0
    x[1, [998, 999]] = 1.0
    x[2, :] = 1.0
    exe = compiled(one_op("argmax", (3, 1000), "f32", (3,), "i64", "axis = 1 : i64, keep_dim = false"))
    np.testing.assert_array_equal(exe(x), np.array([17, 998, 0], np.int64))
