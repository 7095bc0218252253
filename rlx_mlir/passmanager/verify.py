"""rlx-verify: run the RLX verifier (structure plus every op's shape rules)."""

from __future__ import annotations

import dataclasses

from mlir import ir

from ..dialects import verifier
from .base import PassFailure, RlxPass


@dataclasses.dataclass(frozen=True)
class Verify(RlxPass):
    name = "rlx-verify"
    summary = "Check RLX ops' shape and dtype rules (runs after parsing and after every RLX pass)"

    def run(self, module: ir.Operation) -> None:
        if not verifier.verify(module):
            raise PassFailure("verification failed")
