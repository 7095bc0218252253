"""rlx-lower-to-llvm: HIR or MIR (or linalg on tensors) to the LLVM dialect for CPU.

Plans MIR into LIR and lowers it so each intermediate is computed in its
arena slot (or, with `plan=false`, lowers MIR directly), stores boolean
tensors as bytes, bufferizes whole functions, turns memref results into caller-provided output
buffers (destination passing: the caller owns every result, so nothing leaks),
frees internal buffers, and converts everything to LLVM.
"""

from __future__ import annotations

import dataclasses

from ..passes.base import RlxPipeline, option
from ..passes.bool_tensors_to_i8 import BoolTensorsToI8
from ..passes.distinct_results import DistinctResults
from ..passes.emit_c_interface import EmitCInterface
from ..passes.hir_to_mir import HirToMir
from ..passes.lir_to_linalg import LirToLinalg
from ..passes.mir_to_linalg import MirToLinalg
from ..passes.mir_to_lir import MirToLir

BUFFERIZE = (
    "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}"
)
HOIST = "func.func(buffer-loop-hoisting)"  # a loop body's temporaries: allocated once, not per step
OUT_PARAMS = "buffer-results-to-out-params{hoist-static-allocs modify-public-functions}"
DEALLOCATE = "buffer-deallocation-pipeline"
TO_LLVM = (
    "convert-linalg-to-loops",
    # expand-strided-metadata emits affine.apply for subview offsets: lower affine after it.
    "expand-strided-metadata",
    "lower-affine",
    "convert-scf-to-cf",
    "finalize-memref-to-llvm",
    "convert-math-to-llvm",
    "convert-math-to-libm",
    "convert-arith-to-llvm",
    "convert-func-to-llvm",
    "convert-cf-to-llvm",
    "reconcile-unrealized-casts",
)


@dataclasses.dataclass(frozen=True)
class LowerToLLVM(RlxPipeline):
    name = "rlx-lower-to-llvm"
    summary = "Lower HIR/MIR to the LLVM dialect for CPU: MIR, linalg, bufferization, out-params, LLVM"
    out_params: bool = option(True, "return results through caller-allocated buffers (needed by the JIT)")
    plan: bool = option(True, "execute the LIR plan (one arena, slots); false lowers MIR directly")

    def elements(self):
        lowering = [MirToLir(), LirToLinalg()] if self.plan else [MirToLinalg()]
        # Bodies of scan / if / while / custom_fn are private functions: inlining them lets a
        # loop body's last op write into the loop's carry; symbol-dce drops what was inlined.
        steps = [HirToMir(), *lowering, BoolTensorsToI8(), "inline", "symbol-dce", "eliminate-empty-tensors",
                 "canonicalize", DistinctResults(), BUFFERIZE]
        steps.append(HOIST)
        if self.out_params:
            steps.append(OUT_PARAMS)
        steps += [DEALLOCATE, "canonicalize", EmitCInterface(), *TO_LLVM]
        return steps


@dataclasses.dataclass(frozen=True)
class LowerToLLVMDirect(RlxPipeline):
    name = "rlx-lower-to-llvm-direct"
    summary = "rlx-lower-to-llvm without the LIR plan: MIR to linalg directly, upstream bufferization allocates"

    def elements(self):
        return LowerToLLVM(plan=False).elements()
