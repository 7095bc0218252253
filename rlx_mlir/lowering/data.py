"""Lowering of MIR ops. Leaves and data: constants and casts."""

from __future__ import annotations

from typing import Callable

LOWERINGS: dict[type, Callable] = {}
