"""Parsing MLIR text into a Module with real file locations.

Like mlir-opt, top-level ops that are not a single `builtin.module` are
wrapped in an implicit module.
"""

from __future__ import annotations

import re

from mlir import ir
from mlir.dialects import builtin

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
        if isinstance(op.opview, builtin.ModuleOp):
            return _as_module(op.operation)
        module = ir.Module.create(ir.Location.file(filename, 1, 1))
        module.body.append(op.operation)
        return module


def _parse_wrapped(text: str, filename: str, diagnostics: DiagnosticCollector) -> ir.Module:
    """Zero or several top-level ops: parse them inside `module { ... }`.

    The opening brace goes after the attribute and type alias definitions
    (which must stay at the top level), on a line without IR where there is
    one, so line and column numbers stay those of the file; otherwise only
    the columns of the first op's line shift.
    """
    lines = text.split("\n")
    at = _module_start(lines)
    lines[at] = "module {" + lines[at]
    try:
        op = ir.Operation.parse("\n".join(lines) + "\n}", source_name=filename)
    except ir.MLIRError:
        raise CompileError(f"failed to parse {filename}", diagnostics.errors, {filename: text}) from None
    return _as_module(op.operation)


_ALIAS = re.compile(r"^\s*[#!][A-Za-z_][\w.$-]*\s*=")
_NO_IR = re.compile(r"^\s*(//.*)?$")


def _module_start(lines: list[str]) -> int:
    """The line to open the implicit module on: after the alias definitions."""
    index, depth, blank = 0, 0, None
    while index < len(lines):
        line = lines[index]
        if depth == 0 and _NO_IR.match(line):
            blank = index if blank is None else blank
        elif depth == 0 and _ALIAS.match(line):
            blank = None
            depth = _bracket_depth(line)
        elif depth > 0:
            depth += _bracket_depth(line)
        else:
            return blank if blank is not None else index
        index += 1
    return blank if blank is not None else 0


def _bracket_depth(line: str) -> int:
    code = line.split("//", 1)[0].replace("->", "")  # the arrow of an affine map closes nothing
    return sum(code.count(c) for c in "([{<") - sum(code.count(c) for c in ")]}>")


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
