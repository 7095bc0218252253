"""Lowering of recurrent MIR ops: scf.for over the sequence carrying the state."""

from __future__ import annotations

from typing import Callable

LOWERINGS: dict[type, Callable] = {}
