"""Rank 0 and zero-size dimensions, compiled and run (`rlx_mlir.compile`, default and `plan=False`).

A transpose of a scalar is the identity (the fuzzer's seed 20304 aborted the process inside MLIR);
a tensor with a zero-size dimension is a valid operand and result of every op whose verifier accepts
it (seed 5117: a concat of two empty tensors was rejected by MLIR's slice verifier).  References are
plain numpy, written from dialect/rlx.md: zero-element results compare by shape and dtype, ops that
reduce over nothing give their identity.  Programs that could abort the process on a regression
compile with `isolate=True`, so that they fail as a CompileError instead of ending pytest.
"""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import op_module, rng_for, tensor_type

import rlx_mlir
from rlx_mlir import CompileError, GraphModule

NUMPY = {"f32": np.float32, "f16": np.float16, "i64": np.int64, "i1": np.bool_}
PLANS = [pytest.param(True, id="plan"), pytest.param(False, id="plan=False")]


def run(text: str, inputs, plan: bool, isolate: bool = False):
    return rlx_mlir.compile(text, "f", plan=plan, isolate=isolate)(*inputs)


def arrays(key, operands):
    rng = rng_for(*key)
    out = []
    for shape, dtype in operands:
        if dtype == "i64":
            out.append(rng.integers(-1, 4, size=shape).astype(np.int64))
        else:
            out.append(np.asarray(rng.integers(-16, 16, size=shape) / 4.0).astype(NUMPY[dtype]))
    return out


def check(actual, expected) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual, expected)
    np.testing.assert_array_equal(actual, expected)


# --- rank 0 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("plan", PLANS)
def test_transpose_of_a_scalar_is_the_scalar(dtype, plan):
    text = op_module("transpose", [((), dtype)], ((), dtype), "perm = array<i64>")
    x = np.array(-0.5, NUMPY[dtype])
    check(run(text, [x], plan, isolate=True), x)


@pytest.mark.parametrize("plan", PLANS)
def test_scalar_transpose_inside_a_program(plan):
    """The transposed scalar feeds arithmetic and a broadcast: no copy is shared wrongly."""
    text = """
func.func @f(%x: tensor<f16>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<f16>) {
  %t = "rlx.transpose"(%x) {perm = array<i64>} : (tensor<f16>) -> tensor<f16>
  %c = "rlx.cast"(%t) : (tensor<f16>) -> tensor<f32>
  %s = "rlx.mul"(%c, %y) : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %n = "rlx.neg"(%t) : (tensor<f16>) -> tensor<f16>
  return %s, %n : tensor<3xf32>, tensor<f16>
}
"""
    x, y = np.array(1.5, np.float16), np.array([1.0, -2.0, 0.25], np.float32)
    scaled, negated = run(text, [x, y], plan, isolate=True)
    check(scaled, np.float32(1.5) * y)
    check(negated, np.array(-1.5, np.float16))


@pytest.mark.parametrize(
    "op, operands, result, attrs, reference",
    [
        ("expand", [((), "f32")], ((3,), "f32"), "shape = array<i64: 3>", lambda x: np.broadcast_to(x, (3,))),
        ("expand", [((), "f32")], ((), "f32"), "shape = array<i64>", lambda x: x),
        ("reshape", [((), "f16")], ((1, 1), "f16"), "", lambda x: x.reshape(1, 1)),
        ("reshape", [((1, 1), "f32")], ((), "f32"), "", lambda x: x.reshape(())),
        ("gather", [((4,), "f32"), ((), "i64")], ((), "f32"), "axis = 0 : i64",
         lambda t, i: np.take(t, i, axis=0, mode="clip")),
        ("cast", [((), "f32")], ((), "f16"), "", lambda x: x.astype(np.float16)),
    ],
    ids=["expand-to-3", "expand-to-scalar", "reshape-up", "reshape-down", "gather-scalar-index", "cast"],
)
@pytest.mark.parametrize("plan", PLANS)
def test_rank0_operands(op, operands, result, attrs, reference, plan):
    inputs = arrays((op, operands), operands)
    check(run(op_module(op, operands, result, attrs), inputs, plan), np.asarray(reference(*inputs)))


@pytest.mark.parametrize(
    "op, attrs, message",
    [
        ("softmax", "axis = 0 : i64", "axis 0 is out of range for rank 0 input []"),
        ("cumsum", "axis = 0 : i64, exclusive = false", "axis 0 is out of range for rank 0 input []"),
        ("narrow", "axis = 0 : i64, start = 0 : i64, len = 0 : i64", "axis 0 is out of range for rank 0 input []"),
        ("reduce", 'kind = "sum", axes = array<i64: 0>, keep_dim = false', "axis 0 is out of range for rank 0"),
    ],
)
def test_axis_ops_reject_a_scalar(op, attrs, message):
    with pytest.raises(CompileError, match=f"'rlx.{op}' op {message}".replace("[", r"\[").replace("]", r"\]")):
        rlx_mlir.compile(op_module(op, [((), "f32")], ((), "f32"), attrs), "f")


