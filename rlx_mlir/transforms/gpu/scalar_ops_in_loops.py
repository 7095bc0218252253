"""rlx-gpu-scalar-ops-in-loops: linalg ops on rank-0 buffers inside a one-iteration parallel loop.

`convert-linalg-to-parallel-loops` turns a linalg op into one `scf.parallel`
per loop of the op; an op whose every operand is a rank-0 memref (a scalar:
`rlx.mul` of two `tensor<f32>`, the fill of a full reduction's result, a copy
of a scalar) has no loops and becomes straight-line loads and stores in the
host function, over device memory, which `rlx-gpu-check-mapping` refuses.
This pass wraps each such op in

    scf.parallel (%i) = (0) to (1) step (1) { <the op> }

so it maps to a kernel of one thread like any other loop nest.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import arith, scf

from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass


def _is_scalar_linalg_op(op: ir.Operation) -> bool:
    if not op.name.startswith("linalg.") or op.name == "linalg.yield" or not len(op.operands):
        return False
    if any(parent.name in ("scf.parallel", "gpu.launch") or parent.name.startswith("linalg.")
           for parent in _parents(op)):
        return False
    shaped = [t for t in (operand.type for operand in op.operands) if isinstance(t, ir.ShapedType)]
    return bool(shaped) and all(isinstance(t, ir.MemRefType) and t.rank == 0 for t in shaped)


def _parents(op: ir.Operation):
    """The ops enclosing `op` inside its function."""
    parent = op.parent
    while parent is not None and parent.operation.name != "func.func":
        yield parent.operation
        parent = parent.operation.parent


@dataclasses.dataclass(frozen=True)
class GpuScalarOpsInLoops(RlxPass):
    name = "rlx-gpu-scalar-ops-in-loops"
    summary = "Wrap linalg ops on rank-0 buffers in a one-iteration scf.parallel (so they map to the GPU)"

    def run(self, module: ir.Operation) -> None:
        for op in collect_ops(module, _is_scalar_linalg_op):
            with ir.InsertionPoint(op), op.location:
                zero = arith.ConstantOp(ir.IndexType.get(), 0)
                one = arith.ConstantOp(ir.IndexType.get(), 1)
                loop = scf.ParallelOp([], [zero], [one], [one], [])
                block = loop.region.blocks.append(ir.IndexType.get())
                with ir.InsertionPoint(block):
                    anchor = scf.ReduceOp([], 0)
            op.move_before(anchor.operation)
