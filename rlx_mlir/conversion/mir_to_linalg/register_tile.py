"""A register-tiled f32 product that adds into its destination in place: `c += a @ b`.

`accumulate(...)` adds the `[rows, depth] x [depth, width]` product of a window of `a` and a window
of `b` into a window of `c`, all three read (and `c` written) at their offsets in the whole
tensors: no `extract_slice` / `insert_slice` of a strip (which bufferizes into a copy of the strip
where the offsets are dynamic).  The loop nest, per group of `group` columns (`ACCUMULATORS`
vectors: 8 rows x 2 vectors, or 4 rows x 4):

    load c's tile (rows x group) into registers
    for k in 0 .. depth (K_UNROLL steps per iteration):
      b's row k: `group / LANES` vectors; a's element (row r, k) broadcast per row; vector.fma each
    store c's tile

Every output element sums k in order, one `fma` per k into its partial sum (the value c held):
what rlx-tile-gemv's axpy kernel computes for a matmul accumulating into c (its outer products
lower to the same `vector.fma` chain), bit for bit.  C stays in registers down all `depth` rows,
where the axpy kernel loads and stores it every `rlx.gemv_rows` rows of b.
"""

from __future__ import annotations

from typing import Sequence

from mlir import ir
from mlir.dialects import arith, bufferization, memref, tensor, vector

from . import builders as lb

Offset = lb.Offset

LANES = 16  # f32 lanes of one AVX-512 register: width must be a multiple
ACCUMULATORS = 16  # vector registers of c's tile: the rest of the 32 hold b's row and a's broadcasts
K_UNROLL = 4  # k steps per loop iteration (where they divide depth)
PREFETCH_LOCALITY = 2  # prefetcht1: into L2


def prefetchable(t: ir.Value) -> ir.Value:
    """`t` (an f32 tensor) as a read-only memref of any strides, for `accumulate`'s prefetches."""
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    t_type = ir.RankedTensorType(t.type)
    layout = ir.StridedLayoutAttr.get(dynamic, [dynamic] * t_type.rank)
    return bufferization.ToBufferOp(ir.MemRefType.get(t_type.shape, t_type.element_type, layout), t, read_only=True).result


def _add(x: Offset, y: Offset) -> Offset:
    if isinstance(x, int) and isinstance(y, int):
        return x + y
    if isinstance(y, int) and y == 0:
        return x
    if isinstance(x, int) and x == 0:
        return y
    return arith.addi(lb.index_value(x), lb.index_value(y))


def group_vectors(rows: int, width: int) -> int:
    """Vectors of columns per register tile of `rows` rows (at most ACCUMULATORS in all)."""
    return lb.largest_divisor(width // LANES, max(1, ACCUMULATORS // rows))


def accumulate(c: ir.Value, c_origin: Sequence[Offset], a: ir.Value, a_origin: Sequence[Offset],
               b: ir.Value, b_origin: Sequence[Offset], rows: int, depth: int, width: int,
               prefetch: tuple[ir.Value, Sequence[Offset]] | None = None) -> ir.Value:
    """`c` with `c[c_row + i, c_column + j] += sum over k of a[a_row + i, a_column + k] *
    b[..., b_row + k, b_column + j]` for `i < rows`, `k < depth`, `j < width` (k in order, one fma
    each).  Origins are the window's offset in each tensor (`b_origin` may have leading indices,
    e.g. an expert); `width` whole LANES vectors.  Returns the updated `c` (a tensor)."""
    assert width % LANES == 0 and rows > 0 and depth > 0, (rows, depth, width)
    f32 = lb.f32_type()
    lanes = ir.VectorType.get([LANES], f32)
    in_bounds = ir.ArrayAttr.get([ir.BoolAttr.get(True)])
    zero = lb.f32_constant(0.0)

    def last(rank: int) -> ir.AffineMapAttr:
        return ir.AffineMapAttr.get(ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(rank - 1)]))

    def read(t: ir.Value, origin: Sequence[Offset]) -> ir.Value:
        indices = [lb.index_value(i) for i in origin]
        return vector.TransferReadOp(lanes, t, indices, last(len(indices)), zero, in_bounds).result

    def write(value: ir.Value, t: ir.Value, origin: Sequence[Offset]) -> ir.Value:
        indices = [lb.index_value(i) for i in origin]
        return vector.TransferWriteOp(t.type, value, t, indices, last(len(indices)), in_bounds).result

    vectors = group_vectors(rows, width)
    group = vectors * LANES
    unroll = next(u for u in (K_UNROLL, 2, 1) if depth % u == 0)
    c_row, c_column = c_origin
    a_row, a_column = a_origin
    *b_lead, b_row, b_column = b_origin
    a_rows = [_add(a_row, r) for r in range(rows)]
    c_rows = [_add(c_row, r) for r in range(rows)]

    def per_group(g: ir.Value, c: ir.Value) -> list[ir.Value]:
        offset = arith.muli(g, lb.index_constant(group))
        c_columns = [_add(_add(c_column, offset), v * LANES) for v in range(vectors)]
        b_columns = [_add(_add(b_column, offset), v * LANES) for v in range(vectors)]
        tile = [read(c, [row, column]) for row in c_rows for column in c_columns]

        def k_steps(step: ir.Value, *tile: ir.Value) -> list[ir.Value]:
            tile = list(tile)
            for u in range(unroll):
                k = _add(arith.muli(step, lb.index_constant(unroll)), u)
                b_vectors = [read(b, [*b_lead, _add(b_row, k), column]) for column in b_columns]
                if prefetch is not None:
                    buffer, (*p_lead, p_row, p_column) = prefetch
                    for v in range(vectors):
                        p_origin = (*p_lead, _add(p_row, k), _add(_add(p_column, offset), v * LANES))
                        memref.PrefetchOp(buffer, [lb.index_value(i) for i in p_origin], False, PREFETCH_LOCALITY, True)
                a_k = _add(a_column, k)
                for r, row in enumerate(a_rows):
                    scalar = tensor.ExtractOp(a, [lb.index_value(row), lb.index_value(a_k)]).result
                    element = vector.BroadcastOp(lanes, scalar).result
                    for v in range(vectors):
                        tile[r * vectors + v] = vector.fma(element, b_vectors[v], tile[r * vectors + v])
            return tile

        tile = lb.for_loop(0, depth // unroll, tile, k_steps)
        for r, row in enumerate(c_rows):
            for v, column in enumerate(c_columns):
                c = write(tile[r * vectors + v], c, [row, column])
        return [c]

    (c,) = lb.for_loop(0, width // group, [c], per_group)
    return c
