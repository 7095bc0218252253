"""Reverse mode over the ops of one MIR block: `gradients(ops, loss, wrt, ip)`.

The backward ops are appended after the forward ops (at `ip`) and read the
forward values directly: every value a rule needs is a residual kept alive until
its use (the LIR planner gives it an arena slot), and what a fused op does not
keep (a norm's statistics, attention's probabilities, the pre-activation of a
fused matmul) its rule recomputes from the op's inputs.  See docs/design.md
("Reverse mode").

The walk: values depending on a `wrt` argument (forward), values the loss
depends on (backward); their intersection is what needs a cotangent.  The loss's
cotangent is 1; each op with a cotangent on a result, visited in reverse order,
hands its cotangents to its rule (modules `rules_*`), whose `(operand,
cotangent)` pairs are summed per operand.  Ops with no rule on that path, and
cotangents that would have to cross an integer or boolean value (the result of
argmax, topk, sample, compare...), are errors naming the op (`GradError`), never
a silent zero.  Backward ops nothing uses are erased at the end.
"""

from __future__ import annotations

from typing import Optional, Sequence

from mlir import ir

from ...errors import RlxError
from ...ir.shapes import element_of, format_shape, num_elements, shape_of
from .emit import Emitter, accumulate
from .registry import index_operands, rule_for


class GradError(RlxError, ValueError):
    """A function that cannot be differentiated as asked; `op` is where (an `ir.Operation`, or None)."""

    def __init__(self, message: str, op: Optional[ir.Operation] = None):
        super().__init__(message)
        self.message = message
        self.op = op


def is_float(value: ir.Value) -> bool:
    element = element_of(value.type)
    return isinstance(element, ir.FloatType)


def _producer(value: ir.Value) -> Optional[ir.Operation]:
    """The op defining `value`; None for a block argument."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def gradients(
    ops: Sequence[ir.Operation],
    loss: ir.Value,
    wrt: Sequence[ir.Value],
    ip: ir.InsertionPoint,
    names: Sequence[str],
) -> list[ir.Value]:
    """The gradients of `loss` (one element) with respect to `wrt`, built at `ip`.

    `ops` are the forward ops in program order, all the ops of the block before
    `ip` (the backward ops are inserted after them); `names` name the `wrt` values in
    messages.  Raises GradError for a non-scalar loss, a non-float `wrt`, an op
    without a VJP rule on a path from a `wrt` value to the loss, or a `wrt` value
    the loss depends on only through ops without a derivative.
    """
    with ir.Location.unknown(loss.context):
        return _gradients(ops, loss, wrt, ip, names)


def _gradients(ops, loss, wrt, ip, names) -> list[ir.Value]:
    loss_shape = shape_of(loss.type)
    if num_elements(loss_shape) != 1 or not is_float(loss):
        raise GradError(
            f"the loss must be a float scalar (one element), got {format_shape(loss_shape)} {element_of(loss.type)}",
            _producer(loss),
        )
    for value, name in zip(wrt, names):
        if not is_float(value):
            raise GradError(f"cannot differentiate with respect to '{name}': its element type {element_of(value.type)} is not a float")
    block = ip.block
    before = len(block.operations)
    emit = Emitter(ip, ir.Location.unknown())
    emit.reverse = lambda inner_ops, seeds, values, labels: reverse(emit, inner_ops, seeds, values, labels)
    seed = emit.splat(1.0, loss_shape, element_of(loss.type))
    grads = reverse(emit, ops, {loss: seed}, wrt, names)
    created = list(block.operations)[len(ops) : len(ops) + len(block.operations) - before]
    erase_unused(created, grads)
    return grads


def dependency_masks(ops: Sequence[ir.Operation], wrt: Sequence[ir.Value]) -> dict:
    """Each value computed by `ops` (program order) or in `wrt` -> the bit mask of the `wrt` values
    it depends on (bit i: `wrt[i]`); values depending on none are absent."""
    depends: dict = {}
    for index, value in enumerate(wrt):
        depends[value] = depends.get(value, 0) | (1 << index)
    for op in ops:
        mask = 0
        for operand in op.operands:
            mask |= depends.get(operand, 0)
        if mask:
            for result in op.results:
                depends[result] = mask
    return depends


def reverse(emit: Emitter, ops: Sequence[ir.Operation], seeds: dict, wrt: Sequence[ir.Value],
            names: Sequence[str]) -> list[ir.Value]:
    """The reverse sweep: the cotangents of `wrt` given the cotangents `seeds` of some values
    computed by `ops` (in program order), built with `emit`.  Also what the rules of ops with
    bodies (custom_fn, if) call on the ops they inline (`Emitter.reverse`)."""
    depends = dependency_masks(ops, wrt)
    live = set(seeds)
    for op in reversed(ops):
        if any(r in live for r in op.results):
            live.update(op.operands)

    def needed(value: ir.Value) -> bool:
        return value in live and value in depends

    outer_needed = emit.needed
    emit.needed = needed
    cotangents: dict = dict(seeds)
    for op in reversed(ops):
        cts = [cotangents.get(r) for r in op.results]
        if all(c is None for c in cts):
            continue
        view = op.opview
        rule = rule_for(view)
        if rule is None:
            raise GradError(
                f"'{op.name}' has no derivative (no VJP rule) and lies on a path from "
                f"{names_of(depends.get(op.results[0], 0), names)} to the loss",
                op,
            )
        emit.loc = op.location
        try:
            pairs = rule(emit, view, cts)
        except NotImplementedError as error:
            raise GradError(f"'{op.name}' has no VJP rule for {error}", op) from None
        skipped = index_operands(view)
        for operand, cotangent in pairs:
            if not needed(operand) or any(operand == s for s in skipped):
                continue
            if not is_float(operand):
                source = _producer(operand) or op
                raise GradError(
                    f"'{source.name}' has no derivative: its {element_of(operand.type)} result lies on a path from "
                    f"{names_of(depends[operand], names)} to the loss (through '{op.name}')",
                    source,
                )
            cotangents[operand] = accumulate(emit, cotangents.get(operand), cotangent)
    emit.needed = outer_needed

    grads = []
    for index, (value, name) in enumerate(zip(wrt, names)):
        grad = cotangents.get(value)
        if grad is None:
            if value in live:
                cut = first_cut(ops, 1 << index, depends, live)
                raise GradError(
                    f"'{cut.name if cut else 'an op'}' has no derivative and lies on every path from '{name}' to the loss",
                    cut,
                )
            emit.loc = ir.Location.unknown()
            grad = emit.zeros_like(value)
        grads.append(grad)
    return grads


def names_of(mask: int, names: Sequence[str]) -> str:
    chosen = [f"'{n}'" for i, n in enumerate(names) if mask >> i & 1]
    return " and ".join(chosen) if chosen else "a differentiated argument"


def first_cut(ops, bit: int, depends: dict, live: set) -> Optional[ir.Operation]:
    """The first op that takes a value depending on the `bit` argument and gives a non-float
    value the loss depends on: where the derivative stops."""
    for op in ops:
        if any(depends.get(o, 0) & bit for o in op.operands) and any(
            r in live and not is_float(r) for r in op.results
        ):
            return op
    return None


def erase_unused(created: list, keep: Sequence[ir.Value]) -> None:
    """Erases the backward ops (`created`, in program order) whose results nothing uses:
    cotangents of operands that needed none, parts of a rule no gradient asked for.  One pass
    from the end suffices: an op's users come after it."""
    kept = set(keep)
    for op in reversed([op.operation for op in created]):
        if op.results and all(not list(r.uses) and r not in kept for r in op.results):
            op.erase()
