"""The JIT runtime under misuse: no silent wrong answers, no crashed process, no leaked Contexts.

Outputs that overlap inputs, in-place (tied) arguments that cannot be updated
in place, options LLVM would abort on, an OpenMP runtime that is not one,
compiles that must not leak their MLIR Context, the bounded variant cache of a
dynamic executable, and `compile(..., isolate=True)` turning an LLVM abort
into a CompileError. References are plain numpy.
"""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest
from mlir import ir

import rlx_mlir
from rlx_mlir import GraphModule
from rlx_mlir.runtime import isolation
from rlx_mlir.runtime.jit import ArgumentError


def _matmul(n: int) -> str:
    t = f"tensor<{n}x{n}xf32>"
    return f"""
func.func @mm(%x: {t}, %w: {t}) -> {t} {{
  %0 = "rlx.matmul"(%x, %w) : ({t}, {t}) -> {t}
  return %0 : {t}
}}"""


def _rng_array(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# --- out= arrays that overlap the inputs ------------------------------------------------------------


@pytest.mark.parametrize("which", ["x", "w"])
def test_out_may_be_an_input(which):
    exe = rlx_mlir.compile(_matmul(8), "mm", threads=1)
    x, w = _rng_array((8, 8), 0), _rng_array((8, 8), 1)
    expected = x.astype(np.float64) @ w.astype(np.float64)
    out = x if which == "x" else w
    result = exe(x, w, out=out)
    assert result is out
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_out_partly_overlapping_an_input():
    buffer = _rng_array((16, 8), 2)
    x, out = buffer[:8], buffer[4:12]  # both C-contiguous, rows 4..7 shared
    w = _rng_array((8, 8), 3)
    expected = x.astype(np.float64) @ w.astype(np.float64)
    exe = rlx_mlir.compile(_matmul(8), "mm", threads=1)
    exe(x, w, out=out)
    np.testing.assert_allclose(buffer[4:12], expected, rtol=1e-5, atol=1e-5)


TWO_RESULTS = """
func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "rlx.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "rlx.add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}"""


def test_one_array_for_two_results_is_an_error():
    exe = rlx_mlir.compile(TWO_RESULTS, threads=1)
    x = np.arange(4, dtype=np.float32)
    shared = np.zeros(4, np.float32)
    with pytest.raises(ArgumentError, match=r"out\[0\] and out\[1\] of @f share memory"):
        exe(x, out=(shared, shared))
    buffer = np.zeros(6, np.float32)
    with pytest.raises(ArgumentError, match=r"out\[0\] and out\[1\] of @f share memory"):
        exe(x, out=(buffer[:4], buffer[2:]))
    first, second = np.zeros(4, np.float32), np.zeros(4, np.float32)
    exe(x, out=(first, second))
    np.testing.assert_array_equal(first, -x)
    np.testing.assert_array_equal(second, 2 * x)


# --- tied (in-place) arguments -----------------------------------------------------------------------

CACHE_WRITE = """
func.func @write(%cache: tensor<1x6x4xf32> {rlx.name = "cache"}, %new: tensor<1x2x4xf32> {rlx.name = "new"},
                 %pos: tensor<i64> {rlx.name = "pos"}) -> (tensor<1x6x4xf32> {rlx.tied = 0 : i64}) {
  %0 = "rlx.kv_cache_write"(%cache, %new, %pos) : (tensor<1x6x4xf32>, tensor<1x2x4xf32>, tensor<i64>) -> tensor<1x6x4xf32>
  return %0 : tensor<1x6x4xf32>
}"""


@pytest.fixture(scope="module")
def cache_write():
    return rlx_mlir.compile(CACHE_WRITE, threads=1)


def _read_only(shape):
    array = np.zeros(shape, np.float32)
    array.flags.writeable = False
    return array


@pytest.mark.parametrize(
    "make, problem",
    [
        (lambda: np.zeros((1, 6, 4), np.float32, order="F"), r"it is not C-contiguous \(Fortran order\)"),
        (lambda: np.zeros((1, 6, 8), np.float32)[:, :, ::2], r"it is not C-contiguous \(a strided view\)"),
        (lambda: _read_only((1, 6, 4)), "it is read-only"),
        (lambda: np.zeros((1, 6, 4)).astype(np.float32).tolist(), "got a list, not a numpy array"),
        (lambda: np.zeros((1, 6, 4), ">f4"), "its byte order is not this machine's"),
    ],
    ids=["fortran", "strided", "read-only", "list", "big-endian"],
)
def test_tied_argument_that_cannot_be_updated_in_place(cache_write, make, problem):
    cache = make()
    before = np.array(cache, copy=True)
    with pytest.raises(ValueError, match=r"argument 'cache' of @write is updated in place \(result0 is tied to it\) "
                                         r"and must be a writable array, C-contiguous and aligned: " + problem):
        cache_write(cache, np.ones((1, 2, 4), np.float32), np.array(0))
    np.testing.assert_array_equal(np.asarray(cache), before)


def test_an_input_that_aliases_the_tied_argument_is_read_before_the_update(cache_write):
    cache = np.arange(24, dtype=np.float32).reshape(1, 6, 4)
    new = cache[:, 1:3]  # rows 1 and 2, written to rows 2 and 3: overlapping, like memmove
    expected = cache.copy()
    expected[:, 2:4] = cache[:, 1:3]
    assert cache_write(cache, new, np.array(2)) is cache
    np.testing.assert_array_equal(cache, expected)


# --- options that LLVM would abort on ----------------------------------------------------------------


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(opt_level=4), r"opt_level must be one of 0, 1, 2, 3 \(LLVM's -O levels\), got 4 \(int\)"),
        (dict(opt_level=-1), r"opt_level must be one of 0, 1, 2, 3 .*got -1"),
        (dict(opt_level=99), r"opt_level must be one of 0, 1, 2, 3 .*got 99"),
        (dict(opt_level=True), r"opt_level must be one of 0, 1, 2, 3 .*got True \(bool\)"),
        (dict(opt_level=2.0), r"opt_level must be one of 0, 1, 2, 3 .*got 2.0 \(float\)"),
        (dict(threads=True), r"threads must be an integer, got True \(bool\)"),
        (dict(threads=2.5), r"threads must be an integer, got 2.5 \(float\)"),
        (dict(threads=-1), r"threads must be at least 1, got -1"),
        (dict(threads=99999), r"threads must be at most 1024, got 99999"),
        (dict(plan="no"), r"plan must be True or False, got 'no' \(str\)"),
        (dict(matmul_kernels=0), r"matmul_kernels must be True or False, got 0 \(int\)"),
        (dict(cache=None), r"cache must be True or False, got None"),
        (dict(isolate=1), r"isolate must be True or False, got 1 \(int\)"),
        (dict(max_variants=0), r"max_variants must be at least 1, got 0"),
        (dict(entry=3), r"entry must be None or a non-empty string, got 3 \(int\)"),
        (dict(filename=""), r"filename must be a non-empty string, got ''"),
    ],
)
def test_bad_compile_options_are_value_errors(options, message):
    options = {"entry": "mm", "cache": False, **options}
    with pytest.raises(ValueError, match=r"compile\(\): " + message):
        rlx_mlir.compile(_matmul(4), **options)


