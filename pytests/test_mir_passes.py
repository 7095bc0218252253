"""MIR clean-up and fusion passes: numerics unchanged, exact constant folding, CSE, the fusion report.

Each pass runs on a small model; the module is JIT-compiled before and after
and both are called on the same random inputs.  Constant folding is compared
bit for bit with what the JIT computes from the same values at run time.
"""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

import rlx_mlir
from rlx_mlir.passmanager.pipeline import run_pipeline
from rlx_mlir.transforms.mir import fusion_report


def _transform(text: str, pipeline: str) -> str:
    with rlx_mlir.make_context():
        module = ir.Module.parse(text)
        run_pipeline(module.operation, f"builtin.module({pipeline})")
        return str(module)


def _op_names(text: str) -> list[str]:
    names: list[str] = []
    with rlx_mlir.make_context():
        module = ir.Module.parse(text)

        def visit(op):
            if op.name.startswith("rlx."):
                names.append(op.name)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
    return names


def _run_both(before: str, after: str, entry: str, seed: int = 0):
    old = rlx_mlir.compile(before, entry=entry)
    new = rlx_mlir.compile(after, entry=entry)
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(spec.shape).astype(spec.dtype) for spec in old.signature.inputs]
    results = old(*args), new(*args)
    return [r if isinstance(r, tuple) else (r,) for r in results]


# f32 models: the fused ops accumulate each product in the same order as the ops they
# replace and apply the same scalar formulas, so results agree to within an ulp or two
# of f32 (in practice they are bit-identical); 1e-6 relative and absolute on values of
# order 1 leaves room for a reordered rounding without hiding a wrong rewrite.
RTOL = ATOL = 1e-6

MLP = """
func.func @mlp(%x: tensor<2x4x8xf32>, %w1: tensor<8x16xf32>, %b1: tensor<16xf32>,
               %w2: tensor<16x8xf32>, %b2: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %0 = "rlx.matmul"(%x, %w1) : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %1 = "rlx.add"(%b1, %0) : (tensor<16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %2 = "rlx.gelu"(%1) : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %3 = "rlx.matmul"(%2, %w2) : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %4 = "rlx.add"(%3, %b2) : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %5 = "rlx.tanh"(%4) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %5 : tensor<2x4x8xf32>
}
"""

BLOCK = """
func.func @block(%x: tensor<2x4x8xf32>, %r: tensor<2x4x8xf32>, %wq: tensor<8x8xf32>, %wk: tensor<8x4xf32>,
                 %wv: tensor<8x4xf32>, %wu: tensor<8x16xf32>, %wg: tensor<8x16xf32>, %bias: tensor<8xf32>,
                 %g: tensor<8xf32>, %be: tensor<8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x16xf32>, tensor<2x4x8xf32>) {
  %q = "rlx.matmul"(%x, %wq) : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k = "rlx.matmul"(%x, %wk) : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
  %v = "rlx.matmul"(%x, %wv) : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
  %h = "rlx.add"(%q, %r) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %hb = "rlx.add"(%bias, %h) : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %n = "rlx.rms_norm"(%hb, %g, %be) {axis = -1 : i64, eps = 1.0e-5 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %u = "rlx.matmul"(%n, %wu) : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %gt = "rlx.matmul"(%n, %wg) : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %s = "rlx.silu"(%gt) : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %m = "rlx.mul"(%s, %u) : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %l = "rlx.layer_norm"(%h, %g, %be) {axis = 2 : i64, eps = 1.0e-5 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %n, %k, %v, %m, %l : tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x16xf32>, tensor<2x4x8xf32>
}
"""


