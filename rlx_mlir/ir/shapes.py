"""Shape arithmetic shared by op inference and lowering (NumPy's rules)."""

from __future__ import annotations

from typing import Sequence

from mlir import ir

DYNAMIC = ir.ShapedType.get_dynamic_size()


def shape_of(type_: ir.Type) -> tuple[int, ...]:
    return tuple(ir.RankedTensorType(type_).shape)


def element_of(type_: ir.Type) -> ir.Type:
    return ir.ShapedType(type_).element_type


def format_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join("?" if d == DYNAMIC else str(d) for d in shape) + "]"


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """NumPy broadcasting of two shapes; None when they do not broadcast."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif x == DYNAMIC or y == DYNAMIC:
            out.append(y if x == DYNAMIC else x)
        else:
            return None
    return tuple(out)


def num_elements(shape: Sequence[int]) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


def is_static(shape: Sequence[int]) -> bool:
    return all(d != DYNAMIC for d in shape)


def reassociation(reshape: ir.OpView) -> list[list[int]]:
    """The dimension groups of a `tensor`/`memref` `expand_shape` or `collapse_shape`."""
    return [[ir.IntegerAttr(i).value for i in group] for group in ir.ArrayAttr(reshape.attributes["reassociation"])]
