"""glibc's malloc asked to keep freed memory for the next allocation (process-wide, once asked).

Compiled code allocates the temporaries the plan does not place in its arena (the GEMM kernels'
panels, the tiled attention's packed keys and values, an outlined layer's results) per call.  By
default glibc serves blocks over 128 KB (a threshold it raises as they are freed, up to 32 MB) with
fresh `mmap`s and returns the top of its heap once 128 KB of it is free, so each call page-faults its
temporaries in again, zeroed by the kernel: 40% of a training step's CPU time, and of the 12-layer
benchmark model's prefill of 2048 tokens (1.67 s -> 1.2 s CPU per call, one thread).  Called by
`TrainStep` and `Executable.bind_params`: a model whose weights are bound, or a training step, is
called again and again, and keeps its peak heap as PyTorch's caching allocators do.  MLIR-free.
"""

from __future__ import annotations

import functools

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
_MMAP_THRESHOLD_MAX = 32 << 20  # glibc's largest M_MMAP_THRESHOLD on 64-bit


@functools.cache  # process-wide settings: asked once (find_library runs ldconfig)
def keep_freed_memory() -> bool:
    """Asks glibc's malloc to keep freed memory for the next allocation instead of handing it
    back to the kernel; True where it could (Linux with glibc), False elsewhere.

    A training step allocates its temporaries per call (the matmul kernels' packed panels, the
    results of the outlined decoder layers, which LIR does not plan into the arena; ~100 MB a step
    for the benchmark model's two layers).  By default glibc serves blocks over 128 KB (a threshold it
    raises as they are freed, up to 32 MB) with fresh `mmap`s and returns the top of its heap
    once 128 KB of it is free: every step then page-faults its temporaries in again, zeroed by
    the kernel (~40% of a one-thread step's CPU time, measured with perf).  With the mmap
    threshold at its maximum and trimming off, the second step reuses the first one's memory:
    the process keeps its peak heap, as PyTorch's caching allocators do.  What is free when it is
    called (the memory LLVM used to compile the step) is handed back first (`malloc_trim`).
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = libc.mallopt if libc is not None else None
    except (OSError, AttributeError):  # no C library by that name, or one without mallopt (musl)
        return False
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:  # first hand back what is free now (the compiler's memory), which would stay
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
        trim(0)
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))
