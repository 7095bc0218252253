"""Lowering of MIR ops. Normalisation: RMSNorm, LayerNorm and their fused residual forms; fused SwiGLU."""

from __future__ import annotations

from typing import Callable

LOWERINGS: dict[type, Callable] = {}
