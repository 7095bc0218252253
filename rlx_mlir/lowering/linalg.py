"""Lowering of matmul-family MIR ops to named linalg ops where they exist."""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from . import builders as lb
from ..dialects import rlx
from ..shapes import shape_of


def _lower_matmul(op) -> ir.Value:
    lhs, rhs = op.lhs, op.rhs
    a, b, out = shape_of(lhs.type), shape_of(rhs.type), shape_of(op.result.type)
    element = ir.RankedTensorType(op.result.type).element_type
    accumulator = ir.F32Type.get() if lb.is_low_precision(element) else element
    if len(a) == 2 and len(b) == 2:
        product = linalg.matmul(lhs, rhs, outs=[lb.zeros(out, accumulator)])
    elif len(b) == 2:
        # [..., M, K] x [K, N]: fold the batch dims into M for one 2-D matmul.
        rows = 1
        for d in a[:-1]:
            rows *= d
        groups = [list(range(len(a) - 1)), [len(a) - 1]]
        flat_type = ir.RankedTensorType.get([rows, a[-1]], ir.RankedTensorType(lhs.type).element_type)
        flat = tensor.collapse_shape(flat_type, lhs, groups)
        flat_product = linalg.matmul(flat, rhs, outs=[lb.zeros([rows, b[-1]], accumulator)])
        product_type = ir.RankedTensorType.get(out, accumulator)
        product = tensor.expand_shape(product_type, flat_product, groups, [], out)
    elif len(a) == 3 and len(b) == 3 and a[0] == b[0]:
        product = linalg.batch_matmul(lhs, rhs, outs=[lb.zeros(out, accumulator)])
    else:
        product = _broadcast_batch_matmul(lhs, rhs, out, accumulator)
    if accumulator == element:
        return product
    return lb.elementwise([product], op.result.type, lambda x: arith.truncf(element, x))


def _broadcast_batch_matmul(lhs: ir.Value, rhs: ir.Value, out, accumulator: ir.Type) -> ir.Value:
    """Batched matmul with NumPy-broadcast batch dims as one linalg.generic.

    Iteration space (batch..., m, n, k); k is the reduction.
    """
    rank = len(out)
    batch = out[:-2]
    m, n, k = (ir.AffineDimExpr.get(i) for i in (rank - 2, rank - 1, rank))

    def operand_map(shape, inner):
        batch_map = lb.broadcast_map(shape[:-2], batch)
        return ir.AffineMap.get(rank + 1, 0, [*batch_map.results, *inner])

    maps = [
        operand_map(shape_of(lhs.type), [m, k]),
        operand_map(shape_of(rhs.type), [k, n]),
        ir.AffineMap.get(rank + 1, 0, [ir.AffineDimExpr.get(i) for i in range(rank)]),
    ]
    iterators = [lb.PARALLEL] * rank + [lb.REDUCTION]
    return lb.generic(
        [lhs, rhs],
        lb.zeros(out, accumulator),
        maps,
        iterators,
        lambda x, y, acc: arith.addf(acc, arith.mulf(lb.widen(x), lb.widen(y))),
    )


LOWERINGS: dict[type, Callable] = {
    rlx.MatmulOp: _lower_matmul,
}
