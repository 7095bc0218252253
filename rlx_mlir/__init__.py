"""rlx-mlir: RLX's HIR / MIR / LIR tensor compiler rebuilt on MLIR, in Python.

    import rlx_mlir
    exe = rlx_mlir.compile(mlir_text, entry="mlp", target="cpu")
    y = exe(x, w, b)
"""

from .builder import GraphModule, Tensor
from .context import make_context
from .diagnostics import CompileError
from .runtime.jit import Executable, compile

__all__ = ["CompileError", "Executable", "GraphModule", "Tensor", "compile", "make_context"]
