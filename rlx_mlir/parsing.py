"""Parsing MLIR text into a Module with real file locations.

Like mlir-opt, top-level ops that are not a single `builtin.module` are
wrapped in an implicit module.
"""

from __future__ import annotations

from mlir import ir

from .diagnostics import CompileError, DiagnosticCollector

_SEVERAL_TOP_LEVEL_OPS = "source must contain a single top-level operation"


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
            return _as_module(op.operation)
        module = ir.Module.create(ir.Location.file(filename, 1, 1))
        module.body.append(op.operation)
        return module


def _parse_wrapped(text: str, filename: str, diagnostics: DiagnosticCollector) -> ir.Module:
    """Zero or several top-level ops: parse them inside `module { ... }`.

    The opening brace goes on the first line when it holds no IR (a comment or
    a blank line), so line and column numbers of the ops stay those of the
    file; otherwise only columns on line 1 shift.
    """
    lines = text.split("\n")
    lines[0] = "module {" + lines[0]
    op = None
    try:
        op = ir.Operation.parse("\n".join(lines) + "\n}", source_name=filename)
    except ir.MLIRError:
        raise CompileError(f"failed to parse {filename}", diagnostics.errors, {filename: text}) from None
    return _as_module(op.operation)


def _as_module(module_op: ir.Operation) -> ir.Module:
    """An ir.Module holding the contents of a parsed `builtin.module` op.

    The bindings cannot wrap an existing module op as ir.Module (which the
    ExecutionEngine needs), so the ops and attributes move into a new one.
    """
    module = ir.Module.create(module_op.location)
    attributes = module_op.attributes
    for index in range(len(attributes)):
        named = attributes[index]
        module.operation.attributes[named.name] = named.attr
    for op in list(module_op.regions[0].blocks[0].operations):
        module.body.append(op.operation)
    return module
