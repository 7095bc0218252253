"""LIR planning core: the arena memory planner, its independent checker, and streaming phases.

Pure Python, independent of MLIR, imports nothing from the package.  The `rlx_lir` dialect (whose
`ir_plan` module reads and writes plans in IR) and the `rlx-mir-to-lir` conversion build on it."""

from .checker import check_plan
from .phases import derive_phases
from .planner import Buffer, MemoryPlan, PlanError, plan_memory

__all__ = ["Buffer", "MemoryPlan", "PlanError", "check_plan", "derive_phases", "plan_memory"]
