"""Recurrent and structured ops: selective scan, gated DeltaNet, causal depthwise conv."""

from __future__ import annotations

from .dialect import Rlx  # noqa: F401