@pytest.mark.parametrize(
    "text, entry, pipeline, expected",
    [
        (MLP, "mlp", "rlx-fuse-matmul-bias-act", ["rlx.fused_matmul_bias_act"] * 2),
        (BLOCK, "block", "rlx-fuse-swiglu", ["rlx.fused_swiglu"]),
        (BLOCK, "block", "rlx-fuse-shared-matmul", ["rlx.narrow"] * 3),
        (BLOCK, "block", "rlx-fuse-residual-norm", ["rlx.fused_residual_rms_norm", "rlx.fused_residual_layer_norm"]),
        (
            BLOCK,
            "block",
            "rlx-cse,rlx-fuse-swiglu,rlx-fuse-shared-matmul,rlx-fuse-residual-norm,rlx-fuse-matmul-bias-act,rlx-dce",
            ["rlx.fused_swiglu", "rlx.fused_residual_rms_norm", "rlx.fused_residual_layer_norm"],
        ),
    ],
    ids=["matmul-bias-act", "swiglu", "shared-matmul", "residual-norm", "all"],
)
def test_fusion_keeps_numerics(text, entry, pipeline, expected):
    after = _transform(text, pipeline)
    names = _op_names(after)
    for name in set(expected):
        assert names.count(name) >= expected.count(name), (name, names)
    old, new = _run_both(text, after, entry)
    for a, b in zip(old, new):
        np.testing.assert_allclose(b, a, rtol=RTOL, atol=ATOL)


CSE = """
func.func @f(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<4x4xi1>, tensor<4x4xi1>) {
  %c0 = "rlx.constant"() {value = dense<2.0> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
  %c1 = "rlx.constant"() {value = dense<2.0> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
  %c2 = "rlx.constant"() {value = dense<3.0> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
  %0 = "rlx.sub"(%a, %b) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "rlx.sub"(%a, %b) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "rlx.sub"(%b, %a) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = "rlx.mul"(%0, %c0) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %4 = "rlx.mul"(%1, %c1) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %5 = "rlx.mul"(%1, %c2) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %6 = "rlx.transpose"(%3) {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %7 = "rlx.transpose"(%4) {perm = array<i64: 0, 1>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %8 = "rlx.add"(%6, %7) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %9 = "rlx.add"(%2, %5) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %10 = "rlx.reshape"(%8) : (tensor<4x4xf32>) -> tensor<16xf32>
  %11 = "rlx.reshape"(%8) : (tensor<4x4xf32>) -> tensor<2x8xf32>
  %12 = "rlx.compare"(%a, %b) {predicate = "lt"} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
  %13 = "rlx.compare"(%a, %b) {predicate = "le"} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
  return %8, %9, %10, %11, %12, %13 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<4x4xi1>, tensor<4x4xi1>
}
"""


def test_cse_merges_only_identical_ops():
    after = _transform(CSE, "rlx-cse")
    names = _op_names(after)
    # Merged: the equal constants %c0/%c1, then the equal subs %0/%1, then (cascading)
    # the muls %3/%4.  Kept apart: sub(b, a), mul by 3.0, transposes with different
    # perms, reshapes to different types, compares with different predicates.
    assert names.count("rlx.constant") == 2
    assert names.count("rlx.sub") == 2
    assert names.count("rlx.mul") == 2
    assert names.count("rlx.transpose") == 2
    assert names.count("rlx.reshape") == 2
    assert names.count("rlx.compare") == 2
    assert names.count("rlx.add") == 2
    old, new = _run_both(CSE, after, "f")
    for a, b in zip(old, new):
        np.testing.assert_array_equal(a, b)  # the same ops, fewer of them: bit-identical


FOLDABLE = """
func.func @f(%x: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf16>) {
  %w = "rlx.constant"() {value = dense<[[1.0, -2.0, 0.5], [0.25, 3.0, -1.5], [2.0, 2.0, -0.0], [0.1, 0.2, 0.3]]> : tensor<4x3xf32>} : () -> tensor<4x3xf32>
  %s = "rlx.constant"() {value = dense<0.7> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
  %0 = "rlx.transpose"(%w) {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %1 = "rlx.mul"(%0, %s) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %2 = "rlx.relu"(%1) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %3 = "rlx.add"(%x, %2) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %4 = "rlx.cast"(%1) : (tensor<3x4xf32>) -> tensor<3x4xf16>
  return %3, %4 : tensor<3x4xf32>, tensor<3x4xf16>
}
"""


