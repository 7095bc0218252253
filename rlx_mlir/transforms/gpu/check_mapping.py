"""rlx-gpu-check-mapping: fail unless every loop nest runs on the GPU.

After loops are mapped to `gpu.launch` (or outlined to `gpu.launch_func`), host
functions may still hold control flow (a scan's `scf.for` around launches),
index arithmetic, allocations and copies, but no computation on tensor
elements.  This pass reports, as an error at the op, every host op that would
run on the CPU over device memory: loops (`scf.for`, `scf.while`,
`scf.parallel`, `scf.forall`) that launch nothing, element loads and stores,
`memref.copy`, and any `linalg` or `vector` op left unlowered.  Without it an
unmapped loop would silently run on the host, dereferencing device pointers.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import affine, func, gpu, memref, scf

from ...ir.walk import collect_ops, is_op
from ...passmanager.base import PassFailure, RlxPass

_LOOPS = (scf.ForOp, scf.WhileOp, scf.ParallelOp, scf.ForallOp)
_ELEMENT_ACCESS = (memref.LoadOp, memref.StoreOp, memref.CopyOp, affine.AffineLoadOp, affine.AffineStoreOp)
_DEVICE = (gpu.LaunchOp, gpu.LaunchFuncOp, gpu.GPUModuleOp, gpu.GPUFuncOp)


def _on_host(op: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None:
        if is_op(parent, _DEVICE):
            return False
        parent = parent.parent
    return True


def _launches(op: ir.Operation) -> bool:
    return bool(collect_ops(op, lambda inner: is_op(inner, (gpu.LaunchOp, gpu.LaunchFuncOp))))


def _host_compute(op: ir.Operation) -> bool:
    if is_op(op, _LOOPS):
        return not _launches(op)
    dialect = op.name.split(".", 1)[0]
    return is_op(op, _ELEMENT_ACCESS) or dialect in ("linalg", "vector")


@dataclasses.dataclass(frozen=True)
class GpuCheckMapping(RlxPass):
    name = "rlx-gpu-check-mapping"
    summary = "Error on any loop nest or element access left in host code (not mapped to the GPU)"

    def run(self, module: ir.Operation) -> None:
        offenders = collect_ops(
            module, lambda op: _host_compute(op) and _on_host(op), ir.WalkOrder.PRE_ORDER
        )
        reported = []
        for op in offenders:
            if any(_nested(op, outer) for outer in reported):
                continue  # one error per outermost offending nest
            function = _enclosing_function(op)
            op.location.emit_error(
                f"'{op.name}' was not mapped to the GPU: it would run on the host in '@{function}' "
                "over device memory (only loops with static bounds and no loop-carried reductions map "
                "to blocks and threads)"
            )
            reported.append(op)
        if reported:
            raise PassFailure(f"{len(reported)} host loop nest(s) not mapped to the GPU")


def _nested(op: ir.Operation, outer: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None:
        if parent == outer:
            return True
        parent = parent.parent
    return False


def _enclosing_function(op: ir.Operation) -> str:
    parent = op.parent
    while parent is not None and not is_op(parent, func.FuncOp):
        parent = parent.parent
    return ir.StringAttr(parent.attributes["sym_name"]).value if parent is not None else "?"
