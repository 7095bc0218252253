"""Reverse-mode automatic differentiation of MIR (RLX's `rlx-autodiff`).

`driver` walks a block backwards and sums cotangents; the VJP rules, grouped by
op family, live in `rules_elementwise`, `rules_linalg`, `rules_reduction`,
`rules_shape`, `rules_norm`, `rules_attention`, `rules_recurrent` and `rules_control` (custom_fn, if), all built through `emit.Emitter`;
`registry` maps op classes to rules.  The pass `rlx-grad` (transforms/mir/grad.py)
and `GraphModule.grad` are the two entry points.
"""

from .driver import GradError, gradients

__all__ = ["GradError", "gradients"]