# --- zero-size dimensions -------------------------------------------------------------------

SAMPLE = "top_k = 0 : i64, top_p = 1.0 : f32, temperature = 1.0 : f32, seed = 0 : i64"


def case_id(value) -> str:
    """`concat`, `0x1x3,0x1x3` (operand shapes), `to-0x1x6` (result), `axis=-1` (attributes): a readable id."""
    if isinstance(value, list):
        return ",".join("x".join(map(str, shape)) or "scalar" for shape, _ in value)
    if isinstance(value, tuple):
        return "to-" + ("x".join(map(str, value[0])) or "scalar")
    if isinstance(value, str):
        return value.replace(" : i64", "").replace(" ", "").replace("array<i64:", "[").replace(">", "]")
    return "ref"



@pytest.mark.parametrize(
    "op, operands, result, attrs, reference",
    [
        # seed 5117: two empty tensors joined along a non-empty axis
        ("concat", [((0, 1, 3), "f32"), ((0, 1, 3), "f32")], ((0, 1, 6), "f32"), "axis = -1 : i64",
         lambda a, b: np.concatenate([a, b], axis=-1)),
        ("concat", [((0,), "f32"), ((0,), "f32")], ((0,), "f32"), "axis = 0 : i64",
         lambda a, b: np.concatenate([a, b])),
        ("concat", [((2, 3), "f32"), ((0, 3), "f32")], ((2, 3), "f32"), "axis = 0 : i64",
         lambda a, b: np.concatenate([a, b])),
        ("concat", [((4, 0), "f16"), ((4, 2), "f16")], ((4, 2), "f16"), "axis = 1 : i64",
         lambda a, b: np.concatenate([a, b], axis=1)),
        ("narrow", [((3, 0), "f32")], ((2, 0), "f32"), "axis = 0 : i64, start = 1 : i64, len = 2 : i64",
         lambda x: x[1:3]),
        ("narrow", [((4, 5), "f32")], ((4, 0), "f32"), "axis = 1 : i64, start = 5 : i64, len = 0 : i64",
         lambda x: x[:, 5:5]),
        ("transpose", [((0, 3), "f32")], ((3, 0), "f32"), "perm = array<i64: 1, 0>", lambda x: x.T),
        ("reshape", [((0, 3), "f32")], ((3, 0), "f32"), "", lambda x: x.reshape(3, 0)),
        ("expand", [((1,), "f32")], ((0,), "f32"), "shape = array<i64: 0>", lambda x: np.broadcast_to(x, (0,))),
        ("expand", [((), "f32")], ((2, 0), "f32"), "shape = array<i64: 2, 0>", lambda x: np.broadcast_to(x, (2, 0))),
        ("gather", [((3, 2), "f32"), ((0,), "i64")], ((0, 2), "f32"), "axis = 0 : i64",
         lambda t, i: np.take(t, i, axis=0, mode="clip")),
        ("matmul", [((0, 4), "f32"), ((4, 5), "f32")], ((0, 5), "f32"), "", np.matmul),
        ("matmul", [((3, 0), "f32"), ((0, 5), "f32")], ((3, 5), "f32"), "", np.matmul),  # K = 0: zeros
        ("matmul", [((2, 3, 0), "f16"), ((0, 5), "f16")], ((2, 3, 5), "f16"), "", np.matmul),
        ("softmax", [((3, 0), "f32")], ((3, 0), "f32"), "axis = 1 : i64", lambda x: x),
        ("cumsum", [((0, 3), "f32")], ((0, 3), "f32"), "axis = 0 : i64, exclusive = false",
         lambda x: np.cumsum(x, axis=0)),
        ("add", [((0, 3), "f32"), ((3,), "f32")], ((0, 3), "f32"), "", np.add),
        ("topk", [((0, 5), "f32")], ((0, 2), "i64"), "k = 2 : i64", lambda x: np.zeros((0, 2), np.int64)),
        ("sample", [((0, 5), "f32")], ((0,), "i64"), SAMPLE, lambda x: np.zeros((0,), np.int64)),
    ],
    ids=case_id,
)
@pytest.mark.parametrize("plan", PLANS)
def test_zero_size(op, operands, result, attrs, reference, plan):
    inputs = arrays((op, operands), operands)
    check(run(op_module(op, operands, result, attrs), inputs, plan), np.asarray(reference(*inputs)))


