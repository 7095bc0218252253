"""Every RLX pass and pipeline by its command-line name.

Python passes cannot be named in `PassManager.parse` strings in LLVM 22, so
rlx-opt and the Python API resolve RLX names here and hand everything else to
MLIR's own pipeline parser.
"""

from __future__ import annotations

import difflib
from typing import Optional

from .passes.approximate_math import ApproximateMath
from .passes.base import Configurable
from .passes.bf16_as_i16 import Bf16AsI16
from .passes.bind_dims import BindDims
from .passes.bool_tensors_to_i8 import BoolTensorsToI8
from .passes.cse import CommonSubexpressionElimination
from .passes.dce import DeadCodeElimination
from .passes.distinct_results import DistinctResults
from .passes.drop_tied_results import DropTiedResults
from .passes.readonly_arguments import ReadonlyArguments
from .passes.emit_c_interface import EmitCInterface
from .passes.split_functions import SplitFunctions
from .passes.fold_constants import FoldConstants
from .passes.fuse_matmul_bias_act import FuseMatmulBiasAct
from .passes.fuse_residual_norm import FuseResidualNorm
from .passes.fuse_shared_matmul import FuseSharedMatmul
from .passes.fuse_swiglu import FuseSwiglu
from .passes.gpu_block_reductions import GpuBlockReductions
from .passes.gpu_check_mapping import GpuCheckMapping
from .passes.gpu_device_memory import GpuDeviceMemory
from .passes.gpu_grid_loops import GpuGridLoops
from .passes.gpu_hoist_parallel_loops import GpuHoistParallelLoops
from .passes.gpu_tile_matmul import GpuTileMatmul
from .passes.fuse_elementwise import FuseElementwise
from .passes.hir_to_mir import HirToMir
from .passes.lir_to_linalg import LirToLinalg
from .passes.memref_copy_to_linalg import MemrefCopyToLinalg
from .passes.mir_to_linalg import MirToLinalg
from .passes.mir_to_lir import MirToLir
from .passes.outline_blocks import OutlineBlocks
from .passes.pack_matmul import PackMatmul
from .passes.reassociate_reductions import ReassociateReductions
from .passes.parallelize_linalg import ParallelizeLinalg
from .passes.split_weight_concat import SplitWeightConcat
from .passes.tile_matmul import TileMatmul
from .passes.verify import Verify
from .pipelines.lower_to_llvm import LowerToLLVM, LowerToLLVMDirect
from .pipelines.lower_to_nvvm import LowerToGPU, LowerToNVVM
from .pipelines.optimize_mir import OptimizeMir

PASSES: dict[str, type[Configurable]] = {
    cls.name: cls
    for cls in (
        BindDims,
        HirToMir,
        MirToLir,
        LirToLinalg,
        MirToLinalg,
        BoolTensorsToI8,
        DistinctResults,
        DropTiedResults,
        ReadonlyArguments,
        DeadCodeElimination,
        EmitCInterface,
        SplitFunctions,
        Verify,
        OutlineBlocks,
        SplitWeightConcat,
        FuseElementwise,
        ReassociateReductions,
        PackMatmul,
        TileMatmul,
        ParallelizeLinalg,
        ApproximateMath,
        # MIR clean-up and fusion, in a sensible order: clean up, fuse SwiGLU before
        # merging shared matmuls, then DCE what the fusions left.
        CommonSubexpressionElimination,
        FoldConstants,
        FuseSwiglu,
        FuseMatmulBiasAct,
        FuseSharedMatmul,
        FuseResidualNorm,
        # GPU code generation (rlx-lower-to-nvvm)
        GpuTileMatmul,
        MemrefCopyToLinalg,
        GpuHoistParallelLoops,
        GpuBlockReductions,
        GpuGridLoops,
        GpuCheckMapping,
        GpuDeviceMemory,
        Bf16AsI16,
    )
}
PIPELINES: dict[str, type[Configurable]] = {
    cls.name: cls for cls in (OptimizeMir, LowerToLLVM, LowerToLLVMDirect, LowerToGPU, LowerToNVVM)
}


def lookup(name: str) -> Optional[type[Configurable]]:
    return PASSES.get(name) or PIPELINES.get(name)


def closest_names(name: str, candidates) -> list[str]:
    return difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.6)
