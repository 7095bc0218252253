"""Lowering of MIR ops. Selection: top-k indices and sampling."""

from __future__ import annotations

from typing import Callable

LOWERINGS: dict[type, Callable] = {}