def test_numpy_integers_are_accepted_as_options():
    exe = rlx_mlir.compile(_matmul(4), "mm", opt_level=np.int64(2), threads=np.int32(1), cache=False)
    x = _rng_array((4, 4), 4)
    np.testing.assert_allclose(exe(x, x), x.astype(np.float64) @ x, rtol=1e-5, atol=1e-5)


def test_a_module_that_is_neither_text_nor_a_module():
    with pytest.raises(ValueError, match=r"compile\(\): module must be MLIR text \(str\) or an mlir.ir.Module, got bytes"):
        rlx_mlir.compile(_matmul(4).encode())


def test_a_huge_thread_count_from_the_environment(monkeypatch):
    monkeypatch.setenv("RLX_NUM_THREADS", "5000")
    with pytest.raises(ValueError, match=r"threads must be at most 1024, got 5000 \(from RLX_NUM_THREADS"):
        rlx_mlir.compile(_matmul(4), "mm", cache=False)


def _loaded_library(name: str) -> str:
    """The path of a shared library this process has loaded (libm: a library without OpenMP)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if path.startswith("/") and name in path.rsplit("/", 1)[-1]:
                return path
    pytest.skip(f"{name} is not loaded")


@pytest.mark.parametrize(
    "library, problem",
    [
        ("text", "not an ELF file"),
        ("libm", "it does not define __kmpc_fork_call"),
        ("executable", "it does not load"),
    ],
)
def test_an_openmp_library_that_is_not_one(tmp_path, monkeypatch, library, problem):
    if library == "text":
        path = tmp_path / "libiomp5.so"
        path.write_text("not a library\n")
    elif library == "libm":
        path = _loaded_library("libm.so")
    else:
        path = sys.executable  # an ELF executable, not a library
    monkeypatch.setenv("RLX_OPENMP_LIBRARY", str(path))
    with pytest.raises(rlx_mlir.CompileError, match=rf"RLX_OPENMP_LIBRARY={path} is not a usable OpenMP runtime: {problem}"):
        rlx_mlir.compile(_matmul(64), "mm", threads=2, cache=False)


# --- no leaked Contexts ------------------------------------------------------------------------------


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    pytest.skip("no /proc/self/status")


ADD_CONSTANT = """
func.func @f(%x: tensor<64xf32>) -> tensor<64xf32> {{
  %c = arith.constant dense<{value}.0e-2> : tensor<64xf32>
  %0 = "rlx.add"(%x, %c) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %1 = "rlx.tanh"(%0) : (tensor<64xf32>) -> tensor<64xf32>
  return %1 : tensor<64xf32>
}}"""


def _live_contexts() -> int:
    gc.collect()
    return ir.Context._get_live_count()


def test_compiles_release_their_context_and_memory():
    """Before the fix each compile kept its Context (and ~2.4 MB): 100 compiles took RSS up by 240 MB."""
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    rlx_mlir.compile(ADD_CONSTANT.format(value=0), threads=1, cache=False)(x)  # load the runtime libraries once
    contexts, rss = _live_contexts(), _rss_mb()
    for value in range(1, 101):
        exe = rlx_mlir.compile(ADD_CONSTANT.format(value=value), threads=1, cache=False)
        np.testing.assert_allclose(exe(x), np.tanh(x.astype(np.float64) + value / 100), rtol=1e-5, atol=1e-6)
        del exe
    assert _live_contexts() == contexts
    assert _rss_mb() - rss < 60  # measured: under 1 MB after the fix, 240 MB before


def test_failed_compiles_release_their_context():
    contexts = _live_contexts()
    for _ in range(10):
        with pytest.raises(rlx_mlir.CompileError):
            rlx_mlir.compile('func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> { "rlx.nope"() : () -> () }', cache=False)
    assert _live_contexts() == contexts


def test_builder_and_specialised_compiles_release_their_contexts():
    contexts = _live_contexts()
    for size in range(1, 6):
        g = GraphModule.mir("f")
        x = g.input("x", (size,))
        g.set_outputs(x * x)
        value = np.arange(size, dtype=np.float32)
        np.testing.assert_array_equal(g.compile(threads=1, cache=False)(value), value * value)
        d = GraphModule.mir("d")
        y = d.input("y", ("BATCH", 4))
        d.set_outputs(y + y)
        dynamic = d.compile(threads=1, cache=False)
        for batch in (1, 2, 3):
            np.testing.assert_array_equal(dynamic(np.ones((batch, 4), np.float32)), np.full((batch, 4), 2.0))
        del g, x, d, y, dynamic
    assert _live_contexts() == contexts


# --- the variant cache of a dynamic executable is bounded ------------------------------------------


def _dynamic_square(**options):
    g = GraphModule.mir("square")
    x = g.input("x", ("BATCH", 3))
    g.set_outputs(x * x)
    return g.compile(threads=1, cache=False, **options)


def test_the_variant_cache_keeps_the_most_recently_used():
    exe = _dynamic_square(max_variants=2)
    contexts = _live_contexts()
    for batch in (1, 2, 1, 3, 4):
        value = np.arange(batch * 3, dtype=np.float32).reshape(batch, 3)
        np.testing.assert_array_equal(exe(value), value * value)
    info = exe.cache_info()
    assert (info.hits, info.misses, info.capacity, info.evictions) == (1, 4, 2, 2)
    assert info.variants == ((("BATCH", 3),), (("BATCH", 4),))  # 1 and 2 were the least recently used
    assert _live_contexts() == contexts + 2  # the evicted variants' Contexts are gone
    exe(np.ones((1, 3), np.float32))  # evicted: compiled again
    assert exe.cache_info().misses == 5


def test_a_dynamic_executable_takes_out_arrays_too():
    exe = _dynamic_square()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    expected = x * x
    assert exe(x, out=x) is x
    np.testing.assert_array_equal(x, expected)


def test_the_variant_cache_has_a_default_bound():
    assert _dynamic_square().cache_info().capacity == 32


# --- isolate=True: an abort in LLVM is a CompileError --------------------------------------------

BF16_TRANSPOSE = """
func.func @f(%x: tensor<17x4xf32>) -> tensor<4x17xf32> {
  %0 = "rlx.cast"(%x) : (tensor<17x4xf32>) -> tensor<17x4xbf16>
  %1 = "rlx.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<17x4xbf16>) -> tensor<4x17xbf16>
  %2 = "rlx.cast"(%1) : (tensor<4x17xbf16>) -> tensor<4x17xf32>
  return %2 : tensor<4x17xf32>
}"""


def _bf16(values: np.ndarray) -> np.ndarray:
    """f32 rounded to bfloat16 (round to nearest even on the top 16 bits), back in f32."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def test_isolate_turns_an_llvm_abort_into_a_compile_error():
    """Issue 13 item 5 aborted LLVM ("Do not know how to soft promote this operator's operand!"):
    under isolate it is a CompileError with LLVM's message, or (once fixed) it compiles right."""
    x = _rng_array((17, 4), 5)
    try:
        exe = rlx_mlir.compile(BF16_TRANSPOSE, threads=1, isolate=True, cache=False)
    except rlx_mlir.CompileError as error:
        assert "killed by signal SIGABRT" in str(error)
        assert "LLVM ERROR: Do not know how to soft promote this operator's operand!" in str(error)
    else:
        np.testing.assert_array_equal(exe(x), _bf16(x).T)


