"""`g.op` with Python values only, multi-result ops, and readable executables (issue 20's builder items)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir import aot
from rlx_mlir.dialects import rlx
from rlx_mlir.frontend.builder import BuildError, GraphModule


def test_reshape_from_out_shape_and_cast_from_out_dtype():
    g = GraphModule.mir("f")
    x = g.input("x", (2, 320))
    r = g.op(rlx.ReshapeOp, x, out_shape=(2, 4, 80))
    c = g.op(rlx.CastOp, r, out_dtype="i32")
    assert (r.shape, r.dtype, c.shape, c.dtype) == ((2, 4, 80), "f32", (2, 4, 80), "i32")
    g.set_outputs([c])
    data = np.linspace(-50, 50, 640, dtype=np.float32).reshape(2, 320)
    np.testing.assert_array_equal(g.compile()(data), np.trunc(data).astype(np.int32).reshape(2, 4, 80))


def test_cast_to_bytes_by_alias():
    g = GraphModule.mir("f")
    x = g.input("x", (4,), "i32")
    g.set_outputs([g.op(rlx.CastOp, x, out_dtype="u8")])
    np.testing.assert_array_equal(g.compile()(np.array([1, 255, 256, -1], np.int32)),
                                  np.array([1, 255, 0, 255], np.uint8))


def test_out_shape_still_checks_an_inferred_shape():
    g = GraphModule.mir("f")
    x = g.input("x", (2, 3))
    with pytest.raises(BuildError, match=r"rlx.softmax gives shape \[2, 3\], but out_shape is \[3, 2\]"):
        g.op(rlx.SoftmaxOp, x, axis=-1, out_shape=(3, 2))


def test_bad_result_type_requests_are_build_errors():
    g = GraphModule.mir("f")
    x = g.input("x", (8,))
    with pytest.raises(BuildError, match="rlx.cast: .*'q7'"):
        g.op(rlx.CastOp, x, out_dtype="q7")
    with pytest.raises(BuildError, match=r"cannot reshape \[8\] \(8 elements\) to \[3, 3\] \(9 elements\)"):
        g.op(rlx.ReshapeOp, x, out_shape=(3, 3))
    with pytest.raises(BuildError, match="give result_type or out_dtype, not both"):
        g.op(rlx.CastOp, x, out_dtype="i32", result_type=x.value.type)


def test_a_multi_result_op_returns_every_result():
    b, s, h, n = 1, 3, 2, 4
    g = GraphModule.mir("gdn")
    q, k, v = (g.input(name, (b, s, h, n)) for name in "qkv")
    gate, beta = g.input("gate", (b, s, h)), g.input("beta", (b, s, h))
    results = g.op(rlx.GatedDeltaNetOp, q, k, v, gate, beta, state_size=n)
    assert isinstance(results, tuple) and [t.shape for t in results] == [(b, s, h, n), (b, h, n, n)]
    g.set_outputs(list(results))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((b, s, h, n)).astype(np.float32) * 0.5 for _ in range(3)]
    args += [rng.uniform(0.5, 1.0, (b, s, h)).astype(np.float32), rng.uniform(0, 1, (b, s, h)).astype(np.float32)]
    out, state = g.compile()(*args)
    # the state after the last step reads the last step's output: out[t] = S_t @ (q_t / sqrt(n))
    q_last = args[0][0, -1] / np.sqrt(n)
    np.testing.assert_allclose(out[0, -1], np.einsum("hij,hj->hi", state[0], q_last), rtol=1e-5, atol=1e-6)


def test_executable_and_signature_read_well():
    g = GraphModule.mir("mlp")
    x = g.input("x", (2, 8))
    w = g.param("w", (8, 4))
    g.set_outputs([x @ w])
    exe = g.compile()
    assert str(exe.signature) == "@mlp(x: float32[2, 8], w: float32[8, 4] (param)) -> (result0: float32[2, 4])"
    assert repr(exe) == f"Executable({exe.signature}, target='cpu')"


def test_aot_export_shows_its_real_signature():
    parameters = inspect.signature(aot.export).parameters
    assert list(parameters)[:3] == ["module", "path", "target"]
    assert "functions" in parameters and "threads" in parameters
    assert "export" in dir(aot)


def test_every_deliberate_exception_is_an_rlx_error():
    g = GraphModule.mir("f")
    with pytest.raises(rlx_mlir.RlxError):
        g.input("x", (2, -1))
    with pytest.raises(rlx_mlir.RlxError):
        rlx_mlir.compile("func.func @f( {")


def test_a_dynamic_dimension_says_what_to_do(tmp_path):
    g = GraphModule.mir("f")
    x = g.input("x", ("BATCH", 8))
    g.set_outputs([x + x])
    with pytest.raises(ValueError, match=r"@f has symbolic dimensions \(BATCH\).*bind them first and export one library per binding"):
        aot.export(str(g), tmp_path / "f.so")
    plain = """func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
      %0 = "rlx.neg"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
      return %0 : tensor<?x4xf32>
    }"""
    with pytest.raises(ValueError, match=r"tensor<\?x4xf32> has dynamic sizes.*rlx-bind-dims.*rlx.dims"):
        rlx_mlir.compile(plain)
