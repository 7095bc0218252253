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

from ..dialects import verifier
from ..errors import ArgumentError  # noqa: F401  (re-exported: `from rlx_mlir.runtime.jit import ArgumentError`)
from ..dialects.context import make_context
from ..ir.diagnostics import CompileError, DiagnosticCollector
from ..ir.walk import collect_ops
from ..passmanager.pipeline import run_pipeline
from ..pipelines.lower_to_llvm import LowerToLLVM
from ..transforms.linalg.tile_matmul import default_threads
from ..targets.toolchain import openmp_library, runtime_library
from . import isolation, options
from .compile_cache import COMPILE_CACHE, CacheInfo
from .signature import Signature, TensorSpec, find_function, signature_of

TARGETS = ("cpu", "cuda")
DEFAULT_MAX_VARIANTS = 32  # specialisations a dynamic executable keeps (least recently used go first)


@functools.lru_cache(maxsize=None)
def _descriptor_class(rank: int) -> type:
    """MLIR's ranked memref descriptor; its layout does not depend on the element type."""
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64)]
    if rank:
        fields += [("shape", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRefDescriptor{rank}D", (ctypes.Structure,), {"_fields_": fields})


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

    def bind(self, address: int) -> None:
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
        self._tied = {spec.tied_input: spec for spec in signature.outputs if spec.tied_input is not None}
        self._positions = {}  # argument name -> index (the first, should two share a name)
        for index, spec in enumerate(signature.inputs):
            self._positions.setdefault(spec.name, index)
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
        instead of fresh arrays: C-contiguous, of the result's shape and dtype. An `out` array may
        overlap an input (`exe(x, w, out=x)`): the result is computed into a temporary and copied."""
        arrays = self._check_arguments(self._arrange(args, kwargs))
        extents = _extents(arrays)
        if self._tied:
            self._read_before_update(arrays, extents)
        given = self._check_out(out)
        outputs = [arrays[spec.tied_input] if spec.tied_input is not None
                   else given[index] if given else np.empty(spec.shape, spec.dtype)
                   for index, spec in enumerate(self.signature.outputs)]
        # Where the compiled code writes each result: it reads its inputs while it writes, so an
        # `out` array that shares memory with an input gets a temporary, copied after the call.
        targets = [np.empty_like(array) if given and _sharing(_extents([array]), extents).any() else array
                   for array in outputs]
        fresh = [target for spec, target in zip(self.signature.outputs, targets) if spec.tied_input is None]
        addresses = [*extents[:, 0].tolist(), *(array.ctypes.data for array in fresh)]
        with self._lock:
            for slot, address in zip(self._slots, addresses):
                slot.bind(address)
            self._function(self._packed)
        for target, array in zip(targets, outputs):
            if target is not array:
                np.copyto(array, target)
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
                    or not array.flags.c_contiguous or not array.flags.writeable or not array.flags.aligned):
                raise ArgumentError(
                    f"out[{index}] of @{self.signature.entry}: expected a writable C-contiguous {spec.describe()}", spec
                )
            for other in range(index):
                if np.may_share_memory(given[other], array):
                    raise ArgumentError(
                        f"out[{other}] and out[{index}] of @{self.signature.entry} share memory: each result needs "
                        f"an array of its own", spec
                    )
        return given

    def _arrange(self, args: Sequence, kwargs: dict) -> list:
        inputs = self.signature.inputs
        if len(args) > len(inputs):
            raise TypeError(f"@{self.signature.entry} takes {len(inputs)} arguments, got {len(args)}")
        arranged = list(args) + [None] * (len(inputs) - len(args))
        for key, value in kwargs.items():
            position = self._positions.get(key)
            if position is None:
                raise TypeError(f"@{self.signature.entry} has no argument named '{key}' (arguments: {', '.join(self.input_names)})")
            if arranged[position] is not None:
                raise TypeError(f"argument '{key}' given twice")
            arranged[position] = value
        missing = [spec.name for spec, value in zip(inputs, arranged) if value is None]
        if missing:
            raise TypeError(f"@{self.signature.entry} is missing arguments: {', '.join(missing)}")
        return arranged

    def _check_arguments(self, values: list) -> list[np.ndarray]:
        """The arguments as arrays the compiled code can read: C-contiguous and aligned (copied where
        they are not), except those a result is tied to, which are updated in place and so must
        already be such arrays (a copy would leave the caller's array, a KV cache, unchanged)."""
        arrays = []
        for index, (spec, value) in enumerate(zip(self.signature.inputs, values)):
            if index in self._tied:
                self._check_in_place(value, spec, self._tied[index])
            array = np.asarray(value)
            if not array.dtype.isnative:  # e.g. big-endian '>f4': the same values, copied into native order
                array = array.astype(array.dtype.newbyteorder("="))
            if array.dtype != spec.dtype or array.shape != spec.shape:
                raise ArgumentError(
                    f"argument '{spec.name}' of @{self.signature.entry}: expected {spec.describe()}, "
                    f"got numpy {array.dtype.name} {list(array.shape)}",
                    spec,
                )
            if not (array.flags.c_contiguous and array.flags.aligned):
                array = np.array(array, order="C")  # a fresh copy is aligned
            arrays.append(array)
        return arrays

    def _check_in_place(self, value, spec: TensorSpec, result: TensorSpec) -> None:
        """ArgumentError unless `value` is an array that the compiled code can update in place."""
        if not isinstance(value, np.ndarray):
            problem = f"got a {type(value).__name__}, not a numpy array"
        elif not value.flags.writeable:
            problem = "it is read-only"
        elif not value.flags.c_contiguous:
            order = "Fortran order" if value.flags.f_contiguous else "a strided view"
            problem = f"it is not C-contiguous ({order}); pass np.ascontiguousarray(...) and keep that array"
        elif not value.flags.aligned:
            problem = "its data is not aligned to its element size"
        elif not value.dtype.isnative:
            problem = "its byte order is not this machine's (a converted copy would be updated, not it)"
        else:
            return
        raise ArgumentError(
            f"argument '{spec.name}' of @{self.signature.entry} is updated in place ({result.name} is tied "
            f"to it) and must be a writable array, C-contiguous and aligned: {problem}",
            spec,
        )

    def _read_before_update(self, arrays: list[np.ndarray], extents: np.ndarray) -> None:
        """Replaces each input that shares memory with an argument updated in place by a copy (so it
        is read as it was before the update); two in-place arguments that share memory are an error."""
        tied_inputs = list(self._tied)
        sharing = _sharing(extents[tied_inputs, None, :], extents[None, :, :])  # [tied, every input]
        sharing[range(len(tied_inputs)), tied_inputs] = False
        for row, index in np.argwhere(sharing).tolist():
            if index in self._tied:
                raise ArgumentError(
                    f"arguments '{self.signature.inputs[tied_inputs[row]].name}' and "
                    f"'{self.signature.inputs[index].name}' of @{self.signature.entry} are both updated in place "
                    f"and share memory",
                    self.signature.inputs[index],
                )
            arrays[index] = arrays[index].copy()  # a fresh array: it shares nothing
            extents[index] = _extents([arrays[index]])[0]  # the address the call binds


def _extents(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """The bytes [start, end) that each C-contiguous array occupies, one row per array."""
    rows = [(address, address + array.nbytes) for array in arrays for address in (array.ctypes.data,)]
    return np.array(rows, dtype=np.int64).reshape(len(rows), 2)


def _sharing(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Whether the byte ranges `first[..., :]` and `second[..., :]` ([start, end) in the last axis,
    broadcast against each other) share a byte: numpy's bounds test, vectorized, so one call checks
    every in-place argument against a model's hundred weights. Empty ranges share nothing."""
    start, end = np.maximum(first[..., 0], second[..., 0]), np.minimum(first[..., 1], second[..., 1])
    return start < end


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

    Raises CompileError (with MLIR diagnostics) when the module does not parse,
    verify or lower, and ValueError for an unknown target or entry or a bad option.
    """
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
        threads = options.check_threads(default_threads(), default=True)
    # Compile a copy in a Context of our own: the caller's IR is never mutated.
    text = module.operation.get_asm(enable_debug_info=True) if isinstance(module, ir.Module) else module
    settings = dict(entry=entry, target=target, opt_level=opt_level, filename=filename, plan=plan, threads=threads,
                    matmul_kernels=matmul_kernels)
    if target == "cuda":  # the GPU path: its own pipeline and runtime (runtime/cuda.py)
        from .cuda import compile_cuda

        if isolate:
            isolation.compile_in_child(text, settings)
        return compile_cuda(text, entry, opt_level=opt_level, filename=filename, plan=plan)
    from . import specialize

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
                except OSError as error:  # missing, or not a loadable OpenMP runtime
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
