"""Losses built from MIR ops, so that reverse mode differentiates them like any other ops."""

from __future__ import annotations

import numpy as np
from mlir import ir

from ..dialects import rlx
from ..dsl import element_type_from_name
from ..frontend.builder import BuildError, GraphModule, Tensor


def softmax_cross_entropy(g: GraphModule, logits: Tensor, labels: Tensor) -> Tensor:
    """The mean over rows of `-log softmax(logits)[label]` (PyTorch's `F.cross_entropy`).

    `logits` is `[..., C]` (float), `labels` `[...]` (i32 or i64, each in `0 .. C-1`; a label
    out of range picks no class, so its row's loss is `logsumexp`).  Computed stably as
    `logsumexp(z) - z[label]` with `z = logits - max(logits)`; the label's entry is picked by
    a one-hot product, whose backward is `softmax - onehot` per row.  Returns a rank-0 tensor.
    """
    shape, label_shape = logits.shape, labels.shape
    if not shape or tuple(shape[:-1]) != tuple(label_shape):
        raise BuildError(f"softmax_cross_entropy: labels {list(label_shape)} must be logits {list(shape)} without the class axis")
    if labels.dtype not in ("i32", "i64"):
        raise BuildError(f"softmax_cross_entropy: labels must be i32 or i64, got {labels.dtype}")
    classes, rank = shape[-1], len(shape)
    top = g.op(rlx.ReduceOp, logits, kind="max", axes=[rank - 1], keep_dim=True)
    z = logits - top
    total = g.op(rlx.ReduceOp, g.op(rlx.ExpOp, z), kind="sum", axes=[rank - 1], keep_dim=True)
    log_total = g.op(rlx.LogOp, total)
    iota = g.constant(np.arange(classes, dtype=np.int64 if labels.dtype == "i64" else np.int32))
    expanded = g.op(rlx.ReshapeOp, labels, result_type=_type(g, [*label_shape, 1], labels.dtype))
    onehot = g.op(rlx.CastOp, g.op(rlx.CompareOp, expanded, iota, predicate="eq"), result_type=_type(g, shape, logits.dtype))
    picked = g.op(rlx.ReduceOp, z * onehot, kind="sum", axes=[rank - 1], keep_dim=True)
    # A row whose label picks no class gets the max back (`top - top * hit`, exactly 0 where a class
    # is hit): its loss is logsumexp(logits), and no row's gradient reaches the max.  Without it such a
    # row's loss was logsumexp(z) and its gradient softmax - onehot(argmax): the label acted as the argmax.
    hit = g.op(rlx.ReduceOp, onehot, kind="sum", axes=[rank - 1], keep_dim=True)
    per_row = (log_total - picked) + (top - top * hit)
    return g.op(rlx.ReduceOp, per_row, kind="mean", axes=list(range(rank)))


def _type(g: GraphModule, shape, dtype: str) -> ir.Type:
    with g.context, ir.Location.unknown():
        return ir.RankedTensorType.get(list(shape), element_type_from_name(dtype))