@pytest.mark.parametrize(
    "op, operands, result, attrs, reference",
    [
        ("matmul", [((128, 0), "f32"), ((0, 256), "f32")], ((128, 256), "f32"), "", np.matmul),  # K = 0: zeros
        ("reduce", [((256, 0, 256), "f32")], ((256, 256), "f32"), 'kind = "sum", axes = array<i64: 1>, keep_dim = false',
         lambda x: x.sum(axis=1)),
    ],
    ids=case_id,
)
@pytest.mark.parametrize("plan", PLANS)
def test_zero_size_loop_in_an_op_large_enough_to_split(op, operands, result, attrs, reference, plan):
    """A result large enough to be split across threads, computed by a loop with no iterations:
    MLIR's tiling aborted the process ('expected as many ivs as non-zero sizes')."""
    inputs = arrays((op, operands), operands)
    text = op_module(op, operands, result, attrs)
    check(run(text, inputs, plan, isolate=True), np.asarray(reference(*inputs)))


@pytest.mark.parametrize("scheme, activations", [("q4_k", None), ("q4_k", "q8"), ("q8_0", None), ("q6_k", None)])
@pytest.mark.parametrize("plan", PLANS)
def test_dequant_matmul_over_k_0_is_zeros(scheme, activations, plan):
    """`x [300, 0]` times a packed weight of 40 rows of no bytes (K = 0) is zeros, as `rlx.matmul`'s
    (and `rlx.dequant_grouped_matmul`'s) K = 0: the GGUF kernel's K chunking failed on zero blocks
    ('internal error in pass ...: max() arg is an empty sequence')."""
    g = GraphModule.mir("f")
    x, w = g.input("x", (300, 0)), g.input("w", (40, 0), "u8")
    g.set_outputs(g.dequant_matmul(x, w, scheme, activations=activations))
    out = g.compile(plan=plan, threads=2, cache=False)(np.zeros((300, 0), np.float32), np.zeros((40, 0), np.uint8))
    check(out, np.zeros((300, 40), np.float32))


# Reducing an empty axis gives the kind's identity (dialect/rlx.md, rlx.reduce).
IDENTITY = {"sum": 0.0, "mean": np.nan, "max": -np.inf, "min": np.inf, "prod": 1.0}


@pytest.mark.parametrize("kind", list(IDENTITY))
@pytest.mark.parametrize("plan", PLANS)
def test_reduce_over_an_empty_axis_is_the_identity(kind, plan):
    text = op_module("reduce", [((3, 0), "f32")], ((3,), "f32"), f'kind = "{kind}", axes = array<i64: 1>, keep_dim = false')
    check(run(text, [np.zeros((3, 0), np.float32)], plan), np.full(3, IDENTITY[kind], np.float32))


@pytest.mark.parametrize("plan", PLANS)
def test_reduce_f16_over_every_axis_of_an_empty_tensor(plan):
    text = op_module("reduce", [((0, 2), "f16")], ((1, 1), "f16"), 'kind = "prod", axes = array<i64: 0, 1>, keep_dim = true')
    check(run(text, [np.zeros((0, 2), np.float16)], plan), np.ones((1, 1), np.float16))


@pytest.mark.parametrize("plan", PLANS)
def test_empty_intermediates_feed_a_non_empty_result(plan):
    """Zero-element values inside a program (concat, narrow, a sum over them) next to real data."""
    text = """
func.func @f(%a: tensor<0x3xf32>, %b: tensor<2x3xf32>, %y: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<0x6xf32>) {
  %e = "rlx.narrow"(%b) {axis = 0 : i64, start = 2 : i64, len = 0 : i64} : (tensor<2x3xf32>) -> tensor<0x3xf32>
  %c = "rlx.concat"(%e, %a) {axis = 0 : i64} : (tensor<0x3xf32>, tensor<0x3xf32>) -> tensor<0x3xf32>
  %j = "rlx.concat"(%c, %b) {axis = 0 : i64} : (tensor<0x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = "rlx.mul"(%j, %j) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = "rlx.reduce"(%c) {kind = "sum", axes = array<i64: 0>, keep_dim = false} : (tensor<0x3xf32>) -> tensor<3xf32>
  %t = "rlx.add"(%s, %y) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %w = "rlx.concat"(%a, %c) {axis = 1 : i64} : (tensor<0x3xf32>, tensor<0x3xf32>) -> tensor<0x6xf32>
  return %d, %t, %w : tensor<2x3xf32>, tensor<3xf32>, tensor<0x6xf32>
}
"""
    a, b, y = arrays(("program",), [((0, 3), "f32"), ((2, 3), "f32"), ((3,), "f32")])
    squared, shifted, wide = run(text, [a, b, y], plan)
    check(squared, b * b)
    check(shifted, y)  # the sum over no rows is 0
    check(wide, np.zeros((0, 6), np.float32))


