"""GEMM kernels whose C starts as zeros run no fill pass (rlx-tile-matmul's `start_from_zero`):
the first K block's register tiles start from zero accumulators and are stored, later blocks
load and add. Checked on K spanning several K blocks (1024 at most each) with a K tail and
M/N tails, serial and threaded, against float64 numpy; a matmul whose init is a real tensor
still adds into it; and the sums are bit-for-bit those of a kernel that loads a zero C."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir


def _plain(m: int, k: int, n: int) -> str:
    return f"""
func.func @mm(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %c = "rlx.matmul"(%a, %b) : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %c : tensor<{m}x{n}xf32>
}}"""


def _with_init(m: int, k: int, n: int) -> str:
    """C = init + A·B: a linalg.matmul whose init is an argument (a bias, an accumulation)."""
    return f"""
func.func @mm(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>, %c: tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %0 = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) outs(%c : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %0 : tensor<{m}x{n}xf32>
}}"""


# K = 2050: padded to 2052, three K blocks of 684 (the last with the 2-column K tail); M = 70 and
# N = 45 leave tails of the 8x32 register tile; K = 3000: three blocks of 1000; K = 64: one block.
SHAPES = [(70, 2050, 45), (264, 3000, 96), (70, 64, 45)]


def _operands(m: int, k: int, n: int):
    rng = np.random.default_rng(m + 3 * k + 7 * n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return a, b, rng.standard_normal((m, n)).astype(np.float32)


def _tolerance(k: int) -> float:
    return 1e-5 * k


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_zero_started_product_matches_numpy_in_a_nan_filled_output(m, k, n, threads):
    a, b, _ = _operands(m, k, n)
    exe = rlx_mlir.compile(_plain(m, k, n), "mm", threads=threads)
    out = np.full((m, n), np.nan, np.float32)  # the kernel accumulates here: nothing of it may be read first
    exe(a, b, out=out)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, expected, rtol=0, atol=_tolerance(k))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_a_real_init_is_still_added_into(m, k, n, threads):
    a, b, c = _operands(m, k, n)
    exe = rlx_mlir.compile(_with_init(m, k, n), "mm", threads=threads)
    out = exe(a, b, c)
    expected = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, expected, rtol=0, atol=_tolerance(k))
    assert np.abs(out - a.astype(np.float64) @ b.astype(np.float64)).max() > 0.5  # the init was not dropped


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_zero_start_gives_the_same_bits_as_loading_a_zero_c(m, k, n):
    a, b, _ = _operands(m, k, n)
    zero_started = rlx_mlir.compile(_plain(m, k, n), "mm", threads=1)(a, b)
    loaded = rlx_mlir.compile(_with_init(m, k, n), "mm", threads=1)(a, b, np.zeros((m, n), np.float32))
    np.testing.assert_array_equal(zero_started, loaded)
