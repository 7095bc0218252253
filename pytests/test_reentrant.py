"""Re-entrant compiled code: the planned arena is the caller's (one per call context), not a global.

Threads calling one executable (JIT or AOT), each in a context of its own or through the plain
call (which takes an idle context from a pool), get the results a single thread gets, and the
compiled module holds no arena global. Numerics against numpy matmuls written out here.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir import aot

# Three chained matmuls in @outer, two calls of @inner (three more each): the callee's arena
# follows the caller's slots inside the one arena the caller passes.
CHAIN = """
func.func private @inner(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %1 = "rlx.tanh"(%0) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %2 = "rlx.matmul"(%1, %w) : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  return %2 : tensor<8x16xf32>
}
func.func @outer(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %1 = "rlx.tanh"(%0) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %2 = func.call @inner(%1, %w) {no_inline} : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %3 = func.call @inner(%2, %w) {no_inline} : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %4 = "rlx.tanh"(%3) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %4 : tensor<8x16xf32>
}
"""


def reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    h = np.tanh(x.astype(np.float64) @ w)
    for _ in range(2):
        h = np.tanh(h @ w) @ w
    return np.tanh(h)


def inputs(seed: int):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((8, 16)).astype(np.float32), (rng.standard_normal((16, 16)) / 4).astype(np.float32)


def hammer(call_for_thread, threads: int = 4, calls: int = 200) -> list:
    """Each thread calls `call_for_thread(t)` on its own inputs `calls` times; every result is kept."""
    results = [[] for _ in range(threads)]
    errors = []
    start = threading.Barrier(threads)

    def work(t: int) -> None:
        try:
            call = call_for_thread(t)
            x, w = inputs(t)
            start.wait()
            for _ in range(calls):
                results[t].append(call(x, w))
        except Exception as error:  # reported by the test, not lost in the thread
            errors.append(error)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors, errors
    return results


@pytest.fixture(scope="module")
def executable():
    return rlx_mlir.compile(CHAIN, entry="outer", cache=False)


def test_the_arena_is_an_argument_sized_for_the_callees(executable):
    # @inner: two 512-byte slots; @outer: two of its own, then @inner's arena.
    assert executable.arena == (2048, 64)
    assert "__rlx_arena" not in executable.llvm_ir and "llvm.mlir.global" not in executable.llvm_ir
    x, w = inputs(0)
    np.testing.assert_allclose(executable(x, w), reference(x, w), rtol=2e-5, atol=2e-5)


def test_threads_with_contexts_of_their_own_match_one_thread(executable):
    single = [executable(*inputs(t)) for t in range(4)]
    contexts = [executable.context() for _ in range(4)]
    for t, results in enumerate(hammer(lambda t: contexts[t])):
        for result in results:
            np.testing.assert_array_equal(result, single[t])


def test_plain_calls_from_threads_match_one_thread(executable):
    single = [executable(*inputs(t)) for t in range(4)]
    for t, results in enumerate(hammer(lambda t: executable)):
        for result in results:
            np.testing.assert_array_equal(result, single[t])


def test_contexts_hold_distinct_arenas(executable):
    first, second = executable.context(), executable.context()
    assert first._context.arena.ctypes.data != second._context.arena.ctypes.data
    assert first._context.arena.ctypes.data % 64 == 0 and first._context.arena.nbytes == 2048


def test_aot_manifest_records_the_arena_and_threads_share_the_library(tmp_path):
    manifest = aot.export(CHAIN, tmp_path / "chain.so", functions=["outer"])
    assert manifest["functions"][0]["arena"] == {"bytes": 2048, "alignment": 64}
    model = aot.load(str(tmp_path / "chain.so"))
    single = [model(*inputs(t)) for t in range(4)]
    np.testing.assert_allclose(single[0], reference(*inputs(0)), rtol=2e-5, atol=2e-5)
    contexts = [model.outer.context() for _ in range(4)]
    for t, results in enumerate(hammer(lambda t: contexts[t], calls=100)):
        for result in results:
            np.testing.assert_array_equal(result, single[t])
