"""GEMMs with a transposed operand (rlx-pack-matmul reads it in place): `rlx.dot_general`
contracting A's first dimension (x^T dy, a weight gradient), B's last (dy w^T) or both, against
float64 numpy, with a tail in every dimension of the 8x32 register tile and the K step of 4
(M, N, K not multiples of 8, 32, 4), A's rows below and above `pack-rows` (256), serial and
split across threads (each thread packs its own panels, read transposed)."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir

# (M, K, N): tails everywhere; M = 300 >= pack-rows; K = 1030 spans two K blocks of the kernel.
SHAPES = [(37, 13, 45), (70, 129, 83), (300, 130, 70), (45, 1030, 33)]


def _module(m: int, k: int, n: int, transpose_a: bool, transpose_b: bool) -> str:
    a_shape = f"{k}x{m}" if transpose_a else f"{m}x{k}"
    b_shape = f"{n}x{k}" if transpose_b else f"{k}x{n}"
    return f"""
func.func @mm(%a: tensor<{a_shape}xf32>, %b: tensor<{b_shape}xf32>) -> tensor<{m}x{n}xf32> {{
  %c = "rlx.dot_general"(%a, %b) {{lhs_batch = array<i64>, lhs_contracting = array<i64: {0 if transpose_a else 1}>,
      rhs_batch = array<i64>, rhs_contracting = array<i64: {1 if transpose_b else 0}>}}
      : (tensor<{a_shape}xf32>, tensor<{b_shape}xf32>) -> tensor<{m}x{n}xf32>
  return %c : tensor<{m}x{n}xf32>
}}"""


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("transpose_a,transpose_b", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_transposed_operand_product_matches_numpy(m, k, n, transpose_a, transpose_b, threads):
    rng = np.random.default_rng(m + 5 * k + 11 * n)
    a = rng.standard_normal((k, m) if transpose_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if transpose_b else (k, n)).astype(np.float32)
    exe = rlx_mlir.compile(_module(m, k, n, transpose_a, transpose_b), "mm", threads=threads)
    out = np.full((m, n), np.nan, np.float32)  # every element written, none read first
    exe(a, b, out=out)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    expected = (a64.T if transpose_a else a64) @ (b64.T if transpose_b else b64)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-5 * k)
