"""Selection: top-k indices and sampling."""

from __future__ import annotations

from .dialect import Rlx  # noqa: F401
