"""rlx-mir-to-lir: plan each MIR function and write the plan into it (dialect rlx_lir).

The op order is the schedule.  The planner (rlx_mlir.lir.planner) gives every
intermediate a byte slot in one arena, shared between values whose lifetimes
are disjoint, with pure views (reshape, same-type cast, contiguous narrow or a
strided one read only by RoPE and attention, identity expand or transpose:
`rlx_mlir.dialects.rlx_lir.ir_plan._view_source`) placed
inside their root; results of calls and multi-result ops get no slot and keep
the values they may alias live (`Buffer.may_alias`); rlx-lir-to-linalg makes
the code read every planned value from its slot, so the plan's liveness holds
whatever the ops lower to; with `fuse-elementwise`, elementwise results
computed inside their only elementwise consumer (`rlx_lir.fused`) get no slot; phases follow RLX's heuristic unless an op already
carries `rlx_lir.phase` (an override); the plan op carries
the I/O manifest and the fingerprint.  Functions that already have a plan are
left alone.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import func

from ..dialects.rlx_hir import RlxHir
from ..dialects.rlx_lir.dialect import PlanOp
from ..dialects.rlx_lir.ir_plan import defined_functions, fingerprint, function_buffers, has_plan
from ..ir.attrs import FUSED_ATTR, NAME_ATTR, PARAM_ATTR, PHASE_ATTR, SLOT_ATTR, VIEW_ATTR
from ..ir.shapes import is_static
from ..ir.walk import collect_ops, is_op
from ..lir.phases import PHASES, derive_phases
from ..lir.planner import plan_memory
from ..passmanager.base import RlxPass, fail, option


def body_functions(module: ir.Operation) -> set[str]:
    """Functions referenced by symbol from ops (scan, if, while, custom_fn bodies).

    They are not planned: they are inlined into their callers before
    bufferization, where their ops write into the caller's buffers (a loop's
    carry in place); an arena of their own would be shared by every inlined copy.
    """
    names: set[str] = set()
    for op in collect_ops(module):
        if is_op(op, func.FuncOp) or (is_op(op, func.CallOp) and "no_inline" in op.attributes):
            continue  # a no_inline call's callee stays a function: it is planned as one
        attributes = op.attributes
        for index in range(len(attributes)):
            attr = attributes[index].attr
            if isinstance(attr, ir.FlatSymbolRefAttr):
                names.add(attr.value)
    return names


@dataclasses.dataclass(frozen=True)
class MirToLir(RlxPass):
    name = "rlx-mir-to-lir"
    summary = "Plan MIR functions: schedule, arena slots, views, phases, I/O manifest, fingerprint (rlx_lir)"
    alignment: int = option(64, "byte alignment of arena slots", power_of_two=True)
    fuse_elementwise: bool = option(
        False, "give no slot to elementwise results computed inside their only (elementwise) consumer"
    )

    def run(self, module: ir.Operation) -> None:
        if self.alignment <= 0 or self.alignment & (self.alignment - 1):
            raise fail(module, f"{self.name}: alignment {self.alignment} is not a power of two")
        bodies = body_functions(module)
        for function in defined_functions(module):
            if ir.StringAttr(function.sym_name).value not in bodies and not has_plan(function):
                self._plan(function)

    def _plan(self, function) -> None:
        block = function.regions[0].blocks[0]
        dynamic: dict = {}  # type -> a ranked tensor type with dynamic dimensions (few types, many values)
        for op in block.operations:
            operation = op.operation
            if PHASE_ATTR in operation.attributes and ir.StringAttr(operation.attributes[PHASE_ATTR]).value not in PHASES:
                raise fail(operation, f"'{PHASE_ATTR}' must be one of {', '.join(PHASES)}")
            if isinstance(op, RlxHir.Operation):
                raise fail(operation, f"'{operation.name}' is HIR: run rlx-hir-to-mir before {self.name}")
            for value in (*operation.operands, *operation.results):
                type_ = value.type
                unbound = dynamic.get(type_)
                if unbound is None:
                    unbound = dynamic[type_] = isinstance(type_, ir.RankedTensorType) and not is_static(type_.shape)
                if unbound:
                    raise fail(operation, f"'{operation.name}' has dynamic dimensions ({type_}); bind them before planning")
        buffers = function_buffers(function, fuse_elementwise=self.fuse_elementwise)
        plan = plan_memory(buffers.buffers, len(buffers.ops), self.alignment)
        phases = derive_phases([op.name for op in buffers.ops])
        for index, op in enumerate(buffers.ops):
            if is_op(op, func.ReturnOp):
                continue
            if PHASE_ATTR not in op.attributes:  # a phase set before planning overrides the heuristic
                op.attributes[PHASE_ATTR] = ir.StringAttr.get(phases[index])
            for result in op.results:
                buffer_id = buffers.value_ids.get(result)
                if buffer_id is not None and buffers.buffers[buffer_id].kind == "fused":
                    op.attributes[FUSED_ATTR] = ir.UnitAttr.get()
                if buffer_id is None or buffer_id not in plan.offsets:
                    continue
                size = buffers.buffers[buffer_id].size
                op.attributes[SLOT_ATTR] = ir.DenseI64ArrayAttr.get([plan.offsets[buffer_id], size])
                if buffers.buffers[buffer_id].view_of is not None:
                    op.attributes[VIEW_ATTR] = ir.UnitAttr.get()
        inputs, params = _manifest(function)
        outputs = [f"result{i}" for i in range(len(ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value).results))]
        with ir.InsertionPoint.at_block_begin(block), function.location:
            plan_op = PlanOp(
                plan.arena_size, plan.alignment, plan.lower_bound, plan.unshared_total, plan.strategy,
                inputs, params, outputs, [], "",
            )
        plan_op.operation.attributes["fingerprint"] = ir.StringAttr.get(fingerprint(function))


def _manifest(function) -> tuple[list[str], list[str]]:
    arg_attrs = list(ir.ArrayAttr(function.attributes["arg_attrs"])) if "arg_attrs" in function.attributes else []
    inputs, params = [], []
    for index, _ in enumerate(function.regions[0].blocks[0].arguments):
        attrs = ir.DictAttr(arg_attrs[index]) if index < len(arg_attrs) else None
        name = ir.StringAttr(attrs[NAME_ATTR]).value if attrs is not None and NAME_ATTR in attrs else f"arg{index}"
        (params if attrs is not None and PARAM_ATTR in attrs else inputs).append(name)
    return inputs, params
