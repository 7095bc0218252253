"""JIT execution through MLIR's ExecutionEngine, numpy arrays in and out.

`compile()` lowers a module with `rlx-lower-to-llvm` (results become
caller-provided output buffers), JIT-compiles it once, and returns an
`Executable`.  Calling it checks every argument against the signature, fills
preallocated memref descriptors with the arrays' data pointers and calls the
function's C interface (runtime/abi.py); outputs are numpy arrays allocated per
call (or the caller's `out=` arrays).  The compiled code keeps no state between
calls: the planned intermediates live in an arena the caller passes, one per
call context (`Executable.context()`; plain calls take an idle one from a pool),
so threads call one executable at once.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
from mlir import ir
from mlir.execution_engine import ExecutionEngine

from .. import progress as progress_log
from ..driver import Compilation
from ..ir.diagnostics import CompileError
from ..ir.walk import collect_ops
from ..pipelines.lower_to_llvm import LowerToLLVM
from ..targets import TARGETS
from ..targets.cpu import resolve_threads
from ..targets.toolchain import openmp_library, runtime_library
from . import isolation, options, specialize
from .abi import ArenaSpec, ArgumentError, CallContext, CFunction, Interface  # noqa: F401 (ArgumentError: re-exported)
from .compile_cache import COMPILE_CACHE, CacheInfo
from .cuda import compile_cuda
from .signature import Signature, arena_of, find_function, signature_of

DEFAULT_MAX_VARIANTS = 32  # specialisations a dynamic executable keeps (least recently used go first)


class Executable:
    """A compiled function: call it with numpy arrays, get a numpy array (or a tuple)."""

    def __init__(self, engine: ExecutionEngine, signature: Signature, module: ir.Module, context: ir.Context,
                 arena: Optional[tuple[int, int]] = None):
        self.signature = signature
        self._module = module
        self._engine = engine
        self._context = context  # keeps the engine's MLIR objects alive
        address = engine.raw_lookup("_mlir_ciface_" + signature.entry)
        if not address:
            raise CompileError(f"compiled module has no C interface for '@{signature.entry}'")
        self._interface = Interface(f"@{signature.entry}", signature.inputs, signature.outputs,
                                    [spec.tied_input for spec in signature.outputs])
        self.arena = arena  # (bytes, alignment) of the arena each call context holds, or None
        spec = ArenaSpec(len(signature.inputs), *arena) if arena else None
        self._function = CFunction(address, self._interface.buffer_shapes, packed=True, arena=spec)

    @property
    def llvm_ir(self) -> str:
        """The compiled module in the LLVM dialect (printed on demand)."""
        return str(self._module)

    @property
    def input_names(self) -> list[str]:
        return [spec.name for spec in self.signature.inputs]

    def __repr__(self) -> str:
        return f"Executable({self.signature}, target='cpu')"

    def __call__(self, *args: np.ndarray, out=None, **kwargs: np.ndarray):
        """Runs the function; `out` (an array, or a tuple with one per result) receives the results
        instead of fresh arrays: C-contiguous, of the result's shape and dtype. An `out` array may
        overlap an input (`exe(x, w, out=x)`): the result is computed into a temporary and copied."""
        call = self._interface.prepare(args, kwargs, out)
        self._function.run(call.addresses)
        return call.finish()

    def context(self) -> "ExecutionContext":
        """A call context of its own (its own arena): calls in different contexts run concurrently."""
        return ExecutionContext(self._interface, self._function.context())


class ExecutionContext:
    """One caller's state of an `Executable` (its arena): call it as the executable itself."""

    def __init__(self, interface: Interface, context: CallContext):
        self._interface = interface
        self._context = context

    def __call__(self, *args: np.ndarray, out=None, **kwargs: np.ndarray):
        call = self._interface.prepare(args, kwargs, out)
        self._context.run(call.addresses)
        return call.finish()


def compile(
    module: Union[str, ir.Module],
    entry: Optional[str] = None,
    target: str = "cpu",
    *,
    opt_level: int = 3,
    filename: str = "<string>",
    plan: bool = True,
    threads: Optional[int] = None,
    matmul_kernels: bool = True,
    cache: bool = True,
    isolate: bool = False,
    max_variants: int = DEFAULT_MAX_VARIANTS,
    progress: bool = False,
) -> Executable:
    """Compiles `entry` of an MLIR module (text or ir.Module) and returns a callable.

    With `plan` (the default) the module is planned into LIR and every
    intermediate lives in one arena allocated once; `plan=False` lowers MIR
    directly (upstream bufferization allocates per call). `threads` (default:
    `RLX_NUM_THREADS`, else this machine's cores; at most 1024) is how many OpenMP
    threads the matmul kernels and large loop nests use; `matmul_kernels=False` keeps
    matmuls as scalar loops. `opt_level` is LLVM's -O level, 0 to 3. With `cache`, compiling
    an identical module with identical options again returns the executable
    compiled the first time (`compile_cache_info()` counts hits and misses).

    With `isolate`, the module is first compiled in a child Python process
    (runtime/isolation.py): an abort or crash inside MLIR or LLVM becomes a
    CompileError carrying the child's message instead of ending this process.
    It costs about one more compile (plus starting Python) per compile that
    misses the cache.

    A function with symbolic dimensions (`rlx.dims`, see `rlx_mlir.dims.dynamic`)
    gives a `SpecializingExecutable` that compiles each binding on first use and
    keeps the `max_variants` most recently used of them.

    With `progress`, each compile stage and its time is printed on stderr as it runs
    (`RLX_VERBOSE=1` does the same for every compile; rlx_mlir/progress.py).

    Raises CompileError (with MLIR diagnostics) when the module does not parse,
    verify or lower, and ValueError for an unknown target or entry or a bad option.
    """
    with progress_log.reporting(options.check_flag("progress", progress)):
        return _compile(module, entry, target, opt_level=opt_level, filename=filename, plan=plan, threads=threads,
                        matmul_kernels=matmul_kernels, cache=cache, isolate=isolate, max_variants=max_variants)


