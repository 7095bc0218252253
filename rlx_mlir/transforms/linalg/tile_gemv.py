"""rlx-tile-gemv: f32 matmuls with few rows (decode steps) as weight-streaming GEMV kernels.

A matmul C[M, N] += A[M, K] · B[K, N] with M ≤ `max-rows` (1 to 8: the tokens of a decode step)
reads each weight once and does M multiply-adds with it: it is bound by the speed at which B
streams from memory, not by the FMA units.  The GEMM kernel of `rlx-pack-matmul` pads M to its
8-row register tile (8× the FMAs for M = 1) and walks B in 32-column strips down all of K (128
contiguous bytes per row of B, a new page every row: the prefetchers cannot keep up).  This
pass tiles such matmuls instead, with the transform dialect, into the loop nest of a BLAS
`gemv_n` kernel (axpy form):

    forall column chunk (one per thread)               scf.forall, threads > 1
      for column block nb of COLUMN_BLOCK_BYTES of C   C's block stays in L1
        for k in steps of R rows of B                  R rows of B streamed side by side
          for n in steps of V columns of the block     contiguous in every row of B
            C[:, n:n+V] += A[:, k:k+R] · B[k:k+R, n:n+V]

A matmul inside a loop tagged `rlx.gemv_rows = R` (`ir.attrs.GEMV_ROWS_ATTR`) takes that R instead
of 4: the lowering of `rlx.grouped_matmul` asks for 8 on its loop over an expert's tiles, whose B
block is in L2 for all but the first tile (C's tile is then loaded and stored half as often: 7-10%
off the gate matmul of benchmarks/moe.py, one thread).
The innermost tile (M × V × R) is vectorized and lowered to outer products: R broadcast values
of A times a `vector<V x f32>` row of B per row of C, i.e. `vector.fma`; C's tile is loaded and
stored once per R rows of B (it is in L1), B is read exactly once, row by row, each row in long
contiguous runs.  M is not padded.  Tile sizes are divisors of the extents (no partial tiles);
when N is not a multiple of 16 (one AVX-512 vector), the last N % 16 columns are split off into
their own matmul, left to `rlx-pack-matmul` (an LM head with a vocabulary of 1000: 992 + 8).

Measured (AMD EPYC, AVX-512, 1 thread, M = 1, K = N = 4096, a loaded machine, best of 15): the
GEMM path 14 ms, this kernel 2.1 ms (32 GB/s of weight), numpy's OpenBLAS 2.1 ms; M = 8: 13.4 ms,
3.0 ms, numpy 10 ms (benchmarks/quant.py measures it against the machine's copy bandwidth).
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import func, linalg, tensor

from ...ir.attrs import GEMV_ATTR, GEMV_ROWS_ATTR
from ...ir.shapes import shape_of
from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass, option
from ...targets.cpu import MAX_THREADS
from .pack_matmul import matmul_operands
from .tile_matmul import divisor_at_most, inside_forall
from .transform_script import apply_script

LANES = 16  # f32 lanes of one AVX-512 vector: N must be a multiple
COLUMN_BLOCK_BYTES = 16 * 1024  # C's block (M rows) stays in L1 while B's rows stream past it
ROWS_PER_PASS = 4  # R: rows of B read side by side per pass over a block
TILE_VECTORS = 64  # M × V / LANES: vector registers of C and products per tile (bound)


@dataclasses.dataclass(frozen=True)
class GemvPlan:
    """Tile sizes of one GEMV (in columns of C and rows of B)."""

    m: int
    n: int
    k: int
    threads: int
    rows_per_pass: int = ROWS_PER_PASS

    def chunk(self) -> int:
        """Columns per thread (all of N when serial)."""
        vectors = self.n // LANES
        if self.threads <= 1:
            return self.n
        return LANES * divisor_at_most(vectors, -(-vectors // self.threads))

    def block(self) -> int:
        return LANES * divisor_at_most(self.chunk() // LANES, COLUMN_BLOCK_BYTES // (4 * LANES * self.m))

    def rows(self) -> int:
        return divisor_at_most(self.k, self.rows_per_pass)

    def width(self) -> int:
        return LANES * divisor_at_most(self.block() // LANES, max(1, TILE_VECTORS // (4 * self.m)))


def _script(index: int, plan: GemvPlan) -> list[str]:
    g = f"%g{index}"
    any2 = "(!transform.any_op, !transform.any_op)"
    lines = [
        f"{g}_0 = transform.structured.match ops{{[\"linalg.matmul\"]}} attributes {{{GEMV_ATTR} = {index} : i64}}"
        " in %root : (!transform.any_op) -> !transform.any_op",
    ]
    op = f"{g}_0"
    if plan.chunk() < plan.n:
        lines.append(
            f"{g}_par, {g}_forall = transform.structured.tile_using_forall {op} tile_sizes [0, {plan.chunk()}, 0]"
            f" : (!transform.any_op) -> {any2}"
        )
        op = f"{g}_par"
    lines += [
        f"{g}_blk, {g}_l1 = transform.structured.tile_using_for {op} tile_sizes [0, {plan.block()}, 0]"
        f" : (!transform.any_op) -> {any2}",
        f"{g}_row, {g}_l2 = transform.structured.tile_using_for {g}_blk tile_sizes [0, 0, {plan.rows()}]"
        f" : (!transform.any_op) -> {any2}",
        f"{g}_tile, {g}_l3 = transform.structured.tile_using_for {g}_row tile_sizes [0, {plan.width()}, 0]"
        f" : (!transform.any_op) -> {any2}",
        f"{g}_gen = transform.structured.generalize {g}_tile : (!transform.any_op) -> !transform.any_op",
        f"transform.apply_patterns to {g}_l3 {{\n"
        "  transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices\n"
        "  transform.apply_patterns.canonicalization\n"
        "} : !transform.any_op",
        f"{g}_step = transform.structured.match interface{{LinalgOp}} in {g}_l3 : (!transform.any_op) -> !transform.any_op",
        f"transform.structured.vectorize {g}_step : !transform.any_op",
    ]
    return lines


_LOWER = """
%funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
transform.apply_patterns to %funcs {
  transform.apply_patterns.vector.reduction_to_contract
  transform.apply_patterns.vector.transfer_permutation_patterns
  transform.apply_patterns.canonicalization
} : !transform.any_op
transform.apply_patterns to %funcs {
  transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
  transform.apply_patterns.vector.lower_outerproduct
  transform.apply_patterns.vector.lower_transpose
  transform.apply_patterns.vector.lower_broadcast
  transform.apply_patterns.vector.lower_shape_cast
  transform.apply_patterns.canonicalization
} : !transform.any_op
"""


def _split_columns(op: ir.OpView, columns: int) -> ir.OpView:
    """Rewrites C = A·B as two matmuls, on B's first `columns` columns (a multiple of LANES) and on
    the rest (fewer than LANES, left to rlx-pack-matmul), their results inserted into C.  Returns
    the first."""
    a, b, c = op.operands
    (m, k), (_, n) = shape_of(a.type), shape_of(b.type)
    f32 = ir.F32Type.get()
    with ir.InsertionPoint(op), op.location:
        parts, result = [], c
        for start, width in ((0, columns), (columns, n - columns)):
            b_part = tensor.extract_slice(ir.RankedTensorType.get([k, width], f32), b, [], [], [], [0, start], [k, width], [1, 1])
            c_type = ir.RankedTensorType.get([m, width], f32)
            c_part = tensor.extract_slice(c_type, c, [], [], [], [0, start], [m, width], [1, 1])
            product = linalg.matmul(a, b_part, outs=[c_part])
            parts.append(product.owner)
            result = tensor.insert_slice(product, result, [], [], [], [0, start], [m, width], [1, 1])
    op.results[0].replace_all_uses_with(result)
    op.erase()
    return parts[0].opview


def _rows_per_pass(op: ir.OpView) -> int:
    """R for `op`: the `rlx.gemv_rows` of the innermost loop around it that has one, else 4."""
    parent = op.operation.parent
    while parent is not None and not isinstance(parent.opview, func.FuncOp):
        if GEMV_ROWS_ATTR in parent.attributes:
            return max(1, ir.IntegerAttr(parent.attributes[GEMV_ROWS_ATTR]).value)
        parent = parent.parent
    return ROWS_PER_PASS


@dataclasses.dataclass(frozen=True)
class TileGemv(RlxPass):
    name = "rlx-tile-gemv"
    summary = "Tile f32 matmuls with few rows (M <= max-rows) into weight-streaming, vectorized GEMV kernels"
    creates_rlx_ops = False
    threads: int = option(1, "threads to split the columns across (scf.forall; 1 = serial)", minimum=1, maximum=MAX_THREADS)
    max_rows: int = option(8, "largest M taken (more rows: the GEMM kernel of rlx-pack-matmul)", minimum=0)
    min_flops: int = option(32 * 32 * 32, "leave matmuls with fewer multiply-adds (M·N·K) alone", minimum=0)

    def run(self, module: ir.Operation) -> bool:
        plans = []  # (location, plan) of the matmul tagged with its index
        for op in collect_ops(module, linalg.MatmulOp):
            operands = matmul_operands(op)
            if operands is None:
                continue
            a, b, _ = operands
            (m, k), (_, n) = shape_of(a.type), shape_of(b.type)
            if m > self.max_rows or n < LANES or m * n * k < self.min_flops:
                continue
            rows = _rows_per_pass(op)
            if n % LANES:
                op = _split_columns(op, n - n % LANES)
            op.attributes[GEMV_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), len(plans))
            # Inside an scf.forall the matmul is already one thread's share of a parallel loop: serial.
            plans.append((op.location, GemvPlan(m, n, k, 1 if inside_forall(op) else self.threads, rows)))
        if not plans:
            return False  # nothing changed: the pass manager need not verify the module again
        body = [line for index, (_, plan) in enumerate(plans) for line in _script(index, plan)]
        apply_script(module, "\n".join(body) + _LOWER, plans[0][0], "tiling the GEMV kernels")
