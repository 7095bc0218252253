"""Every RLX pass and pipeline by its command-line name.

Python passes cannot be named in `PassManager.parse` strings in LLVM 22, so
rlx-opt and the Python API resolve RLX names here and hand everything else to
MLIR's own pipeline parser.
"""

from __future__ import annotations

import difflib
from typing import Optional

from .passes.base import Configurable
from .passes.bool_tensors_to_i8 import BoolTensorsToI8
from .passes.cse import CommonSubexpressionElimination
from .passes.dce import DeadCodeElimination
from .passes.distinct_results import DistinctResults
from .passes.emit_c_interface import EmitCInterface
from .passes.fold_constants import FoldConstants
from .passes.fuse_matmul_bias_act import FuseMatmulBiasAct
from .passes.fuse_residual_norm import FuseResidualNorm
from .passes.fuse_shared_matmul import FuseSharedMatmul
from .passes.fuse_swiglu import FuseSwiglu
from .passes.hir_to_mir import HirToMir
from .passes.lir_to_linalg import LirToLinalg
from .passes.mir_to_linalg import MirToLinalg
from .passes.mir_to_lir import MirToLir
from .passes.verify import Verify
from .pipelines.lower_to_llvm import LowerToLLVM, LowerToLLVMDirect
from .pipelines.optimize_mir import OptimizeMir

PASSES: dict[str, type[Configurable]] = {
    cls.name: cls
    for cls in (
        HirToMir,
        MirToLir,
        LirToLinalg,
        MirToLinalg,
        BoolTensorsToI8,
        DistinctResults,
        DeadCodeElimination,
        EmitCInterface,
        Verify,
        # MIR clean-up and fusion, in a sensible order: clean up, fuse SwiGLU before
        # merging shared matmuls, then DCE what the fusions left.
        CommonSubexpressionElimination,
        FoldConstants,
        FuseSwiglu,
        FuseMatmulBiasAct,
        FuseSharedMatmul,
        FuseResidualNorm,
    )
}
PIPELINES: dict[str, type[Configurable]] = {cls.name: cls for cls in (OptimizeMir, LowerToLLVM, LowerToLLVMDirect)}


def lookup(name: str) -> Optional[type[Configurable]]:
    return PASSES.get(name) or PIPELINES.get(name)


def closest_names(name: str, candidates) -> list[str]:
    return difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.6)
