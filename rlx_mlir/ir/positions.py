"""`SourcePosition`: a place in a source file (file, line, column), as diagnostics name it. MLIR-free,
so that what is stored without MLIR (an executable's signature on disk) keeps its positions."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourcePosition:
    filename: str
    line: int
    column: int
