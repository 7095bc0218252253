"""Small builders for linalg-on-tensors IR, used by the lowerings.

All functions build at the current insertion point and location.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence, Union

from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor

PARALLEL = "parallel"
REDUCTION = "reduction"


# --- scalars ------------------------------------------------------------------------------


def f32_type() -> ir.Type:
    return ir.F32Type.get()


def i64_type() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def f32_constant(value: float) -> ir.Value:
    """An `arith.constant` of type f32."""
    return arith.constant(f32_type(), value)


def index_constant(value: int) -> ir.Value:
    """An `arith.constant` of type index (a loop bound, a slice offset)."""
    return arith.constant(ir.IndexType.get(), value)


def loop_index(dim: int) -> ir.Value:
    """`linalg.index`: the current iteration of loop `dim`, inside a linalg op's body."""
    return linalg.IndexOp(dim).result


# --- tensors ------------------------------------------------------------------------------


def empty(shape: Sequence[int], element: ir.Type) -> ir.Value:
    return tensor.EmptyOp(list(shape), element).result


def zeros(shape: Sequence[int], element: ir.Type) -> ir.Value:
    """A tensor of zeros (linalg.fill of tensor.empty), e.g. a matmul accumulator."""
    zero = arith.ConstantOp(element, 0.0).result
    return linalg.fill(zero, outs=[empty(shape, element)])


def broadcast_map(in_shape: Sequence[int], out_shape: Sequence[int]) -> ir.AffineMap:
    """Maps output indices to input indices under NumPy broadcasting.

    Missing leading dimensions are dropped and size-1 dimensions that stretch
    read index 0.
    """
    offset = len(out_shape) - len(in_shape)
    results = []
    for i, size in enumerate(in_shape):
        if size == 1 and out_shape[offset + i] != 1:
            results.append(ir.AffineConstantExpr.get(0))
        else:
            results.append(ir.AffineDimExpr.get(offset + i))
    return ir.AffineMap.get(len(out_shape), 0, results)


def generic(
    inputs: Sequence[ir.Value],
    init: ir.Value,
    indexing_maps: Sequence[ir.AffineMap],
    iterator_types: Sequence[str],
    body: Callable[..., ir.Value],
) -> ir.Value:
    """A single-result linalg.generic; `body(*input_elements, out_element)` returns the yield."""
    return generic_results(inputs, [init], indexing_maps, iterator_types, lambda *args: [body(*args)])[0]


def generic_results(
    inputs: Sequence[ir.Value],
    inits: Sequence[ir.Value],
    indexing_maps: Sequence[ir.AffineMap],
    iterator_types: Sequence[str],
    body: Callable[..., Sequence[ir.Value]],
) -> list[ir.Value]:
    """A linalg.generic with one result per init; `body(*input_elements, *out_elements)` returns the yields."""
    iterators = [ir.Attribute.parse(f"#linalg.iterator_type<{kind}>") for kind in iterator_types]
    op = linalg.GenericOp(
        result_tensors=[init.type for init in inits],
        inputs=list(inputs),
        outputs=list(inits),
        indexing_maps=ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in indexing_maps]),
        iterator_types=ir.ArrayAttr.get(iterators),
    )
    element_types = [ir.ShapedType(v.type).element_type for v in (*inputs, *inits)]
    block = op.regions[0].blocks.append(*element_types)
    with ir.InsertionPoint(block):
        linalg.YieldOp(list(body(*block.arguments)))
    return list(op.results)


def elementwise(
    inputs: Sequence[ir.Value], result_type: ir.Type, body: Callable[..., ir.Value]
) -> ir.Value:
    """An elementwise map over broadcast inputs; `body(*input_elements)` returns the result element."""
    out_shape = list(ir.RankedTensorType(result_type).shape)
    maps = [broadcast_map(ir.RankedTensorType(v.type).shape, out_shape) for v in inputs]
    maps.append(ir.AffineMap.get_identity(len(out_shape)))
    init = empty(out_shape, ir.RankedTensorType(result_type).element_type)
    return generic(
        inputs, init, maps, [PARALLEL] * len(out_shape), lambda *args: body(*args[:-1])
    )


