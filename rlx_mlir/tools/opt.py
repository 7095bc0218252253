"""rlx-opt: mlir-opt for RLX.  Parses MLIR, verifies it, runs a pass pipeline
mixing RLX and upstream passes, and prints the result.

    rlx-opt mlp.mlir --pass-pipeline='builtin.module(rlx-mir-to-linalg,canonicalize,cse)'
    rlx-opt mlp.mlir --rlx-lower-to-llvm
    rlx-opt bad.mlir --split-input-file --verify-diagnostics
"""

from __future__ import annotations

import contextlib
import sys
from typing import Optional

from mlir import ir

from ..dialects.context import RLX_DIALECTS, make_context
from ..driver import Compilation
from ..ir.diagnostics import CompileError
from ..passmanager import registry
from ..passmanager.pipeline import PipelineError, parse_pipeline
from ..transforms.mir import fusion_report
from . import expected_diagnostics
from .cli import ArgumentParser, ToolError, guarded, read_source, write_output

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


def _parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="rlx-opt",
        description=_DESCRIPTION,
        epilog=_pass_listing(),
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", nargs="?", default="-", help="input file, '-' for standard input (default)")
    parser.add_argument("-o", dest="output", default="-", metavar="FILE", help="output file (default: standard output)")
    parser.add_argument("--pass-pipeline", metavar="PIPELINE", help="e.g. 'builtin.module(rlx-mir-to-linalg,cse)'")
    parser.add_argument("--split-input-file", action="store_true", help=f"process chunks separated by '{SPLIT_MARKER}' independently")
    parser.add_argument("--verify-diagnostics", action="store_true", help="check diagnostics against 'expected-error {{...}}' comments")
    parser.add_argument("--mlir-print-ir-after-all", action="store_true", help="print the IR after every pass (to stderr)")
    parser.add_argument("--mlir-print-ir-after-failure", action="store_true", help="print the IR after a pass fails (to stderr)")
    parser.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations")
    parser.add_argument("--mlir-print-op-generic", action="store_true", help="print every op in generic form")
    parser.add_argument("--emit-irdl", action="store_true", help="print the IRDL definition of the RLX dialects and exit")
    parser.add_argument("--list-passes", action="store_true", help="list RLX passes and pipelines with their options and exit")
    parser.add_argument("--rlx-fusion-report", action="store_true", help="print what the fusion passes fused and missed (to stderr)")
    return parser


def _split_pass_flags(argv: list[str], parser: ArgumentParser) -> tuple[list[str], list[str]]:
    """Separates tool options from pass flags (`--canonicalize`, `--rlx-lower-to-llvm=out-params=false`)."""
    known = {opt for action in parser._actions for opt in action.option_strings}
    options, passes = [], []
    for arg in argv:
        name = arg.split("=", 1)[0]
        if arg.startswith("-") and arg != "-" and name not in known and not name.startswith("--mlir-"):
            flag = name.lstrip("-")
            opts = arg.split("=", 1)[1] if "=" in arg else None
            passes.append(f"{flag}{{{opts}}}" if opts else flag)
        else:
            options.append(arg)
    return options, passes


def _pipeline_from_flags(flags: list[str]) -> list:
    elements = []
    for flag in flags:
        try:
            elements += parse_pipeline(flag)
        except PipelineError as error:
            name = flag.split("{", 1)[0]
            raise ToolError(f"--{name}: {error.message}") from None
    return elements


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
    parser = _parser()
    option_args, pass_flags = _split_pass_flags(argv, parser)
    args = parser.parse_args(option_args)
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
        elements = _pipeline_from_flags(pass_flags)

    text, filename = read_source(args.input)
    context = make_context()
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
                print_ir_after_all=args.mlir_print_ir_after_all,
                print_ir_after_failure=args.mlir_print_ir_after_failure,
            )
        except CompileError:
            return None
    return module


if __name__ == "__main__":
    sys.exit(main())
