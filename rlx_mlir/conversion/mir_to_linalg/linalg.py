"""Lowering of matmul-family MIR ops to named linalg ops where they exist."""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor

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
    if 0 in (*a, *b):
        return _broadcast_batch_matmul(lhs, rhs, out, accumulator)
    # Batched: each operand broadcast to the result's batch dims (a copy only where they differ),
    # the batch dims folded into one, then one 2-D GEMM per batch.
    batch = list(out[:-2])
    count = 1
    for size in batch:
        count *= size
    folded = []
    for operand, shape in ((lhs, a), (rhs, b)):
        full = [*batch, *shape[-2:]]
        if list(shape) != full:
            element = ir.RankedTensorType(operand.type).element_type
            operand = lb.reshape(operand, ir.RankedTensorType.get([1] * (len(full) - len(shape)) + list(shape), element))
            operand = _broadcast_to(operand, full)
        folded.append(lb.reshape(operand, ir.RankedTensorType.get([count, *full[-2:]], ir.RankedTensorType(operand.type).element_type)))
    product = _per_batch_matmul(*folded, accumulator)
    return lb.reshape(product, ir.RankedTensorType.get(out, accumulator))


def _broadcast_to(value: ir.Value, target) -> ir.Value:
    """`value` (same rank as `target`, size-1 dims where it broadcasts) materialised at `target`'s shape."""
    shape = shape_of(value.type)
    if list(shape) == list(target):
        return value
    element = ir.RankedTensorType(value.type).element_type
    kept = [d for d, (size, want) in enumerate(zip(shape, target)) if size == want]
    squeezed = lb.reshape(value, ir.RankedTensorType.get([shape[d] for d in kept], element))
    added = [d for d in range(len(target)) if d not in kept]
    return linalg.broadcast(squeezed, outs=[lb.empty(list(target), element)], dimensions=added).results[0]


# Batches at or above which the GEMMs of a batched product run in parallel (threads share the
# batches, each GEMM serial); below it the batches run in turn, each GEMM split across threads.
PARALLEL_BATCHES = 4


def _per_batch_matmul(lhs: ir.Value, rhs: ir.Value, accumulator: ir.Type) -> ir.Value:
    """`[B, M, K] x [B, K, N]` as one 2-D `linalg.matmul` per batch (the GEMM kernel of
    rlx-pack-matmul / rlx-tile-matmul), in an `scf.forall` (B >= PARALLEL_BATCHES) or an
    `scf.for` over the batches; `linalg.matmul` itself when B = 1.

    A batched contraction as one loop nest (`linalg.batch_matmul`, or a generic with the
    reduction innermost) reaches a tenth of the kernel's speed: it accumulates through memory,
    and on the planned path LLVM cannot tell that the arena slots it reads and writes are
    distinct."""
    count, m, k = shape_of(lhs.type)
    n = shape_of(rhs.type)[2]
    if count == 1:
        product = linalg.matmul(_fold(lhs, [m, k]), _fold(rhs, [k, n]), outs=[lb.zeros([m, n], accumulator)])
        return lb.reshape(product, ir.RankedTensorType.get([1, m, n], accumulator))
    out = lb.empty([count, m, n], accumulator)

    def gemm(b: ir.Value) -> ir.Value:
        return linalg.matmul(_batch(lhs, b, [m, k]), _batch(rhs, b, [k, n]), outs=[lb.zeros([m, n], accumulator)])

    if count < PARALLEL_BATCHES:
        def step(b, out):
            return [tensor.insert_slice(gemm(b), out, [b], [], [], [ir.ShapedType.get_dynamic_size(), 0, 0], [1, m, n], [1, 1, 1])]

        return lb.for_loop(0, count, [out], step)[0]
    loop = scf.ForallOp([0], [count], [1], [out])
    with ir.InsertionPoint(loop.body):
        (b,), (shared,) = loop.induction_variables, loop.inner_iter_args
        product = gemm(b)
        terminator = scf.InParallelOp()
        with ir.InsertionPoint(terminator.region.blocks[0]):
            tensor.ParallelInsertSliceOp(product, shared, [b], [], [], [ir.ShapedType.get_dynamic_size(), 0, 0],
                                         [1, m, n], [1, 1, 1])
    return loop.results[0]


def _batch(value: ir.Value, b, shape) -> ir.Value:
    """Batch `b` (an int or an index value) of `value [B, ...]`, rank-reduced to `shape`."""
    element = ir.RankedTensorType(value.type).element_type
    result = ir.RankedTensorType.get(list(shape), element)
    dynamic = [] if isinstance(b, int) else [b]
    first = b if isinstance(b, int) else ir.ShapedType.get_dynamic_size()
    return tensor.extract_slice(result, value, dynamic, [], [], [first, *[0] * len(shape)], [1, *shape], [1] * (len(shape) + 1))


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
    """The operands transposed (where needed) to `[batch..., free..., contracting...]` and
    `[batch..., contracting..., free...]`, folded to `[B, M, K]` and `[B, K, N]`, and multiplied
    by one GEMM per batch (`_per_batch_matmul`); with an empty dimension, one linalg.generic over
    (result dims..., contracting dims...)."""
    lhs, rhs = op.lhs, op.rhs
    a, b, out = shape_of(lhs.type), shape_of(rhs.type), shape_of(op.result.type)
    lhs_batch, rhs_batch = list(op.lhs_batch), list(op.rhs_batch)
    lhs_contracting, rhs_contracting = list(op.lhs_contracting), list(op.rhs_contracting)
    element = ir.RankedTensorType(op.result.type).element_type
    accumulator = lb.compute_type(element)
    if 0 not in (*a, *b):
        lhs_free = [d for d in range(len(a)) if d not in lhs_batch and d not in lhs_contracting]
        rhs_free = [d for d in range(len(b)) if d not in rhs_batch and d not in rhs_contracting]
        sizes = [1, 1, 1]
        for index, dims, shape in ((1, lhs_free, a), (2, lhs_contracting, a), (0, lhs_batch, a)):
            for d in dims:
                sizes[index] *= shape[d]
        count, m, k = sizes
        n = 1
        for d in rhs_free:
            n *= b[d]
        lhs3 = _fold(_transposed(lhs, [*lhs_batch, *lhs_free, *lhs_contracting]), [count, m, k])
        rhs3 = _fold(_transposed(rhs, [*rhs_batch, *rhs_contracting, *rhs_free]), [count, k, n])
        product = lb.reshape(_per_batch_matmul(lhs3, rhs3, accumulator), ir.RankedTensorType.get(out, accumulator))
        if accumulator == element:
            return product
        return lb.elementwise([product], op.result.type, lambda x: arith.truncf(element, x))
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


def _transposed(value: ir.Value, permutation) -> ir.Value:
    """`value` with its dims in `permutation` order (a linalg.transpose, `value` itself when in order)."""
    if list(permutation) == list(range(len(permutation))):
        return value
    shape = shape_of(value.type)
    element = ir.RankedTensorType(value.type).element_type
    target = [shape[d] for d in permutation]
    return linalg.transpose(value, outs=[lb.empty(target, element)], permutation=list(permutation)).results[0]


def _fold(value: ir.Value, shape) -> ir.Value:
    return lb.reshape(value, ir.RankedTensorType.get(list(shape), ir.RankedTensorType(value.type).element_type))


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