def test_fold_constants_keeps_numerics():
    after = _transform(FOLDABLE, "rlx-fold-constants")
    assert _op_names(after) == ["rlx.constant", "rlx.add", "rlx.constant"], after
    old, new = _run_both(FOLDABLE, after, "f")
    for a, b in zip(old, new):
        np.testing.assert_array_equal(a, b)  # exactly rounded ops fold bit for bit


# --- constant folding: bit-identical to the JIT --------------------------------------------


def _special(dtype, shape=(4, 8), seed=0) -> np.ndarray:
    """Random values with NaN, infinities, signed zeros, subnormals and extremes mixed in."""
    info = np.finfo(dtype)
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, info.tiny / 4, -info.tiny / 2, info.max, -info.max, 1.0, 0.1]
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 1e3], size=shape)).astype(dtype)
    flat = values.reshape(-1)
    positions = rng.choice(flat.size, size=len(specials), replace=False)
    flat[positions] = np.array(specials, dtype)
    return values


def _attr_text(array: np.ndarray) -> str:
    with rlx_mlir.make_context():
        return str(ir.DenseElementsAttr.get(np.ascontiguousarray(array)))


def _tensor_type(array: np.ndarray) -> str:
    element = {"float32": "f32", "float16": "f16", "int32": "i32", "int64": "i64", "bool": "i1"}[array.dtype.name]
    return "tensor<" + "".join(f"{d}x" for d in array.shape) + element + ">"


def _fold_vs_jit(arrays: dict[str, np.ndarray], body: list[tuple[str, str]]):
    """Runs `body` ((result type, op text) per result, operands %a, %b, ...) twice:
    on function arguments through the JIT, and on rlx.constant operands through
    rlx-fold-constants.  Returns (jit results, folded results)."""
    names = list(arrays)
    lines = [f"  %r{i} = {text} -> {rtype}" for i, (rtype, text) in enumerate(body)]
    results = ", ".join(f"%r{i}" for i in range(len(body)))
    result_types = ", ".join(rtype for rtype, _ in body)
    ret = f"  return {results} : {result_types}\n}}\n"
    arguments = ", ".join(f"%{n}: {_tensor_type(arrays[n])}" for n in names)
    runtime = f"func.func @f({arguments}) -> ({result_types}) {{\n" + "\n".join(lines) + "\n" + ret
    constants = [
        f'  %{n} = "rlx.constant"() {{value = {_attr_text(arrays[n])}}} : () -> {_tensor_type(arrays[n])}'
        for n in names
    ]
    folded_text = f"func.func @f() -> ({result_types}) {{\n" + "\n".join(constants + lines) + "\n" + ret
    jit = rlx_mlir.compile(runtime, entry="f")(*[arrays[n] for n in names])
    folded = _transform(folded_text, "rlx-fold-constants")
    assert set(_op_names(folded)) == {"rlx.constant"}, folded
    with rlx_mlir.make_context():
        module = ir.Module.parse(folded)
        block = module.body.operations[0].regions[0].blocks[0]
        terminator = list(block.operations)[-1]
        values = [_elements(operand.owner.attributes["value"]) for operand in terminator.operands]
    return jit, values


def _elements(attribute) -> np.ndarray:
    if attribute.is_splat and str(attribute.type).endswith("xi1>"):
        # np.array() of a splat i1 attribute reads past its one packed byte (bindings bug).
        return np.full(attribute.type.shape, bool(ir.IntegerAttr(attribute.get_splat_value()).value))
    return np.array(attribute)


