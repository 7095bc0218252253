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


# Degenerate and awkward sizes: K = 1 (one step of a K block of 4), M = 1 or N = 1 (one row or
# column of the register tile), primes, sizes one off a multiple of 16, and a batch dimension.
EDGE_SHAPES = [(1, 1, 1), (13, 1, 17), (1, 31, 33), (29, 17, 1), (47, 53, 61), (33, 15, 31), (257, 5, 3)]


def _batched_module(b: int, m: int, k: int, n: int, transpose_a: bool, transpose_b: bool) -> str:
    a_shape = f"{b}x{k}x{m}" if transpose_a else f"{b}x{m}x{k}"
    b_shape = f"{b}x{n}x{k}" if transpose_b else f"{b}x{k}x{n}"
    return f"""
func.func @mm(%a: tensor<{a_shape}xf32>, %b: tensor<{b_shape}xf32>) -> tensor<{b}x{m}x{n}xf32> {{
  %c = "rlx.dot_general"(%a, %b) {{lhs_batch = array<i64: 0>, lhs_contracting = array<i64: {1 if transpose_a else 2}>,
      rhs_batch = array<i64: 0>, rhs_contracting = array<i64: {2 if transpose_b else 1}>}}
      : (tensor<{a_shape}xf32>, tensor<{b_shape}xf32>) -> tensor<{b}x{m}x{n}xf32>
  return %c : tensor<{b}x{m}x{n}xf32>
}}"""


@pytest.mark.parametrize("transpose_a,transpose_b", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("batch,m,k,n", [(0, *s) for s in EDGE_SHAPES] + [(3, 17, 9, 19), (2, 1, 8, 33), (2, 40, 1, 5)])
def test_transposed_operands_at_edge_sizes_on_1_2_3_threads(batch, m, k, n, transpose_a, transpose_b):
    """Against float64 numpy, and the same bits on 1, 2 and 3 threads (the threads split panels
    or row blocks; each output element's sum over k runs in the same order)."""
    rng = np.random.default_rng(m + 7 * k + 31 * n + batch)
    lead = (batch,) if batch else ()
    a = rng.standard_normal(lead + ((k, m) if transpose_a else (m, k))).astype(np.float32)
    b = rng.standard_normal(lead + ((n, k) if transpose_b else (k, n))).astype(np.float32)
    a64 = np.swapaxes(a, -1, -2).astype(np.float64) if transpose_a else a.astype(np.float64)
    b64 = np.swapaxes(b, -1, -2).astype(np.float64) if transpose_b else b.astype(np.float64)
    text = _batched_module(batch, m, k, n, transpose_a, transpose_b) if batch else _module(m, k, n, transpose_a, transpose_b)
    results = [rlx_mlir.compile(text, "mm", threads=t, cache=False)(a, b) for t in (1, 2, 3)]
    np.testing.assert_allclose(results[0], a64 @ b64, rtol=0, atol=1e-5 * k)
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])