def _compile(module, entry, target, *, opt_level, filename, plan, threads, matmul_kernels, cache, isolate,
             max_variants) -> Executable:
    if target not in TARGETS:
        raise ValueError(f"unknown target '{target}'; available: {', '.join(TARGETS)}")
    if not isinstance(module, (str, ir.Module)):
        raise ValueError(f"compile(): module must be MLIR text (str) or an mlir.ir.Module, got {type(module).__name__}")
    entry = options.check_name("entry", entry, optional=True)
    filename = options.check_name("filename", filename)
    opt_level = options.check_opt_level(opt_level)
    plan = options.check_flag("plan", plan)
    matmul_kernels = options.check_flag("matmul_kernels", matmul_kernels)
    cache = options.check_flag("cache", cache)
    isolate = options.check_flag("isolate", isolate)
    max_variants = options.check_count("max_variants", max_variants, 1)
    if threads is not None:
        threads = options.check_threads(threads)
    elif target == "cpu":
        threads = options.check_threads(resolve_threads(threads), default=True)
    # Compile a copy in a Context of our own: the caller's IR is never mutated.
    text = module.operation.get_asm(enable_debug_info=True) if isinstance(module, ir.Module) else module
    settings = dict(entry=entry, target=target, opt_level=opt_level, filename=filename, plan=plan, threads=threads,
                    matmul_kernels=matmul_kernels)
    if target == "cuda":  # the GPU path: its own pipeline and runtime (runtime/cuda.py)
        if isolate:
            isolation.compile_in_child(text, settings)
        return compile_cuda(text, entry, opt_level=opt_level, filename=filename, plan=plan)
    if specialize.is_dynamic_source(text, entry, filename):
        # Symbolic dimensions: each binding of them is bound, planned and compiled on first use.
        def compile_static(static_text: str, name: str) -> Executable:
            return compile(static_text, name, target, opt_level=opt_level, filename=filename, plan=plan,
                           threads=threads, matmul_kernels=matmul_kernels, cache=cache, isolate=isolate)

        return specialize.SpecializingExecutable(text, entry, compile_static, filename, capacity=max_variants)

    def build() -> Executable:
        if isolate:
            isolation.compile_in_child(text, settings)
        return _compile_text(text, entry, opt_level, filename, plan, threads, matmul_kernels)

    if not cache:
        return build()
    return COMPILE_CACHE.get_or_compile(text, tuple(settings.values()), build)


def compile_cache_info() -> CacheInfo:
    """Hits, misses and size of the in-process compile cache."""
    return COMPILE_CACHE.info()


def clear_compile_cache() -> None:
    COMPILE_CACHE.clear()


def _compile_text(
    text: str, entry: Optional[str], opt_level: int, filename: str, plan: bool, threads: int, matmul_kernels: bool
) -> Executable:
    with Compilation(filename=filename) as job:
        parsed = job.parse(text)
        signature = signature_of(find_function(parsed, entry))
        job.run(parsed, LowerToLLVM(plan=plan, threads=threads, matmul_kernels=matmul_kernels),
                "lowering to LLVM failed")
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
                engine = ExecutionEngine(parsed, opt_level=opt_level, shared_libs=libraries)
        except RuntimeError as error:
            raise CompileError(f"the LLVM JIT could not compile the module: {error}") from None
        return Executable(engine, signature, parsed, job.context, arena_of(parsed, signature.entry))


def _first_non_llvm_op(module: ir.Operation) -> Optional[ir.Operation]:
    """The first op the pipeline left outside the LLVM dialect, if any.

    The ExecutionEngine only says "Failure while creating the ExecutionEngine"
    when translation to LLVM IR meets one. OpenMP ops translate to LLVM IR directly.
    """
    leftovers = collect_ops(module, lambda op: op.name.split(".", 1)[0] not in ("llvm", "builtin", "omp"))
    return leftovers[0] if leftovers else None
