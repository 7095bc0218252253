"""Loading and running AOT-compiled RLX models: numpy and ctypes only.

This module imports nothing from MLIR, so a model exported with
`rlx_mlir.aot.export` runs where MLIR is not installed: copy the MLIR-free part
of `rlx_mlir` it imports (`scripts/gpu_bundle.py` lists it: `loader_files`), the
`.so`, its `.json` manifest and the runtime libraries the manifest names, then

    model = load("model.so")
    logits = model(tokens=tokens, **weights)       # the only function, by name or position
    y = model.mlp(x, w, b)                          # any public function, by name

Each function of the shared object is the C interface `_mlir_ciface_<name>`
of a function whose results were turned into caller-provided buffers, called as
`compile` calls it (`rlx_mlir.runtime.abi`): one pointer to a ranked memref
descriptor per argument, then one for the caller's arena where the function has
one (the manifest's `arena`: bytes and alignment; each call context holds its
own, so threads run a model at once), then one per result, except results tied to an argument
(`rlx.tied = N`, a KV cache): those are updated in the argument's own buffer,
and the call returns the caller's array (which must be writable and
C-contiguous) as that result.
The manifest (`<stem>.json`) says, per function, the names, shapes and dtypes of
its inputs (and which are weights, `rlx.param`) and of its results (and which
are tied to an input).

The manifest is not trusted: `load` checks every field's type and value, the
SHA-256 of the library and of each runtime library (before loading any), loads
runtime libraries only from the model's directory by bare file name, and
checks that the manifest's functions are the ones the exporter recorded in the
library itself (`rlx_aot_signature`, JSON): a mismatch is a `ManifestError`.

`target == "cpu"`: descriptors point at numpy memory; results are fresh numpy
arrays per call.  `target == "cuda"`: descriptors point at device memory,
allocated through MLIR's CUDA runtime wrappers (`libmlir_cuda_runtime.so`,
`rlx_mlir.runtime.cuda_driver`). Weights are uploaded on their first use and stay
on the device across calls (re-uploaded when a different array, or one with a
different data pointer, is passed); other inputs are copied in and results copied
out on every call.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import json
import os
from typing import Optional

import numpy as np

from ..ir.dtypes import load_numpy_dtype
from ..runtime.abi import IN_PLACE_LOADER, ArenaSpec, CFunction, Interface
from ..runtime.cuda_driver import CudaRuntime, DeviceFunction, cuda_device_error
from .manifest import (  # noqa: F401  (the schema's names, re-exported for older imports)
    CIFACE_PREFIX,
    DTYPES,
    MANIFEST_FORMAT,
    PACKED_PREFIX,
    SIGNATURE_SYMBOL,
    SYMBOL_NAME,
    ManifestError,
    _first_difference,
    check_manifest,
    file_sha256,
    manifest_path,
)
from .params import check_params, read_header

_CUDA_MODEL_HANDLES: list = []


@atexit.register
def _unload_cuda_models() -> None:
    """Closes CUDA model libraries while the CUDA driver is still up.

    A CUDA model's global destructor unloads its kernels (`mgpuModuleUnload`).
    Left to the C runtime's exit, it runs after the driver has torn its context
    down, and every kernel module prints "'cuModuleUnload(module)' failed".
    Python's atexit handlers run before that, so the libraries are closed here.
    """
    import _ctypes

    while _CUDA_MODEL_HANDLES:
        _ctypes.dlclose(_CUDA_MODEL_HANDLES.pop())

def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype named in a manifest; "bfloat16" is ml_dtypes' (numpy has no bf16)."""
    try:
        return np.dtype(load_numpy_dtype(name, "this model takes or returns bf16 arrays"))
    except ValueError as error:
        raise ManifestError(str(error)) from None


