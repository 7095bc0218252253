"""`inspect()`: a readable summary of a GraphModule at its stage."""

from __future__ import annotations

from collections import Counter
from typing import Optional

from mlir import ir
from mlir.dialects import func

from ..dialects import rlx
from ..dialects.rlx_lir import PlanOp
from ..ir.attrs import PHASE_ATTR, SLOT_ATTR, VIEW_ATTR
from ..ir.shapes import format_shape
from ..runtime.signature import signature_of

FUSED_MIR_OPS = (
    rlx.FusedMatmulBiasActOp,
    rlx.FusedResidualRmsNormOp,
    rlx.FusedResidualLayerNormOp,
    rlx.FusedSwigluOp,
)


def block_name(location: ir.Location) -> Optional[str]:
    """The named block (NameLoc) an op was built in, if any."""
    if location.is_a_name():
        return location.name_str
    if location.is_a_fused():
        for inner in location.locations:
            name = block_name(inner)
            if name:
                return name
    if location.is_a_callsite():
        return block_name(location.callee)
    return None


def _describe(type_: ir.Type) -> str:
    if isinstance(type_, ir.RankedTensorType):
        return f"{format_shape(type_.shape)} {type_.element_type}"
    return str(type_)


def _describe_value(graph, value) -> str:
    """`_describe` of the value's type, with the symbols of a symbolic shape rather than `?`."""
    dims = graph._symbolic.get(value)
    if dims is None:
        return _describe(value.type)
    return f"[{', '.join(str(d) for d in dims)}] {ir.RankedTensorType(value.type).element_type}"


def summarize(graph) -> str:
    function = graph._func
    lines = [f"GraphModule '{graph.name}' at stage {graph.stage}"]
    if graph.fusion_policy and graph.stage == "hir":
        lines[0] += f" (fusion policy {graph.fusion_policy})"
    with graph.context:
        try:
            signature = signature_of(function)
            inputs = [s for s in signature.inputs if not s.is_param]
            params = [s for s in signature.inputs if s.is_param]
            lines.append("  inputs:  " + (", ".join(f"{s.name} {_describe_spec(s)}" for s in inputs) or "none"))
            lines.append("  params:  " + (", ".join(f"{s.name} {_describe_spec(s)}" for s in params) or "none"))
            lines.append("  outputs: " + (", ".join(_describe_spec(s) for s in signature.outputs) or "none"))
        except ValueError as error:
            symbols = graph.symbols
            if symbols:  # symbolic shapes: the numpy signature exists per binding only
                lines.append(f"  symbols: {', '.join(symbols)} (bind_dims() or compile() to specialise)")
            else:
                lines.append(f"  signature: {error}")
        ops = [op for op in function.regions[0].blocks[0].operations if not isinstance(op, func.ReturnOp)]
        plan_op = next((op for op in ops if isinstance(op, PlanOp)), None)
        if plan_op is not None:
            lines += _plan_summary(plan_op)
        ops = [op for op in ops if not isinstance(op, PlanOp)]
        lines.append(f"  ops ({len(ops)}):")
        for op in ops:
            operation = op.operation
            results = ", ".join(_describe_value(graph, r) for r in operation.results)
            name = block_name(operation.location)
            where = f"  @ {name}" if name else ""
            lines.append(f"    {operation.name:<32} -> {results}{_plan_columns(operation)}{where}")
        counts = Counter(op.operation.name for op in ops)
        lines.append("  op counts: " + ", ".join(f"{n} x{c}" for n, c in sorted(counts.items())))
        if graph.stage != "hir":
            fused = {c.OPERATION_NAME: counts[c.OPERATION_NAME] for c in FUSED_MIR_OPS if counts.get(c.OPERATION_NAME)}
            lines.append(
                "  fused ops: " + (", ".join(f"{n} x{c}" for n, c in fused.items()) if fused else "none")
            )
    if graph.fusion_report is not None:
        lines.append("  fusion report (rlx-optimize-mir):")
        lines += ["    " + line for line in str(graph.fusion_report).splitlines()]
    return "\n".join(lines)


def _describe_spec(spec) -> str:
    return f"{format_shape(spec.shape)} {spec.dtype.name}"


def _plan_columns(operation: ir.Operation) -> str:
    attrs = operation.attributes
    parts = []
    if SLOT_ATTR in attrs:
        offset, size = list(ir.DenseI64ArrayAttr(attrs[SLOT_ATTR]))
        parts.append(f"{'view' if VIEW_ATTR in attrs else 'slot'} [{offset}, +{size})")
    if PHASE_ATTR in attrs:
        parts.append(ir.StringAttr(attrs[PHASE_ATTR]).value)
    return ("  " + " ".join(parts)) if parts else ""


def _plan_summary(plan) -> list[str]:
    arena, unshared, bound = plan.arena_size, plan.unshared, plan.lower_bound
    saved = unshared - arena
    share = f" ({saved / unshared:.0%} of {unshared})" if unshared else ""
    return [
        f"  plan: fingerprint {plan.fingerprint}",
        f"    arena {arena} bytes (lower bound {bound}, unshared {unshared}, saved {saved}{share}),"
        f" alignment {plan.alignment}, packing {plan.strategy}",
        f"    I/O: inputs {', '.join(plan.inputs) or 'none'}; params {', '.join(plan.params) or 'none'};"
        f" outputs {', '.join(plan.outputs)}",
    ]
