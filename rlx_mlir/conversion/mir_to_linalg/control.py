"""Lowering of control-flow ops: scf loops and branches calling the body functions.

rlx.scan is one scf.for over the steps carrying the carry (and, with
save_trajectory, the trajectory being filled) as iter_args; each step slices
`xs[t]` with a rank-reduced tensor.extract_slice, calls the body with
func.call, and with save_trajectory writes the new carry into row `t` with
tensor.insert_slice.  rlx.if is scf.if on the predicate extracted from its
tensor, each branch one func.call (only the chosen branch runs).  rlx.while is
scf.while whose before-region calls `cond` (and with max_iterations also checks
an iteration counter carried beside the carry); the after-region calls `body`.
rlx.custom_fn is a func.call of `fwd`.

Loop carries: the carry starts as a copy of `init` (so the caller's `init`
buffer is never written) and each new carry goes into the carried tensor
through linalg.copy, so every yielded value is equivalent to its iter_arg, as
one-shot bufferization requires.  rlx-lower-to-llvm then inlines the bodies
(rlx-mir-to-lir leaves body functions unplanned for that) and eliminates the
empty tensors, so the body's last op writes into the carry itself and the copy
folds away; buffer-loop-hoisting moves the body's temporaries out of the loop.
The carry is updated in place: no copy and no allocation per step.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, linalg, scf, tensor

from ...dialects import rlx
from ...ir.shapes import shape_of
from . import builders as lb


def _call(name: str, results, operands) -> list[ir.Value]:
    return list(func.CallOp(list(results), ir.FlatSymbolRefAttr.get(name), list(operands)).results)


def _step_slice(source: ir.Value, position: ir.Value) -> ir.Value:
    """`source[position]` along axis 0, that axis dropped."""
    shape = list(shape_of(source.type))
    element = ir.RankedTensorType(source.type).element_type
    result = ir.RankedTensorType.get(shape[1:], element)
    offsets = [ir.ShapedType.get_dynamic_size()] + [0] * (len(shape) - 1)
    return tensor.ExtractSliceOp(
        result, source, [position], [], [], offsets, [1] + shape[1:], [1] * len(shape)
    ).result


def _insert_row(value: ir.Value, dest: ir.Value, position: ir.Value) -> ir.Value:
    shape = list(shape_of(dest.type))
    offsets = [ir.ShapedType.get_dynamic_size()] + [0] * (len(shape) - 1)
    return tensor.InsertSliceOp(value, dest, [position], [], [], offsets, [1] + shape[1:], [1] * len(shape)).result


def _into(value: ir.Value, dest: ir.Value) -> ir.Value:
    """`value` copied into `dest` (linalg.copy): the loop yields a value bufferization sees as its
    carried buffer, so the carry is updated in place instead of reallocated each iteration."""
    return linalg.copy(value, outs=[dest])


def _fresh(value: ir.Value) -> ir.Value:
    """A copy of `value` in a new tensor: the loop's carry buffer, so `init` is never written."""
    tensor_type = ir.RankedTensorType(value.type)
    return _into(value, lb.empty(list(tensor_type.shape), tensor_type.element_type))


def _extract_scalar(pred: ir.Value) -> ir.Value:
    rank = len(shape_of(pred.type))
    return tensor.ExtractOp(pred, [lb.index_constant(0) for _ in range(rank)]).result


def _lower_scan(op) -> ir.Value:
    carry_type = op.init.type
    trajectory = op.save_trajectory
    inits = [_fresh(op.init)]
    if trajectory:
        result_type = ir.RankedTensorType(op.result.type)
        inits.append(lb.empty(list(result_type.shape), result_type.element_type))
    loop = scf.ForOp(lb.index_constant(0), lb.index_constant(op.length), lb.index_constant(1), inits)
    with ir.InsertionPoint(loop.body):
        t = loop.induction_variable
        carried = list(loop.inner_iter_args)
        args = [carried[0]]
        if op.bcast is not None:
            args.append(op.bcast)
        if op.xs is not None:
            args.append(_step_slice(op.xs, t))
        new_carry = _call(op.body, [carry_type], args)[0]
        yielded = [_into(new_carry, carried[0])]
        if trajectory:
            yielded.append(_insert_row(new_carry, carried[1], t))
        scf.YieldOp(yielded)
    return loop.results[1] if trajectory else loop.results[0]


def _lower_if(op) -> ir.Value:
    result_type = op.result.type
    args = [] if op.arg is None else [op.arg]
    branch = scf.IfOp(_extract_scalar(op.pred), [result_type], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp(_call(op.then_branch, [result_type], args))
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp(_call(op.else_branch, [result_type], args))
    return branch.results[0]


def _lower_while(op) -> ir.Value:
    carry_type = op.init.type
    bounded = op.max_iterations is not None
    index = ir.IndexType.get()
    cond_type = _cond_result_type(op)
    inits = [_fresh(op.init)] + ([lb.index_constant(0)] if bounded else [])
    types = [carry_type] + ([index] if bounded else [])
    loop = scf.WhileOp(types, inits)
    before = loop.before.blocks.append(*types)
    with ir.InsertionPoint(before):
        carry = before.arguments[0]
        keep_going = _extract_scalar(_call(op.cond, [cond_type], [carry])[0])
        if bounded:
            limit = lb.index_constant(op.max_iterations)
            under = arith.cmpi(arith.CmpIPredicate.slt, before.arguments[1], limit)
            keep_going = arith.andi(keep_going, under)
        scf.ConditionOp(keep_going, list(before.arguments))
    after = loop.after.blocks.append(*types)
    with ir.InsertionPoint(after):
        yielded = [_into(_call(op.body, [carry_type], [after.arguments[0]])[0], after.arguments[0])]
        if bounded:
            yielded.append(arith.addi(after.arguments[1], lb.index_constant(1)))
        scf.YieldOp(yielded)
    return loop.results[0]


def _cond_result_type(op) -> ir.Type:
    function = rlx.lookup_function(op, op.cond, "cond")
    return rlx.function_signature(function)[1][0]


def _lower_custom_fn(op) -> ir.Value:
    return _call(op.fwd, [op.result.type], [op.input])[0]


LOWERINGS = {
    rlx.ScanOp: _lower_scan,
    rlx.IfOp: _lower_if,
    rlx.WhileOp: _lower_while,
    rlx.CustomFnOp: _lower_custom_fn,
}
