"""Loading and running AOT-compiled RLX models: numpy and ctypes only.

This module imports nothing from MLIR (nor from the rest of `rlx_mlir`), so a
model exported with `rlx_mlir.aot.export` runs where MLIR is not installed:
copy this file, the `.so`, its `.json` manifest and the runtime libraries the
manifest names, then

    model = load("model.so")
    logits = model(tokens=tokens, **weights)       # the only function, by name or position
    y = model.mlp(x, w, b)                          # any public function, by name

Each function of the shared object is the C interface `_mlir_ciface_<name>`
of a function whose results were turned into caller-provided buffers: it takes
one pointer to a ranked memref descriptor per argument, then one per result.
The manifest (`<stem>.json`) says, per function, the names, shapes and dtypes of
its inputs (and which are weights, `rlx.param`) and of its results.

`target == "cpu"`: descriptors point at numpy memory; results are fresh numpy
arrays per call.  `target == "cuda"`: descriptors point at device memory,
allocated through MLIR's CUDA runtime wrappers (`libmlir_cuda_runtime.so`).
Weights are uploaded on their first use and stay on the device across calls
(re-uploaded when a different array, or one with a different data pointer, is
passed); other inputs are copied in and results copied out on every call.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from typing import Any, Optional

import numpy as np

MANIFEST_FORMAT = "rlx-aot/1"


def manifest_path(library: str) -> str:
    """`model.so` -> `model.json`: where the manifest of a shared object lives."""
    return os.path.splitext(library)[0] + ".json"


def _descriptor_class(rank: int) -> type:
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64)]
    if rank:
        fields += [("shape", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


class Spec:
    """One argument or result: name, static shape, numpy dtype, whether it is a weight."""

    def __init__(self, entry: dict):
        self.name: str = entry["name"]
        self.shape: tuple[int, ...] = tuple(entry["shape"])
        self.dtype = np.dtype(entry["dtype"])
        self.is_param: bool = bool(entry.get("param", False))
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def describe(self) -> str:
        return f"numpy {self.dtype.name} {list(self.shape)}"

    def descriptor(self):
        rank = len(self.shape)
        descriptor = _descriptor_class(rank)()
        if rank:
            strides, running = [], 1
            for size in reversed(self.shape):
                strides.append(running)
                running *= size
            descriptor.shape[:] = list(self.shape)
            descriptor.strides[:] = list(reversed(strides))
        return descriptor


class _CudaRuntime:
    """The few entry points of libmlir_cuda_runtime.so the loader needs."""

    def __init__(self, library: ctypes.CDLL):
        self.alloc = library.mgpuMemAlloc
        self.alloc.restype, self.alloc.argtypes = ctypes.c_void_p, [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_bool]
        self.free = library.mgpuMemFree
        self.free.restype, self.free.argtypes = None, [ctypes.c_void_p, ctypes.c_void_p]
        self.memcpy = library.mgpuMemcpy
        self.memcpy.restype, self.memcpy.argtypes = None, [ctypes.c_void_p] * 2 + [ctypes.c_size_t, ctypes.c_void_p]
        create = library.mgpuStreamCreate
        create.restype, create.argtypes = ctypes.c_void_p, []
        self.synchronize = library.mgpuStreamSynchronize
        self.synchronize.restype, self.synchronize.argtypes = None, [ctypes.c_void_p]
        self.stream = create()

    def device_buffer(self, nbytes: int) -> int:
        pointer = self.alloc(max(nbytes, 1), self.stream, False)
        if not pointer:
            raise MemoryError(f"cannot allocate {nbytes} bytes of device memory")
        return pointer


def cuda_device_error() -> Optional[str]:
    """Why CUDA code cannot run here (no driver library, no device), or None when it can.

    Asks the driver API directly (`cuInit`, `cuDeviceGetCount`) before any MLIR
    CUDA runtime library is loaded: those print errors or abort without a device.
    """
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no CUDA driver (libcuda.so.1 not found)"
    if driver.cuInit(0) != 0:
        return "the CUDA driver failed to initialise (cuInit returned an error; is a GPU present?)"
    count = ctypes.c_int(0)
    if driver.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return "no CUDA device found"
    return None


class Function:
    """One exported function: call it with numpy arrays (by position or name)."""

    def __init__(self, model: "Model", entry: dict, address: int, packed: bool = False):
        """`address` is `_mlir_ciface_<name>` taking one descriptor pointer per argument, or
        with `packed` (MLIR's ExecutionEngine) a function taking one array of pointers to them."""
        self.name: str = entry["name"]
        self.inputs = [Spec(e) for e in entry["inputs"]]
        self.outputs = [Spec(e) for e in entry["outputs"]]
        self._model = model
        self._descriptors = [spec.descriptor() for spec in (*self.inputs, *self.outputs)]
        count = len(self._descriptors)
        addresses = [ctypes.addressof(d) for d in self._descriptors]
        if packed:
            self._cells = [ctypes.c_void_p(a) for a in addresses]
            self._packed = (ctypes.c_void_p * count)(*[ctypes.addressof(c) for c in self._cells])
            self._pointers = [ctypes.addressof(self._packed)]
            self._call = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        else:
            self._pointers = addresses
            self._call = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * count))(address)
        self._lock = threading.Lock()
        self._device: dict[int, tuple[Any, int]] = {}  # input position -> (source key, device pointer)

    def __repr__(self) -> str:
        args = ", ".join(f"{s.name}: {s.describe()}" for s in self.inputs)
        outs = ", ".join(s.describe() for s in self.outputs)
        return f"<rlx function {self.name}({args}) -> ({outs}) on {self._model.target}>"

    def __call__(self, *args, **kwargs):
        arrays = self._arrange(args, kwargs)
        outputs = [np.empty(spec.shape, spec.dtype) for spec in self.outputs]
        with self._lock:
            if self._model.target == "cuda":
                self._run_cuda(arrays, outputs)
            else:
                for descriptor, array in zip(self._descriptors, (*arrays, *outputs)):
                    descriptor.allocated = descriptor.aligned = array.ctypes.data
                self._call(*self._pointers)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _run_cuda(self, arrays: list, outputs: list) -> None:
        cuda = self._model.cuda
        temporaries = []
        for position, (spec, array, descriptor) in enumerate(zip(self.inputs, arrays, self._descriptors)):
            key = (id(array), array.ctypes.data)
            cached = self._device.get(position)
            if spec.is_param and cached is not None and cached[0] == key:
                pointer = cached[1]  # weight already on the device
            else:
                pointer = cuda.device_buffer(spec.nbytes)
                cuda.memcpy(pointer, array.ctypes.data, spec.nbytes, cuda.stream)
                if spec.is_param:
                    if cached is not None:
                        cuda.free(cached[1], cuda.stream)
                    self._device[position] = (key, pointer)
                    # Keep the array alive so its id cannot be reused by another array.
                    self._model._pinned[(self.name, position)] = array
                else:
                    temporaries.append(pointer)
            descriptor.allocated = descriptor.aligned = pointer
        result_buffers = []
        for spec, descriptor in zip(self.outputs, self._descriptors[len(self.inputs):]):
            pointer = cuda.device_buffer(spec.nbytes)
            result_buffers.append(pointer)
            descriptor.allocated = descriptor.aligned = pointer
        cuda.synchronize(cuda.stream)  # inputs are on the device before the function's own stream runs
        self._call(*self._pointers)
        for array, pointer in zip(outputs, result_buffers):
            cuda.memcpy(array.ctypes.data, pointer, array.nbytes, cuda.stream)
        cuda.synchronize(cuda.stream)
        for pointer in (*temporaries, *result_buffers):
            cuda.free(pointer, cuda.stream)

    def time_on_device(self, *args, repeat: int = 10, **kwargs) -> list[float]:
        """Seconds per call with every argument already on the device ("cuda" only).

        Uploads the arguments once, then times `repeat` calls of the compiled
        function alone (kernels, its arena allocation and its stream
        synchronisation; no host copies), after one warm-up call.
        """
        import time

        if self._model.target != "cuda":
            raise ValueError("time_on_device needs a CUDA model")
        arrays = self._arrange(args, kwargs)
        cuda = self._model.cuda
        buffers = []
        with self._lock:
            for spec, array, descriptor in zip((*self.inputs, *self.outputs), (*arrays, *[None] * len(self.outputs)),
                                               self._descriptors):
                pointer = cuda.device_buffer(spec.nbytes)
                if array is not None:
                    cuda.memcpy(pointer, array.ctypes.data, spec.nbytes, cuda.stream)
                buffers.append(pointer)
                descriptor.allocated = descriptor.aligned = pointer
            cuda.synchronize(cuda.stream)
            for _, pointer in self._device.values():  # cached weights: uploaded again on the next call
                cuda.free(pointer, cuda.stream)
            self._device.clear()
            self._call(*self._pointers)
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                self._call(*self._pointers)  # synchronises its own stream before returning
                times.append(time.perf_counter() - start)
            for pointer in buffers:
                cuda.free(pointer, cuda.stream)
        return times

    def _arrange(self, args, kwargs) -> list[np.ndarray]:
        if len(args) > len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} arguments, got {len(args)}")
        values = list(args) + [None] * (len(self.inputs) - len(args))
        names = [spec.name for spec in self.inputs]
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"{self.name} has no argument named '{key}' (arguments: {', '.join(names)})")
            position = names.index(key)
            if values[position] is not None:
                raise TypeError(f"argument '{key}' of {self.name} given twice")
            values[position] = value
        missing = [name for name, value in zip(names, values) if value is None]
        if missing:
            raise TypeError(f"{self.name} is missing arguments: {', '.join(missing)}")
        arrays = []
        for spec, value in zip(self.inputs, values):
            array = np.asarray(value)
            if array.dtype != spec.dtype or array.shape != spec.shape:
                raise ValueError(
                    f"argument '{spec.name}' of {self.name}: expected {spec.describe()}, "
                    f"got numpy {array.dtype.name} {list(array.shape)}"
                )
            arrays.append(np.ascontiguousarray(array))
        return arrays


