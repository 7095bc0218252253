"""rlx-split-weight-concat: multiply by each weight, not by their concatenation.

RLX's fusions (SwiGLU's up and gate, q/k/v sharing one input) multiply the input by
the weights concatenated along N: `matmul(x, concat(Wa, Wb, axis=1))`. Weights are
arguments of the compiled function, so that concatenation copies every weight on
every call (5.8 MB per SwiGLU layer of the 12-layer benchmark model; per decode step,
more bytes than the matmuls read). This pass rewrites it to the equal
`concat(matmul(x, Wa), matmul(x, Wb), axis=-1)`, which copies the much smaller
products instead; the fused consumers (`rlx.fused_swiglu`, the narrows) are kept.
Chains of concats (three weights) split recursively. Only a concat whose single user
is the matmul is split, and functions already planned (LIR) are left as planned.
"""

from __future__ import annotations

import dataclasses

from mlir import ir

from ...dialects import rlx
from ...ir.walk import collect_ops
from ...ir.shapes import shape_of
from ...passmanager.base import RlxPass
from ...conversion.mir_to_lir import has_plan


def _column_concat(value: ir.Value):
    """The rlx.concat producing `value` when it joins two 2-D weights along their columns
    and has no other use, else None."""
    owner = value.owner
    owner = owner.operation if isinstance(owner, ir.OpView) else owner
    if not isinstance(owner, ir.Operation) or owner.name != "rlx.concat" or len(list(value.uses)) != 1:
        return None
    concat = owner.opview
    if len(shape_of(value.type)) != 2 or concat.axis not in (1, -1):
        return None
    return concat


def _split(x: ir.Value, weight: ir.Value, location: ir.Location, at: ir.InsertionPoint) -> ir.Value:
    """`x @ weight`, with a column concatenation of weights split into products."""
    concat = _column_concat(weight)
    if concat is None:
        return rlx.MatmulOp(x, weight, loc=location, ip=at).result
    left = _split(x, concat.lhs, location, at)
    right = _split(x, concat.rhs, location, at)
    return rlx.ConcatOp(left, right, len(shape_of(left.type)) - 1, loc=location, ip=at).result


@dataclasses.dataclass(frozen=True)
class SplitWeightConcat(RlxPass):
    name = "rlx-split-weight-concat"
    summary = "Rewrite matmul(x, concat(Wa, Wb, axis=1)) as concat(matmul(x, Wa), matmul(x, Wb)): no weight copies"

    def run(self, module: ir.Operation) -> bool:
        changed = False
        for op in collect_ops(module, lambda o: o.name == "rlx.matmul"):
            if _in_planned_function(op):
                continue  # LIR: the plan fixed its ops and slots
            matmul = op.opview
            concat = _column_concat(matmul.rhs)
            if concat is None:
                continue
            product = _split(matmul.lhs, matmul.rhs, op.location, ir.InsertionPoint(op))
            matmul.result.replace_all_uses_with(product)
            op.erase()
            _erase_dead_concats(concat)
            changed = True
        return changed


def _in_planned_function(op: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return parent is not None and has_plan(parent)


def _erase_dead_concats(concat) -> None:
    """The weight concat (and the concats it joined) now unused."""
    pending = [concat.operation]
    while pending:
        op = pending.pop()
        if op.name != "rlx.concat" or any(len(list(r.uses)) for r in op.results):
            continue
        for value in op.operands:
            owner = value.owner
            owner = owner.operation if isinstance(owner, ir.OpView) else owner
            if isinstance(owner, ir.Operation):
                pending.append(owner)
        op.erase()
