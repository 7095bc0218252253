"""Ahead-of-time compiled RLX models: export to a shared object, load and run anywhere.

    from rlx_mlir import aot
    aot.export(module_or_text, "model.so", target="cpu")    # or "cuda"; writes model.so + model.json
    model = aot.load("model.so")                             # numpy + ctypes only
    y = model(x)                 # the only function; or model.<name>(...) for any public function

Importing this package, `load` and running a model import nothing from MLIR:
`export` (which needs MLIR) is imported on first use.
"""

from .loader import Function, ManifestError, Model, cuda_device_error, load, manifest_path


def export(module, path, target: str = "cpu", *, functions=None, chip: str = "sm_90", features: str = "+ptx80",
           format: str = "isa", opt_level: int = 3, filename: str = "<string>", threads: int = 1) -> dict:
    """Compiles `module` (MLIR text or an mlir.ir.Module; not modified) into the shared object `path`
    plus the manifest `<stem>.json` next to it; returns the manifest.

    `target`: "cpu" or "cuda". `functions`: the public functions to export (default: all).
    CUDA: `chip`, `features` and `format` ("isa", "bin", "fatbin") select the GPU code. CPU: `threads`
    OpenMP threads are compiled in (1, the default: serial code, no OpenMP runtime; 0: this machine's
    count). `opt_level`: LLVM's -O level. Raises CompileError (MLIR diagnostics) or ValueError.
    Full description: `rlx_mlir.aot.exporter.export` (imported here on first use: it needs MLIR).
    """
    from .exporter import export as _export  # MLIR is needed to export, not to load and run

    return _export(module, path, target, functions=functions, chip=chip, features=features, format=format,
                   opt_level=opt_level, filename=filename, threads=threads)


__all__ = ["Function", "ManifestError", "Model", "cuda_device_error", "export", "load", "manifest_path"]
