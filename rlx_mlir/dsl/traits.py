"""Op traits.  IRDL ops carry no MLIR traits in LLVM 22, so traits live on the
Python op classes and RLX passes read them (e.g. rlx-dce removes unused `Pure`
ops, which upstream DCE must keep because it cannot see their effects)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Trait:
    name: str
    doc: str


Pure = Trait("Pure", "no side effects: removed when unused, equal ops may be merged")
Elementwise = Trait("Elementwise", "each result element depends only on the operand elements at the same (broadcast) index")