def _child_that_runs(prelude: str) -> list[str]:
    """The isolated compile's real child, after `prelude` (which makes code generation crash)."""
    return [sys.executable, "-c", f"{prelude}\nfrom rlx_mlir.runtime import isolated_child\nraise SystemExit(isolated_child.main())"]


ABORTING_ENGINE = """
import os, sys
from rlx_mlir.runtime import jit
def aborting_engine(*args, **kwargs):
    sys.stderr.write("LLVM ERROR: injected failure in code generation\\n")
    sys.stderr.flush()
    os.abort()
jit.ExecutionEngine = aborting_engine
"""

CRASHING_ENGINE = """
import ctypes
from rlx_mlir.runtime import jit
jit.ExecutionEngine = lambda *args, **kwargs: ctypes.string_at(0)
"""


@pytest.mark.parametrize(
    "prelude, signal_name, message",
    [
        (ABORTING_ENGINE, "SIGABRT", "LLVM ERROR: injected failure in code generation"),
        (CRASHING_ENGINE, "SIGSEGV", "(no error output)"),
    ],
    ids=["abort", "segfault"],
)
def test_isolate_reports_a_crashed_child(monkeypatch, prelude, signal_name, message):
    monkeypatch.setattr(isolation, "child_command", lambda: _child_that_runs(prelude))
    with pytest.raises(rlx_mlir.CompileError) as caught:
        rlx_mlir.compile(_matmul(4), "mm", threads=1, isolate=True, cache=False)
    assert f"crashed the compiler process (killed by signal {signal_name}); this process is unaffected" in str(caught.value)
    assert message in str(caught.value)


