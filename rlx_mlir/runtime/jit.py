"""JIT compilation through MLIR's ExecutionEngine: what `compile()` (runtime/compiler.py) runs on a miss.

`compile_text` parses and verifies the module, lowers it with `rlx-lower-to-llvm` (results become
caller-provided output buffers, intermediates one arena the caller passes), JIT-compiles it and
returns an `Executable` (runtime/executable.py).  With a disk-cache entry name, the engine
generates position-independent code and its object is stored (runtime/jit_disk_cache.py), so the
next process that compiles the module loads it instead.

`Executable` and `ArgumentError` are re-exported from here.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.execution_engine import ExecutionEngine

from .. import progress as progress_log
from ..driver import Compilation
from ..ir.diagnostics import CompileError
from ..ir.walk import collect_ops
from ..pipelines.lower_to_llvm import LowerToLLVM
from ..targets.toolchain import openmp_library, runtime_library
from . import jit_disk_cache
from .abi import ArgumentError  # noqa: F401 (re-exported)
from .executable import Executable, ExecutionContext  # noqa: F401 (re-exported)
from .signature import arena_of, find_function, packed_params_of, signature_of


def compile_text(text: str, entry: Optional[str], opt_level: int, filename: str, plan: bool, threads: int,
                 matmul_kernels: bool, stored: Optional[str] = None, prepack_params: bool = False) -> Executable:
    """`entry` of the module `text` compiled by the JIT; with `stored` (a jit_disk_cache entry name),
    its code is also stored on disk under that name.  With `prepack_params`, the GEMM B panels of
    its parameters are arguments, computed by companion functions (rlx-hoist-param-packing)."""
    with Compilation(filename=filename) as job:
        parsed = job.parse(text)
        signature = signature_of(find_function(parsed, entry))
        job.run(parsed, LowerToLLVM(plan=plan, threads=threads, matmul_kernels=matmul_kernels,
                                    prepack_params=prepack_params), "lowering to LLVM failed")
        leftover = _first_non_llvm_op(parsed.operation)
        if leftover is not None:
            leftover.location.emit_error(f"'{leftover.name}' was not lowered to the LLVM dialect")
            raise job.error("lowering to LLVM left non-LLVM operations")
        try:
            libraries = [runtime_library("mlir_c_runner_utils")]
            if threads > 1:
                try:
                    libraries.append(openmp_library())
                except OSError as error:  # missing, or not a loadable OpenMP runtime
                    raise CompileError(str(error)) from None
            with progress_log.stage(f"LLVM code generation (-O{opt_level})"):
                # Position-independent code where it is stored: it is linked into a shared object.
                engine = ExecutionEngine(parsed, opt_level=opt_level, shared_libs=libraries,
                                         **({"enable_pic": True} if stored else {}))
        except RuntimeError as error:
            raise CompileError(f"the LLVM JIT could not compile the module: {error}") from None
        address = engine.raw_lookup("_mlir_ciface_" + signature.entry)  # its packed wrapper
        if not address:
            raise CompileError(f"compiled module has no C interface for '@{signature.entry}'")
        arena = arena_of(parsed, signature.entry)
        packed = packed_params_of(parsed, signature.entry)
        pack_addresses = [engine.raw_lookup("_mlir_ciface_" + p.function) for p in packed]
        if not all(pack_addresses):
            raise CompileError(f"compiled module lacks a C interface of the packing functions of '@{signature.entry}'")
        if stored:
            with progress_log.stage("storing the code in the disk cache"):
                jit_disk_cache.store(stored, engine.dump_to_object_file, signature, arena, libraries, packed)
        return Executable(address, signature, arena, keep_alive=(engine, job.context), llvm_ir=lambda: str(parsed),
                          packed_params=packed, pack_addresses=pack_addresses)


def lower_to_llvm_text(text: str, entry: Optional[str], filename: str, plan: bool, threads: int,
                       matmul_kernels: bool, prepack_params: bool = False) -> str:
    """The module `text` lowered to the LLVM dialect as `compile_text` lowers it, printed."""
    with Compilation(filename=filename) as job:
        parsed = job.parse(text)
        find_function(parsed, entry)
        job.run(parsed, LowerToLLVM(plan=plan, threads=threads, matmul_kernels=matmul_kernels,
                                    prepack_params=prepack_params), "lowering to LLVM failed")
        return str(parsed)


def _first_non_llvm_op(module: ir.Operation) -> Optional[ir.Operation]:
    """The first op the pipeline left outside the LLVM dialect, if any.

    The ExecutionEngine only says "Failure while creating the ExecutionEngine"
    when translation to LLVM IR meets one. OpenMP ops translate to LLVM IR directly.
    """
    leftovers = collect_ops(module, lambda op: op.name.split(".", 1)[0] not in ("llvm", "builtin", "omp"))
    return leftovers[0] if leftovers else None
