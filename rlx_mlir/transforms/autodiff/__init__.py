"""Automatic differentiation of MIR (RLX's `rlx-autodiff`): reverse and forward mode.

Reverse mode: `driver` walks a block backwards and sums cotangents; the VJP rules, grouped by
op family, live in `rules_elementwise`, `rules_linalg`, `rules_reduction`, `rules_shape`,
`rules_norm`, `rules_attention`, `rules_recurrent` and `rules_control` (custom_fn, if), all
built through `emit.Emitter`; `registry` maps op classes to rules.  Forward mode: `forward`
walks a block in program order with the JVP rules of `jvp_rules`, and differentiates the
other ops through their VJP rules, transposed.  The passes `rlx-grad` (transforms/mir/grad.py)
and `rlx-jvp` (transforms/mir/jvp.py), and `GraphModule.grad` / `GraphModule.jvp`, are the
entry points.
"""

from .driver import GradError, gradients
from .forward import tangents

__all__ = ["GradError", "gradients", "tangents"]
