"""LIR planning core: the arena memory planner, its independent checker, and streaming phases.

Pure Python, independent of MLIR; the `rlx_lir` dialect and the `rlx-mir-to-lir` pass build on it.
"""

from .checker import check_plan
from .phases import derive_phases
from .planner import Buffer, MemoryPlan, PlanError, plan_memory

__all__ = ["Buffer", "MemoryPlan", "PlanError", "check_plan", "derive_phases", "plan_memory"]
