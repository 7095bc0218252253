"""Living beside numpy's BLAS: rlx's OpenMP team and numpy's OpenBLAS thread pool in one process.

numpy's wheels bundle OpenBLAS built with its own pthread pool.  After every threaded BLAS call
(`a @ b` on large matrices) its worker threads busy-wait (a loop of `nop`s, no `sched_yield`) for
2**28 TSC cycles, about 0.1 s, before they sleep.  A multithreaded rlx call started inside that
window shares its cores with the spinning workers; OpenMP's static schedule then waits for the
thread that got the least CPU: alternating `a @ b` and a 2-thread rlx GEMM (1024^3) on 2 cores
drops rlx from 213 to 125 GFLOP/s (issue 19, item 7).  OpenBLAS reads the length of that spin,
`OPENBLAS_THREAD_TIMEOUT` (an exponent: 2**N cycles, 4 <= N <= 30), only when it starts its pool.

`share_cores_with_openblas()` restarts each loaded pthread OpenBLAS pool once per process with a
spin of 2**`SPIN_EXPONENT` cycles (about 0.4 ms): back-to-back numpy calls still find their
workers awake, and a worker left idle goes to sleep before it can take much from the next rlx
call.  `compile()` calls it when it returns a multithreaded CPU executable.  It is opt-in
(`RLX_OPENBLAS_SPIN=short`): a numpy matmul that starts after its workers fell asleep pays
OpenBLAS's wake-up, and small threaded ones slow down badly (2 threads, a matmul every few ms:
numpy's 256^3 0.14 -> 7.95 ms, 512^3 1.12 -> 16 ms, measured with `benchmarks/cpu.py`), which no
user of numpy should get by importing rlx.  It does nothing when

- `RLX_OPENBLAS_SPIN=short` is not set (the default: numpy's pool is left alone), or the user set
  `OPENBLAS_THREAD_TIMEOUT` (their choice, already read by OpenBLAS);
- no OpenBLAS is loaded, or it is sequential or OpenMP-threaded (its pool is then not a pthread
  pool of spinning workers), or it lacks the entry points used here (`openblas_read_env`,
  `blas_thread_shutdown_`, `blas_thread_init`, `blas_server_avail`: OpenBLAS >= 0.3.x, including
  numpy's scipy-openblas builds).

The restart joins OpenBLAS's idle workers: it must not overlap a numpy BLAS call running in
another thread, so it happens once, when a multithreaded executable is compiled while the process
runs a single Python thread (with others alive it is put off to a later compile: one of them could
be inside a numpy matmul).
Why not threadpoolctl's `threadpool_limits`: `openblas_set_num_threads` changes how many threads
the next call uses, but neither wakes nor stops workers that already spin.  MLIR-free.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Optional

SPIN_EXPONENT = 20  # OPENBLAS_THREAD_TIMEOUT: workers spin 2**20 cycles (~0.4 ms at 2.5 GHz), then sleep
_ENV = "RLX_OPENBLAS_SPIN"  # "short": restart numpy's pool with a short spin (opt-in)
_OPENBLAS_PTHREADS = 1  # openblas_get_parallel(): 0 sequential, 1 pthreads, 2 OpenMP

_lock = threading.Lock()
_done = False
_reconfigured: list[str] = []


def loaded_openblas_libraries() -> list[str]:
    """Paths of the OpenBLAS shared objects mapped into this process (numpy's, scipy's, ...)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(maxsplit=5)[-1].strip() for line in maps if "openblas" in line.lower()}
    except OSError:  # not Linux: nothing to do
        return []
    return sorted(path for path in paths if path.startswith("/") and ".so" in os.path.basename(path))


def _parallel_mode(library: ctypes.CDLL) -> Optional[int]:
    """openblas_get_parallel() under its plain or scipy-openblas name; None where there is none."""
    for name in ("openblas_get_parallel", "scipy_openblas_get_parallel64_", "scipy_openblas_get_parallel",
                 "openblas_get_parallel64_"):
        function = getattr(library, name, None)
        if function is not None:
            function.restype = ctypes.c_int
            return function()
    return None


def _shorten_spin(path: str) -> bool:
    """Restarts the pthread pool of the OpenBLAS at `path` with the short spin; False where it can't."""
    try:
        library = ctypes.CDLL(path)  # already loaded: the same handle, no second copy
    except OSError:
        return False
    needed = ("openblas_read_env", "blas_thread_shutdown_", "blas_thread_init", "blas_server_avail")
    if not all(hasattr(library, name) for name in needed) or _parallel_mode(library) != _OPENBLAS_PTHREADS:
        return False
    previous = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(SPIN_EXPONENT)
    try:
        library.openblas_read_env()  # OpenBLAS's settings from the environment, the timeout now included
    finally:  # child processes inherit the user's environment, not ours
        if previous is None:
            del os.environ["OPENBLAS_THREAD_TIMEOUT"]
        else:
            os.environ["OPENBLAS_THREAD_TIMEOUT"] = previous
    if ctypes.c_int.in_dll(library, "blas_server_avail").value:
        library.blas_thread_shutdown_()  # joins the workers (they exit at once, asleep or spinning)
    library.blas_thread_init()  # a new pool: it reads the timeout when it starts
    return True


def share_cores_with_openblas() -> list[str]:
    """Once per process: every loaded pthread OpenBLAS pool restarted with a short spin-wait
    (module docstring).  Returns the libraries reconfigured (empty when none was, or when the
    user opted out)."""
    global _done
    if _done:
        return list(_reconfigured)
    with _lock:
        if _done:
            return list(_reconfigured)
        if os.environ.get(_ENV, "").strip().lower() != "short" or "OPENBLAS_THREAD_TIMEOUT" in os.environ:
            _done = True  # not asked for (the default), or the user chose the spin: nothing to do, ever
            return []
        if threading.active_count() > 1:  # another thread may be inside a numpy BLAS call: not now
            return []
        _done = True
        _reconfigured.extend(path for path in loaded_openblas_libraries() if _shorten_spin(path))
        return list(_reconfigured)
