"""rlx-lir-to-linalg: lower LIR so that the generated code executes the plan.

Each planned function gets one arena, a private `memref.global` of the plan's
size and alignment (allocated once when the module is loaded, reused by every
call).  Every planned intermediate is computed into `memref.view`s of the
arena at its slot: the MIR op lowers to linalg on tensors as in
rlx-mir-to-linalg, and `bufferization.materialize_in_destination` into the
view, with `eliminate-empty-tensors` before bufferization, makes the op write
its result there.  Views (reshape, narrow, same-type cast) lower to memref
views of their root and move no data.

Why the plan and the lowering agree by construction: every reader of a value
that has a slot reads it *from the slot* (`bufferization.to_tensor` of the
view, read-only), never the op's lowered tensor.  What the lowering and later
rewrites make of that tensor does not matter: a fresh buffer (computed in
place into the slot), a view of an operand (an extract_slice, an identity
transpose that canonicalization folds away) or an operand written in place,
`materialize_in_destination` copies it into the slot when the op runs, while
the operands are live by the plan's own liveness, and from then on only the
slot is read, until the last read the plan counted.  So the plan's view/copy
decisions (`rlx_mlir.dialects.rlx_lir.ir_plan._view_source`) are the only ones: an op the
plan does not call a view costs a copy at worst, never a stale read.  The
read-only `to_tensor` also keeps bufferization from writing into a slot in
place.  A returned value (no slot: it goes to the caller's buffer) is
materialized the same way into a fresh tensor of its own when its op runs
(free when the op can compute straight into it), and returned and read from
there.  The results of calls and multi-result ops keep the buffers their ops
give them; the plan treats reading one as reading the op's operands
(`Buffer.may_alias`), so whatever they may alias stays live.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import arith, bufferization, memref

from ..dialects.rlx_lir.ir_plan import defined_functions, find_plan, returned_outputs
from ..ir.attrs import FUSED_ATTR, PHASE_ATTR, SLOT_ATTR, VIEW_ATTR
from ..ir.walk import collect_ops
from ..passmanager.base import RlxPass
from .mir_to_linalg.mir_to_linalg import MirToLinalg


def arena_symbol(function) -> str:
    return "__rlx_arena_" + ir.StringAttr(function.sym_name).value


@dataclasses.dataclass(frozen=True)
class LirToLinalg(RlxPass):
    name = "rlx-lir-to-linalg"
    summary = "Lower LIR to linalg, each intermediate computed into its arena slot (memref.view of one global)"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> None:
        module_block = module.regions[0].blocks[0]
        for function in defined_functions(module):
            block = function.regions[0].blocks[0]
            plan = find_plan(function)
            if plan is None:
                continue
            arena_size, alignment = plan.arena_size, plan.alignment
            returned = _returned_values(function)  # read off the plan before anything changes
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
                with ir.InsertionPoint(plan), function.location:
                    arena = memref.GetGlobalOp(arena_type, arena_symbol(function)).result
                for op in placed:
                    _compute_into_slot(op, arena)
            for op, result in returned:
                _compute_into_own_buffer(op, result)
            plan.operation.erase()
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
        materialize = bufferization.MaterializeInDestinationOp(None, result, view, restrict=True, writable=True)
        from_slot = bufferization.ToTensorOp(tensor, view, restrict=True).result
    # Every reader reads the slot (module docstring); only the materialisation reads the op's result.
    result.replace_all_uses_except(from_slot, materialize.operation)


def _returned_values(function) -> list:
    """(op, result) for each result the plan calls an output: returned, and neither a view nor a slot."""
    return returned_outputs(function)


def _compute_into_own_buffer(op: ir.Operation, result: ir.Value) -> None:
    """Materialize a returned value into a fresh tensor when its op runs, and return (and read) that.

    `eliminate-empty-tensors` makes the op compute straight into it when it can (no copy), and the
    out-params pass makes it the caller's buffer; a result that is a view of an arena value is
    copied out here, while that value is live, not at the return, after its slot was reused.
    """
    with ir.InsertionPoint(op), op.location:
        # Not a tensor.empty: eliminate-empty-tensors would then also compute *another* output
        # derived from this one straight into it, returning one buffer twice.
        destination = bufferization.AllocTensorOp(result.type, []).result
    with ir.InsertionPoint.after(op), op.location:
        own = bufferization.MaterializeInDestinationOp(result.type, result, destination).result
    result.replace_all_uses_except(own, own.owner.operation)
