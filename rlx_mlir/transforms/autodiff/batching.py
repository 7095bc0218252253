"""Batching over a leading axis (RLX's `vmap`): `vectorize(block, batched, size)`.

The arguments at the `batched` positions of a MIR function gain a leading axis of `size`;
every op reading a batched value is rewritten, in program order, by its batching rule into
ops whose results carry that axis first, and every result of the function is stacked along
it (an unbatched result is broadcast).  `vmap(f)(X)[i] == f(X[i])` for each `i`.

The rules, by op family (a batched value is `[size, *shape]`):

* elementwise ops (NumPy broadcasting, where, compare, cast): a batched operand is reshaped to
  `[size, 1..., *shape]`, the rank of the result plus one, so that it broadcasts against the
  unbatched ones from the right as before;
* matmul: the same alignment of the batch dimensions (a batched activation against a 2-D
  weight stays one product); dot_general: the axis as a batch dimension of both operands, or
  as a free dimension of the one operand that has it;
* ops along an axis (reduce, softmax, cumsum, argmax, the norms, narrow, concat, gather in its
  table): the axis attributes counted from the start shift by one;
* reshape, transpose, expand: the target shape / permutation gains the axis;
* the fused and quantised matmuls, batched in their activations only: the leading dimensions;
* ops with a batch axis of their own (attention, RoPE, RoPE at positions, causal depthwise conv,
  selective_scan, gated_delta_net): the vmap axis is merged into theirs (`[size * b, ...]`), and split after.

An op with no rule reading a batched value is an error naming the op (`BatchingError`), as
is a batched operand a rule cannot take (a norm's gamma, a RoPE table, both a gather's table
and indices).
"""

from __future__ import annotations

from typing import Optional, Sequence

from mlir import ir
from mlir.dialects import func

from ...dialects import rlx
from ...dsl import Elementwise
from ...errors import RlxError
from ...ir.shapes import element_of, shape_of
from .emit import Emitter


class BatchingError(RlxError, ValueError):
    """A function that cannot be batched as asked; `op` is where (an `ir.Operation`, or None)."""

    def __init__(self, message: str, op: Optional[ir.Operation] = None):
        super().__init__(message)
        self.message = message
        self.op = op


def _tensor(shape: Sequence[int], like: ir.Value) -> ir.Type:
    return ir.RankedTensorType.get(list(shape), element_of(like.type))


def rebuild(emit: Emitter, op, operands: dict, results: Sequence[Sequence[int]], attrs: Optional[dict] = None) -> list:
    """`op` cloned at the emitter's insertion point with the operands at the positions of
    `operands` replaced, the attributes `attrs` set and its results of the shapes `results`."""
    copy = op.operation.clone(ip=emit.ip)
    for position, value in operands.items():
        copy.operands[position] = value
    for name, attr in (attrs or {}).items():
        copy.attributes[name] = attr
    for value, shape in zip(copy.results, results):
        value.set_type(_tensor(shape, value))
    return list(copy.results)


class _Batch:
    """The batching context of one op: which operands carry the axis, of what size."""

    def __init__(self, emit: Emitter, op, flags: list[bool], size: int):
        self.emit, self.op, self.flags, self.size = emit, op, flags, size

    def batched(self, value) -> bool:
        return any(f and o == value for o, f in zip(self.op.operands, self.flags))

    def lift(self, value, rank: int):
        """A batched `[size, *s]` reshaped to `[size, 1..., *s]` of rank `rank + 1`."""
        s = shape_of(value.type)[1:]
        return self.emit.reshape(value, [self.size, *[1] * (rank - len(s)), *s])

    def materialize(self, value):
        """`value` with the axis: broadcast when it has none."""
        if self.batched(value):
            return value
        s = shape_of(value.type)
        return self.emit.expand(self.emit.reshape(value, [1, *s]), [self.size, *s])

    def unbatched(self, *values, what: str = "") -> None:
        for value in values:
            if value is not None and self.batched(value):
                raise BatchingError(f"'{self.op.operation.name}' has no batching rule for a batched {what or 'operand'}",
                                    self.op.operation)

    def results(self):
        return [[self.size, *shape_of(r.type)] for r in self.op.results]


# --- rules: (batch) -> the batched results ------------------------------------------------------


def _elementwise(b: _Batch):
    rank = len(shape_of(b.op.results[0].type))
    operands = {i: b.lift(o, rank) for i, (o, f) in enumerate(zip(b.op.operands, b.flags)) if f}
    return rebuild(b.emit, b.op, operands, b.results())