@pytest.mark.parametrize("plan", PLANS)
def test_gated_delta_net_over_no_steps_keeps_the_state(plan):
    """s = 0: no output rows, and the final state is the initial one (no update ran)."""
    qkv, gb, state = ((2, 0, 3, 4), "f32"), ((2, 0, 3), "f32"), ((2, 3, 4, 4), "f32")
    types = [tensor_type(*t) for t in (qkv, qkv, qkv, gb, gb, state)]
    out_types = f"{tensor_type(*qkv)}, {tensor_type(*state)}"
    text = f"""
func.func @f(%q: {types[0]}, %k: {types[1]}, %v: {types[2]}, %g: {types[3]}, %b: {types[4]}, %s: {types[5]}) -> ({out_types}) {{
  %0:2 = "rlx.gated_delta_net"(%q, %k, %v, %g, %b, %s) {{state_size = 4}} : ({", ".join(types)}) -> ({out_types})
  return %0#0, %0#1 : {out_types}
}}
"""
    inputs = arrays(("gdn",), [qkv, qkv, qkv, gb, gb, state])
    out, final = run(text, inputs, plan)
    check(out, np.zeros((2, 0, 3, 4), np.float32))
    check(final, inputs[-1])


@pytest.mark.parametrize(
    "view, shape",
    [
        ('"rlx.transpose"(%0) {perm = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>', (4,)),
        ('"rlx.transpose"(%0) {perm = array<i64>} : (tensor<f32>) -> tensor<f32>', ()),
        ('"rlx.concat"(%0, %e) {axis = 0 : i64} : (tensor<4xf32>, tensor<0xf32>) -> tensor<4xf32>', (4,)),
        ('"rlx.concat"(%e, %0) {axis = 0 : i64} : (tensor<0xf32>, tensor<4xf32>) -> tensor<4xf32>', (4,)),
    ],
    ids=["identity-transpose", "scalar-transpose", "concat-empty-rhs", "concat-empty-lhs"],
)
@pytest.mark.parametrize("plan", PLANS)
def test_a_result_equal_to_its_operand_survives_the_operands_slot_reuse(view, shape, plan):
    """An identity transpose or a concat with an empty operand, read after its operand's last use,
    while a later value may take the operand's arena slot: the result must not be the operand."""
    t = tensor_type(shape, "f32")
    text = f"""
func.func @f(%x: {t}, %e: tensor<0xf32>, %s: tensor<f32>) -> {t} {{
  %0 = "rlx.neg"(%x) : ({t}) -> {t}
  %1 = {view}
  %2 = "rlx.neg"(%s) : (tensor<f32>) -> tensor<f32>
  %3 = "rlx.add"(%1, %2) : ({t}, tensor<f32>) -> {t}
  return %3 : {t}
}}
"""
    x = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape)
    check(run(text, [x, np.zeros(0, np.float32), np.array(10, np.float32)], plan), -x - np.float32(10))


@pytest.mark.parametrize(
    "view",
    [
        '"rlx.transpose"(%0) {perm = array<i64: 0>} : (tensor<4xf16>) -> tensor<4xf16>',
        '"rlx.concat"(%e, %0) {axis = 0 : i64} : (tensor<0xf16>, tensor<4xf16>) -> tensor<4xf16>',
    ],
    ids=["identity-transpose", "concat-empty-lhs"],
)
@pytest.mark.parametrize("plan", PLANS)
def test_a_result_equal_to_its_operand_returned_with_it(view, plan):
    """Both returned: two results, two buffers (one buffer returned twice crashed LLVM 22)."""
    text = f"""
func.func @f(%x: tensor<4xf32>, %e: tensor<0xf16>) -> (tensor<4xf16>, tensor<4xf16>) {{
  %0 = "rlx.cast"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  %1 = {view}
  return %1, %0 : tensor<4xf16>, tensor<4xf16>
}}
"""
    x = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    result, operand = run(text, [x, np.zeros(0, np.float16)], plan, isolate=True)
    check(result, x.astype(np.float16))
    check(operand, x.astype(np.float16))


def test_sample_rejects_an_empty_vocabulary():
    text = op_module("sample", [((2, 0), "f32")], ((2,), "i64"), SAMPLE)
    with pytest.raises(CompileError, match=r"'rlx.sample' op cannot draw a token from an empty vocabulary: "
                                           r"logits \[2, 0\] has V = 0"):
        rlx_mlir.compile(text, "f")
