"""Ahead-of-time compiled RLX models: export to a shared object, load and run anywhere.

    from rlx_mlir import aot
    aot.export(module_or_text, "model.so", target="cpu")    # or "cuda"; writes model.so + model.json
    model = aot.load("model.so")                             # numpy + ctypes only
    y = model(x)                 # the only function; or model.<name>(...) for any public function

Importing this package, `load` and running a model import nothing from MLIR:
`export` is imported on first use (and imports MLIR on a compile-cache miss only).
"""

from .loader import Function, ManifestError, Model, cuda_device_error, load, manifest_path


def __getattr__(name: str):
    # `export` may need MLIR: imported on first use, as the function itself (so that `help(aot.export)`
    # shows its real signature and docstring).
    if name == "export":
        from .exporter import export

        globals()["export"] = export
        return export
    raise AttributeError(f"module 'rlx_mlir.aot' has no attribute '{name}'")


def __dir__():
    return sorted({*globals(), "export"})


# `export` is left out of `__all__` so that `from rlx_mlir.aot import *` stays free of MLIR.
__all__ = ["Function", "ManifestError", "Model", "cuda_device_error", "load", "manifest_path"]
