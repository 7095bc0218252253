"""Attention and rotary position embedding (RoPE)."""

from __future__ import annotations

from .dialect import Rlx  # noqa: F401
