"""CPU code generation: packed/tiled/vectorized matmuls, fused and threaded loops, the
compile cache and caller-provided outputs. References are plain numpy in float64."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir.runtime.jit import ArgumentError


def _matmul_module(m: int, k: int, n: int) -> str:
    return f"""
func.func @mm(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %c = "rlx.matmul"(%a, %b) : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %c : tensor<{m}x{n}xf32>
}}"""


# Shapes that divide the 8x32 register tile and the K step of 4, and shapes that do not
# (each padded dimension alone, all three, a single row, and depth not a multiple of 4).
SHAPES = [(64, 64, 64), (100, 60, 70), (8, 33, 31), (1, 256, 96), (129, 130, 65), (40, 1029, 64), (256, 32, 1000)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_matmul_kernels_match_numpy(m, k, n, threads):
    rng = np.random.default_rng(m * 7 + k * 3 + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    exe = rlx_mlir.compile(_matmul_module(m, k, n), "mm", threads=threads)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    # f32 accumulation over k terms: relative error grows like sqrt(k) * eps.
    np.testing.assert_allclose(exe(a, b), expected, rtol=1e-4, atol=1e-4 * np.sqrt(k))


def _batched_matmul_module(lhs: tuple, rhs: tuple) -> str:
    out = np.broadcast_shapes(lhs[:-2], rhs[:-2]) + (lhs[-2], rhs[-1])

    def t(shape):
        return "tensor<" + "x".join(map(str, shape)) + "xf32>"

    return f"""
func.func @mm(%a: {t(lhs)}, %b: {t(rhs)}) -> {t(out)} {{
  %c = "rlx.matmul"(%a, %b) : ({t(lhs)}, {t(rhs)}) -> {t(out)}
  return %c : {t(out)}
}}"""


# Shallow products (K of 1..5) around the thresholds of the kernel path: M around the packing
# threshold of 256 rows and the 8-row block, N around the 32-wide panel. With K = KR = 4 (or
# padded to it) the K loop has one step, which the tiling script once lost track of
# ("tracking listener failed to find replacement op") for M >= 255. Batched forms fold the
# batch into M ([B, M, K] x [K, N]) or broadcast one operand.
SHALLOW_SHAPES = [
    ((257, 4), (4, 64)), ((256, 4), (4, 32)), ((255, 3), (3, 64)), ((300, 4), (4, 31)),
    ((513, 1), (1, 64)), ((513, 2), (2, 33)), ((513, 3), (3, 32)), ((513, 5), (5, 64)),
    ((257, 2), (2, 64)), ((300, 2), (2, 64)), ((256, 3), (3, 64)), ((257, 4), (4, 33)),
    ((1, 1), (1, 1)), ((1, 5), (5, 64)), ((7, 4), (4, 31)), ((8, 4), (4, 32)), ((8, 2), (2, 1)),
    ((255, 5), (5, 33)), ((256, 1), (1, 1)), ((300, 5), (5, 32)), ((513, 4), (4, 1)),
    ((255, 4), (4, 64)), ((7, 1), (1, 33)), ((257, 1), (1, 32)),
    ((3, 100, 4), (4, 64)), ((2, 129, 3), (3, 33)), ((2, 257, 2), (2, 32)),
    ((4, 64, 4), (4, 4, 64)), ((2, 300, 5), (2, 5, 31)), ((257, 4), (3, 4, 32)),
]


@pytest.mark.parametrize("lhs,rhs", SHALLOW_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_shallow_and_batched_matmuls_compile_and_match_numpy(lhs, rhs):
    rng = np.random.default_rng(sum(lhs) * 31 + sum(rhs))
    a = rng.standard_normal(lhs).astype(np.float32)
    b = rng.standard_normal(rhs).astype(np.float32)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    text = _batched_matmul_module(lhs, rhs)
    for threads in (1, 2):
        out = rlx_mlir.compile(text, "mm", threads=threads)(a, b)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_matmul_kernels_can_be_turned_off_with_the_same_result():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((48, 96)).astype(np.float32)
    b = rng.standard_normal((96, 80)).astype(np.float32)
    text = _matmul_module(48, 96, 80)
    fast = rlx_mlir.compile(text, "mm", threads=1)(a, b)
    scalar = rlx_mlir.compile(text, "mm", threads=1, matmul_kernels=False)(a, b)
    np.testing.assert_allclose(fast, scalar, rtol=1e-5, atol=1e-5)


def test_batched_lhs_uses_the_kernels_and_matches_numpy():
    # [2, 37, 64] x [64, 96]: the batch folds into M (74 rows, padded to 80).
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 37, 64)).astype(np.float32)
    b = rng.standard_normal((64, 96)).astype(np.float32)
    text = """
