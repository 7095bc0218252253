"""rlx-vectorize-elementwise (in rlx-lower-to-llvm): small static elementwise ops become vector
code in MLIR. Each element is computed by the same IEEE operation as in the loop LLVM would
vectorize, so the results are bit for bit those of the pipeline without it, and right against
numpy (float64 references written from dialect/rlx.md)."""

from __future__ import annotations

import functools
from unittest import mock

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir import driver
from rlx_mlir.dialects.context import make_context
from rlx_mlir.ir.diagnostics import DiagnosticCollector
from rlx_mlir.passmanager.pipeline import expand, run_pipeline
from rlx_mlir.pipelines.lower_to_llvm import LowerToLLVM
from rlx_mlir.runtime import jit


def compiled(text: str, vectorize: bool):
    with mock.patch.object(jit, "LowerToLLVM", functools.partial(LowerToLLVM, vectorize_elementwise=vectorize)):
        return rlx_mlir.compile(text, "f", cache=False)


def lowered_to_linalg_end(text: str, vectorize: bool) -> str:
    """The module just before the LLVM conversion (what rlx-vectorize-elementwise leaves)."""
    elements = expand(LowerToLLVM(threads=1, vectorize_elementwise=vectorize))
    stop = elements.index("convert-linalg-to-loops")
    context = make_context()
    with context, DiagnosticCollector(context) as diagnostics:
        module = driver.parse_verified(text, "<test>", context, diagnostics)
        run_pipeline(module.operation, elements[:stop])
        return str(module)


CHAIN = """
func.func @f(%x: tensor<4x8xf32>, %s: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.tanh"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.mul"(%0, %s) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.exp"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.div"(%2, %s) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "rlx.log"(%3) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = "rlx.sqrt"(%s) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = "rlx.sub"(%4, %5) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %6 : tensor<4x8xf32>
}
"""

SELECT = """
func.func @f(%x: tensor<16xf32>, %y: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xi1>) {
  %c = "rlx.compare"(%x, %y) {predicate = "gt"} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xi1>
  %n = "rlx.neg"(%y) : (tensor<16xf32>) -> tensor<16xf32>
  %w = "rlx.where"(%c, %x, %n) : (tensor<16xi1>, tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %a = "rlx.abs"(%w) : (tensor<16xf32>) -> tensor<16xf32>
  return %a, %c : tensor<16xf32>, tensor<16xi1>
}
"""


def test_small_elementwise_chain_is_vector_code_and_bit_identical():
    linalg_text = lowered_to_linalg_end(CHAIN, vectorize=True)
    assert "vector<4x8xf32>" in linalg_text and "linalg.generic" not in linalg_text
    assert "linalg.generic" in lowered_to_linalg_end(CHAIN, vectorize=False)
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, (4, 8)).astype(np.float32)
    s = rng.uniform(0.5, 1.5, (4, 8)).astype(np.float32)
    vector, loops = compiled(CHAIN, True)(x, s), compiled(CHAIN, False)(x, s)
    assert vector.tobytes() == loops.tobytes()
    x64, s64 = x.astype(np.float64), s.astype(np.float64)
    expected = np.log(np.exp(np.tanh(x64) * s64) / s64) - np.sqrt(s64)
    np.testing.assert_allclose(vector, expected, rtol=1e-5, atol=1e-5)


def test_boolean_tensors_stay_loops_and_compute_the_same():
    linalg_text = lowered_to_linalg_end(SELECT, vectorize=True)
    assert "vector<16xi1>" not in linalg_text and "linalg.generic" in linalg_text
    rng = np.random.default_rng(2)
    x = rng.standard_normal(16).astype(np.float32)
    y = rng.standard_normal(16).astype(np.float32)
    (a, c), (a0, c0) = compiled(SELECT, True)(x, y), compiled(SELECT, False)(x, y)
    assert a.tobytes() == a0.tobytes() and np.array_equal(c, c0)
    np.testing.assert_array_equal(c, x > y)
    np.testing.assert_array_equal(a, np.abs(np.where(x > y, x, -y)))


@pytest.mark.parametrize("size, vectorized", [(64, True), (65, False)])
def test_only_small_operands_are_vectorized(size, vectorized):
    text = (f"func.func @f(%x: tensor<{size}xf32>) -> tensor<{size}xf32> {{\n"
            f'  %0 = "rlx.neg"(%x) : (tensor<{size}xf32>) -> tensor<{size}xf32>\n'
            f"  return %0 : tensor<{size}xf32>\n}}\n")
    assert ("linalg.generic" not in lowered_to_linalg_end(text, vectorize=True)) == vectorized
    x = np.arange(size, dtype=np.float32)
    np.testing.assert_array_equal(compiled(text, True)(x), -x)
