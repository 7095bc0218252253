"""Numerics of `rlx.scan`, `rlx.if`, `rlx.while` and `rlx.custom_fn`.

Each case is a module written as MLIR text: the bodies are private
`func.func`s named by the op's symbol attributes.  It is compiled with
`rlx_mlir.compile` on the default path (planned into LIR) and with
`plan=False`, and compared with a plain numpy loop written here.  Nothing from
the lowering is imported.

Tolerances: the scan / while bodies do the same f32 operations in the same order
as the numpy reference run in f32 (elementwise multiply / add, exact doubling),
so those results are compared exactly or to a few ulps; the RNN step uses
matmul and tanh, whose f32 accumulation order and tanh approximation differ
from numpy's, so it is compared to a float64 reference with rtol/atol 1e-5
(a few hundred f32 ulps, and tanh keeps |h| <= 1).  f16 carries are rounded to
f16 after every step in both the op and the numpy-in-f16 reference, so they
agree to one f16 ulp per step (rtol 1e-2 over at most 5 steps).
"""

from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest
from mlir import ir

import rlx_mlir
from rlx_mlir import compile as rlx_compile
from rlx_mlir.dialects import rlx

NP = {"f32": np.float32, "f16": np.float16}


@functools.lru_cache(maxsize=None)
def compiled(text: str, plan: bool):
    return rlx_compile(text, entry="f", plan=plan)


def run(text: str, *args, plan: bool = True):
    """Runs the compiled `f` on copies of `args`, and checks the inputs are left unchanged."""
    copies = [np.array(a, copy=True) for a in args]
    out = compiled(text, plan)(*copies)
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)
    return out


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def ttype(shape, dtype: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


PLANS = [pytest.param(True, id="lir"), pytest.param(False, id="direct")]


# --- scan ------------------------------------------------------------------------------


def scan_module(carry_shape, dtype, length, *, xs: bool, bcast: bool, trajectory: bool) -> str:
    """Body: carry * x_t (cumulative product) [+ bcast]; with neither, carry * carry."""
    c = ttype(carry_shape, dtype)
    x = ttype(carry_shape, dtype)
    xs_t = ttype([length, *carry_shape], dtype)
    params = [f"%c: {c}"] + ([f"%b: {c}"] if bcast else []) + ([f"%x: {x}"] if xs else [])
    lines = [f"func.func private @step({', '.join(params)}) -> {c} {{"]
    factor = "%x" if xs else "%c"
    lines.append(f'  %p = "rlx.mul"(%c, {factor}) : ({c}, {c}) -> {c}')
    last = "%p"
    if bcast:
        lines.append(f'  %q = "rlx.add"(%p, %b) : ({c}, {c}) -> {c}')
        last = "%q"
    lines.append(f"  return {last} : {c}\n}}")
    args = [f"%init: {c}"] + ([f"%bc: {c}"] if bcast else []) + ([f"%xs: {xs_t}"] if xs else [])
    operands = ["%init"] + (["%bc"] if bcast else []) + (["%xs"] if xs else [])
    types = [c] + ([c] if bcast else []) + ([xs_t] if xs else [])
    out = ttype([length, *carry_shape], dtype) if trajectory else c
    segments = f"array<i32: 1, {int(bcast)}, {int(xs)}>"
    lines.append(f"func.func @f({', '.join(args)}) -> {out} {{")
    lines.append(
        f'  %r = "rlx.scan"({", ".join(operands)}) {{body = @step, length = {length}, '
        f"save_trajectory = {str(trajectory).lower()}, num_checkpoints = 0, operandSegmentSizes = {segments}}}"
        f" : ({', '.join(types)}) -> {out}"
    )
    lines.append(f"  return %r : {out}\n}}")
    return "\n".join(lines)


def scan_reference(init, bcast, xs, length, trajectory):
    carry, rows = init, []
    for t in range(length):
        carry = carry * (xs[t] if xs is not None else carry)
        if bcast is not None:
            carry = carry + bcast
        rows.append(carry)
    return np.stack(rows) if trajectory else carry


SCAN_CASES = [
    # (carry shape, length, xs, bcast, trajectory)
    ((3,), 4, True, False, False),
    ((3,), 4, True, False, True),
    ((2, 3), 5, True, True, True),
    ((1, 4), 3, False, True, False),
    ((1,), 1, True, True, True),
    ((2, 1, 3), 3, False, False, True),
]


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("shape,length,xs,bcast,trajectory", SCAN_CASES)
def test_scan(shape, length, xs, bcast, trajectory, dtype, plan):
    rng = rng_for("scan", shape, length, xs, bcast, trajectory, dtype)
    np_t = NP[dtype]
    init = rng.uniform(0.5, 1.2, shape).astype(np_t)
    b = rng.uniform(-0.1, 0.1, shape).astype(np_t) if bcast else None
    x = rng.uniform(0.5, 1.5, (length, *shape)).astype(np_t) if xs else None
    text = scan_module(shape, dtype, length, xs=xs, bcast=bcast, trajectory=trajectory)
    out = run(text, *[a for a in (init, b, x) if a is not None], plan=plan)
    expected = scan_reference(init, b, x, length, trajectory)  # same operations in np_t
    assert out.shape == expected.shape and out.dtype == np_t
    # f32: identical operation order, exact up to ulps; f16: f16 ops compute in f32 and round once,
    # numpy's f16 ops do the same (IEEE single rounding), so the results also agree up to an ulp.
    rtol = 1e-6 if dtype == "f32" else 1e-2
    np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=0)


