"""The planned (default) path never reads a slot after the plan reused it (issue 13, item 1).

Each program here used to give wrong numbers on the default path: a value the plan thought was a
copy (an identity expand or transpose, a narrow of a non-leading axis) lowered to a view of its
source, and was read, returned or cast after the source's slot had been given to another value.
Every program runs on the default path and with `plan=False`, against numpy written here from the
ops' documented semantics (dialect/rlx.md). The plan of each is also checked by the independent
checker.
"""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir import driver
from rlx_mlir.dialects import rlx
from rlx_mlir.dialects.rlx_lir.ir_plan import plan_problems
from rlx_mlir.frontend.builder import GraphModule
from rlx_mlir.passmanager.pipeline import run_pipeline

X4 = np.array([1, 2, 3, 4], np.float32)
S = np.array(10, np.float32)

EXPAND = """
func.func @f(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> {
  %0 = "rlx.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "rlx.expand"(%0) {shape = array<i64: 4>} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "rlx.neg"(%s) : (tensor<f32>) -> tensor<f32>
  %3 = "rlx.add"(%1, %2) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %3 : tensor<4xf32>
}
"""

TRANSPOSE = EXPAND.replace(
    '"rlx.expand"(%0) {shape = array<i64: 4>}', '"rlx.transpose"(%0) {perm = array<i64: 0>}'
)

# A strided narrow (axis 1 of a 2x4) read after its source's slot was reused (by %2).
NARROW = """
func.func @f(%x: tensor<2x4xf32>, %s: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %0 = "rlx.neg"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = "rlx.narrow"(%0) {axis = 1 : i64, start = 0 : i64, len = 3 : i64} : (tensor<2x4xf32>) -> tensor<2x3xf32>
  %2 = "rlx.exp"(%s) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = "rlx.narrow"(%2) {axis = 1 : i64, start = 1 : i64, len = 3 : i64} : (tensor<2x4xf32>) -> tensor<2x3xf32>
  %4 = "rlx.add"(%1, %3) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}
"""

# A returned view of %0 (a strided narrow; an identity transpose): %0's bytes must stay intact
# until the result is copied out at the return, though %2 would fit in its slot.
RETURNED = """
func.func @f(%x: tensor<2x4xf32>, %s: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2x4xf32>) {
  %0 = "rlx.neg"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = "rlx.narrow"(%0) {axis = 1 : i64, start = 0 : i64, len = 3 : i64} : (tensor<2x4xf32>) -> tensor<2x3xf32>
  %2 = "rlx.exp"(%s) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = "rlx.softmax"(%2) {axis = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %4 = "rlx.neg"(%3) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %1, %4 : tensor<2x3xf32>, tensor<2x4xf32>
}
"""
RETURNED_TRANSPOSE = RETURNED.replace(
    '"rlx.narrow"(%0) {axis = 1 : i64, start = 0 : i64, len = 3 : i64} : (tensor<2x4xf32>) -> tensor<2x3xf32>',
    '"rlx.transpose"(%0) {perm = array<i64: 0, 1>} : (tensor<2x4xf32>) -> tensor<2x4xf32>',
).replace("(tensor<2x3xf32>, tensor<2x4xf32>)", "(tensor<2x4xf32>, tensor<2x4xf32>)").replace(
    "tensor<2x3xf32>, tensor<2x4xf32>\n}", "tensor<2x4xf32>, tensor<2x4xf32>\n}")

# A strided narrow cast to another type after its source's slot was reused (by %2).
CAST = """
func.func @f(%x: tensor<2x4xf32>, %s: tensor<2x4xf32>) -> (tensor<2x3xf16>, tensor<2x4xf32>) {
  %0 = "rlx.neg"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = "rlx.narrow"(%0) {axis = 1 : i64, start = 0 : i64, len = 3 : i64} : (tensor<2x4xf32>) -> tensor<2x3xf32>
  %2 = "rlx.exp"(%s) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = "rlx.softmax"(%2) {axis = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %4 = "rlx.cast"(%1) : (tensor<2x3xf32>) -> tensor<2x3xf16>
  %5 = "rlx.neg"(%3) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %4, %5 : tensor<2x3xf16>, tensor<2x4xf32>
}
"""


def _plan_is_valid(text: str) -> None:
    from rlx_mlir.dialects.context import make_context
    from rlx_mlir.ir.diagnostics import DiagnosticCollector

    context = make_context()
    with context, DiagnosticCollector(context) as diagnostics:
        module = driver.parse_verified(text, "<test>", context, diagnostics)
        run_pipeline(module.operation, "builtin.module(rlx-mir-to-lir{fuse-elementwise=true})")
        function = next(op for op in module.body.operations if op.operation.name == "func.func")
        assert plan_problems(function) == []


def _both_paths(text: str, *args):
    _plan_is_valid(text)
    planned = rlx_mlir.compile(text, cache=False)(*args)
    direct = rlx_mlir.compile(text, plan=False, cache=False)(*args)
    return planned, direct


