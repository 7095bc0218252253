"""Parsing MLIR text into a Module with real file locations.

Like mlir-opt, top-level ops that are not a single `builtin.module` are
wrapped in an implicit module.
"""

from __future__ import annotations

import re

from mlir import ir

from .diagnostics import CompileError, DiagnosticCollector

_SEVERAL_TOP_LEVEL_OPS = "source must contain a single top-level operation"
_NO_IR = re.compile(r"^\s*(//.*)?$")


def parse_source(text: str, filename: str, context: ir.Context, diagnostics: DiagnosticCollector) -> ir.Module:
    """Parses `text` as the contents of `filename`; raises CompileError on a syntax error.

    `diagnostics` must be attached to `context`; parse errors are read from it.
    """
    with context:
        seen = len(diagnostics.diagnostics)
        try:
            op = ir.Operation.parse(text, source_name=filename)
        except ir.MLIRError:
            if not any(_SEVERAL_TOP_LEVEL_OPS in d.message for d in diagnostics.diagnostics[seen:]):
                raise CompileError(f"failed to parse {filename}", diagnostics.errors, {filename: text}) from None
            del diagnostics.diagnostics[seen:]
            return _parse_wrapped(text, filename, diagnostics)
        if op.operation.name == "builtin.module":
            return ir.Module(op.operation) if not isinstance(op, ir.Module) else op
        module = ir.Module.create(ir.Location.file(filename, 1, 1))
        module.body.append(op.operation)
        return module


def _parse_wrapped(text: str, filename: str, diagnostics: DiagnosticCollector) -> ir.Module:
    """Zero or several top-level ops: parse them inside `module { ... }`.

    The opening brace goes on the first line without IR (a comment or a blank
    line), so line and column numbers of the ops stay those of the file.
    """
    lines = text.split("\n")
    at = next((i for i, line in enumerate(lines) if _NO_IR.match(line)), 0)
    lines[at] = "module {" + lines[at]
    op = None
    try:
        op = ir.Operation.parse("\n".join(lines) + "\n}", source_name=filename)
    except ir.MLIRError:
        raise CompileError(f"failed to parse {filename}", diagnostics.errors, {filename: text}) from None
    return ir.Module(op.operation) if not isinstance(op, ir.Module) else op