class Model:
    """A loaded shared object: every public function as an attribute (and `functions`)."""

    def __init__(self, library: str):
        path = os.path.abspath(library)
        with open(manifest_path(path)) as f:
            manifest = json.load(f)
        if manifest.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"{manifest_path(path)}: not an RLX AOT manifest (format {manifest.get('format')!r})")
        self.target: str = manifest["target"]
        self.manifest = manifest
        self.cuda: Optional[_CudaRuntime] = None
        self._pinned: dict = {}
        directory = os.path.dirname(path)
        if self.target == "cuda":
            problem = cuda_device_error()
            if problem:
                raise RuntimeError(f"cannot run CUDA model {library}: {problem}")
        # Runtime libraries first, globally, so the model's undefined symbols resolve to them.
        # libmlir_cuda_runtime.so needs libLLVM.so: found next to it (RUNPATH $ORIGIN, as in a
        # deployment bundle), else the one it was exported with (a machine with MLIR installed).
        hint = manifest.get("llvm_library")
        if self.target == "cuda" and not os.path.exists(os.path.join(directory, "libLLVM.so")) and hint \
                and os.path.exists(hint):
            self._llvm = ctypes.CDLL(hint, mode=ctypes.RTLD_GLOBAL)
        self._runtime = [
            ctypes.CDLL(os.path.join(directory, name), mode=ctypes.RTLD_GLOBAL)
            for name in manifest.get("runtime_libraries", [])
        ]
        if self.target == "cuda":
            runtime = next(lib for lib in self._runtime if "cuda_runtime" in lib._name)
            self.cuda = _CudaRuntime(runtime)
        self._library = ctypes.CDLL(path)
        self.functions: dict[str, Function] = {}
        for entry in manifest["functions"]:
            address = ctypes.cast(getattr(self._library, entry["symbol"]), ctypes.c_void_p).value
            self.functions[entry["name"]] = Function(self, entry, address)

    def __getattr__(self, name: str) -> Function:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(f"model has no function '{name}' (functions: {', '.join(functions)})")

    def __call__(self, *args, **kwargs):
        if len(self.functions) != 1:
            raise TypeError(
                f"the model has {len(self.functions)} functions ({', '.join(self.functions)}); call one by name"
            )
        return next(iter(self.functions.values()))(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<rlx model ({self.target}): {', '.join(self.functions)}>"


def load(library: str) -> Model:
    """Loads `library` (a `.so` written by `rlx_mlir.aot.export`) and its manifest."""
    return Model(library)
