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
With `swiglu-products` (as rlx-lower-to-llvm runs it), a `rlx.fused_swiglu` of the split
products then reads them directly (rlx-swiglu-of-products): no concatenation is left at all.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import func

from ...dialects import rlx
from ...dialects.rlx_lir.ir_plan import has_plan
from ...ir.shapes import shape_of
from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass, option
from .swiglu_of_products import gate_products


def _column_concat(value: ir.Value):
    """The rlx.concat producing `value` when it joins two 2-D weights along their columns
    and has no other use, else None."""
    concat = value.owner
    if not isinstance(concat, rlx.ConcatOp) or len(list(value.uses)) != 1:
        return None
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

    swiglu_products: bool = option(False, "then rewrite fused_swiglu(concat(up, gate)) as mul(up, silu(gate)) "
                                          "(rlx-swiglu-of-products): no concatenated products")

    def run(self, module: ir.Operation) -> bool:
        changed = self._split(module)
        if self.swiglu_products:
            changed = gate_products(module, keep=_in_planned_function) or changed
        return changed

    def _split(self, module: ir.Operation) -> bool:
        changed = False
        for matmul in collect_ops(module, rlx.MatmulOp):
            if _in_planned_function(matmul):
                continue  # LIR: the plan fixed its ops and slots
            concat = _column_concat(matmul.rhs)
            if concat is None:
                continue
            product = _split(matmul.lhs, matmul.rhs, matmul.location, ir.InsertionPoint(matmul))
            matmul.result.replace_all_uses_with(product)
            matmul.operation.erase()
            _erase_dead_concats(concat)
            changed = True
        return changed


def _in_planned_function(op: ir.OpView) -> bool:
    parent = op.parent
    while parent is not None and not is_op(parent, func.FuncOp):
        parent = parent.parent
    return parent is not None and has_plan(parent)


def _erase_dead_concats(concat) -> None:
    """The weight concat (and the concats it joined) now unused."""
    pending = [concat]
    while pending:
        op = pending.pop()
        if not isinstance(op, rlx.ConcatOp) or any(len(list(r.uses)) for r in op.results):
            continue
        pending += [value.owner for value in op.operands if not isinstance(value.owner, ir.Block)]
        op.operation.erase()
