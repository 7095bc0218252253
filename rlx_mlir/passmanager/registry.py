"""Every RLX pass and pipeline by its command-line name.

Python passes cannot be named in `PassManager.parse` strings in LLVM 22, so
rlx-opt and the Python API resolve RLX names here and hand everything else to
MLIR's own pipeline parser.
"""

from __future__ import annotations

import difflib
from typing import Optional

from ..transforms.linalg.approximate_math import ApproximateMath
from .base import Configurable
from ..transforms.linalg.bf16_as_i16 import Bf16AsI16
from ..transforms.mir.bind_dims import BindDims
from ..transforms.linalg.bool_tensors_to_i8 import BoolTensorsToI8
from ..transforms.mir.cse import CommonSubexpressionElimination
from ..transforms.mir.dce import DeadCodeElimination
from ..transforms.abi.distinct_results import DistinctResults
from ..transforms.abi.drop_tied_results import DropTiedResults
from ..transforms.abi.readonly_arguments import ReadonlyArguments
from ..transforms.abi.emit_c_interface import EmitCInterface
from ..transforms.linalg.split_functions import SplitFunctions
from ..transforms.mir.fold_constants import FoldConstants
from ..transforms.mir.fuse_matmul_bias_act import FuseMatmulBiasAct
from ..transforms.mir.fuse_residual_norm import FuseResidualNorm
from ..transforms.mir.fuse_shared_matmul import FuseSharedMatmul
from ..transforms.mir.fuse_swiglu import FuseSwiglu
from ..transforms.gpu.block_reductions import GpuBlockReductions
from ..transforms.gpu.check_mapping import GpuCheckMapping
from ..transforms.gpu.device_memory import GpuDeviceMemory
from ..transforms.gpu.grid_loops import GpuGridLoops
from ..transforms.gpu.hoist_parallel_loops import GpuHoistParallelLoops
from ..transforms.gpu.tile_matmul import GpuTileMatmul
from ..transforms.linalg.fuse_elementwise import FuseElementwise
from ..conversion.hir_to_mir.hir_to_mir import HirToMir
from ..conversion.lir_to_linalg import LirToLinalg
from ..transforms.linalg.memref_copy_to_linalg import MemrefCopyToLinalg
from ..conversion.mir_to_linalg.mir_to_linalg import MirToLinalg
from ..conversion.mir_to_lir import MirToLir
from ..transforms.hir.outline_blocks import OutlineBlocks
from ..transforms.linalg.pack_matmul import PackMatmul
from ..transforms.linalg.reassociate_reductions import ReassociateReductions
from ..transforms.linalg.parallelize_linalg import ParallelizeLinalg
from ..transforms.mir.split_weight_concat import SplitWeightConcat
from ..transforms.linalg.tile_matmul import TileMatmul
from .verify import Verify
from ..pipelines.lower_to_llvm import LowerToLLVM, LowerToLLVMDirect
from ..pipelines.lower_to_nvvm import LowerToGPU, LowerToNVVM
from ..pipelines.optimize_mir import OptimizeMir

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
