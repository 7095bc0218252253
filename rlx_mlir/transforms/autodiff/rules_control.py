"""VJP rules of the ops with bodies: custom_fn and if.

A body is a `func.func` of the module; its ops are inlined (cloned) at the backward
insertion point and differentiated by the driver's reverse sweep (`Emitter.reverse`).

* `rlx.custom_fn` with a `vjp` function: the gradient is that function's, called (inlined)
  as `vjp(input, primal_output, d_output) -> d_input` (RLX's input convention: the primal
  input, then `primal_output`, then `d_output`).  Without one, the forward body `fwd` is
  recomputed and differentiated.
* `rlx.if`: both branches are recomputed and differentiated, and the predicate selects the
  taken branch's cotangent (`where`; the untaken branch's value is never used, so even a NaN
  there does not leak).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import func

from ...dialects import rlx
from ...dialects.rlx.control import function_signature, lookup_function
from .emit import Emitter


def inline(emit: Emitter, function: ir.Operation, arguments) -> tuple[list[ir.Operation], list[ir.Value]]:
    """Clones the body of `function` (one block) at `emit.ip` with its arguments replaced by
    `arguments`; returns the cloned ops (program order) and the values it returns."""
    block = function.regions[0].blocks[0]
    mapping = dict(zip(block.arguments, arguments))
    cloned = []
    returned = None
    for op in block.operations:
        if isinstance(op.opview, func.ReturnOp):
            returned = [mapping.get(v, v) for v in op.operands]
            break
        copy = op.clone(ip=emit.ip)
        for index, operand in enumerate(op.operands):
            if operand in mapping:
                copy.operands[index] = mapping[operand]
        for old, new in zip(op.results, copy.results):
            mapping[old] = new
        cloned.append(copy)
    return cloned, returned


def _custom_fn(emit, op, cts):
    (dy,) = cts
    loc = emit.loc
    if op.vjp is not None:
        function = lookup_function(op, op.vjp, "vjp")
        inputs, results = function_signature(function)
        expected = [op.input.type, op.result.type, dy.type]
        if inputs != expected or results != [op.input.type]:
            raise NotImplementedError(
                f"its vjp @{op.vjp}: it must take (input, primal_output, d_output) of types "
                f"({', '.join(map(str, expected))}) and return d_input of type {op.input.type}"
            )
        _, (d_input,) = inline(emit, function, [op.input, op.result, dy])
        emit.loc = loc
        return [(op.input, d_input)]
    function = lookup_function(op, op.fwd, "fwd")
    ops, (output,) = inline(emit, function, [op.input])
    (d_input,) = emit.reverse(ops, {output: dy}, [op.input], [f"the input of @{op.fwd}"])
    emit.loc = loc
    return [(op.input, d_input)]


def _if(emit, op, cts):
    (dy,) = cts
    if op.arg is None:
        return []
    loc = emit.loc
    branches = []
    for role in ("then_branch", "else_branch"):
        name = getattr(op, role)
        ops, (output,) = inline(emit, lookup_function(op, name, role), [op.arg])
        (d_arg,) = emit.reverse(ops, {output: dy}, [op.arg], [f"the argument of @{name}"])
        branches.append(d_arg)
    emit.loc = loc
    pred = emit.reshape(op.pred, [])
    return [(op.arg, emit.where(pred, branches[0], branches[1]))]


RULES = {
    rlx.CustomFnOp: _custom_fn,
    rlx.IfOp: _if,
}

__all__ = ["RULES", "inline"]
