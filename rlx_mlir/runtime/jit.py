"""JIT execution through MLIR's ExecutionEngine, numpy arrays in and out.

`compile()` lowers a module with `rlx-lower-to-llvm` (results become
caller-provided output buffers), JIT-compiles it once, and returns an
`Executable`.  Calling it checks every argument against the signature, fills
preallocated memref descriptors with the arrays' data pointers and calls the
function's C interface; outputs are numpy arrays allocated per call, so no
memory is owned by compiled code between calls.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from typing import Optional, Sequence, Union

import numpy as np
from mlir import ir
from mlir.execution_engine import ExecutionEngine

from .. import verifier
from ..context import make_context
from ..diagnostics import CompileError, DiagnosticCollector
from ..ir_walk import collect_ops
from ..pass_pipeline import run_pipeline
from ..pipelines.lower_to_llvm import LowerToLLVM
from ..passes.tile_matmul import default_threads
from ..toolchain import openmp_library, runtime_library
from .compile_cache import COMPILE_CACHE, CacheInfo
from .signature import Signature, TensorSpec, find_function, signature_of

TARGETS = ("cpu", "cuda")


@functools.lru_cache(maxsize=None)
def _descriptor_class(rank: int) -> type:
    """MLIR's ranked memref descriptor; its layout does not depend on the element type."""
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64)]
    if rank:
        fields += [("shape", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRefDescriptor{rank}D", (ctypes.Structure,), {"_fields_": fields})


class ArgumentError(ValueError):
    """An argument whose shape or dtype does not match the function signature."""

    def __init__(self, message: str, spec: TensorSpec):
        super().__init__(message)
        self.spec = spec


class _Slot:
    """A memref descriptor reused across calls; only its data pointers change."""

    def __init__(self, spec: TensorSpec):
        rank = len(spec.shape)
        self.descriptor = _descriptor_class(rank)()
        if rank:
            strides, running = [], 1
            for size in reversed(spec.shape):
                strides.append(running)
                running *= size
            self.descriptor.shape[:] = list(spec.shape)
            self.descriptor.strides[:] = list(reversed(strides))
        self.descriptor.offset = 0
        self.pointer = ctypes.pointer(self.descriptor)

    def bind(self, array: np.ndarray) -> None:
        address = array.ctypes.data
        self.descriptor.allocated = address
        self.descriptor.aligned = address


class Executable:
    """A compiled function: call it with numpy arrays, get a numpy array (or a tuple)."""

    def __init__(self, engine: ExecutionEngine, signature: Signature, module: ir.Module, context: ir.Context):
        self.signature = signature
        self._module = module
        self._engine = engine
        self._context = context  # keeps the engine's MLIR objects alive
        address = engine.raw_lookup("_mlir_ciface_" + signature.entry)
        if not address:
            raise CompileError(f"compiled module has no C interface for '@{signature.entry}'")
        self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        # A result tied to an input (`rlx.tied`, e.g. a KV cache) is updated in the input's
        # buffer: the compiled function has no output parameter for it.
        self._fresh_outputs = [spec for spec in signature.outputs if spec.tied_input is None]
        self._slots = [_Slot(spec) for spec in (*signature.inputs, *self._fresh_outputs)]
        self._packed = (ctypes.c_void_p * len(self._slots))(
            *[ctypes.addressof(slot.pointer) for slot in self._slots]
        )
        self._lock = threading.Lock()

    @property
    def llvm_ir(self) -> str:
        """The compiled module in the LLVM dialect (printed on demand)."""
        return str(self._module)

    @property
    def input_names(self) -> list[str]:
        return [spec.name for spec in self.signature.inputs]

    def __call__(self, *args: np.ndarray, out=None, **kwargs: np.ndarray):
        """Runs the function; `out` (an array, or a tuple with one per result) receives the results
        instead of fresh arrays: C-contiguous, of the result's shape and dtype."""
        arrays = self._check_arguments(self._arrange(args, kwargs))
        given = self._check_out(out)
        outputs = [given.pop(0) if given else np.empty(spec.shape, spec.dtype) if spec.tied_input is None
                   else self._writable(arrays, spec)
                   for spec in self.signature.outputs]
        fresh = [array for spec, array in zip(self.signature.outputs, outputs) if spec.tied_input is None]
        with self._lock:
            for slot, array in zip(self._slots, (*arrays, *fresh)):
                slot.bind(array)
            self._function(self._packed)
        if len(outputs) == 1:
            return outputs[0]
        return tuple(outputs)

    def _check_out(self, out) -> list[np.ndarray]:
        if out is None:
            return []
        given = list(out) if isinstance(out, (tuple, list)) else [out]
        specs = self.signature.outputs
        if len(given) != len(specs) or any(spec.tied_input is not None for spec in specs):
            raise TypeError(
                f"@{self.signature.entry}: out= takes {len(specs)} array(s), one per result, got {len(given)}"
            )
        for index, (spec, array) in enumerate(zip(specs, given)):
            if (not isinstance(array, np.ndarray) or array.dtype != spec.dtype or array.shape != spec.shape
                    or not array.flags.c_contiguous or not array.flags.writeable):
                raise ArgumentError(
                    f"out[{index}] of @{self.signature.entry}: expected a writable C-contiguous {spec.describe()}", spec
                )
        return given

    def _writable(self, arrays: list[np.ndarray], spec: TensorSpec) -> np.ndarray:
        """The input array that a tied result updates in place (and is returned as that result)."""
        array = arrays[spec.tied_input]
        if not array.flags.writeable:
            name = self.signature.inputs[spec.tied_input].name
            raise ValueError(f"argument '{name}' of @{self.signature.entry} is updated in place ({spec.name} is tied "
                             f"to it) and must be a writable array")
        return array

    def _arrange(self, args: Sequence, kwargs: dict) -> list:
        inputs = self.signature.inputs
        if len(args) > len(inputs):
            raise TypeError(f"@{self.signature.entry} takes {len(inputs)} arguments, got {len(args)}")
        arranged = list(args) + [None] * (len(inputs) - len(args))
        for key, value in kwargs.items():
            positions = [i for i, spec in enumerate(inputs) if spec.name == key]
            if not positions:
                raise TypeError(f"@{self.signature.entry} has no argument named '{key}' (arguments: {', '.join(self.input_names)})")
            if arranged[positions[0]] is not None:
                raise TypeError(f"argument '{key}' given twice")
            arranged[positions[0]] = value
        missing = [spec.name for spec, value in zip(inputs, arranged) if value is None]
        if missing:
            raise TypeError(f"@{self.signature.entry} is missing arguments: {', '.join(missing)}")
        return arranged

    def _check_arguments(self, values: list) -> list[np.ndarray]:
        arrays = []
        for spec, value in zip(self.signature.inputs, values):
            array = np.asarray(value)
            if not array.dtype.isnative:  # e.g. big-endian '>f4': the same values, copied into native order
                array = array.astype(array.dtype.newbyteorder("="))
            if array.dtype != spec.dtype or array.shape != spec.shape:
                raise ArgumentError(
                    f"argument '{spec.name}' of @{self.signature.entry}: expected {spec.describe()}, "
                    f"got numpy {array.dtype.name} {list(array.shape)}",
                    spec,
                )
            arrays.append(np.ascontiguousarray(array))
        return arrays


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
) -> Executable:
    """Compiles `entry` of an MLIR module (text or ir.Module) and returns a callable.

    With `plan` (the default) the module is planned into LIR and every
    intermediate lives in one arena allocated once; `plan=False` lowers MIR
    directly (upstream bufferization allocates per call). `threads` (default:
    `RLX_NUM_THREADS`, else this machine's cores) is how many OpenMP threads the
    matmul kernels and large loop nests use; `matmul_kernels=False` keeps
    matmuls as scalar loops. With `cache`, compiling
    an identical module with identical options again returns the executable
    compiled the first time (`compile_cache_info()` counts hits and misses).

    A function with symbolic dimensions (`rlx.dims`, see `rlx_mlir.dynamic`)
    gives a `SpecializingExecutable` that compiles each binding on first use.

    Raises CompileError (with MLIR diagnostics) when the module does not parse,
    verify or lower, and ValueError for an unknown target or entry.
    """
    if target not in TARGETS:
        raise ValueError(f"unknown target '{target}'; available: {', '.join(TARGETS)}")
    if target == "cuda":  # the GPU path: its own pipeline and runtime (runtime/cuda.py)
        from .cuda import compile_cuda

        return compile_cuda(module, entry, opt_level=opt_level, filename=filename, plan=plan)
    if threads is None:
        threads = default_threads()
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    if isinstance(module, ir.Module):
        # Compile a copy in a Context of our own: the caller's IR is never mutated.
        text = module.operation.get_asm(enable_debug_info=True)
    else:
        text = module
    from . import specialize

    if specialize.is_dynamic_source(text, entry, filename):
        # Symbolic dimensions: each binding of them is bound, planned and compiled on first use.
        def compile_static(static_text: str, name: str) -> Executable:
            return compile(static_text, name, target, opt_level=opt_level, filename=filename, plan=plan,
                           threads=threads, matmul_kernels=matmul_kernels, cache=cache)

        return specialize.SpecializingExecutable(text, entry, compile_static, filename)
    options = (entry, target, opt_level, filename, plan, threads, matmul_kernels)

    def build() -> Executable:
        return _compile_text(text, entry, opt_level, filename, plan, threads, matmul_kernels)

    if not cache:
        return build()
    return COMPILE_CACHE.get_or_compile(text, options, build)


def compile_cache_info() -> CacheInfo:
    """Hits, misses and size of the in-process compile cache."""
    return COMPILE_CACHE.info()


def clear_compile_cache() -> None:
    COMPILE_CACHE.clear()


def _compile_text(
    text: str, entry: Optional[str], opt_level: int, filename: str, plan: bool, threads: int, matmul_kernels: bool
) -> Executable:
    context = make_context()
    sources = {filename: text}
    with context, DiagnosticCollector(context) as diagnostics:
        parsed = verifier.parse_verified(text, filename, context, diagnostics)
        signature = signature_of(find_function(parsed, entry))
        try:
            pipeline = LowerToLLVM(plan=plan, threads=threads, matmul_kernels=matmul_kernels)
            run_pipeline(parsed.operation, pipeline.elements())
        except ir.MLIRError:
            raise CompileError("lowering to LLVM failed", diagnostics.errors, sources) from None
        leftover = _first_non_llvm_op(parsed.operation)
        if leftover is not None:
            leftover.location.emit_error(f"'{leftover.name}' was not lowered to the LLVM dialect")
            raise CompileError("lowering to LLVM left non-LLVM operations", diagnostics.errors, sources)
        try:
            libraries = [runtime_library("mlir_c_runner_utils")]
            if threads > 1:
                try:
                    libraries.append(openmp_library())
                except FileNotFoundError as error:
                    raise CompileError(str(error)) from None
            engine = ExecutionEngine(parsed, opt_level=opt_level, shared_libs=libraries)
        except RuntimeError as error:
            raise CompileError(f"the LLVM JIT could not compile the module: {error}") from None
        return Executable(engine, signature, parsed, context)


def _first_non_llvm_op(module: ir.Operation) -> Optional[ir.Operation]:
    """The first op the pipeline left outside the LLVM dialect, if any.

    The ExecutionEngine only says "Failure while creating the ExecutionEngine"
    when translation to LLVM IR meets one. OpenMP ops translate to LLVM IR directly.
    """
    leftovers = collect_ops(module, lambda op: op.name.split(".", 1)[0] not in ("llvm", "builtin", "omp"))
    return leftovers[0] if leftovers else None
