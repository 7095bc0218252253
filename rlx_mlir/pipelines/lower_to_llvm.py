"""rlx-lower-to-llvm: HIR or MIR (or linalg on tensors) to the LLVM dialect for CPU.

Outlines repeated HIR blocks into one called function each, plans MIR into LIR
and lowers it so each intermediate is computed in its arena slot (or, with
`plan=false`, lowers MIR directly), stores boolean tensors as bytes, then
generates fast code on linalg: elementwise chains fused into one loop nest,
exp/log/tanh/erf as inline polynomials, reassociable reductions, f32 matmuls
as packed, tiled, FMA-vectorized GEMM kernels, large loop nests split across
OpenMP threads. Then it bufferizes whole functions, turns memref results into
caller-provided output buffers (destination passing: the caller owns every
result, so nothing leaks), frees internal buffers, and converts everything to
LLVM (OpenMP regions translate to `__kmpc_*` calls of libiomp5), where bf16 is kept in
memory as i16 bit patterns (`rlx-bf16-as-i16`).
"""

from __future__ import annotations

import dataclasses

from ..conversion.hir_to_mir.hir_to_mir import HirToMir
from ..conversion.lir_to_linalg import LirToLinalg
from ..conversion.mir_to_linalg.mir_to_linalg import MirToLinalg
from ..conversion.mir_to_lir import MirToLir
from ..passmanager.base import PassOptionError, RlxPipeline, option
from ..targets.cpu import AUTO_THREADS, MAX_THREADS, ThreadCountError, resolve_threads
from ..transforms.abi.distinct_results import DistinctResults
from ..transforms.abi.drop_tied_results import DropTiedResults
from ..transforms.abi.emit_c_interface import EmitCInterface
from ..transforms.abi.noalias_arguments import NoaliasArguments, NoaliasToLLVM
from ..transforms.abi.readonly_arguments import ReadonlyArguments
from ..transforms.hir.outline_blocks import OutlineBlocks
from ..transforms.linalg.approximate_math import ApproximateMath
from ..transforms.linalg.bf16_as_i16 import Bf16AsI16
from ..transforms.linalg.bool_tensors_to_i8 import BoolTensorsToI8
from ..transforms.linalg.forall_reads_shared_outs import ForallReadsSharedOuts
from ..transforms.linalg.fuse_elementwise import FuseElementwise
from ..transforms.linalg.hoist_param_packing import HoistParamPacking
from ..transforms.linalg.memref_copy_to_linalg import MemrefCopyToLinalg
from ..transforms.linalg.pack_matmul import PackMatmul
from ..transforms.linalg.parallelize_linalg import ParallelizeLinalg
from ..transforms.linalg.reassociate_reductions import ReassociateReductions
from ..transforms.linalg.reshape_stores import ReshapeStores
from ..transforms.linalg.split_functions import SplitFunctions
from ..transforms.linalg.tile_gemv import TileGemv
from ..transforms.linalg.tile_matmul import TileMatmul
from ..transforms.linalg.vectorize_elementwise import VectorizeElementwise
from ..transforms.linalg.vectorize_transposes import VectorizeTransposes
from ..transforms.linalg.x86_byte_dot import X86ByteDot
from ..transforms.mir.split_weight_concat import SplitWeightConcat

