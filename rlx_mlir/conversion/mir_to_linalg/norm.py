"""Lowering of MIR ops. Normalisation: RMSNorm, LayerNorm and their fused residual forms; fused SwiGLU.

A norm lowers to its statistics (a linalg.reduce, or a linalg.generic with a
reduction iterator when the normalised value is itself computed from several
operands) accumulated in f32, then one elementwise linalg.generic that
normalises, scales, shifts and rounds once to the element type.  The fused
residual norms never materialise `x + residual (+ bias)`: each generic reads
the operands and forms the sum in f32 in its body.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, tensor
from mlir.dialects import math as mmath

from ...dialects import rlx
from ...ir.shapes import shape_of
from . import builders as lb
from .elementwise import ACTIVATIONS


class _Source:
    """The value being normalised, as read inside a linalg body.

    `full` operands have the input's shape; `rows` operands are `[D]` vectors
    along `axis` (the fused residual norms' bias).  `value(*elements)` forms the
    f32 value from their elements, in the order full then rows.
    """

    def __init__(self, full: Sequence[ir.Value], rows: Sequence[ir.Value], axis: int):
        self.full, self.rows, self.axis = list(full), list(rows), axis
        self.shape = list(shape_of(self.full[0].type))
        self.rank = len(self.shape)

    @property
    def operands(self) -> list[ir.Value]:
        return [*self.full, *self.rows]

    def maps(self, loops: int) -> list[ir.AffineMap]:
        """Indexing maps of the operands in an iteration space over the input's dims."""
        identity = ir.AffineMap.get(loops, 0, [ir.AffineDimExpr.get(i) for i in range(self.rank)])
        row = ir.AffineMap.get(loops, 0, [ir.AffineDimExpr.get(self.axis)])
        return [identity] * len(self.full) + [row] * len(self.rows)

    def value(self, *elements: ir.Value) -> ir.Value:
        total = lb.widen(elements[0])
        for element in elements[1:]:
            total = arith.addf(total, lb.widen(element))
        return total


def _reduced_map(rank: int, axis: int) -> ir.AffineMap:
    """Input indices -> statistics indices: the normalised axis dropped."""
    return ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(i) for i in range(rank) if i != axis])


def _reduced_shape(source: _Source) -> list[int]:
    return [d for i, d in enumerate(source.shape) if i != source.axis]


def _sum_over_axis(
    source: _Source, term: Callable[[ir.Value], ir.Value], extra: Optional[ir.Value] = None
) -> ir.Value:
    """`sum(term(value), axis)` in f32, shape of the input without `axis`.

    `extra` is an optional statistics tensor (shape without `axis`) read as a
    second argument of `term`.  A lone input without `extra` is a linalg.reduce;
    otherwise a linalg.generic with `axis` as the reduction iterator.
    """
    init = lb.zeros(_reduced_shape(source), lb.f32_type())
    if len(source.operands) == 1 and extra is None:
        x = source.operands[0]
        op = linalg.ReduceOp(result=[init.type], inputs=[x], inits=[init], dimensions=[source.axis])
        block = op.regions[0].blocks.append(ir.ShapedType(x.type).element_type, lb.f32_type())
        with ir.InsertionPoint(block):
            element, acc = block.arguments
            linalg.YieldOp([arith.addf(acc, term(source.value(element)))])
        return op.results[0]
    operands = source.operands + ([extra] if extra is not None else [])
    maps = source.maps(source.rank)
    if extra is not None:
        maps.append(_reduced_map(source.rank, source.axis))
    maps.append(_reduced_map(source.rank, source.axis))
    iterators = [lb.REDUCTION if i == source.axis else lb.PARALLEL for i in range(source.rank)]
    count = len(source.operands)

    def body(*args):
        value = source.value(*args[:count])
        extras = args[count:-1]
        return arith.addf(args[-1], term(value, *extras))

    return lb.generic(operands, init, maps, iterators, body)


