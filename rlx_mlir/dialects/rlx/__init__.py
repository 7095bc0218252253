"""The MIR dialect `rlx`: RLX's fused tensor DAG, one result per op.

Op families live in the modules of this package; importing it defines and
registers all of them (MLIR's dialect search finds this module by the
namespace `rlx`).  `dialect/rlx.md` is rendered from these classes, in the
order of the imports below.
"""

from .attention import *  # noqa: F401,F403
from .cache import *  # noqa: F401,F403
from .control import *  # noqa: F401,F403
from .data import *  # noqa: F401,F403
from .dialect import Rlx  # noqa: F401
from .elementwise import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .quant import *  # noqa: F401,F403
from .recurrent import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .routing import *  # noqa: F401,F403
from .selection import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
