"""rlx-lower-to-nvvm: HIR/MIR (through the LIR plan) to NVIDIA GPU code.

    rlx-opt model.mlir --rlx-lower-to-nvvm                              # sm_90, PTX 8.0 text embedded
    rlx-opt model.mlir '--rlx-lower-to-nvvm=chip=sm_80 features=+ptx70'
    rlx-opt model.mlir --pass-pipeline='builtin.module(rlx-lower-to-nvvm{format=bin})'   # cubin (ptxas)

Stages, each a named pass.  Stages 1-4 are the pipeline `rlx-lower-to-gpu` (host functions launching
`gpu.launch` kernels on device buffers, handy to inspect); 5 completes it.

1. plan and lower to linalg on tensors as the CPU pipeline does (`rlx-mir-to-lir`,
   `rlx-lir-to-linalg`; or `rlx-mir-to-linalg` with `plan=false`), bufferize whole
   functions, results as caller-provided buffers;
2. f16 matmuls become tensor-core kernels (`rlx-gpu-mma-matmul`, warp-level WMMA, f32 sums;
   `tensor-cores=false` or a chip before sm_70 leaves them to the next pass), the other
   matmuls shared-memory, register-tiled kernels (`rlx-gpu-tile-matmul`);
   every other linalg op (copies included, `rlx-memref-copy-to-linalg`) becomes
   an `scf.parallel` nest (`convert-linalg-to-parallel-loops`), with parallel
   loops hoisted out of reduction loops (`rlx-gpu-hoist-parallel-loops`); row reductions
   become one block per output with a shared-memory tree
   (`rlx-gpu-block-reductions`); element code left outside any loop (ops on
   scalars, loops of one iteration folded away) goes in a loop of one iteration
   (`rlx-gpu-straight-line-kernels`); other nests are flattened and tiled into
   blocks x threads (`rlx-gpu-grid-loops`) and mapped to `gpu.launch` by
   upstream `gpu-map-parallel-loops` + `convert-parallel-loops-to-gpu`;
3. `rlx-gpu-check-mapping` fails, naming the op, if any loop nest stayed on the host;
4. `rlx-gpu-device-memory`: one `gpu.alloc` per function call holds the LIR
   arena, every other buffer and the constants;
5. kernels outlined (their workgroup buffers 32-byte aligned, `rlx-gpu-align-workgroup-memory`: tensor-core
   fragments need it), made async, and compiled by upstream
   `gpu-lower-to-nvvm-pipeline`: NVVM, then `gpu-module-to-binary` embeds the
   kernels (PTX text with `format=isa`, needing no CUDA toolkit; cubin with
   `bin`, fatbin with `fatbin`, both needing `ptxas`), and host code calls
   MLIR's CUDA runtime wrappers (`mgpuLaunchKernel`, ...).

Functions take device pointers for every argument and result (the runtime
copies).  `chip` and the `+ptxNN` in `features` are validated together before
anything reaches LLVM, whose NVPTX backend aborts the process on a bad pair.
"""

from __future__ import annotations

import dataclasses
import os
import shutil

from ..conversion.hir_to_mir.hir_to_mir import HirToMir
from ..conversion.lir_to_linalg import LirToLinalg
from ..conversion.mir_to_linalg.mir_to_linalg import MirToLinalg
from ..conversion.mir_to_lir import MirToLir
from ..passmanager.base import PassOptionError, RlxPipeline, option
from ..targets.cuda import TargetError, check_target, has_tensor_cores
from ..transforms.abi.distinct_results import DistinctResults
from ..transforms.abi.emit_c_interface import EmitCInterface
from ..transforms.gpu.align_workgroup_memory import GpuAlignWorkgroupMemory
from ..transforms.gpu.block_reductions import GpuBlockReductions
from ..transforms.gpu.check_mapping import GpuCheckMapping
from ..transforms.gpu.device_memory import GpuDeviceMemory
from ..transforms.gpu.grid_loops import GpuGridLoops
from ..transforms.gpu.hoist_parallel_loops import GpuHoistParallelLoops
from ..transforms.gpu.mma_matmul import GpuMmaMatmul
from ..transforms.gpu.straight_line_kernels import GpuStraightLineKernels
from ..transforms.gpu.tile_matmul import MIN_BLOCKS, GpuTileMatmul
from ..transforms.linalg.bool_tensors_to_i8 import BoolTensorsToI8
from ..transforms.linalg.memref_copy_to_linalg import MemrefCopyToLinalg

BUFFERIZE = (
    "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}"
)
HOIST = "func.func(buffer-loop-hoisting)"
OUT_PARAMS = "buffer-results-to-out-params{hoist-static-allocs modify-public-functions}"
MAP_TO_GPU = ("func.func(gpu-map-parallel-loops)", "convert-parallel-loops-to-gpu")


