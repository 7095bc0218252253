"""Leaves and data: constants and casts."""

from __future__ import annotations

from .dialect import Rlx  # noqa: F401
