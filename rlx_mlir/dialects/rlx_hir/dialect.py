"""The `rlx_hir` dialect class."""

from __future__ import annotations

from ...dsl import Dialect

# Module attribute naming the fusion policy of an HIR module.
FUSION_POLICY_ATTR = "rlx_hir.fusion_policy"
FUSION_POLICIES = ("direct", "fusable")


class RlxHir(Dialect, name="rlx_hir"):
    """RLX HIR: model blocks (linear layers, norms, attention, decoder blocks) on ranked tensors.

    A module's fusion policy, the module attribute `rlx_hir.fusion_policy`
    (`"direct"`, the default as in RLX's `HirModule::new`, or `"fusable"`),
    decides how `rlx-hir-to-mir` expands blocks: `direct` emits RLX's fused
    MIR ops where they exist, `fusable` primitive chains that later passes
    may fuse.
    """
