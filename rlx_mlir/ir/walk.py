"""Walking IR: the ops and blocks nested in an op, collected before anything is
changed (erasing or replacing ops during MLIR's walk is unsafe)."""

from __future__ import annotations

from typing import Callable

from mlir import ir


def collect_ops(
    root: ir.Operation,
    predicate: Callable[[ir.Operation], bool] = lambda op: True,
    order: ir.WalkOrder = ir.WalkOrder.POST_ORDER,
) -> list[ir.Operation]:
    """Every op nested in `root` (itself included) that satisfies `predicate`, in walk order."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if predicate(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit, order)
    return found


def ops_in_dialect(root: ir.Operation, namespace: str) -> list[ir.Operation]:
    """The ops of dialect `namespace` (e.g. "rlx") nested in `root`."""
    prefix = namespace + "."
    return collect_ops(root, lambda op: op.name.startswith(prefix))


def nested_blocks(root: ir.Operation) -> list[ir.Block]:
    """Every block of every region nested in `root`."""
    return [block for op in collect_ops(root) for region in op.regions for block in region.blocks]