def _normalise(
    source: _Source,
    stats: Sequence[ir.Value],
    gamma: ir.Value,
    beta: ir.Value,
    result_type: ir.Type,
    formula: Callable[..., ir.Value],
) -> ir.Value:
    """One elementwise generic: `formula(value, *stats) * gamma + beta`, rounded to the element type."""
    rank, axis = source.rank, source.axis
    element = ir.RankedTensorType(result_type).element_type
    maps = source.maps(rank)
    maps += [_reduced_map(rank, axis)] * len(stats)
    maps += [ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(axis)])] * 2
    maps.append(ir.AffineMap.get_identity(rank))
    count = len(source.operands)

    def body(*args):
        value = source.value(*args[:count])
        statistics = args[count : count + len(stats)]
        g, b = args[count + len(stats) : count + len(stats) + 2]
        normalised = formula(value, *statistics)
        return lb.narrow(arith.addf(arith.mulf(normalised, lb.widen(g)), lb.widen(b)), element)

    init = lb.empty(source.shape, element)
    return lb.generic(
        [*source.operands, *stats, gamma, beta], init, maps, [lb.PARALLEL] * rank, body
    )


def _rms_norm(source: _Source, gamma, beta, eps: float, result_type: ir.Type) -> ir.Value:
    count = float(source.shape[source.axis])
    sum_sq = _sum_over_axis(source, lambda h: arith.mulf(h, h))

    def formula(h, s):
        mean_sq = arith.divf(s, lb.f32_constant(count))
        return arith.divf(h, mmath.sqrt(arith.addf(mean_sq, lb.f32_constant(eps))))

    return _normalise(source, [sum_sq], gamma, beta, result_type, formula)


def _layer_norm(source: _Source, gamma, beta, eps: float, result_type: ir.Type) -> ir.Value:
    """Two passes for the statistics (sum, then the sum of squared deviations from the mean)."""
    count = float(source.shape[source.axis])
    total = _sum_over_axis(source, lambda h: h)

    def centred_square(h, s):
        d = arith.subf(h, arith.divf(s, lb.f32_constant(count)))
        return arith.mulf(d, d)

    sum_sq = _sum_over_axis(source, centred_square, extra=total)

    def formula(h, s, ss):
        mean = arith.divf(s, lb.f32_constant(count))
        var = arith.divf(ss, lb.f32_constant(count))
        return arith.divf(arith.subf(h, mean), mmath.sqrt(arith.addf(var, lb.f32_constant(eps))))

    return _normalise(source, [total, sum_sq], gamma, beta, result_type, formula)


def _axis_of(op) -> int:
    rank = len(shape_of(op.x.type))
    return op.axis % rank


def _lower_rms_norm(op) -> ir.Value:
    source = _Source([op.x], [], _axis_of(op))
    return _rms_norm(source, op.gamma, op.beta, op.eps, op.result.type)


def _lower_layer_norm(op) -> ir.Value:
    source = _Source([op.x], [], _axis_of(op))
    return _layer_norm(source, op.gamma, op.beta, op.eps, op.result.type)


def _residual_source(op) -> _Source:
    rank = len(shape_of(op.x.type))
    rows = [op.bias] if op.bias is not None else []
    return _Source([op.x, op.residual], rows, rank - 1)


def _lower_fused_residual_rms_norm(op) -> ir.Value:
    return _rms_norm(_residual_source(op), op.gamma, op.beta, op.eps, op.result.type)


def _lower_fused_residual_layer_norm(op) -> ir.Value:
    return _layer_norm(_residual_source(op), op.gamma, op.beta, op.eps, op.result.type)


def _lower_fused_swiglu(op) -> ir.Value:
    """Two views (up, gate) of the input by tensor.extract_slice, then one elementwise generic."""
    shape = list(shape_of(op.input.type))
    result_type = ir.RankedTensorType(op.result.type)
    element = result_type.element_type
    half = shape[-1] // 2
    sizes = [*shape[:-1], half]
    strides = [1] * len(shape)
    halves = [
        tensor.extract_slice(result_type, op.input, [], [], [], [0] * (len(shape) - 1) + [start], sizes, strides)
        for start in (0, half)
    ]
    silu = ACTIVATIONS[rlx.SiluOp]
    return lb.elementwise(
        halves, result_type, lambda up, gate: lb.narrow(arith.mulf(lb.widen(up), silu(lb.widen(gate))), element)
    )


LOWERINGS: dict[type, Callable] = {
    rlx.RmsNormOp: _lower_rms_norm,
    rlx.LayerNormOp: _lower_layer_norm,
    rlx.FusedResidualRmsNormOp: _lower_fused_residual_rms_norm,
    rlx.FusedResidualLayerNormOp: _lower_fused_residual_layer_norm,
    rlx.FusedSwigluOp: _lower_fused_swiglu,
}
