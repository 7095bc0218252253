"""The builder and API surface a new user meets: every op from `g.op` with Python values, all results
of multi-result ops, readable reprs and signatures, and what to do with dynamic sizes."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir import GraphModule, aot
from rlx_mlir.aot import exporter
from rlx_mlir.dialects import rlx
from rlx_mlir.frontend.builder import BuildError

ROOT = Path(__file__).resolve().parents[1]

MLP = """
func.func @mlp(%x: tensor<4x8xf32> {rlx.name = "x"}, %w: tensor<8x16xf32> {rlx.name = "w", rlx.param})
    -> tensor<4x16xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
"""


def test_reshape_and_cast_from_python_values():
    g = GraphModule.mir("m")
    x = g.input("x", (2, 8, 20))
    reshaped = g.op(rlx.ReshapeOp, x, out_shape=(2, 4, 40))
    half = g.op(rlx.CastOp, x, out_dtype="f16")
    assert (reshaped.shape, reshaped.dtype) == ((2, 4, 40), "f32")
    assert (half.shape, half.dtype) == ((2, 8, 20), "f16")
    g.set_outputs([reshaped, g.op(rlx.CastOp, half, out_dtype="f32")])
    data = np.random.default_rng(0).standard_normal((2, 8, 20)).astype(np.float32)
    flat, rounded = g.compile()(x=data)
    np.testing.assert_array_equal(flat, data.reshape(2, 4, 40))
    np.testing.assert_array_equal(rounded, data.astype(np.float16).astype(np.float32))


def test_reshape_and_cast_with_symbolic_sizes():
    g = GraphModule.mir("d")
    y = g.input("y", ("B", 8))
    half = g.op(rlx.CastOp, y, out_dtype="f16")
    rows = g.op(rlx.ReshapeOp, y, out_shape=("B", 2, 4))
    assert repr(half) == "Tensor([B, 8], f16)" and repr(rows) == "Tensor([B, 2, 4], f32)"
    g.set_outputs([g.op(rlx.CastOp, half, out_dtype="f32"), rows])
    data = np.arange(24, dtype=np.float32).reshape(3, 8) / 7
    rounded, reshaped = g.compile()(y=data)
    np.testing.assert_array_equal(rounded, data.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(reshaped, data.reshape(3, 2, 4))


def test_dtype_is_refused_where_the_op_infers_its_type_and_checked_where_not():
    g = GraphModule.mir("m")
    x = g.input("x", (2, 8))
    with pytest.raises(BuildError, match=r"rlx.softmax infers its result type: out_dtype= is only for ops that do not"):
        g.op(rlx.SoftmaxOp, x, axis=-1, out_dtype="f16")
    with pytest.raises(BuildError, match=r"rlx.cast: unknown dtype 'f17'; expected one of f32, f16"):
        g.op(rlx.CastOp, x, out_dtype="f17")


def test_multi_result_ops_return_every_result():
    """rlx.gated_delta_net with a carried state: (out, final_state), both usable and correct for a zero decay."""
    g = GraphModule.mir("gdn")
    q = g.input("q", (1, 1, 1, 2))
    gate, beta = g.input("g", (1, 1, 1)), g.input("beta", (1, 1, 1))
    state = g.input("state", (1, 1, 2, 2))
    results = g.op(rlx.GatedDeltaNetOp, q, q, q, gate, beta, state=state, state_size=2)
    assert isinstance(results, tuple) and [r.shape for r in results] == [(1, 1, 1, 2), (1, 1, 2, 2)]
    g.set_outputs(list(results))
    k = np.array([1.0, 0.0], np.float32).reshape(1, 1, 1, 2)
    out, final = g.compile()(q=k, g=np.zeros((1, 1, 1), np.float32), beta=np.ones((1, 1, 1), np.float32),
                             state=np.zeros((1, 1, 2, 2), np.float32))
    # From S = 0 with alpha = 1 and beta = 1: S' = v k^T = e0 e0^T, read out S' (q / sqrt(2)).
    np.testing.assert_allclose(final[0, 0], [[1, 0], [0, 0]], atol=1e-6)
    np.testing.assert_allclose(out.reshape(2), [1 / np.sqrt(2), 0], atol=1e-6)


def test_executable_and_signature_read_as_names_shapes_and_dtypes():
    exe = rlx_mlir.compile(MLP)
    assert str(exe.signature) == "@mlp(x: float32[4, 8], w: float32[8, 16] (param)) -> (result0: float32[4, 16])"
    assert repr(exe.signature) == f"Signature({exe.signature})"
    assert repr(exe) == f"Executable({exe.signature}, target='cpu')"


def test_aot_export_has_its_real_signature():
    assert inspect.signature(aot.export).parameters.keys() == inspect.signature(exporter.export).parameters.keys()
    for name, parameter in inspect.signature(exporter.export).parameters.items():
        assert inspect.signature(aot.export).parameters[name].default == parameter.default, name


def test_dynamic_sizes_at_the_boundary_say_what_to_do(tmp_path):
    dynamic = MLP.replace("tensor<4x8xf32>", "tensor<?x8xf32>").replace("tensor<4x16xf32>", "tensor<?x16xf32>")
    for action in (lambda: rlx_mlir.compile(dynamic), lambda: aot.export(dynamic, tmp_path / "m.so")):
        with pytest.raises(ValueError, match=r"@mlp argument #0: tensor<\?x8xf32> has dynamic sizes, and a compiled "
                                             r"function takes static shapes: bind them first \(rlx-opt --rlx-bind-dims"):
            action()


def test_aot_export_of_a_model_with_symbols_says_to_bind_them(tmp_path):
    text = (ROOT / "examples" / "dyn.mlir").read_text()
    with pytest.raises(ValueError, match=r"@scale_rows has symbolic dimensions \(BATCH, SEQ\): a library is compiled "
                                         r"for static shapes; bind them first"):
        aot.export(text, tmp_path / "m.so")
