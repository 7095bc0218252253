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
import hashlib
import importlib.util
import json
import os
import re
from typing import Optional

import numpy as np

from ..errors import RlxError
from ..ir.dtypes import NUMPY_NAMES, load_numpy_dtype
from ..runtime.abi import IN_PLACE_LOADER, ArenaSpec, CFunction, Interface
from ..runtime.cuda_driver import CudaRuntime, DeviceFunction, cuda_device_error
from ..targets import TARGETS  # MLIR-free
from .params import check_params, load_params

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

MANIFEST_FORMAT = "rlx-aot/2"
SIGNATURE_SYMBOL = "rlx_aot_signature"  # in the library: its functions, as JSON (written by the exporter)
CIFACE_PREFIX = "_mlir_ciface_"
# In the library: `void rlx_call_<name>(void **descriptors)`, the C interface with its descriptor
# pointers packed in one array (inputs, arena, untied results), what the C runtime calls.
PACKED_PREFIX = "rlx_call_"
SYMBOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")  # a function name that names C symbols (MLIR's bare-id)
DTYPES = NUMPY_NAMES  # the numpy dtypes a function's arguments and results can have (bfloat16: ml_dtypes')


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype named in a manifest; "bfloat16" is ml_dtypes' (numpy has no bf16)."""
    try:
        return np.dtype(load_numpy_dtype(name, "this model takes or returns bf16 arrays"))
    except ValueError as error:
        raise ManifestError(str(error)) from None


_MAX_BYTES = 2**62  # a larger tensor is not one a compiled function can describe


class ManifestError(RlxError, ValueError):
    """A manifest that is malformed or does not describe its shared object."""


def manifest_path(library: str) -> str:
    """`model.so` -> `model.json`: where the manifest of a shared object lives."""
    return os.path.splitext(library)[0] + ".json"


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- the manifest's schema -----------------------------------------------------------------------


def _fail(where: str, message: str):
    raise ManifestError(f"{where}: {message}")


def _take(entry: dict, where: str, required: dict, optional: Optional[dict] = None) -> dict:
    """`entry` as a dict whose keys are `required` (all) and `optional` ones, each of its type."""
    optional = optional or {}
    if not isinstance(entry, dict):
        _fail(where, f"expected an object, got {type(entry).__name__}")
    for key in entry:
        if key not in required and key not in optional:
            _fail(f"{where}.{key}" if where else key, "unknown field")
    for key, kind in {**required, **optional}.items():
        field = f"{where}.{key}" if where else key
        if key not in entry:
            if key in required:
                _fail(field, "missing")
            continue
        value = entry[key]
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            _fail(field, f"expected {names}, got {type(value).__name__} {value!r:.60}")
    return entry


def _bare_file_name(value: str, where: str) -> str:
    if not value or value in (".", "..") or "/" in value or "\\" in value or "\0" in value:
        _fail(where, f"must be a bare file name in the model's directory, got {value!r}")
    return value


def _check_spec(entry, where: str, output: bool, inputs: list) -> None:
    fields = {"name": str, "shape": list, "dtype": str, "param": bool}
    entry = _take(entry, where, {**fields, "tied": (int, type(None))} if output else fields)
    if not all(isinstance(size, int) and not isinstance(size, bool) and size >= 0 for size in entry["shape"]):
        _fail(f"{where}.shape", f"expected a list of non-negative integers, got {entry['shape']!r:.60}")
    if entry["dtype"] not in DTYPES:
        _fail(f"{where}.dtype", f"unsupported dtype {entry['dtype']!r} (supported: {', '.join(DTYPES)})")
    count = 1
    for size in entry["shape"]:
        count *= size
    if count * numpy_dtype(entry["dtype"]).itemsize > _MAX_BYTES:
        _fail(f"{where}.shape", f"{entry['shape']} {entry['dtype']} is too large")
    tied = entry.get("tied")
    if tied is not None:
        if not 0 <= tied < len(inputs):
            _fail(f"{where}.tied", f"must name an input index below {len(inputs)}, got {tied}")
        if (inputs[tied]["shape"], inputs[tied]["dtype"]) != (entry["shape"], entry["dtype"]):
            _fail(f"{where}.tied", f"input #{tied} is {inputs[tied]['dtype']} {inputs[tied]['shape']}, "
                                   f"the result {entry['dtype']} {entry['shape']}")