def _matmul(b: _Batch):
    rank = len(shape_of(b.op.result.type))
    operands = {i: b.lift(o, rank) for i, (o, f) in enumerate(zip(b.op.operands, b.flags)) if f}
    return rebuild(b.emit, b.op, operands, b.results())


def shift(dims) -> list[int]:
    """Dimension numbers once the leading axis is added."""
    return [d + 1 for d in dims]


def _dot_general(b: _Batch):
    op, emit = b.op, b.emit
    lc, rc, lb, rb = (list(x) for x in (op.lhs_contracting, op.rhs_contracting, op.lhs_batch, op.rhs_batch))
    lhs_in, rhs_in = b.flags
    lhs, rhs = op.lhs, op.rhs
    if lhs_in and rhs_in:
        return [emit.dot_general(lhs, rhs, shift(lc), shift(rc), [0, *shift(lb)], [0, *shift(rb)])]
    if lhs_in:  # the axis is the first free dimension of lhs: after the batch dimensions
        out = emit.dot_general(lhs, rhs, shift(lc), rc, shift(lb), rb)
        position = len(lb)
    else:  # the first free dimension of rhs: after the batch and lhs free dimensions
        out = emit.dot_general(lhs, rhs, lc, shift(rc), lb, shift(rb))
        position = len(lb) + len(shape_of(lhs.type)) - len(lb) - len(lc)
    rank = len(shape_of(out.type))
    order = [d for d in range(rank) if d != position]
    return [emit.transpose(out, [position, *order])]