def rnn_module(hidden: int, length: int, trajectory: bool) -> str:
    h = ttype([1, hidden], "f32")
    w = ttype([hidden, hidden], "f32")
    xs = ttype([length, 1, hidden], "f32")
    out = ttype([length, 1, hidden], "f32") if trajectory else h
    return f"""
func.func private @rnn_step(%h: {h}, %w: {w}, %x: {h}) -> {h} {{
  %0 = "rlx.matmul"(%h, %w) : ({h}, {w}) -> {h}
  %1 = "rlx.add"(%0, %x) : ({h}, {h}) -> {h}
  %2 = "rlx.tanh"(%1) : ({h}) -> {h}
  return %2 : {h}
}}
func.func @f(%h0: {h}, %w: {w}, %xs: {xs}) -> {out} {{
  %r = "rlx.scan"(%h0, %w, %xs) {{body = @rnn_step, length = {length}, save_trajectory = {str(trajectory).lower()}, num_checkpoints = 2, operandSegmentSizes = array<i32: 1, 1, 1>}} : ({h}, {w}, {xs}) -> {out}
  return %r : {out}
}}
"""


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("hidden,length,trajectory", [(4, 6, True), (8, 3, False), (1, 5, True)])
def test_scan_rnn(hidden, length, trajectory, plan):
    """h_{t+1} = tanh(h_t W + x_t), RLX's weight layout ([K, N]); num_checkpoints does not change values."""
    rng = rng_for("rnn", hidden, length)
    h0 = rng.standard_normal((1, hidden)).astype(np.float32)
    w = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    xs = rng.standard_normal((length, 1, hidden)).astype(np.float32)
    out = run(rnn_module(hidden, length, trajectory), h0, w, xs, plan=plan)
    h, rows = h0.astype(np.float64), []
    for t in range(length):
        h = np.tanh(h @ w.astype(np.float64) + xs[t])
        rows.append(h)
    expected = np.stack(rows) if trajectory else h
    # f32 matmul of `hidden` terms plus tanh (~1 ulp), errors damped by tanh' <= 1 each step.
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


# --- if ----------------------------------------------------------------------------------


def if_module(shape, dtype: str, pred_shape) -> str:
    t = ttype(shape, dtype)
    p = ttype(pred_shape, "i1")
    return f"""
func.func private @then(%x: {t}) -> {t} {{
  %0 = "rlx.mul"(%x, %x) : ({t}, {t}) -> {t}
  return %0 : {t}
}}
func.func private @else(%x: {t}) -> {t} {{
  %0 = "rlx.neg"(%x) : ({t}) -> {t}
  return %0 : {t}
}}
func.func @f(%p: {p}, %x: {t}) -> {t} {{
  %r = "rlx.if"(%p, %x) {{then_branch = @then, else_branch = @else, operandSegmentSizes = array<i32: 1, 1>}} : ({p}, {t}) -> {t}
  return %r : {t}
}}
"""


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("shape,pred_shape", [((3,), ()), ((2, 3), (1,)), ((1, 1, 4), (1, 1))])
@pytest.mark.parametrize("flag", [True, False])
def test_if(shape, pred_shape, flag, dtype, plan):
    rng = rng_for("if", shape, dtype)
    x = rng.standard_normal(shape).astype(NP[dtype])
    pred = np.full(pred_shape, flag, dtype=np.bool_)
    out = run(if_module(shape, dtype, pred_shape), pred, x, plan=plan)
    expected = x * x if flag else -x  # one rounding each, as in the op: exact agreement
    np.testing.assert_array_equal(out, expected)


def test_if_without_arg():
    """Branches with no inputs: constants chosen by the predicate."""
    text = """
func.func private @one() -> tensor<2xf32> {
  %0 = "rlx.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func private @two() -> tensor<2xf32> {
  %0 = "rlx.constant"() {value = dense<[3.0, 4.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @f(%p: tensor<i1>) -> tensor<2xf32> {
  %r = "rlx.if"(%p) {then_branch = @one, else_branch = @two} : (tensor<i1>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
"""
    np.testing.assert_array_equal(run(text, np.array(True)), [1.0, 2.0])
    np.testing.assert_array_equal(run(text, np.array(False)), [3.0, 4.0])


