"""rlx-hir-to-mir: expand HIR blocks (dialect rlx_hir) into MIR ops (dialect rlx).

Each block is replaced in place by the MIR ops of its expansion
(`rlx_mlir.conversion.hir_to_mir.expansions`), which carry the block's location.  The
fusion policy is the pass option `policy` when given, else the module
attribute `rlx_hir.fusion_policy`, else `direct` (RLX's `HirModule::new`
default): `direct` emits RLX's fused MIR ops where they exist, `fusable`
primitive chains only.  MIR ops already in the input (RLX's `HirOp::Mir`
escape hatch) are left as they are.  Afterwards no rlx_hir op remains and the
policy attribute is dropped: the module is MIR.
"""

from __future__ import annotations

import dataclasses

from mlir import ir

from ...dialects.rlx_hir import FUSION_POLICIES
from ...ir.attrs import FUSION_POLICY_ATTR
from ...ir.walk import ops_in_dialect
from ...passmanager.base import PassFailure, RlxPass, fail, option
from .expansions import EXPANSIONS

_CHOICES = " or ".join(f"'{p}'" for p in FUSION_POLICIES)


@dataclasses.dataclass(frozen=True)
class HirToMir(RlxPass):
    name = "rlx-hir-to-mir"
    summary = "Expand HIR blocks (dialect rlx_hir) into MIR ops under the fusion policy"
    policy: str = option(
        "", f"fusion policy, direct or fusable; empty: the module attribute {FUSION_POLICY_ATTR}, else direct"
    )

    def run(self, module: ir.Operation) -> bool:
        policy = self.fusion_policy(module)
        blocks = ops_in_dialect(module, "rlx_hir")
        for op in blocks:
            _expand(op, policy)
        changed = bool(blocks)
        if FUSION_POLICY_ATTR in module.attributes:
            del module.attributes[FUSION_POLICY_ATTR]
            changed = True
        if changed:
            _check_fully_expanded(module)
        return changed

    def fusion_policy(self, module: ir.Operation) -> str:
        """The policy in force: the option, else the module attribute, else `direct`."""
        if self.policy:
            if self.policy not in FUSION_POLICIES:
                raise fail(module, f"{self.name}: unknown fusion policy '{self.policy}' (option 'policy'); expected {_CHOICES}")
            return self.policy
        if FUSION_POLICY_ATTR not in module.attributes:
            return "direct"
        attr = module.attributes[FUSION_POLICY_ATTR]
        if not isinstance(attr, ir.StringAttr):
            raise fail(module, f"{self.name}: module attribute '{FUSION_POLICY_ATTR}' must be a string, got {attr}")
        value = ir.StringAttr(attr).value
        if value not in FUSION_POLICIES:
            raise fail(
                module, f"{self.name}: unknown fusion policy '{value}' in module attribute '{FUSION_POLICY_ATTR}'; expected {_CHOICES}"
            )
        return value


def _expand(op: ir.Operation, policy: str) -> None:
    view = op.opview
    expand = EXPANSIONS.get(type(view))
    if expand is None:
        return  # reported by _check_fully_expanded
    with ir.InsertionPoint(op), op.location:
        try:
            values = expand(view, policy)
        except ValueError as error:  # a MIR builder rejected the shapes (e.g. a dynamic size)
            raise fail(op, f"cannot expand '{op.name}' into MIR: {error}") from None
    results = list(op.results)
    if len(values) != len(results):
        raise fail(op, f"internal error: the expansion of '{op.name}' gave {len(values)} values for {len(results)} results")
    for index, (old, new) in enumerate(zip(results, values)):
        if old.type != new.type:
            raise fail(op, f"internal error: the expansion of '{op.name}' result #{index} has type {new.type}, expected {old.type}")
    for old, new in zip(results, values):
        old.replace_all_uses_with(new)
    op.erase()


def _check_fully_expanded(module: ir.Operation) -> None:
    leftovers = ops_in_dialect(module, "rlx_hir")
    for op in leftovers:
        op.location.emit_error(f"failed to legalize operation '{op.name}': no expansion to MIR")
    if leftovers:
        raise PassFailure("rlx-hir-to-mir left HIR ops behind")
