"""Ahead-of-time compiled RLX models: export to a shared object, load and run anywhere.

    from rlx_mlir import aot
    aot.export(module_or_text, "model.so", target="cpu")    # or "cuda"; writes model.so + model.json
    model = aot.load("model.so")                             # numpy + ctypes only
    y = model(x)                 # the only function; or model.<name>(...) for any public function

Importing this package, `load` and running a model import nothing from MLIR:
`export` (which needs MLIR) is imported on first use.
"""

from .loader import Function, ManifestError, Model, cuda_device_error, load, manifest_path


def export(*args, **kwargs):
    """Compiles a module into a shared object plus manifest; see `rlx_mlir.aot.exporter.export`."""
    from .exporter import export as _export

    return _export(*args, **kwargs)


__all__ = ["Function", "ManifestError", "Model", "cuda_device_error", "export", "load", "manifest_path"]
