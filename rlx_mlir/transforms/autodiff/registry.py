"""Which op has which VJP rule, and which operands only select (no cotangent flows into them)."""

from __future__ import annotations

from ...dialects import rlx
from . import (
    rules_attention,
    rules_control,
    rules_elementwise,
    rules_linalg,
    rules_norm,
    rules_recurrent,
    rules_reduction,
    rules_shape,
)

RULES: dict = {
    **rules_elementwise.RULES,
    **rules_linalg.RULES,
    **rules_reduction.RULES,
    **rules_shape.RULES,
    **rules_norm.RULES,
    **rules_attention.RULES,
    **rules_recurrent.RULES,
    **rules_control.RULES,
}


def rule_for(op):
    """The VJP rule of `op` (a typed view), or None."""
    return RULES.get(type(op))


def index_operands(op) -> tuple:
    """Operands that select rather than feed values: a where's condition, a gather's indices, a
    custom attention mask.  Their derivative is zero almost everywhere; no cotangent flows into them."""
    if isinstance(op, rlx.GatherOp):
        return (op.indices,)
    if isinstance(op, rlx.WhereOp):
        return (op.condition,)
    if isinstance(op, rlx.AttentionOp) and str(op.mask_kind) == "custom":
        return (op.mask,)
    if isinstance(op, rlx.IfOp):
        return (op.pred,)
    if isinstance(op, rlx.RopeAtOp):
        return (op.pos,)
    if isinstance(op, rlx.DequantMatmulOp):
        return (op.w,)
    return ()