def test_isolate_covers_each_specialisation(monkeypatch):
    monkeypatch.setattr(isolation, "child_command", lambda: _child_that_runs(ABORTING_ENGINE))
    exe = _dynamic_square(isolate=True)
    with pytest.raises(rlx_mlir.CompileError, match="LLVM ERROR: injected failure"):
        exe(np.ones((2, 3), np.float32))


def test_isolate_compiles_and_caches_like_an_ordinary_compile():
    text = _matmul(4) + "\n// isolate"
    x, w = _rng_array((4, 4), 6), _rng_array((4, 4), 7)
    exe = rlx_mlir.compile(text, "mm", threads=1, isolate=True)
    np.testing.assert_allclose(exe(x, w), x.astype(np.float64) @ w, rtol=1e-5, atol=1e-5)
    hits = rlx_mlir.compile_cache_info().hits
    assert rlx_mlir.compile(text, "mm", threads=1, isolate=True) is exe  # a cache hit starts no child
    assert rlx_mlir.compile_cache_info().hits == hits + 1


def test_isolate_reports_ordinary_errors_with_their_diagnostics():
    text = 'func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = "rlx.neg"(%x) : (tensor<4xf32>) -> tensor<5xf32>\n  return %0 : tensor<5xf32>\n}'
    with pytest.raises(rlx_mlir.CompileError, match=r"bad\.mlir:3:3: error: type of return operand 0") as caught:
        rlx_mlir.compile(text, isolate=True, cache=False, filename="bad.mlir")
    assert "crashed" not in str(caught.value)


