"""The HIR dialect `rlx_hir`: RLX's model blocks on tensors.

Importing this package defines and registers every HIR op (MLIR's dialect
search finds it by the namespace `rlx_hir`).  `rlx-hir-to-mir` expands each
block into MIR ops under the module's fusion policy.  MIR ops may appear
directly in an HIR function: that is RLX's `Mir(op)` escape hatch.
"""

from .dialect import RlxHir  # noqa: F401