BUFFERIZE = (
    "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}"
)
HOIST = "func.func(buffer-loop-hoisting)"  # a loop body's temporaries: allocated once, not per step
OUT_PARAMS = "buffer-results-to-out-params{hoist-static-allocs modify-public-functions}"
DEALLOCATE = "buffer-deallocation-pipeline"
# Bufferizing tiled loops leaves self-copies that fold only once cse merged their subviews.
CLEAN_UP = ("canonicalize", "cse", "canonicalize")
# The largest fused loop body (rlx-fuse-elementwise{max-body-ops}), counted before exp/log/tanh/erf
# expand into 17 to 42 ops each (rlx-approximate-math runs after fusion, late): LLVM's time grows
# super-linearly in the size of one loop body. LLVM's CPU time (-O3, code generation included) for
# a 2000-op chain of neg, add, mul, tanh, exp (about 10 LLVM instructions per op) with bodies of at
# most 50/100/200/400/800/2000 ops: 2.3/2.2/2.4/3.0/4.4/7.8 s. 100 ops of arithmetic per element
# leave the loads and stores between two loop nests negligible.
FUSED_BODY_OPS = 100
# scf.forall (the thread split of matmul kernels and large loops) to OpenMP; canonicalize inlines the
# memref.alloca_scope convert-scf-to-openmp wraps bodies in (convert-scf-to-cf rejects it).
THREADS = ("func.func(scf-forall-to-parallel)", "convert-scf-to-openmp{{num-threads={threads}}}", "canonicalize")
TO_LLVM = (
    "convert-linalg-to-loops",
    # The matmul kernels' vector.transfer ops, unrolled to 1-D vectors.
    "func.func(convert-vector-to-scf{full-unroll target-rank=1})",
    # expand-strided-metadata emits affine.apply for subview offsets: lower affine after it.
    "expand-strided-metadata",
    "lower-affine",
    "convert-scf-to-cf",
    "finalize-memref-to-llvm",
    "convert-vector-to-llvm{vector-contract-lowering=outerproduct}",
    "convert-math-to-llvm",
    "convert-math-to-libm",
    "convert-arith-to-llvm",
    "convert-func-to-llvm",
    "convert-cf-to-llvm",
    "convert-index-to-llvm",
    "convert-ub-to-llvm",
    # After the func/memref/arith conversions, as omp regions hold their ops.
    "convert-openmp-to-llvm",
    "reconcile-unrealized-casts",
)