TWO_CACHES = """
func.func @write2(%k: tensor<1x6x4xf32> {rlx.name = "k"}, %v: tensor<1x6x4xf32> {rlx.name = "v"},
                  %new: tensor<1x1x4xf32>, %pos: tensor<i64>)
    -> (tensor<1x6x4xf32> {rlx.tied = 0 : i64}, tensor<1x6x4xf32> {rlx.tied = 1 : i64}) {
  %0 = "rlx.kv_cache_write"(%k, %new, %pos) : (tensor<1x6x4xf32>, tensor<1x1x4xf32>, tensor<i64>) -> tensor<1x6x4xf32>
  %1 = "rlx.kv_cache_write"(%v, %new, %pos) : (tensor<1x6x4xf32>, tensor<1x1x4xf32>, tensor<i64>) -> tensor<1x6x4xf32>
  return %0, %1 : tensor<1x6x4xf32>, tensor<1x6x4xf32>
}"""


def test_two_in_place_arguments_that_share_memory():
    exe = rlx_mlir.compile(TWO_CACHES, threads=1)
    cache = np.zeros((1, 6, 4), np.float32)
    with pytest.raises(ValueError, match="arguments 'k' and 'v' of @write2 are both updated in place and share memory"):
        exe(cache, cache, np.ones((1, 1, 4), np.float32), np.array(0))
    k, v = np.zeros((1, 6, 4), np.float32), np.zeros((1, 6, 4), np.float32)
    exe(k, v, np.full((1, 1, 4), 3.0, np.float32), np.array(5))
    expected = np.zeros((1, 6, 4), np.float32)
    expected[0, 5] = 3.0
    np.testing.assert_array_equal(k, expected)
    np.testing.assert_array_equal(v, expected)
