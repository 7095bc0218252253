"""MLIR diagnostics collected from a Context and rendered the way mlir-opt does.

    with DiagnosticCollector(context) as diagnostics:
        ...                       # parse, verify, run passes
    print(diagnostics.render())   # file:line:col: error: ... plus the source line

`CompileError` carries rendered diagnostics out of the Python API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from mlir import ir

from ..errors import RlxError
from .positions import SourcePosition

_SEVERITY_NAMES = {
    ir.DiagnosticSeverity.ERROR: "error",
    ir.DiagnosticSeverity.WARNING: "warning",
    ir.DiagnosticSeverity.NOTE: "note",
    ir.DiagnosticSeverity.REMARK: "remark",
}


@dataclass
class Diagnostic:
    severity: str
    message: str
    position: Optional[SourcePosition]
    notes: list["Diagnostic"] = field(default_factory=list)

    @staticmethod
    def from_mlir(diagnostic: ir.Diagnostic) -> "Diagnostic":
        return Diagnostic(
            severity=_SEVERITY_NAMES.get(diagnostic.severity, "error"),
            message=str(diagnostic.message),
            position=position_of(diagnostic.location),
            notes=[Diagnostic.from_mlir(note) for note in diagnostic.notes],
        )

    def render(self, sources: Optional[dict[str, str]] = None) -> str:
        where = (
            f"{self.position.filename}:{self.position.line}:{self.position.column}: "
            if self.position
            else ""
        )
        lines = [f"{where}{self.severity}: {self.message}"]
        snippet = _snippet(self.position, sources or {})
        if snippet:
            lines.append(snippet)
        lines += [note.render(sources) for note in self.notes]
        return "\n".join(lines)


def position_of(location: ir.Location) -> Optional[SourcePosition]:
    """The file position a location points at, looking through names, call sites and fusions."""
    if location.is_a_file():
        return SourcePosition(location.filename, location.start_line, location.start_col)
    if location.is_a_name():
        return position_of(location.child_loc)
    if location.is_a_callsite():
        return position_of(location.callee)
    if location.is_a_fused():
        for inner in location.locations:
            position = position_of(inner)
            if position:
                return position
    return None


def _snippet(position: Optional[SourcePosition], sources: dict[str, str]) -> str:
    if position is None or position.filename not in sources:
        return ""
    lines = sources[position.filename].splitlines()
    if not 1 <= position.line <= len(lines):
        return ""
    text = lines[position.line - 1]
    return f"{text}\n{' ' * max(position.column - 1, 0)}^"


class DiagnosticCollector:
    """Captures every diagnostic a Context emits while the `with` block runs.

    `explain`, where given, may reword each diagnostic as it arrives (e.g. name the op and attribute
    that an IRDL error leaves out); it changes the Diagnostic in place."""

    def __init__(self, context: ir.Context, explain: Optional[Callable[[Diagnostic], None]] = None):
        self.context = context
        self.explain = explain
        self.diagnostics: list[Diagnostic] = []
        self._handler = None
        self._previous_emit = None

    def __enter__(self) -> "DiagnosticCollector":
        self._previous_emit = self.context.emit_error_diagnostics
        self.context.emit_error_diagnostics = True
        self._handler = self.context.attach_diagnostic_handler(self._collect)
        return self

    def __exit__(self, *exc) -> None:
        # Drop the handler once detached: it holds the bound `_collect` (so this collector and
        # its Context), and the binding's handler object is invisible to Python's cycle
        # collector, so keeping it would keep every compile's Context alive forever.
        self._handler.detach()
        self._handler = None
        self.context.emit_error_diagnostics = self._previous_emit

    def _collect(self, diagnostic: ir.Diagnostic) -> bool:
        collected = Diagnostic.from_mlir(diagnostic)
        if self.explain is not None:
            self.explain(collected)
        self.diagnostics.append(collected)
        return True

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    def render(self, sources: Optional[dict[str, str]] = None) -> str:
        return "\n".join(d.render(sources) for d in self.diagnostics)


class CompileError(RlxError):
    """Parsing, verification or lowering failed; `diagnostics` says where and why."""

    def __init__(self, summary: str, diagnostics: list[Diagnostic] = (), sources=None):
        self.summary = summary
        self.diagnostics = list(diagnostics)
        self._sources = sources
        rendered = self.render_diagnostics()
        super().__init__(f"{summary}\n{rendered}" if rendered else summary)

    def render_diagnostics(self) -> str:
        return "\n".join(d.render(self._sources) for d in self.diagnostics)
