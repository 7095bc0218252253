"""rlx-mlir: RLX's HIR / MIR / LIR tensor compiler rebuilt on MLIR, in Python.

    import rlx_mlir
    exe = rlx_mlir.compile(mlir_text, entry="mlp", target="cpu")
    y = exe(x, w, b)
"""

import importlib

# Imported on first use, so that `rlx_mlir.aot` (whose loader needs only numpy and
# ctypes) can be imported where MLIR is not installed.
_EXPORTS = {
    "GraphModule": ".frontend.builder",
    "Tensor": ".frontend.builder",
    "make_context": ".dialects.context",
    "CompileError": ".ir.diagnostics",
    "RlxError": ".errors",
    "Executable": ".runtime.executable",
    "clear_compile_cache": ".runtime.compiler",
    "compile": ".runtime.compiler",
    "compile_cache_info": ".runtime.compiler",
}


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'rlx_mlir' has no attribute '{name}'")


def __dir__():
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "CompileError",
    "Executable",
    "GraphModule",
    "RlxError",
    "Tensor",
    "clear_compile_cache",
    "compile",
    "compile_cache_info",
    "make_context",
]
