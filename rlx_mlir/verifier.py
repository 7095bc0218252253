"""The RLX verifier: MLIR's structural verification plus every op's Python checks.

IRDL can only state structure (operand counts, tensor-ness, attribute kinds);
shape and dtype rules live in the op classes.  `verify()` runs both and reports
each failure as an MLIR error diagnostic at the failing op's location.
"""

from __future__ import annotations

from mlir import ir

from .dsl import Operation, VerifyError


def verify(root: ir.Operation) -> bool:
    """Verifies `root` and everything nested in it; False after emitting diagnostics."""
    try:
        root.verify()
    except ir.MLIRError as error:
        # With emit_error_diagnostics on, the diagnostics went to the handler;
        # otherwise re-emit them so that a handler sees them.
        for diagnostic in error.error_diagnostics:
            diagnostic.location.emit_error(diagnostic.message)
        return False
    failed = False

    def check(op: ir.Operation) -> ir.WalkResult:
        nonlocal failed
        view = op.opview
        if isinstance(view, Operation):
            try:
                with op.location:
                    view.verify_invariants()
            except VerifyError as error:
                op.location.emit_error(f"'{op.name}' op {error}")
                failed = True
        return ir.WalkResult.ADVANCE

    root.walk(check)
    return not failed