# --- while ---------------------------------------------------------------------------------


def while_module(size: int, threshold: float, max_iterations) -> str:
    """Doubles the carry while its first element is <= threshold."""
    c = ttype([size], "f32")
    bound = "" if max_iterations is None else f", max_iterations = {max_iterations}"
    return f"""
func.func private @cond(%c: {c}) -> tensor<1xi1> {{
  %first = "rlx.narrow"(%c) {{axis = 0, start = 0, len = 1}} : ({c}) -> tensor<1xf32>
  %limit = "rlx.constant"() {{value = dense<{threshold}> : tensor<1xf32>}} : () -> tensor<1xf32>
  %0 = "rlx.compare"(%first, %limit) {{predicate = "le"}} : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xi1>
  return %0 : tensor<1xi1>
}}
func.func private @double(%c: {c}) -> {c} {{
  %0 = "rlx.add"(%c, %c) : ({c}, {c}) -> {c}
  return %0 : {c}
}}
func.func @f(%init: {c}) -> {c} {{
  %r = "rlx.while"(%init) {{cond = @cond, body = @double{bound}}} : ({c}) -> {c}
  return %r : {c}
}}
"""


def while_reference(init, threshold, max_iterations):
    carry, steps = init.copy(), 0
    while carry[0] <= threshold and (max_iterations is None or steps < max_iterations):
        carry = carry + carry
        steps += 1
    return carry


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize(
    "size,start,threshold,max_iterations",
    [(3, 1.0, 100.0, None), (1, 0.3, 5.0, None), (4, 1.0, 100.0, 3), (2, 1.0, 100.0, 0), (2, 200.0, 100.0, None),
     (3, 1.0, 10.0, 50)],
)
def test_while(size, start, threshold, max_iterations, plan):
    rng = rng_for("while", size)
    init = np.concatenate([[start], rng.uniform(-1, 1, size - 1)]).astype(np.float32)
    out = run(while_module(size, threshold, max_iterations), init, plan=plan)
    np.testing.assert_array_equal(out, while_reference(init, np.float32(threshold), max_iterations))  # doubling is exact


# --- custom_fn -------------------------------------------------------------------------------


CUSTOM_ONE = """
func.func private @softplus_ish(%x: {t}) -> {t} {{
  %0 = "rlx.mul"(%x, %x) : ({t}, {t}) -> {t}
  %1 = "rlx.add"(%0, %x) : ({t}, {t}) -> {t}
  return %1 : {t}
}}
func.func private @softplus_vjp(%x: {t}, %g: {t}) -> {t} {{
  return %g : {t}
}}
func.func @f(%x: {t}) -> {t} {{
  %r = "rlx.custom_fn"(%x) {{fwd = @softplus_ish, vjp = @softplus_vjp}} : ({t}) -> {t}
  return %r : {t}
}}
"""


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("shape", [(5,), (2, 3), (1, 4, 1)])
def test_custom_fn_one_result(shape, dtype, plan):
    x = rng_for("cf", shape).standard_normal(shape).astype(NP[dtype])
    out = run(CUSTOM_ONE.format(t=ttype(shape, dtype)), x, plan=plan)
    # x*x + x: the op rounds after each of the two ops, like numpy in the same dtype.
    np.testing.assert_array_equal(out, x * x + x)


def build_two_output_module(shape_a, shape_b):
    """fwd packs (x * 2, x + 1 reshaped) into one flat tensor; custom_fn_outputs unpacks them."""
    n = int(np.prod(shape_a))
    assert n == int(np.prod(shape_b))
    ctx = rlx_mlir.make_context()
    t_a = ttype(shape_a, "f32")
    text = f"""
func.func private @two(%x: {t_a}) -> tensor<{2 * n}xf32> {{
  %a = "rlx.add"(%x, %x) : ({t_a}, {t_a}) -> {t_a}
  %one = "rlx.constant"() {{value = dense<1.0> : {t_a}}} : () -> {t_a}
  %b = "rlx.add"(%x, %one) : ({t_a}, {t_a}) -> {t_a}
  %fa = "rlx.reshape"(%a) : ({t_a}) -> tensor<{n}xf32>
  %fb = "rlx.reshape"(%b) : ({t_a}) -> tensor<{n}xf32>
  %p = "rlx.concat"(%fa, %fb) {{axis = 0}} : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{2 * n}xf32>
  return %p : tensor<{2 * n}xf32>
}}
"""
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        from mlir.dialects import func

        arg_type = ir.RankedTensorType.get(list(shape_a), ir.F32Type.get())
        out_types = [ir.RankedTensorType.get(list(s), ir.F32Type.get()) for s in (shape_a, shape_b)]
        with ir.InsertionPoint(module.body):
            f = func.FuncOp("f", ir.FunctionType.get([arg_type], out_types))
            block = f.add_entry_block()
            with ir.InsertionPoint(block):
                packed = rlx.CustomFnOp.build(block.arguments[0], "two", module=module)
                outputs = rlx.custom_fn_outputs(packed, [shape_a, shape_b])
                func.ReturnOp(outputs)
        return str(module)


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("shape_a,shape_b", [((2, 3), (3, 2)), ((4,), (1, 4)), ((1, 2, 2), (4,))])
def test_custom_fn_two_results(shape_a, shape_b, plan):
    x = rng_for("cf2", shape_a).standard_normal(shape_a).astype(np.float32)
    a, b = run(build_two_output_module(shape_a, shape_b), x, plan=plan)
    np.testing.assert_array_equal(a, x + x)  # exact
    np.testing.assert_array_equal(b, (x + np.float32(1)).reshape(shape_b))  # one rounding, as numpy


