"""Ahead-of-time compiled RLX models: export to a shared object, load and run anywhere.

    from rlx_mlir import aot
    aot.export(module_or_text, "model.so", target="cpu")    # or "cuda"; writes model.so + model.json
    model = aot.load("model.so")                             # numpy + ctypes only
    y = model(x)                 # the only function; or model.<name>(...) for any public function

Importing this package imports nothing; `load` and running a model import numpy, never MLIR;
`export` imports MLIR on a compile-cache miss only (a hit, as `rlx-compile` of an unchanged model,
imports neither MLIR nor numpy). Each name is imported on first use, as the object itself (so that
`help(aot.export)` shows its real signature and docstring).
"""

import importlib

_EXPORTS = {
    "Function": ".loader",
    "ManifestError": ".manifest",
    "Model": ".loader",
    "cuda_device_error": ".loader",
    "load": ".loader",
    "manifest_path": ".manifest",
    "export": ".exporter",
}
_SUBMODULES = ("exporter", "header", "loader", "lowering", "manifest", "params", "records")


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    elif name in _SUBMODULES:  # `aot.loader.file_sha256` without importing the submodule first
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'rlx_mlir.aot' has no attribute '{name}'")
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_EXPORTS})


# `export` is left out of `__all__` so that `from rlx_mlir.aot import *` stays free of MLIR.
__all__ = ["Function", "ManifestError", "Model", "cuda_device_error", "load", "manifest_path"]