func.func @mm(%a: tensor<2x37x64xf32>, %b: tensor<64x96xf32>) -> tensor<2x37x96xf32> {
  %c = "rlx.matmul"(%a, %b) : (tensor<2x37x64xf32>, tensor<64x96xf32>) -> tensor<2x37x96xf32>
  return %c : tensor<2x37x96xf32>
}"""
    exe = rlx_mlir.compile(text, "mm", threads=2)
    np.testing.assert_allclose(exe(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_threaded_fused_elementwise_chain_matches_numpy():
    # 301 rows split across 2 threads (an uneven split), bias broadcast along rows.
    text = """
func.func @f(%x: tensor<301x257xf32>, %b: tensor<257xf32>) -> tensor<301x257xf32> {
  %y = "rlx.add"(%x, %b) : (tensor<301x257xf32>, tensor<257xf32>) -> tensor<301x257xf32>
  %z = "rlx.gelu_approx"(%y) : (tensor<301x257xf32>) -> tensor<301x257xf32>
  %w = "rlx.mul"(%z, %x) : (tensor<301x257xf32>, tensor<301x257xf32>) -> tensor<301x257xf32>
  return %w : tensor<301x257xf32>
}"""
    rng = np.random.default_rng(3)
    x = (3 * rng.standard_normal((301, 257))).astype(np.float32)
    b = rng.standard_normal(257).astype(np.float32)
    z = x.astype(np.float64) + b
    gelu = 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z**3)))
    for threads in (1, 2):
        out = rlx_mlir.compile(text, "f", threads=threads)(x, b)
        # tanh is a polynomial with |error| < 5e-7; times |z| and |x| of a few units.
        np.testing.assert_allclose(out, gelu * x, rtol=1e-5, atol=2e-5)


def test_identical_module_and_options_hit_the_compile_cache():
    text = _matmul_module(16, 16, 16)
    rlx_mlir.clear_compile_cache()
    first = rlx_mlir.compile(text, "mm", threads=1)
    again = rlx_mlir.compile(text, "mm", threads=1)
    other_options = rlx_mlir.compile(text, "mm", threads=2)
    uncached = rlx_mlir.compile(text, "mm", threads=1, cache=False)
    assert again is first
    assert other_options is not first and uncached is not first
    info = rlx_mlir.compile_cache_info()
    assert (info.hits, info.misses, info.size) == (1, 2, 2)
    rlx_mlir.clear_compile_cache()
    assert rlx_mlir.compile_cache_info().size == 0
    assert rlx_mlir.compile(text, "mm", threads=1) is not first


def test_a_failed_compile_is_not_cached():
    bad = "func.func @f(%x: tensor<2xf32>) -> tensor<3xf32> { return %x : tensor<2xf32> }"
    before = rlx_mlir.compile_cache_info()
    for _ in range(2):
        with pytest.raises(rlx_mlir.CompileError):
            rlx_mlir.compile(bad, "f")
    after = rlx_mlir.compile_cache_info()
    assert (after.hits, after.size) == (before.hits, before.size)


def test_results_can_go_to_caller_arrays():
    exe = rlx_mlir.compile(_matmul_module(4, 8, 16), "mm", threads=1)
    a = np.ones((4, 8), np.float32)
    b = np.full((8, 16), 0.5, np.float32)
    out = np.zeros((4, 16), np.float32)
    result = exe(a, b, out=out)
    assert result is out
    np.testing.assert_array_equal(out, np.full((4, 16), 4.0, np.float32))
    with pytest.raises(ArgumentError, match=r"out\[0\] of @mm: expected a writable C-contiguous"):
        exe(a, b, out=np.zeros((16, 4), np.float32))
    with pytest.raises(ArgumentError, match=r"out\[0\] of @mm"):
        exe(a, b, out=np.zeros((4, 32), np.float32)[:, ::2])
    with pytest.raises(TypeError, match=r"out= takes 1 array\(s\), one per result, got 2"):
        exe(a, b, out=(out, out))


def test_thread_count_is_checked_and_openmp_runtime_is_reported(monkeypatch):
    with pytest.raises(ValueError, match="threads must be at least 1, got 0"):
        rlx_mlir.compile(_matmul_module(4, 4, 4), "mm", threads=0)
    monkeypatch.setenv("RLX_OPENMP_LIBRARY", "/nonexistent/libiomp5.so")
    with pytest.raises(rlx_mlir.CompileError, match="RLX_OPENMP_LIBRARY=/nonexistent/libiomp5.so is not a file"):
        rlx_mlir.compile(_matmul_module(64, 64, 64), "mm", threads=2, cache=False)


def test_default_thread_count_follows_the_environment(monkeypatch):
    from rlx_mlir.targets.cpu import default_threads

    monkeypatch.setenv("RLX_NUM_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.setenv("RLX_NUM_THREADS", "zero")
    with pytest.raises(ValueError, match="RLX_NUM_THREADS must be a positive integer, got 'zero'"):
        default_threads()
    monkeypatch.delenv("RLX_NUM_THREADS")
    assert default_threads() >= 1


def _round_to_bf16(x: np.ndarray) -> np.ndarray:
    """f32 -> bf16 (returned as f32), round to nearest, ties to even, from the definition: of
    the two bf16 neighbours of x (the high 16 bits of x, and the next bf16 away from zero),
    the nearer one, or on a tie the one whose last kept bit is 0; past the largest bf16
    the neighbour away from zero is 2^128, i.e. infinity."""
    x = np.asarray(x, np.float32)
    bits = x.view(np.uint32)
    toward_zero = (bits & np.uint32(0xFFFF0000)).view(np.float32)
    away = (toward_zero.view(np.uint32) + np.uint32(0x10000)).view(np.float32)
    wide = x.astype(np.float64)
    away_value = np.where(np.isinf(away), np.copysign(2.0**128, wide), away)
    with np.errstate(invalid="ignore"):  # inf - inf: x is an infinity, kept exactly below
        below = np.abs(wide - toward_zero)
        above = np.abs(away_value - wide)
    last_kept_bit_odd = (bits >> 16) & 1 == 1
    take_away = (above < below) | ((above == below) & last_kept_bit_odd)
    result = np.where(take_away, away, toward_zero)
    exact = (bits & np.uint32(0xFFFF)) == 0
    return np.where(np.isnan(x), np.float32(np.nan), np.where(exact, x, result)).astype(np.float32)


# Rounding cases at the front of every input: signed zeros, ties to even (1 + 2^-8 rounds down
# in bf16, 1 + 3 * 2^-8 up; 1 + 2^-11 and 1 + 3 * 2^-11 in f16), overflow to infinity (f32's
# largest, 65520 in f16), subnormals, infinities and NaN.
_ROUNDING_CASES = np.array(
    [0.0, -0.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-11, -(1 + 3 * 2**-11), np.finfo(np.float32).max,
     -np.finfo(np.float32).max, 65504.0, 65520.0, 1e-40, -1e-45, 6e-8, np.inf, -np.inf, np.nan],
    np.float32,
)


@pytest.mark.parametrize("plan", [True, False])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("rows,cols", [(17, 4), (17, 8), (8, 4), (33, 4), (1, 1), (3, 5)])
def test_half_precision_round_trip_through_a_transpose(rows, cols, dtype, plan):
    # cast f32 -> f16/bf16, transpose, cast back. With bf16, LLVM vectorized the transposing
    # copy of 17 rows into bf16 shuffles that its x86 backend could not legalize (the process
    # aborted); bf16 now reaches LLVM as i16 bits.
    text = f"""
