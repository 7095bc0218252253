"""VJP rules of the shape and data-movement ops: reshape, transpose, narrow, concat, expand, gather."""

from __future__ import annotations

import numpy as np

from ...dialects import rlx
from ...ir.shapes import element_of, num_elements, shape_of


def _reshape(emit, op, cts):
    (dy,) = cts
    return [(op.input, emit.reshape(dy, shape_of(op.input.type)))]


def _transpose(emit, op, cts):
    (dy,) = cts
    perm = list(op.perm)
    inverse = [perm.index(d) for d in range(len(perm))]
    return [(op.input, emit.transpose(dy, inverse))]


def _narrow(emit, op, cts):
    # Zeros before and after the slice along the axis.
    (dy,) = cts
    shape = list(shape_of(op.input.type))
    axis = op.axis % len(shape)
    start, length = op.start, op.len
    parts = []
    for size in (start, None, shape[axis] - start - length):
        if size is None:
            parts.append(dy)
        elif size > 0:
            pad = list(shape)
            pad[axis] = size
            parts.append(emit.splat(0.0, pad, element_of(dy.type)))
    return [(op.input, emit.concat(parts, axis))]


def _concat(emit, op, cts):
    (dy,) = cts
    first = shape_of(op.lhs.type)
    axis = op.axis % len(first)
    second = shape_of(op.rhs.type)
    return [
        (op.lhs, emit.narrow(dy, axis, 0, first[axis])),
        (op.rhs, emit.narrow(dy, axis, first[axis], second[axis])),
    ]


def _expand(emit, op, cts):
    (dy,) = cts
    return [(op.input, emit.unbroadcast(dy, shape_of(op.input.type)))]


def _gather(emit, op, cts):
    """Scatter-add as a product with a one-hot matrix of the (clamped) indices.

    With the table `[P..., n, Q...]` and the indices `I...` flattened to `[I]`:
    `onehot[i, j] = (clamp(indices[i]) == j)` and
    `dtable[p, j, q] = sum_i onehot[i, j] * dy[p, i, q]`, one matmul.
    """
    (dy,) = cts
    table = shape_of(op.table.type)
    axis = op.axis % len(table)
    n = table[axis]
    indices = op.indices
    index_element = element_of(indices.type)
    count = num_elements(shape_of(indices.type))
    flat = emit.reshape(indices, [count, 1])
    # numpy.take(mode="clip"): clamp into [0, n - 1] as the forward op does.
    low, high = emit.splat(0, [], index_element), emit.splat(n - 1, [], index_element)
    flat = emit.where(emit.compare("lt", flat, low), low, flat)
    flat = emit.where(emit.compare("gt", flat, high), high, flat)
    width = 32 if str(index_element) == "i32" else 64
    iota = emit.array(np.arange(n, dtype=f"int{width}").reshape(1, n), index_element)
    onehot = emit.indicator(emit.compare("eq", flat, iota), dy)  # [I, n]
    outer, inner = num_elements(table[:axis]), num_elements(table[axis + 1 :])
    # one 2-D product onehot^T [n, I] x dy [I, P * Q] (the form the GEMM kernel takes)
    grouped = emit.reshape(emit.transpose(emit.reshape(dy, [outer, count, inner]), [1, 0, 2]), [count, outer * inner])
    summed = emit.reshape(emit.matmul(emit.swap_last(onehot), grouped), [n, outer, inner])
    ordered = emit.transpose(summed, [1, 0, 2])
    return [(op.table, emit.reshape(ordered, table))]


RULES = {
    rlx.ReshapeOp: _reshape,
    rlx.TransposeOp: _transpose,
    rlx.NarrowOp: _narrow,
    rlx.ConcatOp: _concat,
    rlx.ExpandOp: _expand,
    rlx.GatherOp: _gather,
}