def for_loop(lower, upper, carried: Sequence[ir.Value], body: Callable) -> list[ir.Value]:
    """`scf.for i in [lower, upper)` carrying `carried` (bounds: ints or index values);
    `body(i, *carried)` returns the new carried values."""
    bounds = [index_constant(b) if isinstance(b, int) else b for b in (lower, upper)]
    loop = scf.ForOp(*bounds, index_constant(1), list(carried))
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(list(body(loop.induction_variable, *loop.inner_iter_args)))
    return list(loop.results)


Offset = Union[int, ir.Value]  # a static offset, or an index value computed at run time
_DYNAMIC = ir.ShapedType.get_dynamic_size()


def index_value(value: Offset) -> ir.Value:
    """An index value: `value` itself, or a constant."""
    return index_constant(value) if isinstance(value, int) else value


def extract_slice(source: ir.Value, offsets: Sequence[Offset], sizes: Sequence[int],
                  shape: Optional[Sequence[int]] = None) -> ir.Value:
    """`source[offsets : offsets + sizes]` with unit strides (tensor.extract_slice; a view after
    bufferization); `shape` drops unit dimensions (rank-reduced)."""
    element = ir.RankedTensorType(source.type).element_type
    result = ir.RankedTensorType.get(list(sizes if shape is None else shape), element)
    dynamic = [o for o in offsets if isinstance(o, ir.Value)]
    static = [_DYNAMIC if isinstance(o, ir.Value) else o for o in offsets]
    return tensor.ExtractSliceOp(result, source, dynamic, [], [], static, list(sizes), [1] * len(sizes)).result


def largest_divisor(extent: int, limit: int) -> int:
    """The largest divisor of `extent` up to `limit` (at least 1): a tile size with no partial tile."""
    return max(d for d in range(1, min(extent, max(limit, 1)) + 1) if extent % d == 0)


def tile_and_tail(extent: int, limit: int, multiple: int = 1) -> tuple[int, int]:
    """`(tile, tail)`: `extent` as whole tiles of `tile` and one tail of `tail` (`extent % tile`).

    `largest_divisor(extent, limit)` with no tail where that divisor is at least half of
    `min(extent, limit)`; else (a prime or awkward extent, whose divisor falls to 1 or so: a
    1-column or 1-row tile many times slower) the largest multiple of `multiple` up to `limit`
    (`limit` itself below `multiple`) and the remainder as a static tail."""
    divisor = largest_divisor(extent, limit)
    if 2 * divisor >= min(extent, max(limit, 1)):
        return divisor, 0
    tile = limit // multiple * multiple if limit >= multiple else limit
    return tile, extent % tile


def reshape(value: ir.Value, result_type: ir.Type) -> ir.Value:
    """Reshape through collapse_shape / expand_shape (views after bufferization)."""
    source = list(ir.RankedTensorType(value.type).shape)
    target = list(ir.RankedTensorType(result_type).shape)
    if source == target:
        return value
    element = ir.RankedTensorType(result_type).element_type
    if not source or not target:
        # Rank 0 on either side: every dimension is 1, one reassociation group or none.
        if not source:
            return tensor.expand_shape(result_type, value, [], [], target)
        return tensor.collapse_shape(result_type, value, [])
    flat = value
    if len(source) > 1:
        flat_type = ir.RankedTensorType.get([_product(source)], element)
        flat = tensor.collapse_shape(flat_type, value, [list(range(len(source)))])
    if len(target) == 1:
        return flat
    return tensor.expand_shape(result_type, flat, [list(range(len(target)))], [], target)


def _product(shape: Sequence[int]) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


# --- precision: f16 and bf16 compute in f32 ---------------------------------------------


def is_low_precision(element: ir.Type) -> bool:
    return isinstance(element, (ir.F16Type, ir.BF16Type))


def compute_type(element: ir.Type) -> ir.Type:
    """The type arithmetic runs in: f32 for f16 and bf16, the element type otherwise."""
    return f32_type() if is_low_precision(element) else element


def widen(x: ir.Value) -> ir.Value:
    """An f16 / bf16 scalar extended to f32; other scalars unchanged."""
    return arith.extf(f32_type(), x) if is_low_precision(x.type) else x


def narrow(x: ir.Value, element: ir.Type) -> ir.Value:
    """A computed scalar rounded back to the storage element type."""
    return arith.truncf(element, x) if x.type != element else x


def constant_like(like: ir.Value, value: float) -> ir.Value:
    """A scalar constant of `like`'s type."""
    return arith.constant(like.type, value)
