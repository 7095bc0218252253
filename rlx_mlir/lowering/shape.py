"""Lowering of shape and data-movement MIR ops."""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import linalg

from . import builders as lb
from ..dialects import rlx


def _lower_reshape(op) -> ir.Value:
    return lb.reshape(op.input, op.result.type)


def _lower_transpose(op) -> ir.Value:
    result_type = ir.RankedTensorType(op.result.type)
    init = lb.empty(result_type.shape, result_type.element_type)
    return linalg.transpose(op.input, outs=[init], permutation=op.perm).results[0]


LOWERINGS: dict[type, Callable] = {
    rlx.ReshapeOp: _lower_reshape,
    rlx.TransposeOp: _lower_transpose,
}
