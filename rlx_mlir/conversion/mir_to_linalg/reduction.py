"""Lowering of MIR ops. Reductions over axes: reduce, softmax, cumsum, argmax.

Reductions and accumulations run in f32 for f16 and bf16 inputs (the compute
type), and round once to the storage type at the end.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor
from mlir.dialects import math as mmath

from ...dialects import rlx
from ...ir.shapes import shape_of
from . import builders as lb

# --- local builders ---------------------------------------------------------------------


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _element(value: ir.Value) -> ir.Type:
    return ir.ShapedType(value.type).element_type


def _filled(shape: Sequence[int], element: ir.Type, value) -> ir.Value:
    """A tensor of `shape` filled with the scalar constant `value`."""
    scalar = arith.constant(element, value)
    return linalg.fill(scalar, outs=[lb.empty(shape, element)])


def _reduce(value: ir.Value, dims: Sequence[int], init: ir.Value, combine: Callable) -> ir.Value:
    """linalg.reduce of `value` over `dims` into `init`; `combine(element, acc)` returns the new acc."""
    op = linalg.ReduceOp(result=[init.type], inputs=[value], inits=[init], dimensions=list(dims))
    block = op.regions[0].blocks.append(_element(value), _element(init))
    with ir.InsertionPoint(block):
        linalg.YieldOp([combine(*block.arguments)])
    return op.results[0]


def _identity(rank: int) -> ir.AffineMap:
    return ir.AffineMap.get_identity(rank)


def _drop_dims(rank: int, dims: Sequence[int]) -> ir.AffineMap:
    """Maps an iteration over the full shape to the reduced shape (dims left out)."""
    return ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in range(rank) if d not in dims])


def _map_elements(inputs: Sequence[ir.Value], maps: Sequence[ir.AffineMap], out_shape, element, body) -> ir.Value:
    """A parallel generic over `out_shape` producing `element`s; `body(*input_elements)`."""
    rank = len(out_shape)
    return lb.generic_results(
        inputs,
        [lb.empty(out_shape, element)],
        [*maps, _identity(rank)],
        [lb.PARALLEL] * rank,
        lambda *args: [body(*args[:-1])],
    )[0]


# --- reduce -----------------------------------------------------------------------------------

_INITS = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}
_COMBINERS = {
    "sum": arith.addf,
    "mean": arith.addf,
    "prod": arith.mulf,
    "max": arith.maximumf,  # NaN-propagating, like numpy.max
    "min": arith.minimumf,
}


def _lower_reduce(op) -> ir.Value:
    x = op.input
    shape = shape_of(x.type)
    element = _element(x)
    acc = lb.compute_type(element)
    dims = sorted(_axis(a, len(shape)) for a in op.axes)
    reduced = [s for d, s in enumerate(shape) if d not in dims]
    kind = op.kind
    combine = _COMBINERS[kind]
    total = _reduce(
        x, dims, _filled(reduced, acc, _INITS[kind]), lambda v, a: combine(a, lb.widen(v))
    )
    if kind == "mean":
        count = 1
        for d in dims:
            count *= shape[d]
        total = _map_elements(
            [total],
            [_identity(len(reduced))],
            reduced,
            element,
            lambda s: lb.narrow(arith.divf(s, arith.constant(acc, float(count))), element),
        )
    elif acc != element:
        total = _map_elements([total], [_identity(len(reduced))], reduced, element, lambda s: lb.narrow(s, element))
    if op.keep_dim:
        total = lb.reshape(total, op.result.type)
    return total


# --- softmax ----------------------------------------------------------------------------------


def _lower_softmax(op) -> ir.Value:
    """Three passes over the rows, none writing a temporary of the input's size: the row maxima,
    the row sums of exp(x - max), and the output exp(x - max) / sum (exp computed again, which
    costs less than writing and reading back an f32 copy of the input). All in f32."""
    x = op.input
    shape = list(shape_of(x.type))
    rank = len(shape)
    axis = _axis(op.axis, rank)
    element = _element(x)
    f32 = lb.f32_type()
    reduced = [s for d, s in enumerate(shape) if d != axis]
    full, row = _identity(rank), _drop_dims(rank, [axis])
    along_axis = [lb.REDUCTION if d == axis else lb.PARALLEL for d in range(rank)]

    peak = _reduce(x, [axis], _filled(reduced, f32, -math.inf), lambda v, a: arith.maximumf(a, lb.widen(v)))
    total = lb.generic(
        [x, peak], _filled(reduced, f32, 0.0), [full, row, row], along_axis,
        lambda v, m, a: arith.addf(a, mmath.exp(arith.subf(lb.widen(v), m))),
    )
    return _map_elements(
        [x, peak, total], [full, row, row], shape, element,
        lambda v, m, s: lb.narrow(arith.divf(mmath.exp(arith.subf(lb.widen(v), m)), s), element),
    )


# --- cumsum -----------------------------------------------------------------------------------


def _lower_cumsum(op) -> ir.Value:
    """Nested scf.for loops, the innermost along the axis carrying the f32 running sum: O(n).

    Each step reads one element (tensor.extract), adds it to the running sum and
    writes the inclusive or exclusive sum (tensor.insert) into the output, which
    every loop carries.  Scalar loops keep the sum in a register; vectorising
    across the other axes (slices at the loop index) is a later optimisation.
    """
    x = op.input
    shape = list(shape_of(x.type))
    rank = len(shape)
    axis = _axis(op.axis, rank)
    element = _element(x)
    f32 = lb.f32_type()
    exclusive = op.exclusive
    index = ir.IndexType.get()
    zero, one = arith.constant(index, 0), arith.constant(index, 1)
    outer = [d for d in range(rank) if d != axis]

    def along_axis(position: dict, out: ir.Value) -> ir.Value:
        loop = scf.ForOp(zero, arith.constant(index, shape[axis]), one, [arith.constant(f32, 0.0), out])
        with ir.InsertionPoint(loop.body):
            acc, dest = loop.inner_iter_args
            indices = [loop.induction_variable if d == axis else position[d] for d in range(rank)]
            summed = arith.addf(acc, lb.widen(tensor.extract(x, indices)))
            written = lb.narrow(acc if exclusive else summed, element)
            scf.YieldOp([summed, tensor.insert(written, dest, indices)])
        return loop.results[1]

    def nest(level: int, position: dict, out: ir.Value) -> ir.Value:
        if level == len(outer):
            return along_axis(position, out)
        loop = scf.ForOp(zero, arith.constant(index, shape[outer[level]]), one, [out])
        with ir.InsertionPoint(loop.body):
            inner = nest(level + 1, {**position, outer[level]: loop.induction_variable}, loop.inner_iter_args[0])
            scf.YieldOp([inner])
        return loop.results[0]

    return nest(0, {}, lb.empty(shape, element))


# --- argmax -----------------------------------------------------------------------------------


def _lower_argmax(op) -> ir.Value:
    """One linalg.generic reduction with two outputs: the best value (f32) and its i64 index.

    The combiner is order-independent: it takes the candidate when it is NaN and
    the best is not, or when it is larger, or when it ties (NaN or equal) at a
    lower index.  So ties go to the lowest index whatever order the loops run in.
    """
    x = op.input
    shape = list(shape_of(x.type))
    rank = len(shape)
    axis = _axis(op.axis, rank)
    f32 = lb.f32_type()
    i64 = lb.i64_type()
    reduced = [s for d, s in enumerate(shape) if d != axis]
    iterators = [lb.REDUCTION if d == axis else lb.PARALLEL for d in range(rank)]
    row = _drop_dims(rank, [axis])

    def body(v, best, best_index):
        value = lb.widen(v)
        position = arith.index_cast(i64, lb.loop_index(axis))
        is_nan = arith.cmpf(arith.CmpFPredicate.UNO, value, value)
        best_is_number = arith.cmpf(arith.CmpFPredicate.ORD, best, best)
        greater = arith.cmpf(arith.CmpFPredicate.OGT, value, best)
        equal = arith.cmpf(arith.CmpFPredicate.OEQ, value, best)
        earlier = arith.cmpi(arith.CmpIPredicate.slt, position, best_index)
        take = arith.select(
            is_nan, arith.ori(best_is_number, earlier), arith.ori(greater, arith.andi(equal, earlier))
        )
        return [arith.select(take, value, best), arith.select(take, position, best_index)]

    _, indices = lb.generic_results(
        [x],
        [_filled(reduced, f32, -math.inf), _filled(reduced, i64, 0)],
        [_identity(rank), row, row],
        iterators,
        body,
    )
    if op.keep_dim:
        indices = lb.reshape(indices, op.result.type)
    return indices


LOWERINGS: dict[type, Callable] = {
    rlx.ReduceOp: _lower_reduce,
    rlx.SoftmaxOp: _lower_softmax,
    rlx.CumsumOp: _lower_cumsum,
    rlx.ArgmaxOp: _lower_argmax,
}
