"""rlx beside numpy's OpenBLAS (runtime/blas_threads.py): with RLX_OPENBLAS_SPIN=short, compiling a
multithreaded executable restarts numpy's OpenBLAS pool with a short spin-wait, so its idle workers
stop burning a core right after a numpy matmul; numpy's results are unchanged; by default numpy's
pool is left alone.

Each case runs in a fresh Python process (the restart happens once per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rlx_mlir.runtime import blas_threads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The child: a numpy matmul wakes OpenBLAS's workers; then the process sleeps 80 ms, and the CPU
# time it used meanwhile (every thread) is what the idle workers burnt spinning.
CHILD = r"""
import json, resource, sys, time
import numpy as np
import rlx_mlir

def idle_cpu_after_matmul(a):
    a @ a
    before = resource.getrusage(resource.RUSAGE_SELF)
    time.sleep(0.08)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

a = np.random.default_rng(0).standard_normal((768, 768)).astype(np.float32)
text = ('func.func @mm(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {\n'
        '  %c = "rlx.matmul"(%a, %b) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>\n'
        '  return %c : tensor<8x8xf32>\n}')
exe = rlx_mlir.compile(text, "mm", threads=2)
from rlx_mlir.runtime import blas_threads
x = np.arange(64, dtype=np.float32).reshape(8, 8)
reference = (a.astype(np.float64) @ a.astype(np.float64)).astype(np.float32)
print(json.dumps(dict(
    reconfigured=blas_threads.share_cores_with_openblas(),
    idle_cpu=min(idle_cpu_after_matmul(a) for _ in range(3)),
    numpy_ok=bool(np.allclose(a @ a, reference, rtol=1e-4, atol=1e-3)),
    rlx_ok=bool(np.allclose(exe(x, x), x @ x)),
)))
"""


def _run_child(**environment) -> dict:
    env = {name: value for name, value in os.environ.items()
           if name not in ("OPENBLAS_THREAD_TIMEOUT", "RLX_OPENBLAS_SPIN")}
    env.update(PYTHONPATH=ROOT, OPENBLAS_NUM_THREADS="2", **environment)
    result = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _numpy_uses_pthread_openblas() -> bool:
    import numpy as np

    np.ones((2, 2)) @ np.ones((2, 2))
    return any("openblas" in os.path.basename(path).lower() for path in blas_threads.loaded_openblas_libraries())


needs_openblas = pytest.mark.skipif(not _numpy_uses_pthread_openblas() or (os.cpu_count() or 1) < 2,
                                    reason="numpy is not linked to OpenBLAS here, or one core")


@needs_openblas
def test_compiling_threaded_code_quiets_numpys_idle_openblas_workers():
    kept = _run_child()  # the default leaves numpy's pool alone
    shared = _run_child(RLX_OPENBLAS_SPIN="short")
    assert kept["reconfigured"] == []
    assert len(shared["reconfigured"]) == 1 and "openblas" in shared["reconfigured"][0].lower()
    assert kept["numpy_ok"] and shared["numpy_ok"] and kept["rlx_ok"] and shared["rlx_ok"]
    # OpenBLAS's default: the woken worker spins ~0.1 s, burning CPU while the process sleeps.
    assert kept["idle_cpu"] > 0.004, kept
    # After the restart it sleeps after 2**20 cycles (well under a millisecond; measured 0.06 ms
    # against 17-32 ms): a fraction of the default's burn, with room for a busy machine's noise.
    assert shared["idle_cpu"] < kept["idle_cpu"] / 4, (shared, kept)


@needs_openblas
def test_a_users_openblas_thread_timeout_is_left_alone():
    assert _run_child(OPENBLAS_THREAD_TIMEOUT="28", RLX_OPENBLAS_SPIN="short")["reconfigured"] == []


def test_no_openblas_means_nothing_to_do(monkeypatch):
    monkeypatch.setattr(blas_threads, "loaded_openblas_libraries", lambda: [])
    monkeypatch.setattr(blas_threads, "_done", False)
    monkeypatch.setattr(blas_threads, "_reconfigured", [])
    monkeypatch.setenv("RLX_OPENBLAS_SPIN", "short")
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    assert blas_threads.share_cores_with_openblas() == []


def test_a_library_without_the_pool_entry_points_is_skipped():
    # libc is loadable but is no OpenBLAS: nothing is called, nothing reconfigured.
    assert blas_threads._shorten_spin("libc.so.6") is False


def test_the_restart_waits_while_other_python_threads_run(monkeypatch):
    """Another thread could be inside a numpy matmul: the restart is put off to a later compile."""
    import threading

    monkeypatch.setattr(blas_threads, "_done", False)
    monkeypatch.setattr(blas_threads, "_reconfigured", [])
    monkeypatch.setattr(blas_threads, "loaded_openblas_libraries", lambda: ["libopenblas-fake.so"])
    restarted = []
    monkeypatch.setattr(blas_threads, "_shorten_spin", lambda path: restarted.append(path) or True)
    monkeypatch.setenv("RLX_OPENBLAS_SPIN", "short")
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert blas_threads.share_cores_with_openblas() == [] and restarted == [] and not blas_threads._done
    finally:
        stop.set()
        other.join()
    monkeypatch.setattr(threading, "active_count", lambda: 1)  # pytest's own helper threads aside
    assert blas_threads.share_cores_with_openblas() == ["libopenblas-fake.so"] and blas_threads._done


def test_by_default_numpys_pool_is_left_alone(monkeypatch):
    """Opt-in only: a shortened spin slows numpy's small threaded matmuls (its workers then sleep)."""
    monkeypatch.setattr(blas_threads, "_done", False)
    monkeypatch.setattr(blas_threads, "_reconfigured", [])
    monkeypatch.setattr(blas_threads, "loaded_openblas_libraries", lambda: ["libopenblas-fake.so"])
    monkeypatch.setattr(blas_threads, "_shorten_spin", lambda path: pytest.fail("restarted numpy's pool"))
    monkeypatch.delenv("RLX_OPENBLAS_SPIN", raising=False)
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    assert blas_threads.share_cores_with_openblas() == []
