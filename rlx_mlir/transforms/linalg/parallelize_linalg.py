"""rlx-parallelize-linalg: split large linalg ops across threads along their outermost dim.

Every linalg op on static tensors in a function body (not nested in a loop, which
is already serial work of something else) whose outermost non-unit loop is parallel
and whose iteration space has at least `min-elements` points is tiled with
`transform.structured.tile_using_forall num_threads [0, ..., threads]`: one chunk of
that loop per thread. `rlx-lower-to-llvm` runs the foralls on OpenMP
threads (scf-forall-to-parallel, convert-scf-to-openmp); LLVM vectorizes each
chunk's inner loops as before. Smaller ops stay serial: forking threads costs a
few microseconds.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from mlir import ir
from mlir.dialects import func, linalg

from ...ir.attrs import KERNEL_ATTR, PARALLEL_ID
from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass, option
from ...targets.cpu import MAX_THREADS
from .transform_script import apply_script

# Named ops whose first loop is parallel (the rows of a matmul, the outer dim of a copy...).
ROW_PARALLEL = (linalg.FillOp, linalg.CopyOp, linalg.TransposeOp, linalg.BroadcastOp, linalg.MapOp,
                linalg.MatmulOp, linalg.BatchMatmulOp, linalg.ElementwiseOp)


def _loop_parallel(op: ir.OpView, dim: int) -> bool:
    if isinstance(op, linalg.GenericOp):
        iterators = ir.ArrayAttr(op.attributes["iterator_types"])
        return len(iterators) > dim and "parallel" in str(iterators[dim])
    if isinstance(op, linalg.ReduceOp):
        return dim not in list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
    return isinstance(op, ROW_PARALLEL) and (dim == 0 or not isinstance(op, (linalg.MatmulOp, linalg.BatchMatmulOp)))


def _iteration_points(op: ir.Operation) -> int:
    """The size of the op's iteration space, bounded below by its largest static operand."""
    largest = 0
    for value in (*op.operands, *op.results):
        if not isinstance(value.type, ir.RankedTensorType):
            continue
        shaped = ir.RankedTensorType(value.type)
        if not shaped.has_static_shape:
            return 0
        count = 1
        for size in shaped.shape:
            count *= size
        largest = max(largest, count)
    return largest


def _has_empty_operand(op: ir.Operation) -> bool:
    """Whether an operand or result has a zero-size dimension: the op has a loop with no
    iterations (a matmul with K = 0, a reduction over an empty axis), which MLIR's tiling cannot
    take (it aborts the process); such an op is trivial work anyway, left serial."""
    return any(
        0 in ir.RankedTensorType(value.type).shape
        for value in (*op.operands, *op.results)
        if isinstance(value.type, ir.RankedTensorType)
    )


def split_dim(op: ir.OpView, threads: int) -> Optional[int]:
    """The loop to split: the outermost one past leading unit dims (a batch of 1), if it is
    parallel and has at least `threads` iterations. Loops are counted on the first result,
    whose dims lead the iteration space of every op handled here."""
    results = [r for r in op.results if isinstance(r.type, ir.RankedTensorType)]
    if not results:
        return None
    shape = ir.RankedTensorType(results[0].type).shape
    for dim, extent in enumerate(shape):
        if extent == 1:
            continue
        return dim if extent >= threads and _loop_parallel(op, dim) else None
    return None


def candidates(module: ir.Operation, threads: int, min_elements: int) -> list[tuple[ir.OpView, int]]:
    """(op, loop to split) for every op worth splitting."""
    found = []
    for function in module.regions[0].blocks[0].operations:
        if not isinstance(function, func.FuncOp) or not function.regions[0].blocks:
            continue
        for op in function.regions[0].blocks[0].operations:
            if not op.operation.name.startswith("linalg.") or KERNEL_ATTR in op.attributes:
                continue
            dim = split_dim(op, threads)
            if dim is not None and _iteration_points(op) >= min_elements and not _has_empty_operand(op):
                found.append((op, dim))
    return found


def transform_script(dims: list[int], threads: int) -> str:
    """The named-sequence body splitting op `rlx.parallel_id = i` along loop `dims[i]`."""
    lines = []
    for index, dim in enumerate(dims):
        counts = [0] * dim + [threads]
        lines += [
            f"%op{index} = transform.structured.match attributes {{{PARALLEL_ID} = {index} : i64}} in %root"
            " : (!transform.any_op) -> !transform.any_op",
            f"%tiled{index}, %forall{index} = transform.structured.tile_using_forall %op{index}"
            f" num_threads {counts} : (!transform.any_op) -> (!transform.any_op, !transform.any_op)",
        ]
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class ParallelizeLinalg(RlxPass):
    name = "rlx-parallelize-linalg"
    summary = "Split large linalg ops across threads along their outermost parallel dim (scf.forall)"
    creates_rlx_ops = False
    threads: int = option(2, "number of chunks (threads) per op", minimum=1, maximum=MAX_THREADS)
    min_elements: int = option(1 << 15, "leave ops with a smaller iteration space serial", minimum=0)

    def run(self, module: ir.Operation) -> None:
        if self.threads <= 1:
            return
        ops = candidates(module, self.threads, self.min_elements)
        if not ops:
            return
        i64 = ir.IntegerType.get_signless(64)
        for index, (op, _dim) in enumerate(ops):
            op.attributes[PARALLEL_ID] = ir.IntegerAttr.get(i64, index)
        script = transform_script([dim for _op, dim in ops], self.threads)
        apply_script(module, script, ops[0][0].location, "splitting linalg ops across threads")
        for op in collect_ops(module, lambda o: PARALLEL_ID in o.attributes):  # the tiled clones
            del op.attributes[PARALLEL_ID]