def _check_function(entry, where: str) -> None:
    entry = _take(entry, where, {"name": str, "symbol": str, "inputs": list, "outputs": list}, {"arena": dict})
    if "arena" in entry:
        arena = _take(entry["arena"], f"{where}.arena", {"bytes": int, "alignment": int})
        if not 0 < arena["bytes"] <= _MAX_BYTES:
            _fail(f"{where}.arena.bytes", f"expected a positive size, got {arena['bytes']}")
        if not 0 < arena["alignment"] <= 4096 or arena["alignment"] & (arena["alignment"] - 1):
            _fail(f"{where}.arena.alignment", f"expected a power of two up to 4096, got {arena['alignment']}")
    if not SYMBOL_NAME.fullmatch(entry["name"]):
        _fail(f"{where}.name", f"not a function name: {entry['name']!r}")
    if entry["symbol"] != CIFACE_PREFIX + entry["name"]:
        _fail(f"{where}.symbol", f"must be {CIFACE_PREFIX + entry['name']!r}, got {entry['symbol']!r}")
    for index, spec in enumerate(entry["inputs"]):
        _check_spec(spec, f"{where}.inputs[{index}]", False, entry["inputs"])
    for index, spec in enumerate(entry["outputs"]):
        _check_spec(spec, f"{where}.outputs[{index}]", True, entry["inputs"])


def check_manifest(manifest) -> None:
    """Raises ManifestError, naming the field, unless every field of `manifest` has its type and a valid value."""
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        if isinstance(found, str) and found.startswith("rlx-aot/"):
            _fail("format", f"{found!r} was written by another version of rlx_mlir (this one reads "
                            f"{MANIFEST_FORMAT!r}); export the model again")
        _fail("format", f"not an RLX AOT manifest (expected {MANIFEST_FORMAT!r}, got {found!r:.60})")
    optional = {"gpu": dict} if manifest.get("target") == "cuda" else {"params": dict}
    _take(manifest, "", {"format": str, "target": str, "library": str, "runtime_libraries": list,
                         "sha256": dict, "functions": list}, optional)
    if "params" in manifest:  # the weights shipped beside the library (rlx-compile --params)
        params = _take(manifest["params"], "params", {"file": str, "bytes": int})
        _bare_file_name(params["file"], "params.file")
        if params["file"] == manifest["library"] or params["file"] in manifest["runtime_libraries"]:
            _fail("params.file", f"{params['file']!r} is named twice")
    if manifest["target"] not in TARGETS:
        _fail("target", f"unknown target {manifest['target']!r} (known: {', '.join(TARGETS)})")
    if manifest["target"] == "cuda":
        if "gpu" not in manifest:
            _fail("gpu", "missing (a CUDA model says which chip it was built for)")
        _take(manifest["gpu"], "gpu", {"chip": str, "features": str, "format": str})
    _bare_file_name(manifest["library"], "library")
    for index, name in enumerate(manifest["runtime_libraries"]):
        if not isinstance(name, str):
            _fail(f"runtime_libraries[{index}]", f"expected str, got {type(name).__name__}")
        _bare_file_name(name, f"runtime_libraries[{index}]")
        if name == manifest["library"] or name in manifest["runtime_libraries"][:index]:
            _fail(f"runtime_libraries[{index}]", f"{name!r} is named twice")
    files = [manifest["library"], *manifest["runtime_libraries"]]
    if sorted(manifest["sha256"]) != sorted(files):
        _fail("sha256", f"must give the digest of exactly {', '.join(files)}; has {', '.join(manifest['sha256'])}")
    for name, digest in manifest["sha256"].items():
        if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            _fail(f"sha256.{name}", f"expected 64 lower-case hex digits, got {digest!r:.80}")
    if not manifest["functions"]:
        _fail("functions", "the model has no function")
    for index, function in enumerate(manifest["functions"]):
        _check_function(function, f"functions[{index}]")
        if function["name"] in [f["name"] for f in manifest["functions"][:index]]:
            _fail(f"functions[{index}].name", f"{function['name']!r} is named twice")


def _first_difference(ours, theirs, where: str) -> Optional[str]:
    """The path of the first place where two JSON values differ, or None when they are equal."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in (*ours, *[k for k in theirs if k not in ours]):
            found = _first_difference(ours.get(key), theirs.get(key), f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(ours, list) and isinstance(theirs, list) and any(
            isinstance(item, (dict, list)) for item in (*ours, *theirs)):  # a shape is compared whole
        if len(ours) != len(theirs):
            return f"{where} (has {len(ours)} entries, the library {len(theirs)})"
        for index, (a, b) in enumerate(zip(ours, theirs)):
            found = _first_difference(a, b, f"{where}[{index}]")
            if found:
                return found
        return None
    if ours != theirs or type(ours) is not type(theirs):
        return f"{where} (is {ours!r:.60}, the library says {theirs!r:.60})"
    return None


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
