"""Creating MLIR Contexts that know the RLX dialects."""

from __future__ import annotations

from mlir import ir
from mlir._mlir_libs._mlir import globals as _mlir_globals

from . import rlx as _rlx
from . import rlx_hir as _rlx_hir
from . import rlx_lir as _rlx_lir

# IR walks look up Python op classes by dialect namespace in these modules.
if "rlx_mlir.dialects" not in _mlir_globals.dialect_search_modules:
    _mlir_globals.append_dialect_search_prefix("rlx_mlir.dialects")

RLX_DIALECTS = (_rlx.Rlx, _rlx_hir.RlxHir, _rlx_lir.RlxLir)


def make_context() -> ir.Context:
    """A fresh Context with every upstream dialect and the RLX dialects loaded.

    Multithreading is off: each compile job owns its Context, and MLIR's thread
    pool per Context would otherwise multiply idle threads.
    """
    context = ir.Context()
    context.enable_multithreading(False)
    load_dialects(context)
    return context


def load_dialects(context: ir.Context) -> None:
    """Loads the RLX dialects into an existing Context (idempotent)."""
    for dialect in RLX_DIALECTS:
        dialect.load(context)
