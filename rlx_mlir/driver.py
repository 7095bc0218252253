"""The compile driver: the one path from MLIR text (or a module in memory) through the RLX verifier
and a pass pipeline to a module, or to a `CompileError` carrying MLIR's diagnostics.

    with Compilation(filename="model.mlir") as job:  # a Context with the RLX dialects; diagnostics collected
        module = job.parse(text)                     # parsed and verified, else CompileError
        job.run(module, LowerToLLVM(threads=4), "lowering to LLVM failed")   # else CompileError
        ...                                          # the module is in the LLVM dialect now

`compile()` (runtime/jit.py, runtime/cuda.py), `aot.export`, the specialisation of dynamic modules,
`GraphModule.lower/plan/optimize` and `rlx-opt` all go through it; what they do around it (the
JIT, linking a library, printing) is theirs.

Reproducers.  When a pipeline fails, the driver can write the module as the pipeline received it
plus the exact `rlx-opt` command line that fails the same way (as torch-mlir's repro report does):
pass `reproducer=DIRECTORY` to `Compilation`, or set the environment variable `RLX_REPRODUCER_DIR`
(which reaches `compile()`, `aot.export` and the builder; `reproducer=False` writes none).  The file
is `DIRECTORY/rlx-repro-<hash>.mlir`:

    // rlx-mlir reproducer: lowering to LLVM failed
    // reproduce: rlx-opt /tmp/repro/rlx-repro-3f2a9c01d4e7.mlir '--pass-pipeline=builtin.module(...)'
    module { ... }                                   // printed with its locations

and the CompileError's message ends with `(reproducer: <path>)`.  The module keeps its source
locations, so `rlx-opt` reports the same `file:line:col: error: ...` diagnostics.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
from pathlib import Path
from typing import Optional, Sequence, Union

from mlir import ir

from . import progress
from .dialects import verifier
from .dialects.context import make_context
from .ir.diagnostics import CompileError, DiagnosticCollector
from .ir.parsing import parse_source
from .passmanager.base import Configurable
from .passmanager.pipeline import ANCHOR, Element, build_pass_manager, expand, parse_pipeline

REPRODUCER_ENV = "RLX_REPRODUCER_DIR"

Pipeline = Union[str, Configurable, Sequence[Union[Element, Configurable]]]


def parse_verified(text: str, filename: str, context: ir.Context, diagnostics: DiagnosticCollector) -> ir.Module:
    """`text` parsed (as `filename`) and verified; CompileError with the diagnostics otherwise.

    `diagnostics` is the DiagnosticCollector attached to `context`.
    """
    module = parse_source(text, filename, context, diagnostics)
    if not verifier.verify(module.operation):
        raise CompileError("module does not verify", diagnostics.errors, {filename: text})
    return module


class Compilation:
    """One compile job: a Context (a fresh one with the RLX dialects unless given) with a
    diagnostic collector attached while the `with` block runs, the sources parsed in it (to
    show the offending line in errors), and where a failing pipeline writes its reproducer."""

    def __init__(self, context: Optional[ir.Context] = None, *, filename: str = "<string>",
                 reproducer: Union[None, bool, str, os.PathLike] = None):
        self.context = context if context is not None else make_context()
        self.filename = filename
        self.sources: dict[str, str] = {}
        self.diagnostics = DiagnosticCollector(self.context, explain=verifier.explain_diagnostic)
        self.reproducer = reproducer
        self._stack: Optional[contextlib.ExitStack] = None
        self._verified: Optional[ir.Operation] = None  # the module `parse` verified, until a pipeline runs on it

    def __enter__(self) -> "Compilation":
        with contextlib.ExitStack() as stack:
            stack.enter_context(self.context)
            stack.enter_context(self.diagnostics)
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc) -> None:
        stack, self._stack, self._verified = self._stack, None, None
        stack.__exit__(*exc)

    def parse(self, text: str, filename: Optional[str] = None, *, verify: bool = True) -> ir.Module:
        """`text` parsed as `filename` (default: the job's) and, with `verify`, verified by MLIR and
        the RLX verifier; CompileError with the diagnostics otherwise."""
        filename = filename or self.filename
        self.sources[filename] = text
        with progress.stage(f"parse {filename}" + (" and verify" if verify else "")):
            if verify:
                module = parse_verified(text, filename, self.context, self.diagnostics)
                self._verified = module.operation
                return module
            return parse_source(text, filename, self.context, self.diagnostics)

    def run(self, module: Union[ir.Module, ir.Operation], pipeline: Pipeline, summary: str, **printing) -> None:
        """Runs `pipeline` (pipeline text, a pass or pipeline, or a list of them and upstream text)
        on `module` in place; CompileError(`summary`, the diagnostics) if a pass fails, after
        writing a reproducer where one is asked for. `printing`: build_pass_manager's IR printing."""
        operation = module.operation
        verified, self._verified = self._verified is not None and operation == self._verified, None
        elements = _elements(pipeline)
        directory = self._reproducer_directory()
        before = operation.get_asm(enable_debug_info=True) if directory is not None else None
        try:
            with progress.stage(stage_name(pipeline)):
                build_pass_manager(elements, self.context, input_verified=verified, **printing).run(operation)
        except ir.MLIRError:
            if directory is not None:
                try:
                    path = write_reproducer(directory, before, pipeline_text(pipeline), summary)
                    summary = f"{summary} (reproducer: {path})"
                except OSError as error:  # the compile error is the news; say why there is no reproducer
                    summary = f"{summary} (no reproducer written to {directory}: {error.strerror or error})"
            raise self.error(summary) from None

    def error(self, summary: str) -> CompileError:
        """A CompileError with `summary` and the errors diagnosed so far (with their source lines)."""
        return CompileError(summary, self.diagnostics.errors, self.sources)

    def _reproducer_directory(self) -> Optional[Path]:
        if self.reproducer is False:
            return None
        chosen = self.reproducer if self.reproducer not in (None, True) else os.environ.get(REPRODUCER_ENV, "")
        return Path(chosen) if chosen else None


def _elements(pipeline: Pipeline) -> list[Element]:
    if isinstance(pipeline, str):
        return parse_pipeline(pipeline)
    if isinstance(pipeline, Configurable):
        return expand(pipeline)
    flat: list[Element] = []
    for item in pipeline:
        flat += [item] if isinstance(item, str) else expand(item)
    return flat


def stage_name(pipeline: Pipeline) -> str:
    """What a progress line calls running `pipeline`: its pass or pipeline names, options left out."""
    if isinstance(pipeline, str):
        return pipeline.strip().split("{", 1)[0].removeprefix(ANCHOR + "(")
    items = [pipeline] if isinstance(pipeline, Configurable) else list(pipeline)
    names = [item.name if isinstance(item, Configurable) else item.split("{", 1)[0] for item in items]
    return ", ".join(names) if len(names) <= 3 else f"{', '.join(names[:3])}, ... ({len(names)} passes)"


def pipeline_text(pipeline: Pipeline) -> str:
    """`pipeline` as the text `rlx-opt --pass-pipeline=` reads: `builtin.module(a,b{k=v},...)`."""
    if isinstance(pipeline, str):
        stripped = pipeline.strip()
        return stripped if stripped.startswith(ANCHOR) else f"{ANCHOR}({stripped})"
    items = [pipeline] if isinstance(pipeline, Configurable) else list(pipeline)
    return f"{ANCHOR}({','.join(item if isinstance(item, str) else item.spelled() for item in items)})"


def reproducer_command(path: Union[str, os.PathLike], pipeline: str) -> str:
    """The shell command that runs `pipeline` on the reproducer at `path`."""
    return f"rlx-opt {shlex.quote(str(path))} {shlex.quote('--pass-pipeline=' + pipeline)}"


def write_reproducer(directory: Union[str, os.PathLike], module_text: str, pipeline: str, summary: str) -> Path:
    """Writes `module_text` with the `rlx-opt` command that runs `pipeline` on it into `directory`
    (created if needed) as `rlx-repro-<hash>.mlir`; returns its path."""
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(f"{pipeline}\n{module_text}".encode()).hexdigest()[:12]
    path = directory / f"rlx-repro-{digest}.mlir"
    header = f"// rlx-mlir reproducer: {' '.join(summary.split())}\n// reproduce: {reproducer_command(path, pipeline)}\n"
    path.write_text(header + module_text)
    return path
