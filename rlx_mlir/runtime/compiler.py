"""`compile()`: the options checked, then the caches, then the compiler on a miss.

The order is what makes a warm start cheap: an executable compiled before, in this process
(`compile_cache.py`) or in any other (`jit_disk_cache.py`), is returned before anything of MLIR is
imported.  Only a miss imports the compiler: `jit.py` (parse, the pass pipeline, LLVM's JIT),
`cuda.py` for `target="cuda"`, `specialize.py` for modules with symbolic dimensions; MLIR is a
heavy import (most of a new process's first second), so those imports sit inside the functions
that need them.
"""

from __future__ import annotations

from typing import Optional

from .. import progress as progress_log
from ..targets import TARGETS
from ..targets.cpu import resolve_threads
from . import blas_threads, jit_disk_cache, options
from .compile_cache import COMPILE_CACHE, CacheInfo
from .executable import Executable

DEFAULT_MAX_VARIANTS = 32  # specialisations a dynamic executable keeps (least recently used go first)


def compile(
    module,
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
    prepack_params: bool = False,
) -> Executable:
    """Compiles `entry` of an MLIR module (text or ir.Module) and returns a callable.

    With `plan` (the default) the module is planned into LIR and every
    intermediate lives in one arena allocated once; `plan=False` lowers MIR
    directly (upstream bufferization allocates per call). `threads` (default:
    `RLX_NUM_THREADS`, else this machine's cores; at most 1024) is how many OpenMP
    threads the matmul kernels and large loop nests use; `matmul_kernels=False` keeps
    matmuls as scalar loops. `opt_level` is LLVM's -O level, 0 to 3.

    With `cache`, compiling an identical module with identical options again returns the
    executable compiled the first time (`compile_cache_info()` counts hits and misses), and a CPU
    executable is also kept on disk (`RLX_CACHE_DIR`, see `rlx_mlir/runtime/disk_cache.py`;
    `off` turns it off): another process compiling the same module with the same options loads
    the compiled code from there, without parsing, lowering or importing MLIR.

    With `isolate`, the module is first compiled in a child Python process
    (runtime/isolation.py): an abort or crash inside MLIR or LLVM becomes a
    CompileError carrying the child's message instead of ending this process.
    It costs about one more compile (plus starting Python) per compile that
    misses the cache.

    A function with symbolic dimensions (`rlx.dims`, see `rlx_mlir.dims.dynamic`)
    gives a `SpecializingExecutable` that compiles each binding on first use and
    keeps the `max_variants` most recently used of them.

    With `prepack_params`, the GEMM kernels read the B operands that are parameters (`rlx.param`)
    from panels packed by companion functions of the same code, which `exe.bind_params(**weights)`
    runs once (unbound calls pack per call).  `bind_params` on an executable compiled without it
    compiles this variant first; ask for it here to compile only once.

    With `progress`, each compile stage and its time is printed on stderr as it runs
    (`RLX_VERBOSE=1` does the same for every compile; rlx_mlir/progress.py).

    Raises CompileError (with MLIR diagnostics) when the module does not parse,
    verify or lower, and ValueError for an unknown target or entry or a bad option.
    """
    with progress_log.reporting(options.check_flag("progress", progress)):
        return _compile(module, entry, target, opt_level=opt_level, filename=filename, plan=plan, threads=threads,
                        matmul_kernels=matmul_kernels, cache=cache, isolate=isolate, max_variants=max_variants,
                        prepack_params=prepack_params)


