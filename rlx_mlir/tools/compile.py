"""rlx-compile: compile an RLX MLIR file ahead of time for a native program (iree-compile-like).

    rlx-compile model.mlir -o libmodel.so --target cpu        # libmodel.so, libmodel.json, libmodel.h
    rlx-compile model.mlir -o model.o --emit object            # the object file (+ model.h)
    rlx-compile model.mlir -o libmodel.a --emit static         # a static library (+ libmodel.h:
                                                               #   rlx_model_open_model(&err))
    rlx-compile model.mlir -o libmodel.so --params w.safetensors  # weights shipped beside it, bound
                                                               #   to every context by the runtime
    rlx-compile model.mlir -o model.h --emit header            # the header alone
    rlx-compile model.mlir -o model.ll.mlir --emit mlir-llvm   # the lowered module (LLVM dialect)
    rlx-compile model.mlir -o libmodel.so --target cuda --chip sm_80 --features +ptx70
                                                               # host code + the kernels for an NVIDIA GPU;
                                                               #   the C runtime loads libcuda at run time
    rlx-compile --cmake-dir                                    # where RlxMlirConfig.cmake is

Every form is a stage of `rlx_mlir.aot.export` (the one compile sequence, through
`driver.py`); the header comes from the same function records as the manifest
(`rlx_mlir/aot/header.py`). The C runtime (`rlx/runtime.h`, `rlx_model_open`) loads
the library and its manifest; `find_package(RlxMlir CONFIG)` with the directory
`--cmake-dir` prints gives CMake `rlx_add_model`. Object files are cached on disk across
processes (`RLX_CACHE_DIR`, see `rlx_mlir/runtime/disk_cache.py`): compiling an unchanged
module again only links.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Optional

from ..aot.exporter import EMIT_KINDS, export, static_symbol_prefix
from ..aot.header import c_header, c_identifier
from ..aot.manifest import ManifestError
from ..aot.params import SUFFIX as PARAMS_SUFFIX
from ..aot.params import ParamsError
from ..errors import RlxError
from ..targets import TARGETS
from ..targets.cpu import MAX_THREADS
from ..targets.cuda import FORMATS
from .cli import ArgumentParser, ToolError, guarded, read_source

NATIVE = Path(__file__).resolve().parents[1] / "native"  # the C runtime and CMake package, shipped
CMAKE_DIR = NATIVE / "cmake"


def _parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="rlx-compile",
        description="Compile an RLX MLIR file into a shared library (or object) with a C header and manifest.",
    )
    parser.add_argument("input_file", metavar="FILE", nargs="?", help="MLIR file, '-' for standard input")
    parser.add_argument("-o", dest="output", metavar="PATH", help="the file to write (library, object, header...)")
    parser.add_argument("--target", choices=list(TARGETS), default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--entry", action="append", default=[], metavar="NAME",
                        help="a function to export (repeatable; default: every public function)")
    parser.add_argument("--threads", type=int, default=1, metavar="N",
                        help=f"OpenMP threads compiled into the code (1: serial, the default; 0: this machine's; "
                             f"at most {MAX_THREADS})")
    parser.add_argument("--emit", choices=["shared", "header", *[k for k in EMIT_KINDS if k != "shared"]],
                        default="shared", help="what -o receives (default: shared)")
    parser.add_argument("--header", metavar="PATH", help="where the C header goes (default: <output stem>.h)")
    parser.add_argument("--cpu", metavar="NAME", help="the CPU to tune for and use the instructions of "
                        "(LLVM -mcpu: 'native' = this machine's); default: the target's baseline, any machine")
    parser.add_argument("-O", dest="opt_level", type=int, choices=range(4), default=3, help="LLVM -O level")
    parser.add_argument("--params", metavar="FILE", help="a safetensors file with the model's weights: checked "
                        "against them and shipped beside the library (<stem>.safetensors), which the C runtime "
                        "binds to every context")
    gpu = parser.add_argument_group("--target cuda")
    gpu.add_argument("--chip", help="the NVIDIA chip to compile the kernels for (default: sm_90)")
    gpu.add_argument("--features", help="the PTX version, as LLVM's '+ptxNN' (default: +ptx80)")
    gpu.add_argument("--gpu-format", choices=list(FORMATS), help="how the kernels are embedded (default: isa)")
    parser.add_argument("--cmake-dir", action="store_true", help="print the directory of RlxMlirConfig.cmake")
    parser.add_argument("--include-dir", action="store_true", help="print the directory holding rlx/runtime.h")
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    return guarded("rlx-compile", _main, sys.argv[1:] if argv is None else argv)


def _main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.cmake_dir or args.include_dir:
        print(CMAKE_DIR if args.cmake_dir else NATIVE / "include")
        return 0
    if args.input_file is None:
        raise ToolError("no input file (rlx-compile FILE -o OUTPUT)")
    if not args.output:
        raise ToolError("no output path: give -o PATH")
    gpu = {"chip": args.chip, "features": args.features, "format": args.gpu_format}
    if args.target != "cuda" and any(value is not None for value in gpu.values()):
        given = next(name for name, value in gpu.items() if value is not None)
        raise ToolError(f"--{'gpu-format' if given == 'format' else given} is an option of --target cuda")
    text, filename = read_source(args.input_file)
    output = Path(args.output)
    header = Path(args.header) if args.header else output.with_suffix(".h")
    if args.emit == "header":
        header = output
    if args.emit in ("shared", "object", "static") and header.resolve() == output.resolve():
        raise ToolError(f"the header path {header} is the output path; name the output otherwise")
    try:
        if args.emit == "header":  # the function records come from the lowering (the arena's size)
            with tempfile.TemporaryDirectory(prefix="rlx-compile-") as scratch:
                records = _export(text, filename, os.path.join(scratch, "model.mlir"), args, "mlir-llvm")
        else:
            records = _export(text, filename, str(output), args, args.emit)
    except (ValueError, ManifestError, ParamsError) as error:
        raise ToolError(str(error)) from None
    except RlxError as error:
        # A CompileError (its class needs MLIR, which a cache hit never imports: looked up by then).
        from ..ir.diagnostics import CompileError

        if not isinstance(error, CompileError):
            raise
        print(error.render_diagnostics() or f"{filename}: error: {error.summary}", file=sys.stderr)
        return 1
    if args.emit in ("shared", "object", "static", "header"):
        library = output.name if args.emit in ("shared", "static") else None
        guard = "RLX_MODEL_" + c_identifier(header.stem) + "_H"
        source = "<stdin>" if filename == "<stdin>" else Path(filename).name
        try:
            header.parent.mkdir(parents=True, exist_ok=True)
            header.write_text(c_header(
                records["functions"], args.target, library or "", source, guard,
                static_prefix=static_symbol_prefix(output) if args.emit == "static" else "",
                params=output.with_suffix(PARAMS_SUFFIX).name if args.params and args.emit == "shared" else ""))
        except OSError as error:
            raise ToolError(f"could not write the header '{header}': {error.strerror}") from None
    return 0


def _export(text: str, filename: str, path: str, args, emit: str) -> dict:
    gpu = {name: value for name, value in (("chip", args.chip), ("features", args.features),
                                           ("format", args.gpu_format)) if value is not None}
    return export(text, path, args.target, functions=args.entry or None, opt_level=args.opt_level,
                  filename=filename, threads=args.threads, emit=emit, cpu=args.cpu, params=args.params, **gpu)
if __name__ == "__main__":
    sys.exit(main())
