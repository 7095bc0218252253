"""bf16 through the builder: constants and arguments as ml_dtypes' bfloat16 arrays, JIT and AOT
(test_bf16_boundary.py covers compile(), rlx-run and a missing ml_dtypes)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import rlx_mlir
from rlx_mlir import aot
from rlx_mlir.frontend.builder import GraphModule

BF16 = ml_dtypes.bfloat16

SILU_MUL = """
func.func @f(%x: tensor<2x8xbf16>, %y: tensor<2x8xbf16>) -> tensor<2x8xbf16> {
  %0 = "rlx.silu"(%x) : (tensor<2x8xbf16>) -> tensor<2x8xbf16>
  %1 = "rlx.mul"(%0, %y) : (tensor<2x8xbf16>, tensor<2x8xbf16>) -> tensor<2x8xbf16>
  return %1 : tensor<2x8xbf16>
}
"""


def _reference(x, y):
    """Each op computes in f32 and rounds once to bf16, as dialect/rlx.md says."""
    xf = x.astype(np.float64)
    silu = (xf / (1.0 + np.exp(-xf))).astype(np.float32).astype(BF16)
    return (silu.astype(np.float32) * y.astype(np.float32)).astype(BF16)


def test_bf16_arrays_in_and_out():
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((2, 8)).astype(BF16) for _ in range(2))
    exe = rlx_mlir.compile(SILU_MUL)
    got = exe(x, y)
    assert got.dtype == BF16
    np.testing.assert_allclose(got.astype(np.float32), _reference(x, y).astype(np.float32), rtol=2 ** -7, atol=1e-6)
    assert "bfloat16" in str(exe.signature)


def test_a_float32_array_for_a_bf16_argument_is_named():
    exe = rlx_mlir.compile(SILU_MUL)
    x = np.zeros((2, 8), np.float32)
    with pytest.raises(ValueError, match=r"argument 'arg0' of @f: expected tensor<2x8xbf16> \(numpy bfloat16"):
        exe(x, x.astype(BF16))


def test_bf16_constants_and_aot(tmp_path):
    g = GraphModule.mir("scale")
    x = g.input("x", (3,), "bf16")
    g.set_outputs([x * g.constant(np.array([1, 0.5, -3], BF16))])
    data = np.array([1.5, 2, 3], BF16)
    want = np.array([1.5, 1, -9], BF16)
    np.testing.assert_array_equal(g.compile()(data), want)
    aot.export(str(g), tmp_path / "scale.so")
    np.testing.assert_array_equal(aot.load(tmp_path / "scale.so")(data), want)
