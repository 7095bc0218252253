"""Lowerings of MIR ops to upstream dialects, one module per op family.

`LOWERINGS` maps each op class to a function that builds its replacement at
the op (insertion point and location already set) and returns the result value.

An op whose results have no elements (a zero-size dimension) lowers to
`tensor.empty` of their types, whatever the op: there is nothing to compute.
This also keeps zero-size operands away from the family lowerings, whose slices
MLIR's verifier would reject (any static offset into a size-0 dimension is
"out-of-bounds", offset 0 included).
"""

from typing import Callable

from mlir import ir

from ...ir.shapes import num_elements
from . import (
    attention,
    cache,
    control,
    data,
    elementwise,
    linalg,
    norm,
    quant,
    recurrent,
    reduction,
    routing,
    selection,
    shape,
    tiled_attention,
)
from .builders import empty


def _empty_if_no_elements(lowering: Callable) -> Callable:
    def lower(op):
        types = [ir.RankedTensorType(result.type) for result in op.results]
        if all(num_elements(t.shape) == 0 for t in types):
            return [empty(t.shape, t.element_type) for t in types]
        return lowering(op)

    lower.__name__ = lower.__qualname__ = getattr(lowering, "__name__", "lower")
    return lower


LOWERINGS: dict[type, Callable] = {}
for _family in (data, elementwise, linalg, quant, routing, norm, attention, shape, reduction, selection, recurrent, control, cache):
    LOWERINGS.update({op_class: _empty_if_no_elements(f) for op_class, f in _family.LOWERINGS.items()})

# The tiled attention lowerings (`rlx-mir-to-linalg{tiled-attention}`), in place of the plain ones.
TILED_LOWERINGS: dict[type, Callable] = {
    op_class: _empty_if_no_elements(f) for op_class, f in tiled_attention.LOWERINGS.items()
}


def threaded_lowerings(threads: int) -> dict[type, Callable]:
    """In place of the plain ones where the compile's thread count is known (`rlx-mir-to-linalg{threads}`):
    lowerings that split their work into as many shares for every thread."""
    return {op_class: _empty_if_no_elements(f) for op_class, f in routing.threaded_lowerings(threads).items()}
