"""VJP rules of the reductions over axes: reduce (sum, mean, max, min), softmax, cumsum."""

from __future__ import annotations

from ...dialects import rlx
from ...ir.shapes import num_elements, shape_of
from .emit import Emitter


def _axes(op, rank: int) -> list[int]:
    return sorted(a % rank for a in op.axes)


def spread(emit: Emitter, reduced, in_shape, axes):
    """A value of the reduced shape (kept or dropped axes) broadcast back to `in_shape`."""
    kept = [1 if d in axes else size for d, size in enumerate(in_shape)]
    return emit.expand(emit.reshape(reduced, kept), in_shape)


def _reduce(emit, op, cts):
    (dy,) = cts
    x = op.input
    shape = shape_of(x.type)
    axes = _axes(op, len(shape))
    kind = str(op.kind)
    spread_dy = spread(emit, dy, shape, axes)
    if kind == "sum":
        return [(x, spread_dy)]
    if kind == "mean":
        count = num_elements([shape[a] for a in axes])
        return [(x, emit.scale(spread_dy, 1.0 / count))]
    if kind in ("max", "min"):
        # The cotangent is shared evenly by the elements equal to the extremum (as PyTorch's amax).
        extremum = spread(emit, op.result, shape, axes)
        hit = emit.indicator(emit.compare("eq", x, extremum), dy)
        count = spread(emit, emit.sum(hit, axes), shape, axes)
        return [(x, emit.div(emit.mul(spread_dy, hit), count))]
    raise NotImplementedError(f"reduce kind '{kind}'")


def _softmax(emit, op, cts):
    # dx = y * (dy - sum(dy * y, axis))
    (dy,) = cts
    y = op.result
    axis = op.axis % len(shape_of(y.type))
    inner = emit.sum(emit.mul(dy, y), [axis], keep_dim=True)
    return [(op.input, emit.mul(y, emit.sub(dy, inner)))]


def _cumsum(emit, op, cts):
    # Inclusive: dx_i = sum_{j >= i} dy_j = total - exclusive_cumsum(dy)_i;
    # exclusive: dx_i = sum_{j > i} dy_j = total - inclusive_cumsum(dy)_i.
    (dy,) = cts
    axis = op.axis % len(shape_of(dy.type))
    total = emit.sum(dy, [axis], keep_dim=True)
    prefix = rlx.CumsumOp(dy, axis=axis, exclusive=not bool(op.exclusive), loc=emit.loc, ip=emit.ip).result
    return [(op.input, emit.sub(total, prefix))]


RULES = {
    rlx.ReduceOp: _reduce,
    rlx.SoftmaxOp: _softmax,
    rlx.CumsumOp: _cumsum,
}

