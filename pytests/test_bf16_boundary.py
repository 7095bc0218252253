"""bf16 arguments and results cross the numpy boundary as ml_dtypes' `bfloat16` arrays (JAX's dtype),
in compile(), rlx-run and AOT libraries; without ml_dtypes the error says what to do."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir import aot

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)

SCALE_ADD = """
func.func @f(%a: tensor<2x4xbf16> {rlx.name = "a"}, %b: tensor<4xbf16> {rlx.name = "b"}) -> tensor<2x4xbf16> {
  %0 = "rlx.mul"(%a, %a) : (tensor<2x4xbf16>, tensor<2x4xbf16>) -> tensor<2x4xbf16>
  %1 = "rlx.add"(%0, %b) : (tensor<2x4xbf16>, tensor<4xbf16>) -> tensor<2x4xbf16>
  return %1 : tensor<2x4xbf16>
}
"""


def _reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * a + b as dialect/rlx.md defines bf16 ops: computed in f32, rounded to bf16 once per op."""
    square = (a.astype(np.float32) * a.astype(np.float32)).astype(BF16)
    return (square.astype(np.float32) + b.astype(np.float32)).astype(BF16)


def _inputs():
    rng = np.random.default_rng(0)
    return rng.standard_normal((2, 4)).astype(BF16), rng.standard_normal(4).astype(BF16)


def test_compile_takes_and_returns_bfloat16_arrays():
    a, b = _inputs()
    exe = rlx_mlir.compile(SCALE_ADD)
    assert exe.signature.inputs[0].dtype == BF16
    result = exe(a=a, b=b)
    assert result.dtype == BF16 and result.shape == (2, 4)
    np.testing.assert_array_equal(result.astype(np.float32), _reference(a, b).astype(np.float32))


def test_a_float32_array_for_a_bf16_argument_is_a_clear_error():
    a, b = _inputs()
    exe = rlx_mlir.compile(SCALE_ADD)
    with pytest.raises(ValueError, match=r"argument 'a' of @f: expected tensor<2x4xbf16> \(numpy bfloat16 \[2, 4\]\), "
                                         r"got numpy float32"):
        exe(a.astype(np.float32), b)


def test_aot_library_takes_and_returns_bfloat16_arrays(tmp_path):
    a, b = _inputs()
    aot.export(SCALE_ADD, tmp_path / "m.so")
    model = aot.load(tmp_path / "m.so")
    result = model(a=a, b=b)
    assert result.dtype == BF16
    np.testing.assert_array_equal(result.astype(np.float32), _reference(a, b).astype(np.float32))


def test_without_ml_dtypes_the_error_says_what_to_do():
    """A CompileError (an RlxError), not a bare ValueError, naming the package and the alternative."""
    code = (
        "import sys; sys.modules['ml_dtypes'] = None\n"
        "import rlx_mlir\n"
        f"try:\n    rlx_mlir.compile({SCALE_ADD!r}, cache=False)\n"
        "except rlx_mlir.RlxError as error:\n    print(type(error).__name__, error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.startswith(
        "CompileError @f argument #0: bf16 arrays need the ml_dtypes package (numpy has no bf16): pip install "
        "ml_dtypes; or take f32 at the function boundary and rlx.cast to bf16 inside the function"
    ), done.stdout + done.stderr
