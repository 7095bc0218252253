"""Lowerings of MIR ops to upstream dialects, one module per op family.

`LOWERINGS` maps each op class to a function that builds its replacement at
the op (insertion point and location already set) and returns the result value.
"""

from typing import Callable

from . import attention, cache, control, data, elementwise, linalg, norm, recurrent, reduction, selection, shape

LOWERINGS: dict[type, Callable] = {}
for _family in (data, elementwise, linalg, norm, attention, shape, reduction, selection, recurrent, control, cache):
    LOWERINGS.update(_family.LOWERINGS)
