"""Checks of `compile()`'s arguments, made before anything reaches MLIR or LLVM.

LLVM treats a bad option as a programming error (an optimisation level of 4
hits an UNREACHABLE and aborts the process), and Python's `True` is an `int`,
so every option is checked here and a bad one is a ValueError naming it.
"""

from __future__ import annotations

import numbers
from typing import Optional

import numpy as np

from ..targets.cpu import MAX_THREADS  # the one bound, shared with the passes' threads= options

OPT_LEVELS = (0, 1, 2, 3)  # what LLVM's ExecutionEngine accepts


def check_flag(name: str, value) -> bool:
    """`value` must be a bool (numpy's included): a flag given 0, 1 or "yes" is a mistake."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"compile(): {name} must be True or False, got {_show(value)}")
    return bool(value)


def check_count(name: str, value, low: int, high: Optional[int] = None, origin: str = "") -> int:
    """`value` must be an integer (not a bool) in [low, high]; `origin` says where it came from."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"compile(): {name} must be an integer, got {_show(value)}{origin}")
    value = int(value)
    if value < low:
        raise ValueError(f"compile(): {name} must be at least {low}, got {value}{origin}")
    if high is not None and value > high:
        raise ValueError(f"compile(): {name} must be at most {high}, got {value}{origin}")
    return value


def check_opt_level(value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value not in OPT_LEVELS:
        raise ValueError(f"compile(): opt_level must be one of 0, 1, 2, 3 (LLVM's -O levels), got {_show(value)}")
    return int(value)


def check_threads(value, default: bool = False) -> int:
    origin = " (from RLX_NUM_THREADS or this machine's core count)" if default else ""
    return check_count("threads", value, 1, MAX_THREADS, origin)


def check_name(name: str, value, optional: bool = False) -> Optional[str]:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        expected = "None or a non-empty string" if optional else "a non-empty string"
        raise ValueError(f"compile(): {name} must be {expected}, got {_show(value)}")
    return value


def _show(value) -> str:
    return f"{value!r} ({type(value).__name__})"
