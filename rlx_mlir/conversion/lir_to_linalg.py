"""rlx-lir-to-linalg: lower LIR so that the generated code executes the plan.

Each planned function gets one arena of the plan's size and alignment.  By
default it is a private `memref.global` (allocated once when the module is
loaded, reused by every call: one call at a time).  With `caller-arena` (what
rlx-lower-to-llvm uses) the arena belongs to the caller: a function that needs
one takes it as its last argument, a `memref<?xi8>` (before the out-params),
and says how large and how aligned it must be in `rlx.arena = array<i64: bytes,
alignment>`.  A callee's arena follows its caller's own slots
(`total(f) = align(own(f)) + max over callees of total(callee)`), passed as a
`memref.view` at each `func.call`, so one buffer per call of the entry point
holds them all and the compiled code owns no memory between calls: two callers
with two arenas run the same code at once.  Every planned intermediate is computed into `memref.view`s of the
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
from typing import Optional

from mlir import ir
from mlir.dialects import arith, bufferization, func, memref

from ..dialects.rlx_lir.ir_plan import defined_functions, find_plan, returned_outputs, view_source
from ..ir.attrs import ARENA_ATTR, FUSED_ATTR, PHASE_ATTR, SLOT_ATTR, TIED_ATTR, VIEW_ATTR
from ..ir.walk import collect_ops, is_op
from ..passmanager.base import RlxPass, option
from ..targets.cpu import MAX_THREADS
from .mir_to_linalg.mir_to_linalg import MirToLinalg


def arena_symbol(function) -> str:
    return "__rlx_arena_" + ir.StringAttr(function.sym_name).value


@dataclasses.dataclass(frozen=True)
class LirToLinalg(RlxPass):
    name = "rlx-lir-to-linalg"
    summary = "Lower LIR to linalg, each intermediate computed into its arena slot (memref.view of the arena)"
    creates_rlx_ops = False
    caller_arena: bool = option(False, "the arena is an argument the caller passes (re-entrant), not a global")
    tiled_attention: bool = option(False, "attention as a tiled loop nest (see rlx-mir-to-linalg{tiled-attention})")
    threads: int = option(0, "the threads the compiled code runs on, where known (see rlx-mir-to-linalg{threads})",
                          minimum=0, maximum=MAX_THREADS)

    def run(self, module: ir.Operation) -> None:
        module_block = module.regions[0].blocks[0]
        own = {}  # function name -> (bytes, alignment) of its own slots, with caller_arena
        for function in defined_functions(module):
            block = function.regions[0].blocks[0]
            plan = find_plan(function)
            if plan is None:
                continue
            arena_size, alignment = plan.arena_size, plan.alignment
            returned = _returned_values(function)  # read off the plan before anything changes
            placed = [op.operation for op in block.operations
                      if SLOT_ATTR in op.operation.attributes and VIEW_ATTR not in op.operation.attributes]
            if arena_size > 0 and placed and self.caller_arena:
                own[ir.StringAttr(function.sym_name).value] = (arena_size, alignment)
                arena = _arena_argument(function)
                for op in placed:
                    _compute_into_slot(op, arena)
            elif arena_size > 0 and placed:
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
            tied = _tied_arguments(function)
            for op, result in returned:
                argument = tied.get(result)
                if argument is not None and _read_after(block, op, argument):
                    argument = None  # a copy: rlx-drop-tied-results reports the result as not updated in place
                _compute_into_own_buffer(op, result, argument)
            plan.operation.erase()
        MirToLinalg(tiled_attention=self.tiled_attention, threads=self.threads).run(module)
        if self.caller_arena:  # after MirToLinalg, which calls the bodies of scan / if / while
            _pass_arenas_to_callees(module, own)
        for op in collect_ops(module):  # plan attributes left on ops that were not rlx ops
            for name in (SLOT_ATTR, VIEW_ATTR, PHASE_ATTR, FUSED_ATTR):
                if name in op.attributes:
                    del op.attributes[name]


def _arena_type() -> ir.MemRefType:
    return ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8))


def _align(size: int, alignment: int) -> int:
    return -(-size // alignment) * alignment


def _arena_argument(function) -> ir.Value:
    """Appends the caller's arena, a `memref<?xi8>`, to `function`'s arguments and returns it."""
    block = function.regions[0].blocks[0]
    old = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    arena = block.add_argument(_arena_type(), function.location)
    function.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([*old.inputs, _arena_type()], list(old.results)))
    if "arg_attrs" in function.attributes:
        attrs = list(ir.ArrayAttr(function.attributes["arg_attrs"]))
        function.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs + [ir.DictAttr.get({})])
    return arena


def _pass_arenas_to_callees(module: ir.Operation, own: dict) -> None:
    """Sizes each function's arena (its own slots, then the largest arena of a function it calls),
    gives every function that needs one the argument, and passes each callee its part."""
    functions = {ir.StringAttr(f.sym_name).value: f for f in defined_functions(module)}
    calls = {name: [c for c in collect_ops(f.operation, func.CallOp)
                    if ir.FlatSymbolRefAttr(c.attributes["callee"]).value in functions]
             for name, f in functions.items()}
    alignment = max([a for _, a in own.values()], default=64)
    totals: dict = {}

    def total(name: str) -> int:  # the call graph is acyclic (the verifier rejects recursion)
        if name not in totals:
            totals[name] = 0  # a cycle, should one get here, adds nothing
            callees = [total(ir.FlatSymbolRefAttr(c.attributes["callee"]).value) for c in calls[name]]
            mine = own.get(name, (0, alignment))[0]
            totals[name] = (_align(mine, alignment) + max(callees)) if any(callees) else mine
        return totals[name]

    for name in functions:
        total(name)
    arenas = {}
    for name, function in functions.items():
        if totals[name] == 0:
            continue
        block = function.regions[0].blocks[0]
        arenas[name] = block.arguments[len(block.arguments) - 1] if name in own else _arena_argument(function)
        function.attributes[ARENA_ATTR] = ir.DenseI64ArrayAttr.get([totals[name], alignment])
    for name in functions:
        for call in calls[name]:
            callee = ir.FlatSymbolRefAttr(call.attributes["callee"]).value
            if totals[callee] == 0:
                continue
            with ir.InsertionPoint(call), call.location:
                index = ir.IndexType.get()
                start = arith.ConstantOp(index, _align(own.get(name, (0, alignment))[0], alignment)).result
                size = arith.ConstantOp(index, totals[callee]).result
                part = memref.ViewOp(_arena_type(), arenas[name], start, [size]).result
                replacement = func.CallOp([r.type for r in call.results], call.attributes["callee"],
                                          [*call.operands, part])
            for position in range(len(call.attributes)):  # no_inline, and any other
                named = call.attributes[position]
                if named.name not in replacement.attributes:
                    replacement.attributes[named.name] = named.attr
            for old, new in zip(call.results, replacement.results):
                old.replace_all_uses_with(new)
            call.erase()


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


def _tied_arguments(function) -> dict:
    """Returned value -> the argument it is tied to (`rlx.tied`: that argument updated in place)."""
    if "res_attrs" not in function.attributes:
        return {}
    block = function.regions[0].blocks[0]
    operands = list(block.operations[len(block.operations) - 1].operands)
    tied = {}
    for position, attrs in enumerate(ir.ArrayAttr(function.attributes["res_attrs"])):
        attrs = ir.DictAttr(attrs)
        if TIED_ATTR not in attrs or position >= len(operands):
            continue
        index = ir.IntegerAttr(attrs[TIED_ATTR]).value
        # An index out of range or a type that differs: rlx-drop-tied-results reports it.
        if 0 <= index < len(block.arguments) and block.arguments[index].type == operands[position].type:
            tied[operands[position]] = block.arguments[index]
    return tied


def _read_after(block: ir.Block, op: ir.Operation, argument: ir.Value) -> bool:
    """Whether an op after `op` (the return aside) reads `argument` or a view of it: then writing
    `op`'s result into the argument's buffer would change what that op reads."""
    aliases, after = {argument}, False
    for other in block.operations:
        other = other.operation
        if other == op:
            after = True
            continue
        view = view_source(other)
        if view is not None and view[0] in aliases:
            aliases.add(other.results[0])
        elif after and not is_op(other, func.ReturnOp) and any(
                operand in aliases for nested in collect_ops(other) for operand in nested.operands):
            return True
    return False


def _compute_into_own_buffer(op: ir.Operation, result: ir.Value, tied: Optional[ir.Value] = None) -> None:
    """Materialize a returned value into a fresh tensor when its op runs, and return (and read) that.

    `eliminate-empty-tensors` makes the op compute straight into it when it can (no copy), and the
    out-params pass makes it the caller's buffer; a result that is a view of an arena value is
    copied out here, while that value is live, not at the return, after its slot was reused.  A
    result tied to an argument (`rlx.tied`: a parameter a training step updates in place) is
    materialized into that argument instead; rlx-drop-tied-results checks that bufferization
    wrote it in place (every read of the argument comes before).
    """
    with ir.InsertionPoint(op), op.location:
        # Not a tensor.empty: eliminate-empty-tensors would then also compute *another* output
        # derived from this one straight into it, returning one buffer twice.
        destination = tied if tied is not None else bufferization.AllocTensorOp(result.type, []).result
    with ir.InsertionPoint.after(op), op.location:
        own = bufferization.MaterializeInDestinationOp(result.type, result, destination).result
    result.replace_all_uses_except(own, own.owner.operation)
