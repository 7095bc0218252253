"""Lowering of MIR ops. Attention and rotary position embedding (RoPE)."""

from __future__ import annotations

from typing import Callable

LOWERINGS: dict[type, Callable] = {}
