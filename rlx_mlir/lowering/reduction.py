"""Lowering of MIR ops. Reductions over axes: reduce, softmax, cumsum, argmax."""

from __future__ import annotations

from typing import Callable

LOWERINGS: dict[type, Callable] = {}
