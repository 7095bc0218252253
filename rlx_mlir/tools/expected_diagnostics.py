"""MLIR's `--verify-diagnostics`: `// expected-error @+1 {{message}}` checking.

An expectation names a severity, a line (the comment's own line, `@+N`,
`@-N`, `@above`, `@below`, `@N` or `@unknown`) and a substring of the
message.  Every expectation must be matched by one diagnostic, and every
diagnostic must be expected, as in mlir-opt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ..ir.diagnostics import Diagnostic

_EXPECTED = re.compile(
    r"expected-(error|warning|note|remark)\s*(@(?:[+-]?\d+|above|below|unknown))?\s*\{\{(.*?)\}\}"
)
_IGNORED_NOTES = ("see current operation",)


@dataclass
class Expectation:
    severity: str
    line: Optional[int]  # None for @unknown
    message: str
    comment_line: int
    matched: bool = False


def parse_expectations(text: str, first_line: int = 1) -> list[Expectation]:
    """Expectations in `text`, whose first line is line `first_line` of the file."""
    expectations = []
    lines = text.split("\n")
    for offset, line in enumerate(lines):
        number = first_line + offset
        for match in _EXPECTED.finditer(line):
            severity, anchor, message = match.group(1), match.group(2), match.group(3)
            expectations.append(
                Expectation(severity, _target_line(anchor, number, lines, offset, first_line), message, number)
            )
    return expectations


def _target_line(anchor: Optional[str], number: int, lines: list[str], offset: int, first_line: int) -> Optional[int]:
    if anchor is None:
        return number
    spec = anchor[1:]
    if spec == "unknown":
        return None
    if spec in ("above", "below"):
        step = -1 if spec == "above" else 1
        index = offset + step
        while 0 <= index < len(lines) and "expected-" in lines[index]:
            index += step
        return first_line + index
    if spec[0] in "+-":
        return number + int(spec)
    return int(spec)


def check(expectations: list[Expectation], diagnostics: list[Diagnostic], filename: str) -> list[str]:
    """Problems, rendered as diagnostics: unexpected diagnostics and unmet expectations."""
    problems = []
    for diagnostic in _flatten(diagnostics):
        line = diagnostic.position.line if diagnostic.position else None
        match = next(
            (
                e
                for e in expectations
                if not e.matched
                and e.severity == diagnostic.severity
                and e.line == line
                and e.message in diagnostic.message
            ),
            None,
        )
        if match:
            match.matched = True
        elif not (diagnostic.severity == "note" and diagnostic.message.startswith(_IGNORED_NOTES)):
            where = f"{filename}:{line}:{diagnostic.position.column}: " if diagnostic.position else ""
            problems.append(f"{where}error: unexpected {diagnostic.severity}: {diagnostic.message}")
    for expectation in expectations:
        if not expectation.matched:
            problems.append(
                f"{filename}:{expectation.comment_line}:1: error: expected {expectation.severity} "
                f"\"{expectation.message}\" was not produced"
            )
    return problems


def _flatten(diagnostics: list[Diagnostic]):
    for diagnostic in diagnostics:
        yield diagnostic
        yield from _flatten(diagnostic.notes)
