"""rlx-lir-to-linalg: lower LIR so that the generated code executes the plan.

Each planned function gets one arena, a private `memref.global` of the plan's
size and alignment (allocated once when the module is loaded, reused by every
call).  Every planned intermediate is computed into `memref.view`s of the
arena at its slot: the MIR op lowers to linalg on tensors as in
rlx-mir-to-linalg, and `bufferization.materialize_in_destination` into the
view, with `eliminate-empty-tensors` before bufferization, makes the op write
its result there.  Views (reshape, narrow, same-type cast) lower to memref
views of their root and move no data.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import arith, bufferization, memref

from ..dialects.rlx_lir.dialect import FUSED_ATTR, PHASE_ATTR, SLOT_ATTR, VIEW_ATTR
from ..ir_walk import collect_ops
from .base import RlxPass
from .mir_to_linalg import MirToLinalg
from .mir_to_lir import _functions


def arena_symbol(function) -> str:
    return "__rlx_arena_" + ir.StringAttr(function.sym_name).value


@dataclasses.dataclass(frozen=True)
class LirToLinalg(RlxPass):
    name = "rlx-lir-to-linalg"
    summary = "Lower LIR to linalg, each intermediate computed into its arena slot (memref.view of one global)"

    def run(self, module: ir.Operation) -> None:
        module_block = module.regions[0].blocks[0]
        for function in _functions(module):
            block = function.regions[0].blocks[0]
            plan_op = next((op for op in block.operations if op.operation.name == "rlx_lir.plan"), None)
            if plan_op is None:
                continue
            plan = plan_op.opview
            arena_size, alignment = plan.arena_size, plan.alignment
            placed = [op.operation for op in block.operations
                      if SLOT_ATTR in op.operation.attributes and VIEW_ATTR not in op.operation.attributes]
            if arena_size > 0 and placed:
                arena_type = ir.MemRefType.get([arena_size], ir.IntegerType.get_signless(8))
                with ir.InsertionPoint.at_block_begin(module_block), function.location:
                    memref.GlobalOp(
                        arena_symbol(function), ir.TypeAttr.get(arena_type), sym_visibility="private",
                        initial_value=ir.UnitAttr.get(),
                        alignment=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), alignment),
                    )
                with ir.InsertionPoint(plan_op), function.location:
                    arena = memref.GetGlobalOp(arena_type, arena_symbol(function)).result
                for op in placed:
                    _compute_into_slot(op, arena)
            plan_op.operation.erase()
        MirToLinalg().run(module)
        for op in collect_ops(module):  # plan attributes left on ops that were not rlx ops
            for name in (SLOT_ATTR, VIEW_ATTR, PHASE_ATTR, FUSED_ATTR):
                if name in op.attributes:
                    del op.attributes[name]


def _compute_into_slot(op: ir.Operation, arena: ir.Value) -> None:
    offset, _size = list(ir.DenseI64ArrayAttr(op.attributes[SLOT_ATTR]))
    result = op.results[0]
    tensor = ir.RankedTensorType(result.type)
    view_type = ir.MemRefType.get(list(tensor.shape), tensor.element_type)
    with ir.InsertionPoint.after(op), op.location:
        byte_shift = arith.ConstantOp(ir.IndexType.get(), offset).result
        view = memref.ViewOp(view_type, arena, byte_shift, []).result
        bufferization.MaterializeInDestinationOp(None, result, view, restrict=True, writable=True)
