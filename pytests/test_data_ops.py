"""Numerics of constants, casts, comparisons and select, and boolean tensors at the numpy boundary."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir

NUMPY = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64, "i1": np.bool_}


def _tensor(shape, dtype):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def _one_op(op, operands, result, attrs=""):
    """A function applying `op` to arguments of the given (shape, dtype) pairs."""
    args = ", ".join(f"%a{i}: {_tensor(*t)}" for i, t in enumerate(operands))
    names = ", ".join(f"%a{i}" for i in range(len(operands)))
    types = ", ".join(_tensor(*t) for t in operands)
    out = _tensor(*result)
    return (
        f"func.func @f({args}) -> {out} {{\n"
        f'  %0 = "{op}"({names}) {attrs} : ({types}) -> {out}\n'
        f"  return %0 : {out}\n}}\n"
    )


def _values(shape, dtype, rng):
    if dtype == "i1":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype in ("i32", "i64"):
        return rng.integers(-1000, 1000, shape).astype(NUMPY[dtype])
    # floats with fractional parts of both signs, exact integers, zeros and large values
    values = rng.standard_normal(shape) * 300
    flat = values.reshape(-1)
    flat[::5] = 0.0
    flat[1::7] = np.round(flat[1::7])
    return values.astype(NUMPY[dtype])


CASTS = [(a, b) for a in NUMPY for b in NUMPY if a != b]


@pytest.mark.parametrize("source,target", CASTS, ids=[f"{a}-to-{b}" for a, b in CASTS])
def test_cast_matches_numpy_astype(source, target):
    # numpy's astype has rlx.cast's rules on in-range values: floats truncate toward
    # zero into integers, anything non-zero is True, rounding to nearest even.
    shape = (3, 5)
    exe = rlx_mlir.compile(_one_op("rlx.cast", [(shape, source)], (shape, target)))
    x = _values(shape, source, np.random.default_rng(len(source) * 7 + len(target)))
    if source == "f32" and target == "f16":
        x = np.clip(x, -60000, 60000)  # inside f16's range
    np.testing.assert_array_equal(exe(x), x.astype(NUMPY[target]))


def test_cast_nan_to_bool_is_true():
    exe = rlx_mlir.compile(_one_op("rlx.cast", [((3,), "f32")], ((3,), "i1")))
    np.testing.assert_array_equal(exe(np.array([np.nan, 0.0, -0.0], np.float32)), [True, False, False])


PREDICATES = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}
COMPARE_SHAPES = [((2, 3), (3,)), ((4, 1), (1, 5)), ((), (6,))]


@pytest.mark.parametrize("predicate", PREDICATES)
@pytest.mark.parametrize("dtype", ["f32", "f16", "i32", "i64"])
def test_compare(predicate, dtype):
    rng = np.random.default_rng(3)
    for lhs_shape, rhs_shape in COMPARE_SHAPES:
        out_shape = np.broadcast_shapes(lhs_shape, rhs_shape)
        text = _one_op("rlx.compare", [(lhs_shape, dtype), (rhs_shape, dtype)], (out_shape, "i1"), f'{{predicate = "{predicate}"}}')
        exe = rlx_mlir.compile(text)
        # small integers so that equal values occur
        a = rng.integers(-2, 3, lhs_shape).astype(NUMPY[dtype])
        b = rng.integers(-2, 3, rhs_shape).astype(NUMPY[dtype])
        np.testing.assert_array_equal(exe(a, b), PREDICATES[predicate](a, b))


def test_compare_with_nan_follows_numpy():
    a = np.array([np.nan, 1.0, np.nan], np.float32)
    b = np.array([1.0, np.nan, np.nan], np.float32)
    for predicate, reference in PREDICATES.items():
        exe = rlx_mlir.compile(_one_op("rlx.compare", [((3,), "f32")] * 2, ((3,), "i1"), f'{{predicate = "{predicate}"}}'))
        np.testing.assert_array_equal(exe(a, b), reference(a, b), err_msg=predicate)


WHERE_SHAPES = [((2, 3), (2, 3), (2, 3)), ((3,), (2, 1), (1, 3)), ((4, 1), (), (5,))]


@pytest.mark.parametrize("shapes", WHERE_SHAPES, ids=["same", "broadcast", "scalar-branch"])
@pytest.mark.parametrize("dtype", ["f32", "f16", "i64", "i1"])
def test_where(shapes, dtype):
    condition_shape, true_shape, false_shape = shapes
    out_shape = np.broadcast_shapes(*shapes)
    text = _one_op(
        "rlx.where",
        [(condition_shape, "i1"), (true_shape, dtype), (false_shape, dtype)],
        (out_shape, dtype),
    )
    rng = np.random.default_rng(5)
    c = _values(condition_shape, "i1", rng)
    t = _values(true_shape, dtype, rng)
    f = _values(false_shape, dtype, rng)
    np.testing.assert_array_equal(rlx_mlir.compile(text)(c, t, f), np.where(c, t, f))


def test_constants_of_every_kind():
    text = """
    func.func @f() -> (tensor<2x2xf32>, tensor<3xi64>, tensor<4xi1>, tensor<2xf16>) {
      %0 = "rlx.constant"() {value = dense<[[1.0, -2.0], [0.5, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
      %1 = "rlx.constant"() {value = dense<[7, -8, 9]> : tensor<3xi64>} : () -> tensor<3xi64>
      %2 = "rlx.constant"() {value = dense<[true, false, false, true]> : tensor<4xi1>} : () -> tensor<4xi1>
      %3 = "rlx.constant"() {value = dense<1.5> : tensor<2xf16>} : () -> tensor<2xf16>
      return %0, %1, %2, %3 : tensor<2x2xf32>, tensor<3xi64>, tensor<4xi1>, tensor<2xf16>
    }
    """
    a, b, c, d = rlx_mlir.compile(text)()
    np.testing.assert_array_equal(a, [[1.0, -2.0], [0.5, 4.0]])
    np.testing.assert_array_equal(b, [7, -8, 9])
    assert b.dtype == np.int64
    np.testing.assert_array_equal(c, [True, False, False, True])
    assert c.dtype == np.bool_
    np.testing.assert_array_equal(d, np.array([1.5, 1.5], np.float16))


def test_boolean_tensors_cross_the_numpy_boundary():
    # i1 tensors are stored as bytes: bool arrays in and out, through a chain of ops.
    text = """
    func.func @f(%x: tensor<8xf32>, %keep: tensor<8xi1>) -> (tensor<8xi1>, tensor<8xf32>) {
      %zero = "rlx.constant"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
      %pos = "rlx.compare"(%x, %zero) {predicate = "gt"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
      %both = "rlx.where"(%keep, %pos, %keep) : (tensor<8xi1>, tensor<8xi1>, tensor<8xi1>) -> tensor<8xi1>
      %out = "rlx.where"(%both, %x, %zero) : (tensor<8xi1>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
      return %both, %out : tensor<8xi1>, tensor<8xf32>
    }
    """
    x = np.array([-1, 2, 3, -4, 5, 0, 7, -8], np.float32)
    keep = np.array([1, 1, 0, 0, 1, 1, 0, 1], bool)
    both, out = rlx_mlir.compile(text)(x, keep)
    np.testing.assert_array_equal(both, keep & (x > 0))
    np.testing.assert_array_equal(out, np.where(keep & (x > 0), x, 0))


def test_params_are_marked_in_the_signature():
    text = """
    func.func @f(%x: tensor<2xf32> {rlx.name = "x"}, %w: tensor<2xf32> {rlx.name = "w", rlx.param}) -> tensor<2xf32> {
      %0 = "rlx.mul"(%x, %w) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    }
    """
    exe = rlx_mlir.compile(text)
    assert [(s.name, s.is_param) for s in exe.signature.inputs] == [("x", False), ("w", True)]
    np.testing.assert_array_equal(exe(np.ones(2, np.float32), w=np.full(2, 3, np.float32)), [3, 3])


def test_boolean_tensors_through_data_movement():
    text = """
    func.func @f(%m: tensor<1x4xi1>) -> tensor<4x3xi1> {
      %0 = "rlx.expand"(%m) {shape = array<i64: 3, 4>} : (tensor<1x4xi1>) -> tensor<3x4xi1>
      %1 = "rlx.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<3x4xi1>) -> tensor<4x3xi1>
      return %1 : tensor<4x3xi1>
    }
    """
    m = np.array([[True, False, True, True]])
    np.testing.assert_array_equal(rlx_mlir.compile(text)(m), np.broadcast_to(m, (3, 4)).T)
