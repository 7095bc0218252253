"""Activation memory of the LIR plan versus the direct path, on Llama-style models.

For each model: the LIR arena, the planner's lower bound (peak bytes live at
once), the unshared total (every intermediate in its own slot), and the peak
bytes the direct path (rlx-lower-to-llvm{plan=false}: upstream one-shot
bufferization plus ownership-based deallocation) holds allocated at once,
read off its bufferized IR by replaying allocs and deallocs in program order.

    python benchmarks/memory.py
"""

from __future__ import annotations

from mlir import ir

from rlx_mlir.conversion.mir_to_linalg.mir_to_linalg import MirToLinalg
from rlx_mlir.ir.diagnostics import DiagnosticCollector
from rlx_mlir.ir.walk import collect_ops
from rlx_mlir.models.llama import LlamaConfig, build_llama
from rlx_mlir.passmanager.pipeline import run_pipeline
from rlx_mlir.pipelines.lower_to_llvm import BUFFERIZE, DEALLOCATE, OUT_PARAMS
from rlx_mlir.transforms.linalg.bool_tensors_to_i8 import BoolTensorsToI8

MODELS = {
    "llama 2 layers (hidden 64, seq 7)": LlamaConfig(),
    "llama 12 layers (hidden 512, 8 heads, SwiGLU 1408, seq 128)": LlamaConfig(
        layers=12, hidden=512, heads=8, kv_heads=8, head_dim=64, ffn=1408, vocab=1000, seq=128
    ),
}

_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i8": 1, "i1": 1, "f64": 8}


def _memref_bytes(type_: ir.Type) -> int:
    memref = ir.MemRefType(type_)
    count = 1
    for d in memref.shape:
        count *= d
    return count * _BYTES[str(memref.element_type)]


def direct_peak_bytes(config: LlamaConfig) -> int:
    """Peak of simultaneously allocated bytes in the direct path's bufferized function."""
    g = build_llama(config)
    g.lower()
    steps = [MirToLinalg(), BoolTensorsToI8(), "canonicalize", BUFFERIZE, OUT_PARAMS, DEALLOCATE, "canonicalize"]
    with g.context, DiagnosticCollector(g.context):
        run_pipeline(g.module.operation, steps)
    live, peak, sizes = 0, 0, {}
    for op in collect_ops(g.module.operation, order=ir.WalkOrder.PRE_ORDER):
        if op.name == "memref.alloc":
            sizes[op.results[0]] = _memref_bytes(op.results[0].type)
            live += sizes[op.results[0]]
            peak = max(peak, live)
        elif op.name == "memref.dealloc" and op.operands[0] in sizes:
            live -= sizes.pop(op.operands[0])
    return peak


def main() -> None:
    rows = []
    for name, config in MODELS.items():
        g = build_llama(config)
        g.plan()
        plan = next(op for op in g._func.regions[0].blocks[0].operations if op.operation.name == "rlx_lir.plan").opview
        rows.append((name, plan.arena_size, plan.lower_bound, plan.unshared, direct_peak_bytes(config)))
    header = ("model", "arena", "lower bound", "arena/bound", "unshared", "saved", "direct-path peak")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for name, arena, bound, unshared, direct in rows:
        print(
            f"{name} | {arena:,} | {bound:,} | {arena / bound:.3f} | {unshared:,} | "
            f"{unshared - arena:,} ({(unshared - arena) / unshared:.0%}) | {direct:,}"
        )


if __name__ == "__main__":
    main()