def load_params(path: str) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file as read-only numpy arrays, mapped, not read (the page cache's
    copy, shared by every model and process that maps the file); a tensor not aligned to its element
    size in the file is copied once here (the compiled code reads aligned data; a call would otherwise
    copy it every time)."""
    tensors, offset = read_header(path)
    if not tensors:
        return {}
    data = np.memmap(path, np.uint8, mode="r")
    arrays = {}
    for name, (dtype, shape, begin, end) in tensors.items():
        array = data[offset + begin:offset + end].view(np.dtype(load_numpy_dtype(dtype, path))).reshape(shape)
        if not array.flags.aligned:
            array = np.array(array)
            array.flags.writeable = False
        arrays[name] = array
    return arrays


# --- calling ------------------------------------------------------------------------------------


class Spec:
    """One argument or result: name, static shape, numpy dtype, whether it is a weight, and for a
    result tied to an argument (`rlx.tied`, a KV cache updated in place) that argument's index."""

    def __init__(self, entry: dict):
        self.name: str = entry["name"]
        self.shape: tuple[int, ...] = tuple(entry["shape"])
        self.dtype = numpy_dtype(entry["dtype"])
        self.is_param: bool = bool(entry.get("param", False))
        self.tied: Optional[int] = entry.get("tied")

    def describe(self) -> str:
        return f"numpy {self.dtype.name} {list(self.shape)}"


class Function:
    """One exported function: call it with numpy arrays (by position or name)."""

    def __init__(self, model: "Model", entry: dict, address: int):
        """`address` is `_mlir_ciface_<name>`, taking one descriptor pointer per argument, then one per
        result that is not tied to an argument (runtime/abi.py)."""
        self.name: str = entry["name"]
        self.inputs = [Spec(e) for e in entry["inputs"]]
        self.outputs = [Spec(e) for e in entry["outputs"]]
        self._target = model.target
        self._interface = Interface(self.name, self.inputs, self.outputs, [spec.tied for spec in self.outputs],
                                    in_place=IN_PLACE_LOADER)
        arena = entry.get("arena")  # the caller's arena: one per call context (runtime/abi.py)
        spec = ArenaSpec(len(self.inputs), arena["bytes"], arena["alignment"]) if arena else None
        self._function = CFunction(address, self._interface.buffer_shapes, packed=False, arena=spec)
        self._device = DeviceFunction(self._interface, self._function, model.cuda) if model.target == "cuda" else None
        # Weights a call leaves out come from the model's parameter file (rlx-compile --params).
        self._defaults = {spec.name: model.params[spec.name] for spec in self.inputs
                          if spec.is_param and spec.name in model.params}

    def __repr__(self) -> str:
        args = ", ".join(f"{s.name}: {s.describe()}" for s in self.inputs)
        outs = ", ".join(s.describe() for s in self.outputs)
        return f"<rlx function {self.name}({args}) -> ({outs}) on {self._target}>"

    def __call__(self, *args, **kwargs):
        kwargs = self._with_defaults(args, kwargs)
        if self._device is not None:
            return self._device(*args, **kwargs)
        call = self._interface.prepare(args, kwargs)
        self._function.run(call.addresses)
        return call.finish()

    def _with_defaults(self, args: tuple, kwargs: dict) -> dict:
        """`kwargs` and, for each weight neither passed by position nor by name, its shipped value."""
        if not self._defaults:
            return kwargs
        given = {spec.name for spec in self.inputs[:len(args)]} | set(kwargs)
        return {**{name: value for name, value in self._defaults.items() if name not in given}, **kwargs}

    def context(self) -> "FunctionContext":
        """A call context of its own (its own arena): calls in different contexts run concurrently."""
        if self._device is not None:
            raise ValueError("contexts are for CPU models (a CUDA function allocates its arena per call)")
        return FunctionContext(self._interface, self._function.context(), self._with_defaults)

    def time_on_device(self, *args, repeat: int = 10, **kwargs) -> list[float]:
        """Seconds per call with every argument already on the device ("cuda" only); see
        `rlx_mlir.runtime.cuda_driver.DeviceFunction.time_on_device`."""
        if self._device is None:
            raise ValueError("time_on_device needs a CUDA model")
        return self._device.time_on_device(*args, repeat=repeat, **kwargs)


class FunctionContext:
    """One caller's state of a `Function` (its arena): call it as the function itself."""

    def __init__(self, interface: Interface, context, with_defaults):
        self._interface = interface
        self._context = context
        self._with_defaults = with_defaults

    def __call__(self, *args, **kwargs):
        call = self._interface.prepare(args, self._with_defaults(args, kwargs))
        self._context.run(call.addresses)
        return call.finish()


