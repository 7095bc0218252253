"""The `rlx` dialect class and helpers shared by the op families."""

from __future__ import annotations

from mlir import ir

from ...dsl import Dialect, VerifyError
from ...ir.shapes import element_of


class Rlx(Dialect, name="rlx"):
    """RLX MIR: a fused tensor DAG of inference ops on ranked tensors.

    Ops are on ranked tensors, one result per op.  Shapes follow RLX (and NumPy
    where RLX says "broadcast"; PyTorch's functional ops where RLX is vague,
    as each op's description says); matmul weights are `[K, N]`.
    """


def same_element_type(*types: ir.Type) -> ir.Type:
    """The common element type of `types`; VerifyError when they differ."""
    elements = [element_of(t) for t in types]
    if any(e != elements[0] for e in elements[1:]):
        listed = ", ".join(str(e) for e in elements)
        raise VerifyError(f"requires operands of one element type, got {listed}")
    return elements[0]