func.func @f(%x: tensor<{rows}x{cols}xf32>) -> tensor<{cols}x{rows}xf32> {{
  %h = "rlx.cast"(%x) : (tensor<{rows}x{cols}xf32>) -> tensor<{rows}x{cols}x{dtype}>
  %t = "rlx.transpose"(%h) {{perm = array<i64: 1, 0>}} : (tensor<{rows}x{cols}x{dtype}>) -> tensor<{cols}x{rows}x{dtype}>
  %y = "rlx.cast"(%t) : (tensor<{cols}x{rows}x{dtype}>) -> tensor<{cols}x{rows}xf32>
  return %y : tensor<{cols}x{rows}xf32>
}}"""
    rng = np.random.default_rng(rows * 100 + cols)
    x = (rng.standard_normal((rows, cols)) * 1000).astype(np.float32)
    count = min(x.size, len(_ROUNDING_CASES))
    x.flat[:count] = _ROUNDING_CASES[:count]
    with np.errstate(over="ignore"):  # 65520 and f32's largest overflow f16, as they should
        rounded = x.astype(np.float16).astype(np.float32) if dtype == "f16" else _round_to_bf16(x)
    out = rlx_mlir.compile(text, "f", plan=plan)(x)
    np.testing.assert_array_equal(out, rounded.T)
