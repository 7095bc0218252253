"""Lowering of matmul-family MIR ops to named linalg ops where they exist."""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from ...dialects import rlx
from ...ir.shapes import shape_of
from . import builders as lb
from .elementwise import ACTIVATIONS


def _lower_matmul(op) -> ir.Value:
    element = ir.RankedTensorType(op.result.type).element_type
    accumulator = lb.compute_type(element)
    product = _matmul_product(op.lhs, op.rhs, shape_of(op.result.type), accumulator)
    if accumulator == element:
        return product
    return lb.elementwise([product], op.result.type, lambda x: arith.truncf(element, x))


def _matmul_product(lhs: ir.Value, rhs: ir.Value, out, accumulator: ir.Type) -> ir.Value:
    """`lhs @ rhs` (NumPy matmul shapes) accumulated in a tensor of `accumulator`, shape `out`."""
    a, b = shape_of(lhs.type), shape_of(rhs.type)
    if len(a) == 2 and len(b) == 2:
        return linalg.matmul(lhs, rhs, outs=[lb.zeros(out, accumulator)])
    if len(b) == 2:
        # [..., M, K] x [K, N]: fold the batch dims into M for one 2-D matmul.
        flat = _rows(lhs)
        flat_product = linalg.matmul(flat, rhs, outs=[lb.zeros([shape_of(flat.type)[0], b[-1]], accumulator)])
        return _unfold_rows(flat_product, out)
    if len(a) == 3 and len(b) == 3 and a[0] == b[0]:
        return linalg.batch_matmul(lhs, rhs, outs=[lb.zeros(out, accumulator)])
    return _broadcast_batch_matmul(lhs, rhs, out, accumulator)


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


def _lower_dot_general(op) -> ir.Value:
    """One linalg.generic over (result dims..., contracting dims...); the contracting dims reduce."""
    lhs, rhs = op.lhs, op.rhs
    a, b, out = shape_of(lhs.type), shape_of(rhs.type), shape_of(op.result.type)
    lhs_batch, rhs_batch = op.lhs_batch, op.rhs_batch
    lhs_contracting, rhs_contracting = op.lhs_contracting, op.rhs_contracting
    rank = len(out)
    loops = rank + len(lhs_contracting)
    dim = ir.AffineDimExpr.get

    def operand_map(shape, batch, contracting, free_start):
        results, free = [], free_start
        for d in range(len(shape)):
            if d in batch:
                results.append(dim(batch.index(d)))
            elif d in contracting:
                results.append(dim(rank + contracting.index(d)))
            else:
                results.append(dim(free))
                free += 1
        return ir.AffineMap.get(loops, 0, results), free

    lhs_map, rhs_start = operand_map(a, lhs_batch, lhs_contracting, len(lhs_batch))
    rhs_map, _ = operand_map(b, rhs_batch, rhs_contracting, rhs_start)
    out_map = ir.AffineMap.get(loops, 0, [dim(i) for i in range(rank)])
    element = ir.RankedTensorType(op.result.type).element_type
    accumulator = lb.compute_type(element)
    product = lb.generic(
        [lhs, rhs],
        lb.zeros(out, accumulator),
        [lhs_map, rhs_map, out_map],
        [lb.PARALLEL] * rank + [lb.REDUCTION] * len(lhs_contracting),
        lambda x, y, acc: arith.addf(acc, arith.mulf(lb.widen(x), lb.widen(y))),
    )
    if accumulator == element:
        return product
    return lb.elementwise([product], op.result.type, lambda x: arith.truncf(element, x))


# The activations of rlx.fused_matmul_bias_act, by the op whose scalar formula they use.
FUSED_ACTIVATIONS: dict[str, Callable[[ir.Value], ir.Value]] = {
    "none": lambda x: x,
    "relu": ACTIVATIONS[rlx.ReluOp],
    "gelu": ACTIVATIONS[rlx.GeluOp],
    "gelu_approx": ACTIVATIONS[rlx.GeluApproxOp],
    "silu": ACTIVATIONS[rlx.SiluOp],
    "sigmoid": ACTIVATIONS[rlx.SigmoidOp],
    "tanh": ACTIVATIONS[rlx.TanhOp],
}


def _lower_fused_matmul_bias_act(op) -> ir.Value:
    """The matmul's product (f32 for f16 / bf16), then one generic: bias, activation, one rounding."""
    element = ir.RankedTensorType(op.result.type).element_type
    accumulator = lb.compute_type(element)
    product = _matmul_product(op.x, op.w, shape_of(op.result.type), accumulator)
    act = FUSED_ACTIVATIONS[op.activation]
    return lb.elementwise(
        [product, op.bias],
        op.result.type,
        lambda p, bias: lb.narrow(act(arith.addf(p, lb.widen(bias))), element),
    )


def _lower_lora_matmul(op) -> ir.Value:
    """`x @ w + scale * (x @ a) @ b` as three 2-D `linalg.matmul`s sharing one accumulator.

    The batch dims fold into M.  `x @ a` (`[M, r]`, the skinny product) is scaled in its
    accumulator type, `(scale * x @ a) @ b` initialises the `[M, N]` accumulator, and the base
    product `x @ w` accumulates into it: the base GEMM runs as it would alone (its C is read
    once per tile either way) and `w + scale * a @ b` is never formed.
    """
    element = ir.RankedTensorType(op.result.type).element_type
    accumulator = lb.compute_type(element)
    out = shape_of(op.result.type)
    x = _rows(op.x)
    rows = shape_of(x.type)[0]
    rank, n = shape_of(op.a.type)[1], out[-1]
    down = linalg.matmul(x, op.a, outs=[lb.zeros([rows, rank], accumulator)])
    scale = arith.constant(accumulator, float(op.scale))
    down = lb.elementwise([down], down.type, lambda v: arith.mulf(v, scale))
    adapter = linalg.matmul(down, op.b, outs=[lb.zeros([rows, n], accumulator)])
    product = _unfold_rows(linalg.matmul(x, op.w, outs=[adapter]), out)
    if accumulator == element:
        return product
    return lb.elementwise([product], op.result.type, lambda v: arith.truncf(element, v))


def _rows(x: ir.Value) -> ir.Value:
    """`x [..., M, K]` as a 2-D `[rows, K]` (a collapse of the leading dims; `x` itself at rank 2)."""
    shape = shape_of(x.type)
    if len(shape) == 2:
        return x
    rows = 1
    for d in shape[:-1]:
        rows *= d
    flat_type = ir.RankedTensorType.get([rows, shape[-1]], ir.RankedTensorType(x.type).element_type)
    return tensor.collapse_shape(flat_type, x, [list(range(len(shape) - 1)), [len(shape) - 1]])


def _unfold_rows(product: ir.Value, out) -> ir.Value:
    """A 2-D `[rows, N]` product expanded back to `out` `[..., M, N]` (`product` itself at rank 2)."""
    if len(out) == 2:
        return product
    groups = [list(range(len(out) - 1)), [len(out) - 1]]
    element = ir.RankedTensorType(product.type).element_type
    return tensor.expand_shape(ir.RankedTensorType.get(out, element), product, groups, [], out)


LOWERINGS: dict[type, Callable] = {
    rlx.MatmulOp: _lower_matmul,
    rlx.LoraMatmulOp: _lower_lora_matmul,
    rlx.DotGeneralOp: _lower_dot_general,
    rlx.FusedMatmulBiasActOp: _lower_fused_matmul_bias_act,
}
