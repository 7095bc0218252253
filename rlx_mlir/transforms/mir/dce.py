"""rlx-dce: erase RLX ops marked `Pure` whose results are unused.

Upstream DCE (in canonicalize) must keep IRDL ops, since they declare no
memory effects in LLVM 22; the `Pure` trait on our op classes says what
upstream cannot see.
"""

from __future__ import annotations

import dataclasses

from mlir import ir

from ...dsl import Operation, Pure
from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass


def _is_dead(op: ir.Operation) -> bool:
    view = op.opview
    return (
        isinstance(view, Operation)
        and view.has_trait(Pure)
        and all(not list(result.uses) for result in op.results)
    )


@dataclasses.dataclass(frozen=True)
class DeadCodeElimination(RlxPass):
    name = "rlx-dce"
    summary = "Erase unused RLX ops that have no side effects (trait Pure)"

    def run(self, module: ir.Operation) -> None:
        while True:
            dead = collect_ops(module, _is_dead)
            if not dead:
                return
            for op in reversed(dead):  # users before producers
                op.erase()
