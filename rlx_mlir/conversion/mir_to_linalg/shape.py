"""Lowering of shape and data-movement MIR ops."""

from __future__ import annotations

from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, bufferization, linalg, tensor

from ...dialects import rlx
from ...ir.shapes import num_elements, shape_of
from . import builders as lb


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _lower_reshape(op) -> ir.Value:
    return lb.reshape(op.input, op.result.type)


def _copy(value: ir.Value) -> ir.Value:
    """A new tensor equal to `value`, not `value` itself: the LIR plan gives a transpose or concat
    result its own slot, which an alias of the operand would leave unwritten.  The copy goes into
    a fresh allocation, not a tensor.empty: canonicalization may merge that with the operand's
    own tensor.empty, and bufferization then writes the copy in place, over the operand (a
    program returning both would return one buffer twice, which crashes LLVM 22)."""
    type_ = ir.RankedTensorType(value.type)
    return linalg.copy(value, outs=[bufferization.AllocTensorOp(type_, []).result])


def _lower_transpose(op) -> ir.Value:
    perm = list(op.perm)
    if perm == list(range(len(perm))):
        # The identity, rank 0 included (no linalg.transpose there: MLIR asserts on an empty
        # permutation map).
        return _copy(op.input)
    result_type = ir.RankedTensorType(op.result.type)
    init = lb.empty(result_type.shape, result_type.element_type)
    return linalg.transpose(op.input, outs=[init], permutation=op.perm).results[0]


def _lower_narrow(op) -> ir.Value:
    shape = shape_of(op.input.type)
    axis = _axis(op.axis, len(shape))
    offsets = [op.start if d == axis else 0 for d in range(len(shape))]
    sizes = list(shape_of(op.result.type))
    return tensor.extract_slice(op.result.type, op.input, [], [], [], offsets, sizes, [1] * len(shape))


def _lower_concat(op) -> ir.Value:
    """tensor.concat of the operands that have elements (an empty one adds nothing, and
    inserting it at offset `axis size` would be an out-of-bounds slice)."""
    axis = _axis(op.axis, len(shape_of(op.result.type)))
    parts = [value for value in (op.lhs, op.rhs) if num_elements(shape_of(value.type)) > 0]
    if len(parts) == 1:
        return _copy(parts[0])
    return tensor.concat(op.result.type, axis, parts)


def _collapse_groups(keep: Sequence[bool]) -> list[list[int]]:
    """Reassociation that folds each dropped (size-1) dimension into a kept neighbour."""
    groups: list[list[int]] = []
    pending: list[int] = []
    for d, kept in enumerate(keep):
        pending.append(d)
        if kept:
            groups.append(pending)
            pending = []
    if pending and groups:
        groups[-1] += pending
    return groups


def _lower_expand(op) -> ir.Value:
    """Collapse the stretched size-1 dims away (a view), then one linalg.broadcast."""
    source = shape_of(op.input.type)
    target = list(shape_of(op.result.type))
    offset = len(target) - len(source)
    keep = [not (size == 1 and target[offset + i] != 1) for i, size in enumerate(source)]
    if all(keep) and offset == 0:
        return op.input
    element = ir.RankedTensorType(op.result.type).element_type
    value = op.input
    if not all(keep):
        collapsed = [size for size, kept in zip(source, keep) if kept]
        collapsed_type = ir.RankedTensorType.get(collapsed, element)
        value = tensor.collapse_shape(collapsed_type, value, _collapse_groups(keep))
    kept_dims = {offset + i for i, kept in enumerate(keep) if kept}
    added = [d for d in range(len(target)) if d not in kept_dims]
    return linalg.broadcast(value, outs=[lb.empty(target, element)], dimensions=added).results[0]


def _lower_gather(op) -> ir.Value:
    """One linalg.generic over the result; its body reads the table with tensor.extract."""
    table = op.table
    table_shape = shape_of(table.type)
    index_rank = len(shape_of(op.indices.type))
    axis = _axis(op.axis, len(table_shape))
    result_type = ir.RankedTensorType(op.result.type)
    rank = len(result_type.shape)
    index_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(axis + i) for i in range(index_rank)])
    index_type = ir.IndexType.get()

    def body(index, _out):
        position = arith.index_cast(index_type, index)
        # Clamp to [0, n-1]: no out-of-bounds read whatever the index.
        position = arith.maxsi(position, arith.constant(index_type, 0))
        position = arith.minsi(position, arith.constant(index_type, table_shape[axis] - 1))
        before = [lb.loop_index(d) for d in range(axis)]
        after = [lb.loop_index(axis + index_rank + d) for d in range(len(table_shape) - axis - 1)]
        return tensor.extract(table, [*before, position, *after])

    return lb.generic(
        [op.indices],
        lb.empty(result_type.shape, result_type.element_type),
        [index_map, ir.AffineMap.get_identity(rank)],
        [lb.PARALLEL] * rank,
        body,
    )


LOWERINGS: dict[type, Callable] = {
    rlx.ReshapeOp: _lower_reshape,
    rlx.TransposeOp: _lower_transpose,
    rlx.NarrowOp: _lower_narrow,
    rlx.ConcatOp: _lower_concat,
    rlx.ExpandOp: _lower_expand,
    rlx.GatherOp: _lower_gather,
}