def _compile(module, entry, target, *, opt_level, filename, plan, threads, matmul_kernels, cache, isolate,
             max_variants, prepack_params) -> Executable:
    if target not in TARGETS:
        raise ValueError(f"unknown target '{target}'; available: {', '.join(TARGETS)}")
    if isinstance(module, str):
        text = module
    else:
        from mlir import ir  # a module in memory: MLIR is loaded already

        if not isinstance(module, ir.Module):
            raise ValueError(f"compile(): module must be MLIR text (str) or an mlir.ir.Module, got "
                             f"{type(module).__name__}")
        # Compile a copy in a Context of our own: the caller's IR is never mutated.
        text = module.operation.get_asm(enable_debug_info=True)
    entry = options.check_name("entry", entry, optional=True)
    filename = options.check_name("filename", filename)
    opt_level = options.check_opt_level(opt_level)
    plan = options.check_flag("plan", plan)
    matmul_kernels = options.check_flag("matmul_kernels", matmul_kernels)
    cache = options.check_flag("cache", cache)
    isolate = options.check_flag("isolate", isolate)
    max_variants = options.check_count("max_variants", max_variants, 1)
    prepack_params = options.check_flag("prepack_params", prepack_params)
    if threads is not None:
        threads = options.check_threads(threads)
    elif target == "cpu":
        threads = options.check_threads(resolve_threads(threads), default=True)
    settings = dict(entry=entry, target=target, opt_level=opt_level, filename=filename, plan=plan, threads=threads,
                    matmul_kernels=matmul_kernels)
    if prepack_params:  # only then: the keys of every other compile stay as they were
        settings["prepack_params"] = True
    if target == "cuda":  # the GPU path: its own pipeline and runtime (runtime/cuda.py)
        from . import isolation
        from .cuda import compile_cuda

        if isolate:
            isolation.compile_in_child(text, settings)
        return compile_cuda(text, entry, opt_level=opt_level, filename=filename, plan=plan)

    if threads > 1:  # rlx's OpenMP team beside numpy's OpenBLAS pool: runtime/blas_threads.py
        blas_threads.share_cores_with_openblas()
    key = tuple(settings.values())

    def prepacked_variant() -> Executable:  # what `bind_params` binds: this module with `prepack_params`
        return compile(text, entry, target, opt_level=opt_level, filename=filename, plan=plan, threads=threads,
                       matmul_kernels=matmul_kernels, cache=cache, isolate=isolate, prepack_params=True)

    def bindable(executable: Executable) -> Executable:
        if not prepack_params and matmul_kernels and executable.prepacked_variant is None:
            executable.prepacked_variant = prepacked_variant
        return executable

    if cache:
        found = COMPILE_CACHE.get(text, key)  # compiled by this process before
        if found is not None:
            return bindable(found)
    stored = jit_disk_cache.entry_name(text, settings) if cache else None
    if stored is not None:  # compiled by any process before: loaded without MLIR

        def lower_again() -> str:  # the `llvm_ir` of an executable loaded from disk, on demand
            from . import jit

            return jit.lower_to_llvm_text(text, entry, filename, plan, threads, matmul_kernels, prepack_params)

        loaded = jit_disk_cache.load(stored, lower_again)
        if loaded is not None:
            return bindable(COMPILE_CACHE.get_or_compile(text, key, lambda: loaded))
    from . import isolation, jit, specialize  # a miss: the compiler, and MLIR with it

    if specialize.is_dynamic_source(text, entry, filename):
        # Symbolic dimensions: each binding of them is bound, planned and compiled on first use.
        def compile_static(static_text: str, name: str) -> Executable:
            return compile(static_text, name, target, opt_level=opt_level, filename=filename, plan=plan,
                           threads=threads, matmul_kernels=matmul_kernels, cache=cache, isolate=isolate,
                           prepack_params=prepack_params)

        return specialize.SpecializingExecutable(text, entry, compile_static, filename, capacity=max_variants)

    def build() -> Executable:
        if isolate:
            isolation.compile_in_child(text, settings)
        return jit.compile_text(text, entry, opt_level, filename, plan, threads, matmul_kernels, stored,
                                prepack_params)

    if not cache:
        return bindable(build())
    return bindable(COMPILE_CACHE.get_or_compile(text, key, build))


def compile_cache_info() -> CacheInfo:
    """Hits, misses and size of the in-process compile cache."""
    return COMPILE_CACHE.info()


def clear_compile_cache() -> None:
    COMPILE_CACHE.clear()