@pytest.mark.parametrize("text", [EXPAND, TRANSPOSE], ids=["expand", "transpose"])
def test_identity_view_read_after_its_source_slot_could_be_reused(text):
    planned, direct = _both_paths(text, X4, S)
    expected = -X4 + -S  # [-11, -12, -13, -14]
    np.testing.assert_array_equal(planned, expected)
    np.testing.assert_array_equal(direct, expected)


def _softmax(v: np.ndarray) -> np.ndarray:
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_strided_narrow_read_after_its_source_slot_was_reused():
    x = np.arange(8, dtype=np.float32).reshape(2, 4) + 1
    s = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    planned, direct = _both_paths(NARROW, x, s)
    expected = (-x)[:, 0:3] + np.exp(s)[:, 1:4]
    np.testing.assert_allclose(planned, expected, rtol=1e-6)
    np.testing.assert_allclose(direct, expected, rtol=1e-6)


@pytest.mark.parametrize("transpose", [False, True], ids=["narrow", "transpose"])
def test_returned_views_outlive_the_slot_reuse_of_their_source(transpose):
    x = np.arange(8, dtype=np.float32).reshape(2, 4) + 1
    s = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    (v, r), direct = _both_paths(RETURNED_TRANSPOSE if transpose else RETURNED, x, s)
    np.testing.assert_array_equal(v, -x if transpose else (-x)[:, 0:3])
    np.testing.assert_allclose(r, -_softmax(np.exp(s)), rtol=1e-6)
    for got, want in zip(direct, (v, r)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_strided_narrow_cast_after_its_source_slot_was_reused():
    x = np.arange(8, dtype=np.float32).reshape(2, 4) + 1
    s = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    (h, r), _ = _both_paths(CAST, x, s)
    assert h.dtype == np.float16
    np.testing.assert_array_equal(h, (-x)[:, 0:3].astype(np.float16))
    np.testing.assert_allclose(r, -_softmax(np.exp(s)), rtol=1e-6)


def _narrowed_matmul(second: str) -> GraphModule:
    """t = x @ w; hi = t[:, :1]; q = t[:, 1:]; hi + cumsum(q, -1) (or softmax(q, -1))."""
    g = GraphModule.mir("narrowed")
    x, w = g.input("x", (2, 10)), g.input("w", (10, 10))
    t = x @ w
    hi = g.op(rlx.NarrowOp, t, axis=1, start=0, len=1)
    q = g.op(rlx.NarrowOp, t, axis=1, start=1, len=9)
    tail = g.op(rlx.CumsumOp if second == "cumsum" else rlx.SoftmaxOp, q, axis=-1)
    g.set_outputs(hi + tail)
    return g


@pytest.mark.parametrize("second", ["cumsum", "softmax"])
def test_narrows_of_a_matmul_on_a_non_leading_axis(second):
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 10)).astype(np.float32)
    w = rng.standard_normal((10, 10)).astype(np.float32)
    t = x.astype(np.float64) @ w.astype(np.float64)
    q = t[:, 1:]
    expected = t[:, :1] + (np.cumsum(q, axis=-1) if second == "cumsum" else _softmax(q))
    planned = _narrowed_matmul(second).compile(cache=False)(x=x, w=w)
    direct = _narrowed_matmul(second).compile(plan=False, cache=False)(x=x, w=w)
    np.testing.assert_allclose(planned, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(direct, expected, rtol=1e-5, atol=1e-5)


# Two results, one a whole-axis narrow of the other: each must get a buffer of its own (returning
# one buffer twice crashes buffer-results-to-out-params in LLVM 22).
TWO_RESULTS_ONE_VALUE = """
func.func @f(%a: tensor<4x5xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>) {
  %0 = "rlx.narrow"(%a) {axis = 1 : i64, start = 4 : i64, len = 1 : i64} : (tensor<4x5xf32>) -> tensor<4x1xf32>
  %1 = "rlx.narrow"(%0) {axis = 1 : i64, start = 0 : i64, len = 1 : i64} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  return %1, %0 : tensor<4x1xf32>, tensor<4x1xf32>
}
"""


def test_a_result_derived_from_another_result_gets_its_own_buffer():
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    (first, second), direct = _both_paths(TWO_RESULTS_ONE_VALUE, a)
    np.testing.assert_array_equal(first, a[:, 4:5])
    np.testing.assert_array_equal(second, a[:, 4:5])
    assert not np.shares_memory(first, second)
    for got in direct:
        np.testing.assert_array_equal(got, a[:, 4:5])


# The q / k / v column ranges of one QKV product (issue 19): strided narrows read only by RoPE and
# attention are views of the product's slot (no copies).  An exp computed between the narrows and
# the attention would take the product's bytes if the plan let them go when the narrows are made.
QKV = """
func.func @f(%x: tensor<1x6x8xf32>, %w: tensor<8x24xf32>, %c: tensor<6x2xf32>, %s: tensor<6x2xf32>) -> tensor<1x6x8xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<1x6x8xf32>, tensor<8x24xf32>) -> tensor<1x6x24xf32>
  %1 = "rlx.narrow"(%0) {axis = 2 : i64, start = 0 : i64, len = 8 : i64} : (tensor<1x6x24xf32>) -> tensor<1x6x8xf32>
  %2 = "rlx.narrow"(%0) {axis = 2 : i64, start = 8 : i64, len = 8 : i64} : (tensor<1x6x24xf32>) -> tensor<1x6x8xf32>
  %3 = "rlx.narrow"(%0) {axis = 2 : i64, start = 16 : i64, len = 8 : i64} : (tensor<1x6x24xf32>) -> tensor<1x6x8xf32>
  %4 = "rlx.rope"(%1, %c, %s) {head_dim = 4 : i64, n_rot = 4 : i64} : (tensor<1x6x8xf32>, tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<1x6x8xf32>
  %5 = "rlx.rope"(%2, %c, %s) {head_dim = 4 : i64, n_rot = 4 : i64} : (tensor<1x6x8xf32>, tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<1x6x8xf32>
  %6 = "rlx.exp"(%x) : (tensor<1x6x8xf32>) -> tensor<1x6x8xf32>
  %7 = "rlx.attention"(%4, %5, %3) {head_dim = 4 : i64, mask_kind = "causal", num_heads = 2 : i64} : (tensor<1x6x8xf32>, tensor<1x6x8xf32>, tensor<1x6x8xf32>) -> tensor<1x6x8xf32>
  %8 = "rlx.add"(%7, %6) : (tensor<1x6x8xf32>, tensor<1x6x8xf32>) -> tensor<1x6x8xf32>
  return %8 : tensor<1x6x8xf32>
}
"""
# The same, but k's narrow is also read by an add: it stays a copy with a slot of its own.
QKV_K_ALSO_ADDED = QKV.replace(
    '  %8 = "rlx.add"(%7, %6)', '  %9 = "rlx.add"(%2, %6) : (tensor<1x6x8xf32>, tensor<1x6x8xf32>) -> tensor<1x6x8xf32>\n'
    '  %8 = "rlx.add"(%7, %9)')


def _narrow_kinds(text: str) -> list[str]:
    """'view' or 'slot' for each rlx.narrow of `text`'s function after rlx-mir-to-lir."""
    from rlx_mlir.dialects.context import make_context
    from rlx_mlir.ir.attrs import SLOT_ATTR, VIEW_ATTR
    from rlx_mlir.ir.diagnostics import DiagnosticCollector

    with make_context() as context, DiagnosticCollector(context) as diagnostics:
        module = driver.parse_verified(text, "<test>", context, diagnostics)
        run_pipeline(module.operation, "builtin.module(rlx-mir-to-lir)")
        function = next(op for op in module.body.operations if op.operation.name == "func.func")
        narrows = [op.operation for op in function.regions[0].blocks[0].operations if op.operation.name == "rlx.narrow"]
        return ["view" if VIEW_ATTR in op.attributes else "slot" if SLOT_ATTR in op.attributes else "none"
                for op in narrows]


def _qkv_reference(x, w, c, s, k_added: bool) -> np.ndarray:
    """Float64: t = x w; q, k, v its three 8-column ranges; NeoX RoPE (rotate half of each 4-wide
    head) on q and k; causal softmax attention of 2 heads of 4; plus exp(x) (and k)."""
    x, w, c, s = (a.astype(np.float64) for a in (x, w, c, s))
    t = x[0] @ w
    q, k, v = t[:, 0:8], t[:, 8:16], t[:, 16:24]

    def rope(a):
        out = a.copy()
        for h in range(2):
            lo, hi = a[:, 4 * h:4 * h + 2], a[:, 4 * h + 2:4 * h + 4]
            out[:, 4 * h:4 * h + 2] = lo * c - hi * s
            out[:, 4 * h + 2:4 * h + 4] = hi * c + lo * s
        return out

    rq, rk = rope(q), rope(k)
    out = np.zeros((6, 8))
    for h in range(2):
        cols = slice(4 * h, 4 * h + 4)
        scores = rq[:, cols] @ rk[:, cols].T / 2.0  # 1 / sqrt(head_dim 4)
        scores[np.triu_indices(6, 1)] = -np.inf
        out[:, cols] = _softmax(scores) @ v[:, cols]
    out += np.exp(x[0])
    if k_added:
        out += k
    return out[None]


@pytest.mark.parametrize("k_added", [False, True], ids=["rope-attention", "k-also-added"])
def test_qkv_narrows_read_by_rope_and_attention_are_views(k_added):
    text = QKV_K_ALSO_ADDED if k_added else QKV
    assert _narrow_kinds(text) == (["view", "slot", "view"] if k_added else ["view"] * 3)
    rng = np.random.default_rng(19)
    x = rng.standard_normal((1, 6, 8)).astype(np.float32)
    w = (rng.standard_normal((8, 24)) / np.sqrt(8)).astype(np.float32)
    angles = np.outer(np.arange(6), [1.0, 0.1])
    c, s = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    planned, direct = _both_paths(text, x, w, c, s)
    expected = _qkv_reference(x, w, c, s, k_added)
    np.testing.assert_allclose(planned, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(planned, direct)
