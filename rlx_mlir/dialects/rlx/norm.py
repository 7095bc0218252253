"""Normalisation: RMSNorm, LayerNorm and their fused residual forms; fused SwiGLU."""

from __future__ import annotations

from .dialect import Rlx  # noqa: F401
