"""The weight-streaming GEMV kernels of rlx-tile-gemv (f32 matmuls with M = 1..8 rows):
results against float64 numpy for row counts 1..8, depths that the 4-row step does and does
not divide, column counts split into several column blocks and tiles, 1 and 2 threads; and the
tile sizes the planner picks."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

import rlx_mlir
from rlx_mlir.passmanager.pipeline import run_pipeline
from rlx_mlir.transforms.linalg.tile_gemv import GemvPlan


def _module(m: int, k: int, n: int) -> str:
    return f"""
func.func @mv(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %c = "rlx.matmul"(%a, %b) : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %c : tensor<{m}x{n}xf32>
}}"""


# (M, K, N): one row with K = 30 (steps of 3) and 2048 columns; N = 96 (3 vectors: an uneven
# split between 2 threads); 2 rows with K = 129 (steps of 3); 5 rows over 1024 columns (two column blocks of
# 512); 8 rows with K = 5 (steps of 1) and K = 300; 7 rows; 4 rows with K = 1000; 6 rows, 4096
# columns (several blocks per thread).
SHAPES = [(1, 30, 2048), (1, 512, 96), (2, 129, 256), (3, 128, 96), (5, 64, 1024), (8, 5, 1024),
          (8, 300, 1024), (7, 64, 160), (4, 1000, 48), (6, 96, 4096)]


# N not a multiple of 16: the GEMV takes the first N - N % 16 columns, a matmul of its own the
# rest (an LM head over a vocabulary of 1000); N = 8: no GEMV at all.
SPLIT_SHAPES = [(1, 512, 1000), (3, 128, 100), (8, 64, 4097), (2, 4096, 8)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m,k,n", SHAPES + SPLIT_SHAPES)
def test_gemv_matches_numpy(m, k, n, threads):
    rng = np.random.default_rng([m, k, n])
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    exe = rlx_mlir.compile(_module(m, k, n), "mv", threads=threads)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    expected = a64 @ b64
    bound = (np.abs(a64) @ np.abs(b64)) * (k * np.finfo(np.float32).eps)  # f32 rounding of k products
    np.testing.assert_array_less(np.abs(exe(a, b) - expected), bound + 1e-30)


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_every_shape_takes_the_gemv_path(m, k, n):
    """The shapes above are GEMVs: no matmul (nor GEMM kernel) is left after rlx-tile-gemv and
    rlx-pack-matmul, and C is written in vectors (vector FMAs, or with K steps of 1 vector
    multiply-adds)."""
    with rlx_mlir.make_context():
        module = ir.Module.parse(_module(m, k, n))
        run_pipeline(module.operation, "builtin.module(rlx-mir-to-linalg,rlx-tile-gemv,rlx-pack-matmul)")
        text = str(module)
    assert "linalg.matmul" not in text and "rlx.microkernel" not in text
    assert "vector.transfer_write" in text and ("vector.fma" in text or k % 2)


def test_plan_of_a_decode_step():
    """M = 1, K = N = 4096 on 2 threads: 2048 columns each, C's block of 16 KiB (all 2048 of a
    row), 4 rows of B per pass, tiles of 256 columns (16 vectors); with 8 rows, blocks of 512
    columns (8 x 512 x 4 bytes = 16 KiB) in tiles of 32 columns (8 rows x 2 vectors)."""
    one = GemvPlan(1, 4096, 4096, 2)
    assert (one.chunk(), one.block(), one.rows(), one.width()) == (2048, 2048, 4, 256)
    eight = GemvPlan(8, 4096, 4096, 1)
    assert (eight.chunk(), eight.block(), eight.rows(), eight.width()) == (4096, 512, 4, 32)
    assert GemvPlan(3, 96, 30, 2).chunk() == 48 and GemvPlan(3, 96, 30, 2).rows() == 3


@pytest.mark.parametrize("m,k,threads", [(1, 4096, 1), (3, 8192, 1), (5, 8192, 2), (8, 2048, 2)])
def test_q4_k_gemv_matches_numpy(m, k, threads):
    """Q4_K `dequant_matmul` with few rows, against `x @ dequantize(w).T` in float64 (the
    quantiser's own dequantisation, which test_quant pins to gguf's): one row of x per body (M = 1,
    3, 5: the factored kernel, x . codes times the scales, the mins against sums of x), with K cut
    into 2 chunks (M = 3 and 5, K = 8192) and the weight's rows into panels (N = 72); and 8 rows
    per body (decoded weights shared by the rows)."""
    from rlx_mlir import quant

    n = 72
    rng = np.random.default_rng([m, k])
    w_q = quant.quantize(rng.standard_normal((n, k)).astype(np.float32), "q4_k")
    x = rng.standard_normal((m, k)).astype(np.float32)
    src = (f'func.func @f(%x: tensor<{m}x{k}xf32>, %w: tensor<{n}x{w_q.shape[1]}xui8>) -> tensor<{m}x{n}xf32> {{\n'
           f'  %y = "rlx.dequant_matmul"(%x, %w) {{scheme = "q4_k"}} : (tensor<{m}x{k}xf32>, tensor<{n}x{w_q.shape[1]}xui8>)'
           f' -> tensor<{m}x{n}xf32>\n  return %y : tensor<{m}x{n}xf32>\n}}\n')
    out = rlx_mlir.compile(src, "f", threads=threads)(x, w_q)
    w = quant.dequantize(w_q, "q4_k", (n, k)).astype(np.float64)
    x64 = x.astype(np.float64)
    bound = (np.abs(x64) @ np.abs(w).T) * (k * np.finfo(np.float32).eps) + 1e-30
    np.testing.assert_array_less(np.abs(out - x64 @ w.T), bound)
