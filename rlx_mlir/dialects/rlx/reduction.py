"""Reductions over axes: reduce, softmax, cumsum, argmax."""

from __future__ import annotations

from .dialect import Rlx  # noqa: F401