def ptxas_available() -> bool:
    """Whether `ptxas` (needed by format=bin and fatbin) is where gpu-module-to-binary looks."""
    roots = [os.environ.get(v) for v in ("CUDA_ROOT", "CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    return any(r and os.path.exists(os.path.join(r, "bin", "ptxas")) for r in roots) or bool(shutil.which("ptxas"))


@dataclasses.dataclass(frozen=True)
class LowerToGPU(RlxPipeline):
    name = "rlx-lower-to-gpu"
    summary = "HIR/MIR to host functions launching gpu.launch kernels on device buffers (stages 1-4)"
    plan: bool = option(True, "execute the LIR plan (one device arena); false lowers MIR directly")
    block_size: int = option(
        256, "threads per block for elementwise and row-wise kernels", minimum=1, maximum=1024, power_of_two=True
    )
    tile: int = option(16, "matmul tile edge (T x T threads, T x T shared-memory tiles)", minimum=1, maximum=32)
    min_blocks: int = option(MIN_BLOCKS, "matmul register tiles shrink while a grid has fewer blocks", minimum=0)
    block_reductions: bool = option(True, "row reductions as one block per output (tree in shared memory)")
    tensor_cores: bool = option(True, "f16 matmuls on tensor cores (rlx-gpu-mma-matmul; sm_70 and later)")

    def elements(self):
        lowering = [MirToLir(), LirToLinalg()] if self.plan else [MirToLinalg()]
        return [
            HirToMir(), *lowering, BoolTensorsToI8(), "inline", "symbol-dce", "eliminate-empty-tensors",
            "canonicalize", DistinctResults(), BUFFERIZE, HOIST, OUT_PARAMS, "canonicalize",
            *([GpuMmaMatmul()] if self.tensor_cores else []),
            GpuTileMatmul(tile=self.tile, min_blocks=self.min_blocks), MemrefCopyToLinalg(),
            "convert-linalg-to-parallel-loops", "inline", "symbol-dce", GpuHoistParallelLoops(),
            *([GpuBlockReductions(block_size=self.block_size)] if self.block_reductions else []),
            GpuStraightLineKernels(), GpuGridLoops(block_size=self.block_size), *MAP_TO_GPU, "canonicalize",
            GpuCheckMapping(), GpuDeviceMemory(), "symbol-dce",
        ]


@dataclasses.dataclass(frozen=True)
class LowerToNVVM(RlxPipeline):
    name = "rlx-lower-to-nvvm"
    summary = "Lower HIR/MIR to NVIDIA GPU code: LIR plan, kernels on blocks/threads, NVVM, embedded PTX/cubin"
    chip: str = option("sm_90", "target GPU (sm_XX)")
    features: str = option("+ptx80", "PTX ISA version as an LLVM feature (+ptxNN); must support the chip")
    format: str = option("isa", "embedded binary: isa (PTX text, no toolkit), bin (cubin) or fatbin")
    plan: bool = option(True, "execute the LIR plan (one device arena); false lowers MIR directly")
    block_size: int = option(
        256, "threads per block for elementwise and row-wise kernels", minimum=1, maximum=1024, power_of_two=True
    )
    tile: int = option(16, "matmul tile edge (T x T threads, T x T shared-memory tiles)", minimum=1, maximum=32)
    min_blocks: int = option(MIN_BLOCKS, "matmul register tiles shrink while a grid has fewer blocks", minimum=0)
    block_reductions: bool = option(True, "row reductions as one block per output (tree in shared memory)")
    tensor_cores: bool = option(True, "f16 matmuls on tensor cores (rlx-gpu-mma-matmul; ignored before sm_70)")
    opt_level: int = option(3, "LLVM optimization level for the kernels", minimum=0, maximum=3)

    def check_options(self):
        try:
            check_target(self.chip, self.features, self.format)
        except TargetError as error:
            raise PassOptionError(f"'{self.name}': {error}") from None
        if self.format != "isa" and not ptxas_available():
            raise PassOptionError(
                f"'{self.name}': format={self.format} needs the CUDA toolkit's ptxas (set CUDA_ROOT); "
                "format=isa embeds PTX without it"
            )

    def elements(self):
        to_gpu = (
            f"gpu-lower-to-nvvm-pipeline{{cubin-chip={self.chip} cubin-features={self.features} "
            f"cubin-format={self.format} opt-level={self.opt_level}}}"
        )
        return [
            LowerToGPU(plan=self.plan, block_size=self.block_size, tile=self.tile, min_blocks=self.min_blocks,
                       block_reductions=self.block_reductions,
                       tensor_cores=self.tensor_cores and has_tensor_cores(self.chip)),
            # Constants and index math move into the kernels (static bounds, no extra parameters).
            "gpu-launch-sink-index-computations", "gpu-kernel-outlining", GpuAlignWorkgroupMemory(),
            "func.func(gpu-async-region)",
            # Vector ops in kernels (rlx.dequant_matmul's decoding reads vectors of bytes): their
            # transfers become loads; gpu-lower-to-nvvm-pipeline does not lower vector.transfer_read.
            # Kernels' loops become branches before gpu-lower-to-nvvm-pipeline's convert-nvgpu-to-nvvm, whose
            # type converter knows no !gpu.mma_matrix and so cannot legalize an scf.for carrying
            # rlx-gpu-mma-matmul's accumulators.
            EmitCInterface(), "gpu.module(convert-vector-to-llvm)", "gpu.module(convert-scf-to-cf)", to_gpu,
            "reconcile-unrealized-casts",
        ]
