"""Forward mode over the ops of one MIR block: `tangents(ops, outputs, wrt, seeds, ip, names)`.

The tangent ops are appended after the forward ops (at `ip`) and read the forward values
directly, as the reverse sweep's do.  The walk: values depending on a `wrt` argument
(forward), values the outputs depend on through operands that carry a derivative (backward:
a where's condition, a gather's indices only select); each op with a tangent on such an
operand, in program order, hands its operands' tangents (None for zero) to its JVP rule
(`jvp_rules`), which returns one tangent per result.

An op with no JVP rule of its own is differentiated through its VJP rule, transposed: a VJP
rule is linear in the cotangent `u` of the op's results, `d operand_i = J_i^T u`, so the
reverse sweep of the rule's ops with respect to `u`, seeded with the operands' tangents
(`d operand_i <- t_i`), gives `sum_i J_i t_i`, the tangent of the results.  Norms, attention,
RoPE, the recurrences and the ops with bodies take that route, so every op with a VJP rule has
a derivative in forward mode too.  Ops with neither (argmax, topk, sample, compare turned into
a number) on a path from a `wrt` value to an output are errors naming the op (`GradError`),
never a silent zero.  Tangent ops nothing uses are erased at the end.
"""

from __future__ import annotations

from typing import Sequence

from mlir import ir

from ...ir.shapes import element_of
from .driver import GradError, dependency_masks, erase_unused, first_cut, is_float, names_of, reverse
from .emit import Emitter, accumulate
from .jvp_rules import jvp_rule_for
from .registry import index_operands, rule_for
from .rules_control import recorded


def tangents(
    ops: Sequence[ir.Operation],
    outputs: Sequence[ir.Value],
    wrt: Sequence[ir.Value],
    seeds: Sequence[ir.Value],
    ip: ir.InsertionPoint,
    names: Sequence[str],
) -> list[ir.Value]:
    """The tangents of `outputs` when each `wrt` value moves along its `seeds` tangent (of its
    type), built at `ip`: the Jacobian-vector product.  `ops` are the forward ops, all the ops
    of the block before `ip`; `names` name the `wrt` values in messages.  Raises GradError for
    a non-float `wrt` or output on a differentiated path, or an op without a derivative on a
    path from a `wrt` value to an output."""
    with ir.Location.unknown(ip.block.owner.context):
        for value, seed, name in zip(wrt, seeds, names):
            if not is_float(value):
                raise GradError(f"cannot differentiate with respect to '{name}': its element type {element_of(value.type)} is not a float")
            if seed.type != value.type:
                raise GradError(f"the tangent of '{name}' must have its type {value.type}, got {seed.type}")
        block = ip.block
        before = len(block.operations)
        emit = Emitter(ip, ir.Location.unknown())
        emit.reverse = lambda inner_ops, cts, values, labels: reverse(emit, inner_ops, cts, values, labels)
        emit.forward = lambda inner_ops, values, inner_seeds, outs: forward(emit, inner_ops, outs, values, inner_seeds)
        result = forward(emit, ops, outputs, wrt, seeds, names)
        created = list(block.operations)[len(ops) : len(ops) + len(block.operations) - before]
        erase_unused(created, result)
        return result


def forward(emit: Emitter, ops, outputs, wrt, seeds, names=None) -> list[ir.Value]:
    """The forward sweep: the tangents of `outputs` given tangents `seeds` of the values `wrt`,
    through `ops` (program order), built with `emit`."""
    names = names or [f"argument #{i}" for i in range(len(wrt))]
    depends = dependency_masks(ops, wrt)
    # values an output depends on through operands with a derivative (not a selector's)
    needed = set(outputs)
    live = set(outputs)  # through any operand (to tell "no derivative on every path")
    for op in reversed(ops):
        if any(r in live for r in op.results):
            live.update(op.operands)
        if any(r in needed for r in op.results):
            skipped = index_operands(op.opview)
            needed.update(o for o in op.operands if not any(o == s for s in skipped))

    tangent: dict = {}
    for value, seed in zip(wrt, seeds):
        tangent[value] = accumulate(emit, tangent.get(value), seed)
    for op in ops:
        if not any(r in needed for r in op.results):
            continue
        view = op.opview
        skipped = index_operands(view)
        ins = [None if any(o == s for s in skipped) else tangent.get(o) for o in op.operands]
        if all(t is None for t in ins):
            continue
        rule = jvp_rule_for(view)
        if rule is None and rule_for(view) is not None:
            rule = transposed_vjp
        mask = 0
        for operand in op.operands:
            mask |= depends.get(operand, 0)
        if rule is None:
            raise GradError(
                f"'{op.name}' has no derivative (no JVP or VJP rule) and lies on a path from "
                f"{names_of(mask, names)} to an output",
                op,
            )
        emit.loc = op.location
        try:
            outs = rule(emit, view, ins)
        except NotImplementedError as error:
            raise GradError(f"'{op.name}' has no JVP rule for {error}", op) from None
        for result, out in zip(op.results, outs):
            if out is None or result not in needed:
                continue
            if not is_float(result):
                raise GradError(
                    f"'{op.name}' has no derivative: its {element_of(result.type)} result lies on a path from "
                    f"{names_of(mask, names)} to an output",
                    op,
                )
            tangent[result] = out

    result = []
    for index, value in enumerate(outputs):
        out = tangent.get(value)
        if out is None:
            mask = depends.get(value, 0)
            if mask and value in live:
                bit = mask & -mask
                cut = first_cut(ops, bit, depends, live)
                position = bit.bit_length() - 1
                raise GradError(
                    f"'{cut.name if cut else 'an op'}' has no derivative and lies on every path from "
                    f"'{names[position]}' to output #{index}",
                    cut,
                )
            emit.loc = ir.Location.unknown()
            out = emit.zeros_like(value)
        result.append(out)
    return result


def transposed_vjp(emit: Emitter, op, ins: list) -> list:
    """The tangents of `op`'s results through its VJP rule, transposed (see the module docstring):
    with `u` a zero cotangent of each float result, the reverse sweep of the rule's ops with
    respect to `u`, seeded with `d operand_i <- t_i`."""
    operands = list(op.operands)
    moving = {o for o, t in zip(operands, ins) if t is not None}
    outer_needed = emit.needed
    emit.needed = lambda value: value in moving
    loc = emit.loc
    us = [emit.zeros_like(r) if is_float(r) else None for r in op.results]
    ops, pairs = recorded(emit, lambda: rule_for(op)(emit, op, us))
    emit.needed = outer_needed
    # only cotangents that depend on u carry a tangent (a rule may give constants, e.g. zeros)
    on_u = {u for u in us if u is not None}
    for inner in ops:
        if any(o in on_u for o in inner.operands):
            on_u.update(inner.results)
    skipped = index_operands(op)
    cts: dict = {}
    for operand, cotangent in pairs:
        if any(operand == s for s in skipped) or cotangent not in on_u:
            continue
        for position, value in enumerate(operands):
            if value == operand and ins[position] is not None:
                cts[cotangent] = accumulate(emit, cts.get(cotangent), ins[position])
                break
    wrt = [u for u in us if u is not None]
    outs = iter(reverse(emit, ops, cts, wrt, [f"the cotangent of '{op.operation.name}'"] * len(wrt)))
    emit.loc = loc
    return [None if u is None else next(outs) for u in us]
