"""The HIR dialect `rlx_hir`: RLX's model blocks on tensors.

Importing this package defines and registers every HIR op (MLIR's dialect
search finds it by the namespace `rlx_hir`).  `rlx-hir-to-mir` expands each
block into MIR ops under the module's fusion policy.  MIR ops may appear
directly in an HIR function: that is RLX's `Mir(op)` escape hatch, and the
pass leaves them alone.  `dialect/rlx_hir.md` is rendered from these classes,
in the order of the imports below.
"""

from .attention import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .decoder import *  # noqa: F401,F403
from .dialect import FUSION_POLICIES, RlxHir  # noqa: F401
from .linear import *  # noqa: F401,F403
from .moe import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .quant import *  # noqa: F401,F403
from .recurrent import *  # noqa: F401,F403