class Model:
    """A loaded shared object: every public function as an attribute (and `functions`).

    The manifest is checked before anything is loaded: every field's type and
    value, runtime libraries named by bare file name in the model's directory,
    and the SHA-256 of each library file.  Then the functions it describes are
    checked against the signature record the exporter compiled into the library.
    """

    def __init__(self, library: str):
        path = os.path.abspath(library)
        where = manifest_path(path)
        manifest = _read_manifest(where)
        try:
            check_manifest(manifest)
        except ManifestError as error:
            raise ManifestError(f"{where}: {error}") from None
        if manifest["library"] != os.path.basename(path):
            raise ManifestError(f"{where}: library: describes {manifest['library']!r}, not {os.path.basename(path)!r}")
        self.target: str = manifest["target"]
        self.manifest = manifest
        self.cuda: Optional[CudaRuntime] = None
        directory = os.path.dirname(path)
        for name, digest in manifest["sha256"].items():  # before anything is loaded
            file = os.path.join(directory, name)
            if not os.path.isfile(file):
                raise FileNotFoundError(f"{file}: no such file (named by {where})")
            if file_sha256(file) != digest:
                raise ManifestError(f"{file}: its SHA-256 is not the one {where} records (the file is truncated, "
                                    f"altered, or from another export; export the model again)")
        if self.target == "cuda":
            problem = cuda_device_error()
            if problem:
                raise RuntimeError(f"cannot run CUDA model {library}: {problem}")
            self._llvm = _load_llvm_for_cuda_runtime(directory)
        # Runtime libraries first, globally, so the model's undefined symbols resolve to them.
        self._runtime = [
            ctypes.CDLL(os.path.join(directory, name), mode=ctypes.RTLD_GLOBAL)
            for name in manifest["runtime_libraries"]
        ]
        if self.target == "cuda":
            runtime = next((lib for lib in self._runtime if "cuda_runtime" in lib._name), None)
            if runtime is None:
                raise ManifestError(f"{where}: runtime_libraries: a CUDA model needs libmlir_cuda_runtime.so")
            self.cuda = CudaRuntime(runtime)
        self._library = ctypes.CDLL(path)
        if self.target == "cuda":
            _CUDA_MODEL_HANDLES.append(self._library._handle)
        recorded = _signature_record(self._library, path)
        difference = _first_difference(
            {"target": manifest["target"], "functions": manifest["functions"]}, recorded, "")
        if difference:
            raise ManifestError(f"{where}: does not describe {os.path.basename(path)}: {difference.lstrip('.')}")
        self.params: dict[str, np.ndarray] = {}  # the weights shipped beside the library, if any
        if "params" in manifest:
            file = os.path.join(directory, manifest["params"]["file"])
            if not os.path.isfile(file):
                raise FileNotFoundError(f"{file}: no such parameter file (named by {where})")
            if os.path.getsize(file) != manifest["params"]["bytes"]:
                raise ManifestError(f"{file}: {os.path.getsize(file)} bytes, {where} records "
                                    f"{manifest['params']['bytes']} (truncated, or from another compile)")
            self.params = load_params(file)
            check_params(file, manifest["functions"])
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


def _read_manifest(where: str):
    if not os.path.isfile(where):
        raise FileNotFoundError(f"{where}: no manifest (aot.export writes it next to the library)")
    try:
        with open(where, "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ManifestError(f"{where}: not valid JSON: {error}") from None


def _signature_record(library: ctypes.CDLL, path: str) -> dict:
    """The functions (and target) the exporter recorded in the library itself, as JSON."""
    try:
        address = ctypes.addressof(ctypes.c_char.in_dll(library, SIGNATURE_SYMBOL))
    except ValueError:
        raise ManifestError(f"{path}: has no signature record ({SIGNATURE_SYMBOL}); not a library written by "
                            f"this version of rlx_mlir.aot.export") from None
    try:
        return json.loads(ctypes.string_at(address).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ManifestError(f"{path}: its signature record is not valid JSON: {error}") from None


def _load_llvm_for_cuda_runtime(directory: str) -> Optional[ctypes.CDLL]:
    """libmlir_cuda_runtime.so needs libLLVM.so: found next to it (RUNPATH $ORIGIN, as in a deployment
    bundle), else the installed `llvm` package's (a machine with MLIR installed; located without
    importing it).  Never a path from the manifest."""
    if os.path.exists(os.path.join(directory, "libLLVM.so")):
        return None
    spec = importlib.util.find_spec("llvm")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = os.path.join(location, "lib", "libLLVM.so")
        if os.path.isfile(candidate):
            return ctypes.CDLL(candidate, mode=ctypes.RTLD_GLOBAL)
    return None


def load(library: str) -> Model:
    """Loads `library` (a `.so` written by `rlx_mlir.aot.export`) after checking its manifest against it."""
    return Model(library)
