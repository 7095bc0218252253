"""rlx-cse: merge equal side-effect-free RLX ops within a block.

Two ops are equal when they have the same name, the same operands (the same
SSA values, in the same order), the same attribute dictionary (every
attribute, discardable ones included) and the same result types.  Only RLX
ops whose class carries the `Pure` trait are merged: upstream `cse` must
leave IRDL ops alone, since they declare no memory effects in LLVM 22.

The first op of each equal set is kept and the later ones are replaced by it
and erased.  Ops are compared within one block only (the first op dominates
the later ones in a straight-line block); ops in different blocks or regions
are never merged.  Merging cascades: once two ops are merged, their users may
become equal and merge too.  The kept op keeps its own location.
"""

from __future__ import annotations

import dataclasses

from mlir import ir

from ...dsl import Operation, Pure
from ...ir.walk import nested_blocks
from ...passmanager.base import RlxPass


def _mergeable(op: ir.Operation) -> bool:
    view = op.opview
    return isinstance(view, Operation) and view.has_trait(Pure) and not len(op.regions)


def _key(op: ir.Operation) -> tuple:
    attributes = tuple(sorted((name, op.attributes[name]) for name in op.attributes))
    return (
        op.name,
        tuple(op.operands),
        attributes,
        tuple(result.type for result in op.results),
    )


def cse_block(block: ir.Block) -> int:
    """Merges equal Pure RLX ops of `block` (not of nested regions); returns how many were erased."""
    seen: dict[tuple, ir.Operation] = {}
    duplicates: list[ir.Operation] = []
    for view in list(block.operations):
        op = view.operation
        if not _mergeable(op):
            continue
        key = _key(op)  # read after earlier replacements, so merges cascade
        first = seen.get(key)
        if first is None:
            seen[key] = op
            continue
        for old, new in zip(op.results, first.results):
            old.replace_all_uses_with(new)
        duplicates.append(op)
    for op in duplicates:
        op.erase()
    return len(duplicates)


@dataclasses.dataclass(frozen=True)
class CommonSubexpressionElimination(RlxPass):
    name = "rlx-cse"
    summary = "Merge equal side-effect-free RLX ops (trait Pure) within each block"

    def run(self, module: ir.Operation) -> None:
        for block in nested_blocks(module):
            cse_block(block)
