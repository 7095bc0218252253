"""Compile progress: the `rlx_mlir` logger and how long each compile stage takes.

Every stage of a compile (parsing and verification, each pass pipeline, LLVM's code generation,
linking a library) logs to the `rlx_mlir` logger at INFO level when it starts and when it ends:

    [rlx_mlir] rlx-lower-to-llvm ...
    [rlx_mlir] rlx-lower-to-llvm: 3.21 s

Nothing is printed unless asked for, in one of three ways:

- the environment variable `RLX_VERBOSE=1` (read once, at import) prints every stage on stderr;
- `rlx_mlir.compile(..., progress=True)` prints the stages of that one compile on stderr;
- the standard `logging` configuration: `logging.getLogger("rlx_mlir").setLevel(logging.INFO)` with a
  handler of your own.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from typing import Iterator

LOGGER = logging.getLogger("rlx_mlir")
VERBOSE_ENV = "RLX_VERBOSE"
_FORMAT = "[rlx_mlir] %(message)s"

_lock = threading.Lock()
_reporting_depth = 0
_reporting_handler: "logging.Handler | None" = None
_saved_level = logging.NOTSET


def _stderr_handler() -> logging.Handler:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(_FORMAT))
    return handler


def _verbose_from_environment() -> bool:
    return os.environ.get(VERBOSE_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


_VERBOSE = _verbose_from_environment()
if _VERBOSE:
    LOGGER.addHandler(_stderr_handler())
    LOGGER.setLevel(logging.INFO)


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    """Logs `name ...` when the stage starts and `name: <seconds> s` when it ends (also when it fails)."""
    if not LOGGER.isEnabledFor(logging.INFO):
        yield
        return
    LOGGER.info("%s ...", name)
    start = time.perf_counter()
    try:
        yield
    finally:
        LOGGER.info("%s: %.2f s", name, time.perf_counter() - start)


@contextlib.contextmanager
def reporting(enabled: bool = True) -> Iterator[None]:
    """While the block runs (and `enabled`), the stages are printed on stderr.

    Nests, and does nothing where RLX_VERBOSE already prints them."""
    global _reporting_depth, _reporting_handler, _saved_level
    if not enabled or _VERBOSE:
        yield
        return
    with _lock:
        if _reporting_depth == 0:
            _reporting_handler = _stderr_handler()
            LOGGER.addHandler(_reporting_handler)
            _saved_level = LOGGER.level
            LOGGER.setLevel(logging.INFO)
        _reporting_depth += 1
    try:
        yield
    finally:
        with _lock:
            _reporting_depth -= 1
            if _reporting_depth == 0:
                LOGGER.removeHandler(_reporting_handler)
                LOGGER.setLevel(_saved_level)
                _reporting_handler = None
