"""The LIR dialect `rlx_lir`: MIR plus its execution plan, made explicit in the IR.

As RLX's `LirModule { mir, buffers }`, an LIR function is a MIR function whose
op order is the schedule, with the plan attached:

- `rlx_lir.plan` (the function's first op) holds the arena size and alignment,
  the I/O manifest, the planner's lower bound and unshared total, and the
  fingerprint;
- every planned intermediate carries `rlx_lir.slot = array<i64: offset, size>`
  (bytes in the arena), a pure view also the unit attribute `rlx_lir.view`,
  and every op its phase `rlx_lir.phase` ("prologue", "steady", "epilogue").

`rlx-mir-to-lir` writes the plan, `rlx-lir-to-linalg` executes it.  The plan
op's verifier re-derives the buffers from the function and runs the
independent plan checker, so a hand-edited or round-tripped LIR that breaks
the plan's invariants does not verify.
"""

from .dialect import PlanOp, RlxLir  # noqa: F401

__all__ = ["PlanOp", "RlxLir"]