# --- builders and verification -----------------------------------------------------------------


def test_scan_builder_infers_trajectory_type():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.parse(
            "func.func private @s(%c: tensor<2xf32>, %x: tensor<2xf32>) -> tensor<2xf32> {\n"
            "  return %c : tensor<2xf32>\n}\n"
            "func.func @f(%i: tensor<2xf32>, %xs: tensor<5x2xf32>) -> tensor<5x2xf32> {\n"
            "  return %xs : tensor<5x2xf32>\n}"
        )
        f = list(module.body.operations)[1]
        block = f.regions[0].blocks[0]
        with ir.InsertionPoint.at_block_begin(block):
            op = rlx.ScanOp(block.arguments[0], "s", 5, xs=block.arguments[1], save_trajectory=True)
        assert str(op.result.type) == "tensor<5x2xf32>"
        assert op.body == "s" and op.num_checkpoints == 0
        assert module.operation.verify()


BAD = [
    (
        """
func.func @f(%i: tensor<2xf32>) -> tensor<2xf32> {
  %r = "rlx.scan"(%i) {body = @missing, length = 3, save_trajectory = false, num_checkpoints = 0, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}""",
        "body @missing does not name a func.func in the enclosing module",
    ),
    (
        """
func.func private @s(%c: tensor<3xf32>) -> tensor<3xf32> {
  return %c : tensor<3xf32>
}
func.func @f(%i: tensor<2xf32>) -> tensor<2xf32> {
  %r = "rlx.scan"(%i) {body = @s, length = 3, save_trajectory = false, num_checkpoints = 0, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}""",
        "body @s has type (tensor<3xf32>) -> (tensor<3xf32>), expected (tensor<2xf32>) -> (tensor<2xf32>)",
    ),
]


@pytest.mark.parametrize("text,message", BAD)
def test_compile_rejects_bad_bodies(text, message):
    with pytest.raises(Exception) as info:
        rlx_compile(text, entry="f")
    assert message in str(info.value)


TWICE = """
func.func private @fwd(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %a = "rlx.add"(%x, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = "rlx.reshape"(%a) : (tensor<2x3xf32>) -> tensor<6xf32>
  return %b : tensor<6xf32>
}
func.func @f(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %y = "rlx.mul"(%x, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %p = "rlx.custom_fn"(%x) {fwd = @fwd} : (tensor<2x3xf32>) -> tensor<6xf32>
  %q = "rlx.custom_fn"(%y) {fwd = @fwd} : (tensor<2x3xf32>) -> tensor<6xf32>
  %r = "rlx.sub"(%p, %q) : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %r : tensor<6xf32>
}
"""


@pytest.mark.parametrize("plan", PLANS)
def test_custom_fn_called_twice(plan):
    """Two calls of one body (which has its own arena on the LIR path) keep both results apart."""
    x = rng_for("twice").standard_normal((2, 3)).astype(np.float32)
    out = run(TWICE, x, plan=plan)
    np.testing.assert_array_equal(out, ((x + x) - (x * x + x * x)).reshape(-1))  # each step rounds once


def test_if_build_reads_branch_result_type():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.parse(
            "func.func private @t(%x: tensor<2xf32>) -> tensor<1x2xf32> {\n"
            '  %0 = "rlx.reshape"(%x) : (tensor<2xf32>) -> tensor<1x2xf32>\n'
            "  return %0 : tensor<1x2xf32>\n}\n"
            "func.func @f(%p: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {\n"
            "  return %x : tensor<2xf32>\n}"
        )
        block = list(module.body.operations)[1].regions[0].blocks[0]
        with ir.InsertionPoint.at_block_begin(block):
            op = rlx.IfOp.build(block.arguments[0], "t", "t", arg=block.arguments[1], module=module)
        assert str(op.result.type) == "tensor<1x2xf32>"
        assert module.operation.verify()
