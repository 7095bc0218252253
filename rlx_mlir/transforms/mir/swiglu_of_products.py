"""rlx-swiglu-of-products: a SwiGLU gating that reads its two products, not their concatenation.

    %c = rlx.concat(%up, %gate) {axis = last}   %up, %gate: equal shapes [..., N]
    %y = rlx.fused_swiglu(%c)                    [..., N]
  ->
    %s = rlx.silu(%gate)
    %y = rlx.mul(%up, %s)

rlx-split-weight-concat turns the fused SwiGLU projection `matmul(x, concat(Wu, Wg))`
into `concat(x @ Wu, x @ Wg)`; lowered as is, that concatenation is a [..., 2N] tensor
written by two strided copies and read back by the gating.  After this rewrite the
products feed one elementwise loop (rlx-fuse-elementwise merges the silu into the mul),
and nothing [..., 2N] is materialised.

Conditions: the concat joins along the last axis two operands of one shape and has no
other use; the element type is not f16 / bf16, whose silu would round to the element type
before the product (the fused op rounds once).  For f32 and f64 the result is bit for bit
the fused op's: both compute `up * silu(gate)` in the element type.  rlx-lower-to-llvm runs it
as part of rlx-split-weight-concat (its `swiglu-products` option).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from mlir import ir

from ...dialects import rlx
from ...ir.shapes import shape_of
from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass


def _halves(swiglu) -> tuple | None:
    """(up, gate) when the fused_swiglu's input is a single-use last-axis concat of two equal halves."""
    concat = swiglu.input.owner
    if not isinstance(concat, rlx.ConcatOp) or len(list(swiglu.input.uses)) != 1:
        return None
    rank = len(shape_of(swiglu.input.type))
    if concat.axis % rank != rank - 1 or concat.lhs.type != concat.rhs.type:
        return None
    if isinstance(ir.RankedTensorType(concat.lhs.type).element_type, (ir.F16Type, ir.BF16Type)):
        return None
    return concat.lhs, concat.rhs


@dataclasses.dataclass(frozen=True)
class SwigluOfProducts(RlxPass):
    name = "rlx-swiglu-of-products"
    summary = "Rewrite fused_swiglu(concat(up, gate)) as mul(up, silu(gate)): no [..., 2N] concatenation"

    def run(self, module: ir.Operation) -> bool:
        return gate_products(module)


def gate_products(module: ir.Operation, keep: Callable[[ir.OpView], bool] = lambda op: False) -> bool:
    """The rewrite, on every rlx.fused_swiglu of `module` but those `keep` names; whether any changed."""
    changed = False
    for swiglu in collect_ops(module, rlx.FusedSwigluOp):
        halves = None if keep(swiglu) else _halves(swiglu)
        if halves is None:
            continue
        up, gate = halves
        concat = swiglu.input.owner
        at, location = ir.InsertionPoint(swiglu), swiglu.location
        silu = rlx.SiluOp(gate, loc=location, ip=at)
        product = rlx.MulOp(up, silu.result, loc=location, ip=at)
        swiglu.result.replace_all_uses_with(product.result)
        swiglu.operation.erase()
        concat.operation.erase()
        changed = True
    return changed
