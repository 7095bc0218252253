"""VJP rules of the ops with bodies: custom_fn, if, scan and while.

A body is a `func.func` of the module; its ops are inlined (cloned) at the backward
insertion point and differentiated by the driver's reverse sweep (`Emitter.reverse`).

* `rlx.custom_fn` with a `vjp` function: the gradient is that function's, called (inlined)
  as `vjp(input, primal_output, d_output) -> d_input` (RLX's input convention: the primal
  input, then `primal_output`, then `d_output`).  Without one, the forward body `fwd` is
  recomputed and differentiated.
* `rlx.if`: both branches are recomputed and differentiated, and the predicate selects the
  taken branch's cotangent (`where`; the untaken branch's value is never used, so even a NaN
  there does not leak).
* `rlx.scan` and `rlx.while` (with `max_iterations`): the loop is recomputed unrolled, every
  carry kept (the saved trajectory), and differentiated; a while step after the condition
  first fails keeps its carry (`where`).  A scan with `0 < num_checkpoints = K < length` is
  reversed segment by segment from K saved carries, each segment recomputed (memory
  O((K + length / K) carry) instead of O(length carry)).  A while without `max_iterations`
  has no rule.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import func

from ...dialects import rlx
from ...dialects.rlx.control import function_signature, lookup_function
from ...ir.shapes import shape_of
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


def recorded(emit: Emitter, build) -> tuple[list[ir.Operation], object]:
    """Runs `build()` and returns the ops it created at `emit.ip` (program order) and its value."""
    block = emit.ip.block
    before = len(block.operations)
    value = build()
    ops = list(block.operations)
    count = len(ops) - before
    ref = emit.ip.ref_operation
    end = len(ops) if ref is None else next(i for i, o in enumerate(ops) if o == ref)
    return ops[end - count : end], value


def _scan_step(emit: Emitter, op, function, carry, t: int):
    """`body(carry, [bcast], [xs[t]])`, inlined."""
    arguments = [carry] + ([op.bcast] if op.bcast is not None else [])
    if op.xs is not None:
        arguments.append(emit.reshape(emit.narrow(op.xs, 0, t, 1), shape_of(op.xs.type)[1:]))
    _, (carry,) = inline(emit, function, arguments)
    return carry


def _unrolled_scan(emit: Emitter, op):
    function = lookup_function(op, op.body, "body")
    carry, carries = op.init, []
    for t in range(op.length):
        carry = _scan_step(emit, op, function, carry, t)
        carries.append(carry)
    if not op.save_trajectory:
        return carry
    shape = shape_of(carry.type)
    return emit.concat([emit.reshape(c, [1, *shape]) for c in carries], 0)


def _scan(emit, op, cts):
    (dy,) = cts
    loc = emit.loc
    operands = [v for v in (op.init, op.bcast, op.xs) if v is not None]
    names = [f"an operand of scan @{op.body}"] * len(operands)
    if 0 < op.num_checkpoints < op.length:
        grads = _checkpointed_scan(emit, op, dy, operands, names)
    else:
        ops, result = recorded(emit, lambda: _unrolled_scan(emit, op))
        grads = emit.reverse(ops, {result: dy}, operands, names)
    emit.loc = loc
    return list(zip(operands, grads))


def _checkpointed_scan(emit: Emitter, op, dy, operands, names):
    """Reverse through `K = num_checkpoints` segments: a forward pass keeps only the carry at
    the start of each segment; then, last segment first, the segment's steps are recomputed
    from its checkpoint and reversed, handing the checkpoint's cotangent to the segment before.
    Live carries: K checkpoints plus one segment's, O((K + length / K) carry)."""
    function = lookup_function(op, op.body, "body")
    length = op.length
    span = -(-length // op.num_checkpoints)  # steps per segment
    starts = list(range(0, length, span))
    checkpoints, carry = [], op.init
    for t in range(starts[-1]):
        if t in starts:
            checkpoints.append(carry)
        carry = _scan_step(emit, op, function, carry, t)
    checkpoints.append(carry)
    carry_shape = shape_of(op.init.type)
    d_carry = None if op.save_trajectory else dy
    totals = [None] * (len(operands) - 1)  # bcast, xs
    for start, checkpoint in reversed(list(zip(starts, checkpoints))):
        end = min(start + span, length)

        def segment(checkpoint=checkpoint, start=start, end=end):
            carries, carry = [], checkpoint
            for t in range(start, end):
                carry = _scan_step(emit, op, function, carry, t)
                carries.append(carry)
            return carries

        ops, carries = recorded(emit, segment)
        seeds = {}
        if op.save_trajectory:
            for t, value in zip(range(start, end), carries):
                seeds[value] = emit.reshape(emit.narrow(dy, 0, t, 1), carry_shape)
        if d_carry is not None:
            last = carries[-1]
            seeds[last] = d_carry if last not in seeds else emit.add(seeds[last], d_carry)
        grads = emit.reverse(ops, seeds, [checkpoint, *operands[1:]], names)
        d_carry = grads[0]
        totals = [g if total is None else emit.add(total, g) for total, g in zip(totals, grads[1:])]
    return [d_carry, *totals]


def _unrolled_while(emit: Emitter, op):
    cond, body = lookup_function(op, op.cond, "cond"), lookup_function(op, op.body, "body")
    carry, running = op.init, None
    for _ in range(op.max_iterations):
        _, (flag,) = inline(emit, cond, [carry])
        flag = emit.reshape(flag, [])
        running = flag if running is None else emit.where(running, flag, running)
        _, (stepped,) = inline(emit, body, [carry])
        carry = emit.where(running, stepped, carry)
    return carry


def _while(emit, op, cts):
    (dy,) = cts
    if op.max_iterations is None:
        raise NotImplementedError("a loop without max_iterations (unbounded)")
    loc = emit.loc
    ops, result = recorded(emit, lambda: _unrolled_while(emit, op))
    (d_init,) = emit.reverse(ops, {result: dy}, [op.init], [f"the carry of while @{op.body}"])
    emit.loc = loc
    return [(op.init, d_init)]


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
    rlx.ScanOp: _scan,
    rlx.WhileOp: _while,
}

__all__ = ["RULES", "inline"]
