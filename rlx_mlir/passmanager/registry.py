"""Every RLX pass and pipeline by its command-line name, imported on first use.

Python passes cannot be named in `PassManager.parse` strings in LLVM 22, so
rlx-opt and the Python API resolve RLX names here and hand everything else to
MLIR's own pipeline parser.

The tables map a name to the `module:Class` defining it, and import a class when
it is first read: parsing `rlx-cse` imports the CSE pass alone, and this module
(in the pass-manager layer) imports nothing from the conversion, transform and
pipeline layers above it.  pytests/test_tools.py checks every name against its
class's `name`.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator, Mapping
from typing import Optional

from .base import Configurable


class LazyTable(Mapping):
    """A read-only `name -> class` mapping whose classes are imported when first read."""

    def __init__(self, locations: dict[str, str]):
        self._locations = locations
        self._classes: dict[str, type[Configurable]] = {}

    def __getitem__(self, name: str) -> type[Configurable]:
        cls = self._classes.get(name)
        if cls is None:
            module, _, attribute = self._locations[name].partition(":")
            cls = getattr(importlib.import_module(f"rlx_mlir.{module}"), attribute)
            self._classes[name] = cls
        return cls

    def __contains__(self, name: object) -> bool:
        return name in self._locations

    def __iter__(self) -> Iterator[str]:
        return iter(self._locations)

    def __len__(self) -> int:
        return len(self._locations)


PASSES = LazyTable({
    "rlx-bind-dims": "transforms.mir.bind_dims:BindDims",
    "rlx-hir-to-mir": "conversion.hir_to_mir.hir_to_mir:HirToMir",
    "rlx-mir-to-lir": "conversion.mir_to_lir:MirToLir",
    "rlx-lir-to-linalg": "conversion.lir_to_linalg:LirToLinalg",
    "rlx-mir-to-linalg": "conversion.mir_to_linalg.mir_to_linalg:MirToLinalg",
    "rlx-bool-tensors-to-i8": "transforms.linalg.bool_tensors_to_i8:BoolTensorsToI8",
    "rlx-distinct-results": "transforms.abi.distinct_results:DistinctResults",
    "rlx-drop-tied-results": "transforms.abi.drop_tied_results:DropTiedResults",
    "rlx-readonly-arguments": "transforms.abi.readonly_arguments:ReadonlyArguments",
    "rlx-dce": "transforms.mir.dce:DeadCodeElimination",
    "rlx-emit-c-interface": "transforms.abi.emit_c_interface:EmitCInterface",
    "rlx-split-functions": "transforms.linalg.split_functions:SplitFunctions",
    "rlx-noalias-arguments": "transforms.abi.noalias_arguments:NoaliasArguments",
    "rlx-noalias-to-llvm": "transforms.abi.noalias_arguments:NoaliasToLLVM",
    "rlx-verify": "passmanager.verify:Verify",
    "rlx-outline-blocks": "transforms.hir.outline_blocks:OutlineBlocks",
    "rlx-split-weight-concat": "transforms.mir.split_weight_concat:SplitWeightConcat",
    "rlx-swiglu-of-products": "transforms.mir.swiglu_of_products:SwigluOfProducts",
    "rlx-fuse-elementwise": "transforms.linalg.fuse_elementwise:FuseElementwise",
    "rlx-reshape-stores": "transforms.linalg.reshape_stores:ReshapeStores",
    "rlx-reassociate-reductions": "transforms.linalg.reassociate_reductions:ReassociateReductions",
    "rlx-pack-matmul": "transforms.linalg.pack_matmul:PackMatmul",
    "rlx-hoist-param-packing": "transforms.linalg.hoist_param_packing:HoistParamPacking",
    "rlx-tile-matmul": "transforms.linalg.tile_matmul:TileMatmul",
    "rlx-tile-gemv": "transforms.linalg.tile_gemv:TileGemv",
    "rlx-parallelize-linalg": "transforms.linalg.parallelize_linalg:ParallelizeLinalg",
    "rlx-forall-reads-shared-outs": "transforms.linalg.forall_reads_shared_outs:ForallReadsSharedOuts",
    "rlx-approximate-math": "transforms.linalg.approximate_math:ApproximateMath",
    "rlx-vectorize-elementwise": "transforms.linalg.vectorize_elementwise:VectorizeElementwise",
    "rlx-vectorize-transposes": "transforms.linalg.vectorize_transposes:VectorizeTransposes",
    # MIR clean-up and fusion, in a sensible order: clean up, fuse SwiGLU before
    # merging shared matmuls, then DCE what the fusions left.
    "rlx-cse": "transforms.mir.cse:CommonSubexpressionElimination",
    "rlx-fold-constants": "transforms.mir.fold_constants:FoldConstants",
    "rlx-fuse-swiglu": "transforms.mir.fuse_swiglu:FuseSwiglu",
    "rlx-fuse-matmul-bias-act": "transforms.mir.fuse_matmul_bias_act:FuseMatmulBiasAct",
    "rlx-fuse-shared-matmul": "transforms.mir.fuse_shared_matmul:FuseSharedMatmul",
    "rlx-fuse-residual-norm": "transforms.mir.fuse_residual_norm:FuseResidualNorm",
    "rlx-merge-lora": "transforms.mir.merge_lora:MergeLora",
    "rlx-grad": "transforms.mir.grad:Grad",
    "rlx-jvp": "transforms.mir.jvp:Jvp",
    "rlx-vmap": "transforms.mir.vmap:Vmap",
    # GPU code generation (rlx-lower-to-nvvm)
    "rlx-gpu-align-workgroup-memory": "transforms.gpu.align_workgroup_memory:GpuAlignWorkgroupMemory",
    "rlx-gpu-mma-matmul": "transforms.gpu.mma_matmul:GpuMmaMatmul",
    "rlx-gpu-tile-matmul": "transforms.gpu.tile_matmul:GpuTileMatmul",
    "rlx-memref-copy-to-linalg": "transforms.linalg.memref_copy_to_linalg:MemrefCopyToLinalg",
    "rlx-gpu-hoist-parallel-loops": "transforms.gpu.hoist_parallel_loops:GpuHoistParallelLoops",
    "rlx-gpu-straight-line-kernels": "transforms.gpu.straight_line_kernels:GpuStraightLineKernels",
    "rlx-gpu-block-reductions": "transforms.gpu.block_reductions:GpuBlockReductions",
    "rlx-gpu-grid-loops": "transforms.gpu.grid_loops:GpuGridLoops",
    "rlx-gpu-check-mapping": "transforms.gpu.check_mapping:GpuCheckMapping",
    "rlx-gpu-device-memory": "transforms.gpu.device_memory:GpuDeviceMemory",
    "rlx-bf16-as-i16": "transforms.linalg.bf16_as_i16:Bf16AsI16",
    "rlx-x86-byte-dot": "transforms.linalg.x86_byte_dot:X86ByteDot",
})
PIPELINES = LazyTable({
    "rlx-optimize-mir": "pipelines.optimize_mir:OptimizeMir",
    "rlx-lower-to-llvm": "pipelines.lower_to_llvm:LowerToLLVM",
    "rlx-lower-to-llvm-direct": "pipelines.lower_to_llvm:LowerToLLVMDirect",
    "rlx-lower-to-gpu": "pipelines.lower_to_nvvm:LowerToGPU",
    "rlx-lower-to-nvvm": "pipelines.lower_to_nvvm:LowerToNVVM",
})


def lookup(name: str) -> Optional[type[Configurable]]:
    """The pass or pipeline class registered as `name`, or None."""
    for table in (PASSES, PIPELINES):
        if name in table:
            return table[name]
    return None


def closest_names(name: str, candidates) -> list[str]:
    return difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.6)
