"""The `rlx_lir` dialect: the plan op (the per-op plan attributes are named in rlx_mlir.ir.attrs)."""

from __future__ import annotations

from mlir.dialects import func

from ...dsl import Dialect, I64Attr, StrArrayAttr, StrAttr, VerifyError, attribute


class RlxLir(Dialect, name="rlx_lir"):
    """RLX LIR: MIR plus an explicit execution plan (schedule, arena slots, views, phases, I/O, fingerprint)."""


class PlanOp(RlxLir.Operation, name="plan"):
    """The execution plan of the enclosing function (its first op).

    The schedule is the order of the function's ops.  `arena_size` bytes hold
    every intermediate (`rlx_lir.slot` on each op, aligned to `alignment`);
    two slots overlap only if the values' lifetimes are disjoint.  Inputs,
    params, constants and results are not in the arena (results are written
    to the caller's buffers), nor are results marked `rlx_lir.fused`: float
    elementwise values whose only user is a float elementwise op of the same
    shape, computed inside that op's loop nest, nor results of calls and of
    multi-result ops, which come back in buffers of their own that may alias
    the op's operands (those operands stay live while such a result is read).
    A value a view (`rlx_lir.view`) reads keeps its slot as long as any view
    of it, through any chain of views, is read.  `fingerprint` is the SHA-256 of the function's
    generic form without locations and without the fingerprint itself: equal
    across processes, different whenever anything that affects execution
    differs.
    """

    arena_size = attribute(I64Attr, "bytes of the activation arena")
    alignment = attribute(I64Attr, "byte alignment of every slot (a power of two)")
    lower_bound = attribute(I64Attr, "peak bytes simultaneously live: no plan can use a smaller arena")
    unshared = attribute(I64Attr, "bytes without sharing: the sum of all (aligned) slots")
    strategy = attribute(StrAttr, "the packing heuristic that produced the smallest arena")
    inputs = attribute(StrArrayAttr, "I/O manifest: runtime inputs by name, in argument order")
    params = attribute(StrArrayAttr, "I/O manifest: parameters (weights) by name, in argument order")
    outputs = attribute(StrArrayAttr, "I/O manifest: results, in order")
    dynamic_symbols = attribute(StrArrayAttr, "dimension symbols still open (empty until dynamic shapes land)")
    fingerprint = attribute(StrAttr, "`sha256:<hex>` of the LIR function")

    def verify(self) -> None:
        # The op's own check.  Whether the plan fits its function (the independent checker of
        # `ir_plan.plan_problems`) is a check of the whole function, which the RLX verifier
        # (dialects/verifier.py) runs after every op's own checks, reported at this op.
        parent = self.operation.parent
        if parent is None or not isinstance(parent.opview, func.FuncOp):
            raise VerifyError("must be the first op of a func.func")
