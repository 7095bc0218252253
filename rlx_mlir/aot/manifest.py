"""The manifest of an AOT-compiled model (`<stem>.json` beside the library): its schema and checks.

Written by the exporter, read by the loader and the C runtime; the functions' records are also
compiled into the library (`SIGNATURE_SYMBOL`) and compared with the manifest's. Pure Python (no
numpy, no MLIR): `rlx-compile` writes and checks manifests without importing numpy.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Optional

from ..errors import RlxError
from ..ir.dtypes import NUMPY_NAMES, from_numpy
from ..targets import TARGETS  # MLIR-free

MANIFEST_FORMAT = "rlx-aot/2"
SIGNATURE_SYMBOL = "rlx_aot_signature"  # in the library: its functions, as JSON (written by the exporter)
CIFACE_PREFIX = "_mlir_ciface_"
# In the library: `void rlx_call_<name>(void **descriptors)`, the C interface with its descriptor
# pointers packed in one array (inputs, arena, untied results), what the C runtime calls.
PACKED_PREFIX = "rlx_call_"
SYMBOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")  # a function name that names C symbols (MLIR's bare-id)
DTYPES = NUMPY_NAMES  # the numpy dtypes a function's arguments and results can have (bfloat16: ml_dtypes')


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
    if count * from_numpy(entry["dtype"]).bytes > _MAX_BYTES:
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