def _assert_same_bits(expected: np.ndarray, actual: np.ndarray, what: str):
    assert expected.dtype == actual.dtype and expected.shape == actual.shape, what
    if expected.dtype.kind == "f":
        nan = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(actual), nan, err_msg=what)  # NaN payloads are not promised
        bits = {2: np.uint16, 4: np.uint32}[expected.dtype.itemsize]
        np.testing.assert_array_equal(actual.view(bits)[~nan], expected.view(bits)[~nan], err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
def test_folding_is_bit_identical_to_the_jit(dtype):
    a, b = _special(dtype, seed=1), _special(dtype, seed=2)
    t = _tensor_type(a)
    binary = f"({t}, {t})"
    other = "f16" if dtype == np.float32 else "f32"
    body = [
        (t, f'"rlx.add"(%a, %b) : {binary}'),
        (t, f'"rlx.sub"(%a, %b) : {binary}'),
        (t, f'"rlx.mul"(%a, %b) : {binary}'),
        (t, f'"rlx.div"(%a, %b) : {binary}'),
        (t, f'"rlx.max"(%a, %b) : {binary}'),
        (t, f'"rlx.min"(%a, %b) : {binary}'),
        (t, f'"rlx.relu"(%a) : ({t})'),
        (t, f'"rlx.neg"(%a) : ({t})'),
        (t, f'"rlx.abs"(%a) : ({t})'),
        (t, f'"rlx.sqrt"(%a) : ({t})'),
        (t.replace("4x8", "8x4"), f'"rlx.transpose"(%a) {{perm = array<i64: 1, 0>}} : ({t})'),
        (t.replace(t[-4:-1], other), f'"rlx.cast"(%a) : ({t})'),
        ("tensor<4x8xi1>", f'"rlx.cast"(%a) : ({t})'),
        ("tensor<4x8xi1>", f'"rlx.compare"(%a, %b) {{predicate = "lt"}} : {binary}'),
        ("tensor<4x8xi1>", f'"rlx.compare"(%a, %b) {{predicate = "ne"}} : {binary}'),
    ]
    jit, folded = _fold_vs_jit({"a": a, "b": b}, body)
    for (_, text), expected, actual in zip(body, jit, folded):
        _assert_same_bits(expected, actual, text)


def test_folding_casts_and_data_movement_is_exact():
    rng = np.random.default_rng(3)
    f = (rng.standard_normal((4, 8)) * 1e4).astype(np.float32)  # in range of i32 and i64
    i = rng.integers(-(2**40), 2**40, size=(4, 8)).astype(np.int64)  # wraps in i32
    c = rng.standard_normal((4, 8)) > 0
    body = [
        ("tensor<4x8xi32>", '"rlx.cast"(%f) : (tensor<4x8xf32>)'),
        ("tensor<4x8xi64>", '"rlx.cast"(%f) : (tensor<4x8xf32>)'),
        ("tensor<4x8xf32>", '"rlx.cast"(%i) : (tensor<4x8xi64>)'),
        ("tensor<4x8xf16>", '"rlx.cast"(%i) : (tensor<4x8xi64>)'),
        ("tensor<4x8xi32>", '"rlx.cast"(%i) : (tensor<4x8xi64>)'),
        ("tensor<4x8xi1>", '"rlx.cast"(%i) : (tensor<4x8xi64>)'),
        ("tensor<4x8xf32>", '"rlx.cast"(%c) : (tensor<4x8xi1>)'),
        ("tensor<4x8xf32>", '"rlx.where"(%c, %f, %f) : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>)'),
        ("tensor<2x4x4xi64>", '"rlx.reshape"(%i) : (tensor<4x8xi64>)'),
        ("tensor<4x3xf32>", '"rlx.narrow"(%f) {axis = -1 : i64, start = 2 : i64, len = 3 : i64} : (tensor<4x8xf32>)'),
        ("tensor<4x16xf32>", '"rlx.concat"(%f, %f) {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>)'),
        ("tensor<3x4x8xf32>", '"rlx.expand"(%f) {shape = array<i64: 3, 4, 8>} : (tensor<4x8xf32>)'),
        ("tensor<2x8xi64>", '"rlx.gather"(%i, %k) {axis = 0 : i64} : (tensor<4x8xi64>, tensor<2xi32>)'),
    ]
    k = np.array([-5, 9], np.int32)  # both out of range: clamped to rows 0 and 3
    jit, folded = _fold_vs_jit({"f": f, "i": i, "c": c, "k": k}, body)
    for (_, text), expected, actual in zip(body, jit, folded):
        _assert_same_bits(expected, actual, text)


def test_transcendental_folding_is_close_to_the_jit():
    # Folded in float64 and rounded once to f32; the JIT evaluates the f32 formulas
    # with polynomial expansions.  They agree to 2 ulp of max(|x|, |y|, 1): relative
    # to the result where it is large, absolute near zero, where the JIT's
    # `0.5 * x * (1 + erf(...))` (gelu) cancels in f32 and the folded value is the
    # accurate one (for x = -6 they differ in every bit, both within 6e-8 of 0).
    x = np.linspace(-6, 6, 32, dtype=np.float32).reshape(4, 8)
    t = _tensor_type(x)
    names = ["exp", "log", "tanh", "sigmoid", "silu", "gelu", "gelu_approx", "rsqrt"]
    jit, folded = _fold_vs_jit({"x": x}, [(t, f'"rlx.{n}"(%x) : ({t})') for n in names])
    for name, expected, actual in zip(names, jit, folded):
        finite = np.isfinite(expected)
        np.testing.assert_array_equal(np.isfinite(actual), finite, err_msg=name)  # log, rsqrt of x <= 0
        scale = np.maximum(np.maximum(np.abs(x), np.abs(expected)), 1.0).astype(np.float32)
        error = np.abs(expected.astype(np.float64) - actual)
        assert np.all(error[finite] <= 2 * np.spacing(scale)[finite]), name


def test_folding_respects_max_elements_and_skips_out_of_range_casts():
    text = """
func.func @f() -> (tensor<4x8xf32>, tensor<2xi32>) {
  %a = "rlx.constant"() {value = dense<1.5> : tensor<4x8xf32>} : () -> tensor<4x8xf32>
  %b = "rlx.add"(%a, %a) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = "rlx.constant"() {value = dense<[1.0, 3.0e9]> : tensor<2xf32>} : () -> tensor<2xf32>
  %d = "rlx.cast"(%c) : (tensor<2xf32>) -> tensor<2xi32>
  return %b, %d : tensor<4x8xf32>, tensor<2xi32>
}
"""
    assert _op_names(_transform(text, "rlx-fold-constants{max-elements=31}")).count("rlx.add") == 1
    folded = _op_names(_transform(text, "rlx-fold-constants"))
    assert "rlx.add" not in folded and "rlx.cast" in folded  # 3e9 does not fit i32


# --- the fusion report ----------------------------------------------------------------------

REPORTED = """
func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %wb: tensor<2x8x8xf32>, %b: tensor<8xf32>,
             %b2: tensor<1x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>) {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.relu"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.matmul"(%2, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %4 = "rlx.add"(%3, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %5 = "rlx.matmul"(%2, %wb) : (tensor<4x8xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32>
  %6 = "rlx.add"(%5, %b) : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %7 = "rlx.matmul"(%4, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %8 = "rlx.add"(%7, %b2) : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  return %2, %3, %8, %6 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>
}
"""


def test_fusion_report_api():
    with fusion_report.collect() as report:
        _transform(REPORTED, "rlx-fuse-matmul-bias-act")
    _transform(REPORTED, "rlx-fuse-matmul-bias-act")  # after the block: not recorded
    assert [(e.pass_name, e.op, e.result) for e in report.fused] == [
        ("rlx-fuse-matmul-bias-act", "rlx.matmul", "rlx.fused_matmul_bias_act (activation relu)")
    ]
    assert report.fused[0].location == "-:4:8"  # file:line:col of the matmul (%0)
    reasons = {e.location: e.reason for e in report.missed}
    assert reasons == {
        "-:7:8": "product has 2 uses",
        "-:9:8": "weight is batched [2, 8, 8]",
        "-:11:8": "bias shape [1, 8] is not [8]",
    }
    text = str(report)
    assert text.splitlines()[0] == "RLX fusion report: 1 fused, 3 not fused"
    assert "product has 2 uses" in text and "rlx.fused_matmul_bias_act (activation relu)" in text
    assert not fusion_report.collecting()
