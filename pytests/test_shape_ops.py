"""Data-movement ops: reshape's -1 builder, narrow, concat, expand, gather.

Numerics compare the JIT-compiled one-op module (`rlx_mlir.compile`) with an
independent plain-numpy reference.  These ops only move elements, so every
comparison is exact (`assert_array_equal`), for f32 and f16 alike: no rounding
happens anywhere.  Builder and verifier messages are checked through the op
classes; nothing from the lowering is imported.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import func
from op_cases import compiled, shape_id
from op_cases import mlir_tensor as _tensor
from op_cases import op_module as one_op
from op_cases import placeholder as _placeholder

import rlx_mlir
from rlx_mlir.dialects import rlx

NUMPY = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64}


def data(key, shape, dtype: str) -> np.ndarray:
    """Deterministic distinct-looking values (exactly representable in f16)."""
    rng = np.random.default_rng(zlib.crc32(repr(key).encode()))
    return (rng.integers(-512, 512, size=shape) / 8.0).astype(NUMPY[dtype])


def _check_exact(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


# --- reshape: the -1 builder ---------------------------------------------------------------


@pytest.mark.parametrize(
    "source, shape, expected",
    [
        ((2, 3, 4), (-1, 4), (6, 4)),
        ((2, 3, 4), (4, -1), (4, 6)),
        ((6,), (2, -1, 3), (2, 1, 3)),
        ((1,), (-1,), (1,)),
        ((0, 3), (-1, 3), (0, 3)),  # zero elements, but the rest of the shape is non-empty: 0
        ((2, 3), (3, 2), (3, 2)),  # no -1 at all
    ],
)
def test_reshape_to_shape_resolves_minus_one(source, shape, expected):
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            op = rlx.ReshapeOp.to_shape(_placeholder(_tensor(source)), shape)
        assert op.result.type == _tensor(expected)
        assert isinstance(op, rlx.ReshapeOp)


@pytest.mark.parametrize(
    "source, shape, message",
    [
        ((2, 3), (-1, -1), r"shape \[-1, -1\] has more than one -1 dimension"),
        ((2, 3), (4, -1), r"cannot reshape \[2, 3\] \(6 elements\) to \[4, -1\]: 6 is not a multiple of 4"),
        ((2, 3), (7,), r"cannot reshape \[2, 3\] \(6 elements\) to \[7\] \(7 elements\)"),
        ((0, 3), (0, -1), r"cannot resolve -1 in \[0, -1\]: the other dimensions have zero elements"),
        ((2, 3), (-2, 3), r"shape \[-2, 3\] has a negative dimension -2"),
    ],
)
def test_reshape_to_shape_errors(source, shape, message):
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            with pytest.raises(ValueError, match=r"'rlx.reshape' op " + message):
                rlx.ReshapeOp.to_shape(_placeholder(_tensor(source)), shape)


def test_reshape_to_shape_compiles_and_runs():
    """A function built in Python with `to_shape` goes through the JIT like parsed text."""
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):

            @func.FuncOp.from_py_func(_tensor((2, 3, 4)), name="f")
            def f(x):
                return rlx.ReshapeOp.to_shape(x, [3, -1]).result

        text = str(module)
    x = data("reshape", (2, 3, 4), "f32")
    _check_exact(compiled(text)(x), x.reshape(3, -1))


# --- narrow ---------------------------------------------------------------------------------------

NARROW_CASES = [
    # shape, axis, start, len, dtype
    ((5,), 0, 1, 3, "f32"),
    ((4, 5), -1, 3, 2, "f32"),  # negative axis, slice reaching the end
    ((2, 1, 6), 1, 0, 1, "f32"),  # the whole size-1 axis
    ((3, 4, 2), -3, 2, 1, "f32"),  # a size-1 slice of the first axis
    ((4, 7), 0, 0, 4, "f16"),  # the whole tensor
    ((2, 9, 3), -2, 4, 5, "f16"),
    ((2, 5), -1, 5, 0, "f32"),  # empty slice at the very end (torch.narrow allows it)
]


@pytest.mark.parametrize(
    "shape, axis, start, length, dtype",
    [pytest.param(*c, id=f"{shape_id(c[0])}-axis{c[1]}-{c[2]}+{c[3]}-{c[4]}") for c in NARROW_CASES],
)
def test_narrow(shape, axis, start, length, dtype):
    x = data(("narrow", shape, axis), shape, dtype)
    out_shape = list(shape)
    out_shape[axis] = length
    attrs = f"axis = {axis} : i64, start = {start} : i64, len = {length} : i64"
    exe = compiled(one_op("narrow", [(shape, dtype)], (out_shape, dtype), attrs))
    expected = np.take(x, np.arange(start, start + length), axis=axis)
    _check_exact(exe(x), expected)


def test_narrow_builder_and_messages():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            x = _placeholder(_tensor((4, 5)))
            op = rlx.NarrowOp(x, -1, 1, 3)
            assert op.result.type == _tensor((4, 3))
            assert (op.axis, op.start, op.len) == (-1, 1, 3)
            with pytest.raises(ValueError, match="start 3 \\+ len 4 exceeds dimension 5 of axis 1"):
                rlx.NarrowOp(x, 1, 3, 4)
            with pytest.raises(ValueError, match=r"axis 2 is out of range for rank 2 input \[4, 5\]"):
                rlx.NarrowOp(x, 2, 0, 1)


# --- concat ---------------------------------------------------------------------------------------

CONCAT_CASES = [
    # input shapes, axis, dtype
    ([(2, 3), (2, 3)], 1, "f32"),
    ([(2, 3), (2, 1)], -1, "f32"),  # different sizes along the axis
    ([(2, 3), (5, 3)], -2, "f32"),
    ([(2, 1, 3), (2, 4, 3)], 1, "f32"),  # a size-1 input along the axis
    ([(4,), (1,)], -1, "f32"),
    ([(1, 5), (1, 2)], -1, "f16"),
    ([(3, 2, 2), (3, 2, 1)], 2, "f16"),
]


@pytest.mark.parametrize(
    "shapes, axis, dtype",
    [pytest.param(*c, id=f"{shape_id(c[0][0])}+{shape_id(c[0][1])}-axis{c[1]}-{c[2]}") for c in CONCAT_CASES],
)
def test_concat(shapes, axis, dtype):
    inputs = [data(("concat", i, s, axis), s, dtype) for i, s in enumerate(shapes)]
    expected = np.concatenate(inputs, axis=axis)
    exe = compiled(one_op("concat", [(s, dtype) for s in shapes], (expected.shape, dtype), f"axis = {axis} : i64"))
    _check_exact(exe(*inputs), expected)


def test_concat_of_three_inputs_chains():
    shapes = [(2, 3), (2, 1), (2, 2)]
    inputs = [data(("concat-chain", i), s, "f32") for i, s in enumerate(shapes)]
    text = """
    func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>, %c: tensor<2x2xf32>) -> tensor<2x6xf32> {
      %0 = "rlx.concat"(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
      %1 = "rlx.concat"(%0, %c) {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
      return %1 : tensor<2x6xf32>
    }
    """
    _check_exact(compiled(text)(*inputs), np.concatenate(inputs, axis=1))


def test_concat_builder_infers_and_checks_shapes():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            a = _placeholder(_tensor((2, 3)))
            b = _placeholder(_tensor((2, 1)))
            c = _placeholder(_tensor((2, 2)))
            assert rlx.ConcatOp.of([a, b, c], 1).type == _tensor((2, 6))
            assert rlx.ConcatOp.of([a], -1) == a
            with pytest.raises(ValueError, match=r"rhs \[2, 1\] differs from lhs \[2, 3\] in dimension 1, "
                               r"which is not the concatenation axis 0"):
                rlx.ConcatOp(a, b, 0)
            with pytest.raises(ValueError, match=r"rhs \[3\] has rank 1, but lhs \[2, 3\] has rank 2"):
                rlx.ConcatOp(a, _placeholder(_tensor((3,))), 0)
            with pytest.raises(ValueError, match="requires operands of one element type, got f32, f16"):
                rlx.ConcatOp(a, _placeholder(_tensor((2, 3), "f16")), 0)
            with pytest.raises(ValueError, match="needs at least one input"):
                rlx.ConcatOp.of([], 0)


# --- expand ---------------------------------------------------------------------------------------

EXPAND_CASES = [
    # input shape, target shape, dtype
    ((3,), (2, 3), "f32"),  # a new leading dimension
    ((1,), (4,), "f32"),  # a size-1 dimension stretches
    ((2, 1, 3), (4, 2, 5, 3), "f32"),  # both, in the middle
    ((), (2, 2), "f32"),  # rank 0
    ((1, 1), (1, 3), "f32"),  # a kept size-1 dimension next to a stretched one
    ((1, 3, 1), (2, 3, 4), "f32"),  # stretched dimensions on both sides of a kept one
    ((4, 1), (4, 1), "f32"),  # nothing to do
    ((5, 1), (3, 5, 2), "f16"),
    ((1,), (2, 1, 3), "f16"),
]


@pytest.mark.parametrize(
    "shape, target, dtype",
    [pytest.param(*c, id=f"{shape_id(c[0])}-to-{shape_id(c[1])}-{c[2]}") for c in EXPAND_CASES],
)
def test_expand(shape, target, dtype):
    x = data(("expand", shape, target), shape, dtype)
    attrs = f"shape = array<i64: {', '.join(map(str, target))}>"
    exe = compiled(one_op("expand", [(shape, dtype)], (target, dtype), attrs))
    _check_exact(exe(x), np.broadcast_to(x, target))


def test_expand_builder_messages():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            x = _placeholder(_tensor((2, 1)))
            assert rlx.ExpandOp(x, [3, 2, 4]).result.type == _tensor((3, 2, 4))
            with pytest.raises(ValueError, match=r"input dimension 0 has size 2, target size 3"):
                rlx.ExpandOp(x, [3, 4])
            with pytest.raises(ValueError, match=r"cannot expand rank 2 input \[2, 1\] to the lower rank 1"):
                rlx.ExpandOp(x, [2])


# --- gather ---------------------------------------------------------------------------------------

GATHER_CASES = [
    # table shape, table dtype, indices shape, index dtype, axis
    ((10, 4), "f32", (6,), "i32", 0),  # embedding lookup
    ((10, 4), "f32", (2, 3), "i64", 0),  # a 2-D batch of token ids
    ((3, 7, 2), "f32", (4,), "i64", 1),  # middle axis
    ((3, 7, 2), "f32", (2, 2), "i32", -2),  # negative axis, 2-D indices in the middle
    ((2, 5), "f32", (), "i64", -1),  # a rank-0 index removes the axis
    ((1, 3), "f32", (5,), "i32", 0),  # size-1 axis: every index clamps to 0
    ((6, 1, 4), "f16", (3, 1), "i32", 0),
    ((4, 6), "f16", (2, 5), "i64", 1),
    ((8, 3), "i32", (4,), "i64", 0),  # integer table: any element type
]


@pytest.mark.parametrize(
    "table_shape, table_dtype, index_shape, index_dtype, axis",
    [
        pytest.param(*c, id=f"{shape_id(c[0])}{c[1]}-idx{shape_id(c[2])}{c[3]}-axis{c[4]}")
        for c in GATHER_CASES
    ],
)
def test_gather(table_shape, table_dtype, index_shape, index_dtype, axis):
    key = ("gather", table_shape, index_shape, axis)
    table = data(key, table_shape, table_dtype)
    n = table_shape[axis]
    rng = np.random.default_rng(zlib.crc32(repr(key).encode()))
    # In range, plus out-of-range values on both sides (clamped).
    indices = rng.integers(-3, n + 3, size=index_shape).astype(NUMPY[index_dtype])
    expected = np.take(table, indices, axis=axis, mode="clip")
    exe = compiled(
        one_op(
            "gather",
            [(table_shape, table_dtype), (index_shape, index_dtype)],
            (expected.shape, table_dtype),
            f"axis = {axis} : i64",
        )
    )
    _check_exact(exe(table, indices), expected)


@pytest.mark.parametrize("index_dtype", ["i32", "i64"])
def test_gather_clamps_extreme_indices(index_dtype):
    """The extremes of the index type read entry 0 and entry n-1, never outside the table."""
    info = np.iinfo(NUMPY[index_dtype])
    table = data(("gather-clamp",), (5, 3), "f32")
    indices = np.array([info.min, -1, 0, 4, 5, info.max], NUMPY[index_dtype])
    exe = compiled(
        one_op("gather", [((5, 3), "f32"), ((6,), index_dtype)], ((6, 3), "f32"), "axis = 0 : i64")
    )
    _check_exact(exe(table, indices), table[[0, 0, 0, 4, 4, 4]])


def test_gather_builder_infers_numpy_take_shape():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            table = _placeholder(_tensor((3, 7, 2), "bf16"))
            indices = _placeholder(_tensor((4, 5), "i32"))
            assert rlx.GatherOp(table, indices, 1).result.type == _tensor((3, 4, 5, 2), "bf16")
            assert rlx.GatherOp(table, indices, -1).result.type == _tensor((3, 7, 4, 5), "bf16")
            with pytest.raises(ValueError, match=r"axis 3 is out of range for rank 3 table \[3, 7, 2\]"):
                rlx.GatherOp(table, indices, 3)