@dataclasses.dataclass(frozen=True)
class LowerToLLVM(RlxPipeline):
    name = "rlx-lower-to-llvm"
    summary = "Lower HIR/MIR to the LLVM dialect for CPU: MIR, LIR, linalg, fused/vectorized/threaded code, LLVM"
    out_params: bool = option(True, "return results through caller-allocated buffers (needed by the JIT)")
    plan: bool = option(True, "execute the LIR plan (one arena, slots); false lowers MIR directly")
    outline_blocks: bool = option(True, "compile repeated HIR blocks (decoder layers) once, as a called function")
    split_weight_concat: bool = option(True, "multiply by each weight instead of copying them into one (per call)")
    approximate_math: bool = option(True, "exp, log, tanh, erf as inline polynomials (false: libm calls)")
    fuse_elementwise: bool = option(True, "fuse elementwise chains into one loop nest (rlx-fuse-elementwise)")
    reassociate: bool = option(True, "let float sums in reductions be reordered, so they vectorize")
    matmul_kernels: bool = option(True, "pack, tile and vectorize f32 matmuls (false: scalar loops)")
    tiled_attention: bool = option(
        True, "attention as tiles with an online softmax (no [Sq, Sk] scores in memory, causal blocks skipped)"
    )
    prepack_params: bool = option(
        False, "GEMM B panels of parameters packed by companion functions, once, and passed as arguments "
        "(rlx-hoist-param-packing; what Executable.bind_params runs)",
    )
    vectorize_elementwise: bool = option(
        True, "small static elementwise loop nests as vector code in MLIR (rlx-vectorize-elementwise), not by LLVM"
    )
    vectorize_transposes: bool = option(
        True, "transposes of the last two dimensions as 16x16 register transposes (rlx-vectorize-transposes)"
    )
    split_max_ops: int = option(
        20000, "largest function left whole for LLVM (rlx-split-functions{max-ops}); 1 splits every loop nest off",
        minimum=1,
    )
    split_loops: bool = option(
        False, "rlx-split-functions moves scf loop nests (GEMM kernels, tiled attention) too: with split-max-ops=1, "
        "every loop nest a function of its own, named in a profile of an ahead-of-time library",
    )
    threads: int = option(
        AUTO_THREADS, "OpenMP threads for matmul kernels and large loops; 0 = this machine's cores", minimum=0,
        maximum=MAX_THREADS,
    )
    host_vnni: bool = option(
        True, "byte dot products (8-bit activations) as vpdpbusd where this machine has AVX-512 VNNI; false for "
        "code that may run on another CPU (ahead-of-time libraries not built for -mcpu=native)",
    )

    def elements(self):
        try:
            threads = resolve_threads(self.threads)
        except ThreadCountError as error:  # a bad RLX_NUM_THREADS: an option error, reported with the pipeline
            raise PassOptionError(str(error)) from None
        # Built before the lowering (whose own range is wider): a bad thread count (RLX_NUM_THREADS)
        # is reported by rlx-tile-matmul (else rlx-parallelize-linalg), as before.
        gemm = TileMatmul(threads=threads) if self.matmul_kernels else None
        parallel = ParallelizeLinalg(threads=threads) if threads > 1 else None
        planning = MirToLir(fuse_elementwise=self.fuse_elementwise)
        tiled = self.tiled_attention
        lowering = ([planning, LirToLinalg(caller_arena=True, tiled_attention=tiled, threads=threads)] if self.plan
                    else [MirToLinalg(tiled_attention=tiled, threads=threads)])
        steps = [OutlineBlocks()] if self.outline_blocks else []
        steps.append(HirToMir())
        if self.split_weight_concat:
            steps.append(SplitWeightConcat(swiglu_products=True))  # SwiGLU reads the two products
        steps += lowering
        # Bodies of scan / if / while / custom_fn are private functions: inlining them lets a
        # loop body's last op write into the loop's carry; symbol-dce drops what was inlined.
        # Outlined blocks are called `no_inline` and stay functions.
        steps += [BoolTensorsToI8(), "inline", "symbol-dce"]
        if self.fuse_elementwise:
            # Single-use elementwise producers (the plan gives them no slot) into their consumers.
            steps.append(FuseElementwise(max_body_ops=FUSED_BODY_OPS))
        if self.reassociate:
            steps.append(ReassociateReductions())
        if self.matmul_kernels:
            steps += [TileGemv(threads=threads), PackMatmul(pack_params=self.prepack_params)]
            if self.prepack_params:
                steps.append(HoistParamPacking())
            steps += ["canonicalize", gemm]
        if parallel is not None:
            steps.append(parallel)
        if self.vectorize_transposes:
            # After the split across threads (each thread's share blocked) and the packs lowered.
            steps.append(VectorizeTransposes())
        # A result reshaped after its loop nest (RoPE, attention) is stored through a reshaped slot,
        # so the loop nest writes the slot rather than a buffer copied there.
        steps += [ReshapeStores(), "eliminate-empty-tensors", "canonicalize"]
        if threads > 1:  # a tile read and overwritten in place (a tied update) is not copied first
            steps.append(ForallReadsSharedOuts())
        steps += [DistinctResults(), ReadonlyArguments(), BUFFERIZE]
        steps += [*CLEAN_UP, HOIST]
        steps.append(DropTiedResults())  # results updated in an argument's buffer (KV caches) are no outputs
        if self.out_params:
            steps.append(OUT_PARAMS)
        steps += [DEALLOCATE, "canonicalize"]
        if threads > 1:
            # After deallocation, which would otherwise place frees inside the omp loop wrappers.
            steps += [step.format(threads=threads) for step in THREADS]
        else:  # a lowering's own scf.forall (rlx.grouped_matmul's column blocks) runs as a loop
            steps.append("func.func(scf-forall-to-for)")
        steps += [MemrefCopyToLinalg(only_strided=True), EmitCInterface()]
        if self.approximate_math:
            # Late, on buffers: expanded, each exp/log/tanh/erf is 17 to 42 ops, and every pass
            # from linalg to here would walk (and canonicalize) them all; before rlx-split-functions,
            # which weighs functions by the code LLVM will see.
            steps.append(ApproximateMath())
        # The functions split off receive their buffers as arguments: say which never overlap, so
        # that LLVM vectorizes their loops without run-time overlap checks and scalar copies.
        steps += [SplitFunctions(max_ops=self.split_max_ops, loops=self.split_loops), NoaliasArguments()]
        if self.vectorize_elementwise:
            # After the split (which moves linalg ops, not vector code) and on each split-off piece:
            # LLVM's loop vectorizer would otherwise analyse hundreds of tiny loops (-O3's largest cost).
            steps.append(VectorizeElementwise())
        steps += [*TO_LLVM, NoaliasToLLVM()]
        steps.append(Bf16AsI16())  # LLVM's x86 backend cannot legalize every bf16 vector it vectorizes
        if self.host_vnni:
            steps.append(X86ByteDot())  # byte dot products (8-bit activations) as vpdpbusd where the CPU has VNNI
        return steps


@dataclasses.dataclass(frozen=True)
class LowerToLLVMDirect(RlxPipeline):
    name = "rlx-lower-to-llvm-direct"
    summary = "rlx-lower-to-llvm without the LIR plan: MIR to linalg directly, upstream bufferization allocates"

    def elements(self):
        return LowerToLLVM(plan=False).elements()
