"""The CPU target: how many OpenMP threads compiled code runs on.

One thread count is resolved in one place, `resolve_threads`:

- `compile(threads=None)` (the default) and `rlx-lower-to-llvm{threads=0}` (its default)
  mean `default_threads()`: `RLX_NUM_THREADS` if set, else the cores this process may run on;
- `aot.export(threads=1)` (its default) is serial: a library is run on other machines than
  the one that exported it, so it never takes the exporting machine's core count unless asked
  (`threads=0`, or a count);
- the standalone passes `rlx-tile-matmul{threads=1}` and `rlx-parallelize-linalg{threads=2}`
  keep fixed defaults, so that their IR does not depend on the machine; `rlx-lower-to-llvm`
  always gives them the resolved count.

Every count is at most `MAX_THREADS` (checked by the pass options' ranges and by `compile()`).
MLIR-free: the options of passes and of `compile()` read these names.
"""

from __future__ import annotations

import os
from typing import Optional

from ..errors import RlxError

# The most OpenMP threads an option may ask for: far beyond any machine this runs on,
# small enough that a typo (threads=99999) is an error rather than 99999 threads.
MAX_THREADS = 1024

# A thread count meaning "this machine's": `default_threads()`.
AUTO_THREADS = 0


class ThreadCountError(RlxError, ValueError):
    """`RLX_NUM_THREADS` is set to something that is not a positive integer."""


def default_threads() -> int:
    """`RLX_NUM_THREADS` if set, else the number of cores this process may run on."""
    configured = os.environ.get("RLX_NUM_THREADS", "").strip()
    if configured:
        if not configured.isdigit() or int(configured) < 1:
            raise ThreadCountError(f"RLX_NUM_THREADS must be a positive integer, got '{configured}'")
        return int(configured)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def resolve_threads(threads: Optional[int]) -> int:
    """The thread count to compile for: `threads`, or `default_threads()` where it is None or
    `AUTO_THREADS` (0). Range checks are the caller's (a pass option's range, `compile()`'s check)."""
    if threads is None or threads == AUTO_THREADS:
        return default_threads()
    return threads


def host_cpu_flags() -> frozenset[str]:
    """This machine's CPU feature flags as Linux's /proc/cpuinfo names them ("avx512_vnni", ...);
    empty where there is no such file.  The JIT compiles for this machine's CPU, so a lowering
    may use an instruction set extension (through an LLVM intrinsic) where the flag is present."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()
