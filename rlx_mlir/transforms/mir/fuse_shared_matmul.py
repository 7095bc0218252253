"""rlx-fuse-shared-matmul: matmuls of one input by several 2-D weights into one matmul.

    %q = rlx.matmul(%x, %wq)           %wq: [K, Nq]
    %k = rlx.matmul(%x, %wk)           %wk: [K, Nk]
    %v = rlx.matmul(%x, %wv)           %wv: [K, Nv]
  ->
    %w  = rlx.concat(rlx.concat(%wq, %wk) {axis = 1}, %wv) {axis = 1}
    %m  = rlx.matmul(%x, %w)           [..., Nq + Nk + Nv]
    %q  = rlx.narrow(%m) {axis = last, start = 0,       len = Nq}
    %k  = rlx.narrow(%m) {axis = last, start = Nq,      len = Nk}
    %v  = rlx.narrow(%m) {axis = last, start = Nq + Nk, len = Nv}

(the q / k / v projection merge).  Matmuls group by their input `%x` within
one block, in block order; weights are 2-D with static shapes (they share K
and the element type, as the matmul verifier guarantees).  The merged ops
go at the first matmul of the group, or just after the last weight
definition when that comes later; a matmul whose weight is defined only
after a use of another one's result would make a cycle and is left out of
the group (the others still merge).  Unused matmuls are left to rlx-dce.

SwiGLU projection pairs (`mul(matmul(x, Wu), silu(matmul(x, Wg)))`) are left
for rlx-fuse-swiglu, so the two passes give fused_swiglu in either order; run
rlx-fuse-swiglu first so that its fused projection can merge here too.
Products are unchanged: each output column is the same dot product.

Every group of two or more matmuls on one input is recorded in the fusion
report, and so is every matmul of such a group left out, with the reason.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

from mlir import ir

from ...dialects import rlx
from ...ir.shapes import shape_of
from ...ir.walk import nested_blocks
from ...passmanager.base import RlxPass
from . import fusion_report as report
from .fuse_swiglu import swiglu_projections


def _swiglu_matmuls(module: ir.Operation) -> set[ir.Operation]:
    found: set[ir.Operation] = set()
    for mul in report.ops_of(module, rlx.MulOp):
        up, gate, _, _ = swiglu_projections(mul)
        if up is not None:
            found.update((up.operation, gate.operation))
    return found


_CYCLE = (
    "merging with the other matmuls on its input would create a cycle "
    "(a weight is defined after a use of another one's result)"
)


class _Positions:
    """Indices of a block's ops, for dominance in a straight-line block."""

    def __init__(self, block: ir.Block):
        self.block = block
        self.ops = [view.operation for view in block.operations]
        self.index = {op: i for i, op in enumerate(self.ops)}

    def definition(self, value: ir.Value) -> int:
        """Index of the op defining `value` in this block; -1 when it dominates the whole block."""
        owner = value.owner
        if isinstance(owner, ir.Block):
            return -1  # an argument of this block or of an enclosing one
        return self.index.get(owner.operation, -1)  # ops outside the block enclose it

    def first_use(self, value: ir.Value) -> Optional[int]:
        """Index of the first op of this block using `value` (directly or in a nested region)."""
        first = math.inf
        for use in value.uses:
            op = use.owner.operation
            while op is not None and op not in self.index:
                parent = op.parent
                op = parent.operation if parent is not None else None
            if op is None:
                return None  # used outside this block
            first = min(first, self.index[op])
        return first


@dataclasses.dataclass(frozen=True)
class FuseSharedMatmul(RlxPass):
    name = "rlx-fuse-shared-matmul"
    summary = "Merge rlx.matmul ops on one input with 2-D weights into one matmul plus rlx.narrow per result"

    def run(self, module: ir.Operation) -> None:
        swiglu = _swiglu_matmuls(module)
        for block in nested_blocks(module):
            self._run_on_block(block, swiglu)

    def _miss(self, op, reason: str) -> None:
        report.record_missed(self.name, op, reason)

    def _run_on_block(self, block: ir.Block, swiglu: set) -> None:
        groups: dict[ir.Value, list] = {}
        for view in block.operations:
            if isinstance(view, rlx.MatmulOp) and report.use_count(view.result):
                groups.setdefault(view.lhs, []).append(view)
        for matmuls in groups.values():
            if len(matmuls) < 2:
                continue
            candidates = []
            for matmul in matmuls:
                if matmul.operation in swiglu:
                    self._miss(matmul, "up / gate projection of a SwiGLU: left for rlx-fuse-swiglu")
                elif len(shape_of(matmul.rhs.type)) != 2:
                    self._miss(matmul, f"weight is batched {report.describe_shape(matmul.rhs)}")
                elif report.static_shape(matmul.rhs) is None or report.static_shape(matmul.result) is None:
                    self._miss(matmul, "dynamic shapes")
                else:
                    candidates.append(matmul)
            self._merge_all(block, candidates)

    def _merge_all(self, block: ir.Block, candidates: list) -> None:
        while len(candidates) >= 2:
            positions = _Positions(block)
            chosen, left_out, last_def = [], [], positions.definition(candidates[0].lhs)
            first_use = math.inf
            for matmul in candidates:
                use = positions.first_use(matmul.result)
                if use is None:
                    self._miss(matmul, "its result is used outside its block")
                    continue
                weight_def = max(last_def, positions.definition(matmul.rhs))
                earliest_use = min(first_use, use)
                if weight_def < earliest_use:
                    chosen.append(matmul)
                    last_def, first_use = weight_def, earliest_use
                else:
                    left_out.append(matmul)
            if len(chosen) >= 2:
                start = max(positions.index[chosen[0].operation], last_def + 1)
                self._merge(chosen, positions.ops[start])
            else:
                for matmul in chosen:  # every other candidate conflicts with it
                    self._miss(matmul, _CYCLE)
            if len(left_out) == 1:
                self._miss(left_out[0], _CYCLE)
            candidates = left_out  # retried among themselves

    def _merge(self, chosen: list, before: ir.Operation) -> None:
        report.guarded(self.name, chosen[0], lambda _: self._build(chosen, before))

    def _build(self, chosen: list, before: ir.Operation) -> None:
        at = ir.InsertionPoint(before)
        loc = report.fused_location(*chosen)
        weights = rlx.ConcatOp.of([m.rhs for m in chosen], 1, loc=loc, ip=at)
        merged = rlx.MatmulOp(chosen[0].lhs, weights, loc=loc, ip=at)
        axis = len(shape_of(merged.result.type)) - 1
        widths = [shape_of(m.rhs.type)[1] for m in chosen]
        report.record_fused(
            self.name,
            chosen[0],
            f"{len(chosen)} matmuls into one on [K, {sum(widths)}] + {len(chosen)} rlx.narrow",
        )
        start = 0
        for matmul, width in zip(chosen, widths):
            part = rlx.NarrowOp(merged.result, axis, start, width, loc=matmul.location, ip=at)
            start += width
            matmul.result.replace_all_uses_with(part.result)
        for matmul in chosen:  # after building: `before` may be one of them
            matmul.operation.erase()