def _i64(value: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def _shifted(axis: int) -> int:
    """An axis attribute once the leading axis is added: a negative one counts from the end still."""
    return axis if axis < 0 else axis + 1


def _along_axis(*fixed: str):
    """Ops whose `axis` / `axes` attributes locate data dimensions; the operands named in `fixed`
    (a norm's gamma and beta) must be unbatched; the others are given the axis."""

    def rule(b: _Batch):
        op = b.op
        b.unbatched(*(getattr(op, name) for name in fixed), what=" / ".join(fixed))
        attrs = {}
        if "axis" in op.operation.attributes:
            attrs["axis"] = _i64(_shifted(int(op.axis)))
        if "axes" in op.operation.attributes:
            attrs["axes"] = ir.DenseI64ArrayAttr.get([_shifted(int(a)) for a in op.axes])
        free = {getattr(op, name) for name in fixed if getattr(op, name) is not None}
        operands = {i: b.materialize(o) for i, o in enumerate(op.operands)
                    if o not in free and isinstance(o.type, ir.RankedTensorType) and len(shape_of(o.type)) > 0}
        return rebuild(b.emit, op, operands, b.results(), attrs)

    return rule


def _only_first(b: _Batch):
    """Ops batched in their first operand only (the activations of a fused or quantised
    matmul; the weight and its side tensors are shared): the leading dimensions gain the axis."""
    b.unbatched(*list(b.op.operands)[1:], what="weight")
    return rebuild(b.emit, b.op, {}, b.results())


def _gather(b: _Batch):
    op = b.op
    table, indices = b.flags
    if table and indices:
        raise BatchingError("'rlx.gather' has no batching rule for both a batched table and batched indices",
                            op.operation)
    table_shape = shape_of(op.table.type)[1:] if table else shape_of(op.table.type)  # without the axis
    axis = int(op.axis) % len(table_shape)
    if table:
        return rebuild(b.emit, op, {}, b.results(), {"axis": _i64(axis + 1)})
    # batched indices: the axis lands where the indices go; moved to the front
    index_shape = shape_of(op.indices.type)
    shape = [*table_shape[:axis], *index_shape, *table_shape[axis + 1:]]
    (out,) = rebuild(b.emit, op, {}, [shape])
    order = [d for d in range(len(shape)) if d != axis]
    return [b.emit.transpose(out, [axis, *order])]


def _reshape(b: _Batch):
    return [b.emit.reshape(b.op.input, b.results()[0])]


def _transpose(b: _Batch):
    return [b.emit.transpose(b.op.input, [0, *(p + 1 for p in b.op.perm)])]


def _expand(b: _Batch):
    target = list(b.op.shape)
    return [b.emit.expand(b.lift(b.op.input, len(target)), [b.size, *target])]


def _merge(*fixed: str):
    """Ops with a leading batch axis of their own on every operand but those named in `fixed`
    (and on every result): the vmap axis merged into it, `[size * b, ...]`, split after."""

    def rule(b: _Batch):
        op, emit = b.op, b.emit
        b.unbatched(*(getattr(op, name) for name in fixed), what=" / ".join(fixed))
        free = {getattr(op, name) for name in fixed if getattr(op, name) is not None}
        operands = {}
        for i, o in enumerate(op.operands):
            if o in free:
                continue
            full = b.materialize(o)
            s = shape_of(full.type)  # [size, b, ...]
            operands[i] = emit.reshape(full, [b.size * s[1], *s[2:]])
        shapes = [shape_of(r.type) for r in op.results]
        merged = rebuild(emit, op, operands, [[b.size * s[0], *s[1:]] for s in shapes])
        return [emit.reshape(m, [b.size, *s]) for m, s in zip(merged, shapes)]

    return rule


RULES: dict = {
    rlx.CastOp: _elementwise,
    rlx.MatmulOp: _matmul,
    rlx.DotGeneralOp: _dot_general,
    rlx.ReduceOp: _along_axis(),
    rlx.SoftmaxOp: _along_axis(),
    rlx.CumsumOp: _along_axis(),
    rlx.ArgmaxOp: _along_axis(),
    rlx.NarrowOp: _along_axis(),
    rlx.ConcatOp: _along_axis(),
    rlx.RmsNormOp: _along_axis("gamma", "beta"),
    rlx.LayerNormOp: _along_axis("gamma", "beta"),
    rlx.FusedResidualRmsNormOp: _along_axis("gamma", "beta", "bias"),
    rlx.FusedResidualLayerNormOp: _along_axis("gamma", "beta", "bias"),
    rlx.FusedSwigluOp: _along_axis(),
    rlx.FusedMatmulBiasActOp: _only_first,
    rlx.DequantMatmulOp: _only_first,
    rlx.GatherOp: _gather,
    rlx.ReshapeOp: _reshape,
    rlx.TransposeOp: _transpose,
    rlx.ExpandOp: _expand,
    rlx.AttentionOp: _merge(),
    rlx.RopeOp: _merge("cos", "sin"),
    rlx.RopeAtOp: _merge("cos", "sin", "pos"),
    rlx.DepthwiseConv1dCausalOp: _merge("weight"),
    rlx.SelectiveScanOp: _merge("a", "d"),
    rlx.GatedDeltaNetOp: _merge(),
}


def rule_for(op):
    """The batching rule of `op` (a typed view), or None."""
    if getattr(type(op), "has_trait", None) and type(op).has_trait(Elementwise):
        return _elementwise
    return RULES.get(type(op))


def vectorize(block: ir.Block, positions: Sequence[int], size: int, names: Sequence[str]) -> list[ir.Value]:
    """Batches the function body `block` in place over a new leading axis of `size` on its
    arguments at `positions` (see the module docstring); returns the new results.  `names` name
    the arguments in messages."""
    if size < 1:
        raise BatchingError(f"the batch size must be positive, got {size}")
    arguments = list(block.arguments)
    with ir.Location.unknown(block.owner.context):
        for position in positions:
            argument = arguments[position]
            argument.set_type(_tensor([size, *shape_of(argument.type)], argument))
        batched = {arguments[p] for p in positions}
        ops = list(block.operations)
        ret = ops[-1]
        for op in ops[:-1]:
            flags = [o in batched for o in op.operands]
            if not any(flags):
                continue
            view = op.opview
            rule = rule_for(view)
            if rule is None:
                reading = [names[arguments.index(o)] if o in arguments else None for o, f in zip(op.operands, flags) if f]
                source = f" (argument '{reading[0]}')" if reading and reading[0] else ""
                raise BatchingError(f"'{op.name}' has no batching rule and reads a batched value{source}", op)
            emit = Emitter(ir.InsertionPoint(op), op.location)
            new = rule(_Batch(emit, view, flags, size))
            for old, value in zip(op.results, new):
                old.replace_all_uses_with(value)
                batched.add(value)
            op.erase()
        emit = Emitter(ir.InsertionPoint(ret), ret.location)
        results = []
        for value in ret.operands:
            if value not in batched:
                s = shape_of(value.type)
                value = emit.expand(emit.reshape(value, [1, *s]), [size, *s])
            results.append(value)
        func.ReturnOp(results, loc=ret.location, ip=ir.InsertionPoint(ret))
        ret.erase()
        return results
