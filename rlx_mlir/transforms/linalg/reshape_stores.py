"""rlx-reshape-stores: store a reshaped result by reshaping its destination instead.

    %r = tensor.collapse_shape %x [[0], [1], [2, 3, 4]]
    bufferization.materialize_in_destination %r in restrict writable %view
  ->
    %v = memref.expand_shape %view [[0], [1], [2, 3, 4]]
    bufferization.materialize_in_destination %x in restrict writable %v

(and `tensor.expand_shape` as `memref.collapse_shape` of the destination; chains of reshapes
one after the other).  Why: `eliminate-empty-tensors` replaces the `tensor.empty` an op computes
into by the destination of the store only when the value reaches the store without a
reshape (it follows same-type values and casts only).  A lowering whose result is a reshape of
what its loop nest writes (RoPE writes `[B, S, H, 2, half]` and returns `[B, S, H * head_dim]`,
attention `[B, S, H, D]` for `[B, S, H * D]`) then computed into a fresh buffer that was copied
into the LIR plan's slot.  After this rewrite the loop nest writes the slot itself.

Only stores into a restrict, writable memref with the identity layout (an arena slot's
`memref.view`) of a reshape used by nothing else are rewritten: the reshaped memref names the
same bytes in the same order, so the stored elements land where they did.  Run it after
rlx-tile-matmul (which finds its own stores through reshapes) and before
eliminate-empty-tensors.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import bufferization, memref, tensor

from ...ir.shapes import reassociation
from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass


def _reshaped_source(store):
    """The reshape a store stores, when it may be moved onto the destination, else None."""
    source = store.source
    if not isinstance(source, ir.OpResult) or len(list(source.uses)) != 1:
        return None
    reshape = source.owner
    if not isinstance(reshape, (tensor.CollapseShapeOp, tensor.ExpandShapeOp)):
        return None
    if not (store.restrict and store.writable) or not isinstance(store.dest.type, ir.MemRefType):
        return None
    dest = ir.MemRefType(store.dest.type)
    if ir.AffineMapAttr(dest.layout).value != ir.AffineMap.get_identity(dest.rank) or not ir.RankedTensorType(reshape.src.type).has_static_shape:
        return None
    return reshape


def _reshaped_destination(reshape, dest: ir.Value) -> ir.Value:
    """`dest` seen with the shape of the reshape's source (the inverse reshape, on memrefs)."""
    source = ir.RankedTensorType(reshape.src.type)
    dest_type = ir.MemRefType(dest.type)
    result_type = ir.MemRefType.get(list(source.shape), source.element_type, memory_space=dest_type.memory_space)
    groups = reassociation(reshape)
    if isinstance(reshape, tensor.CollapseShapeOp):  # the tensor was collapsed: expand the memref
        return memref.expand_shape(result_type, dest, groups, [], list(source.shape))
    return memref.collapse_shape(result_type, dest, groups)


@dataclasses.dataclass(frozen=True)
class ReshapeStores(RlxPass):
    name = "rlx-reshape-stores"
    summary = "Store a reshaped result into the reshaped destination, so eliminate-empty-tensors can reach it"

    def run(self, module: ir.Operation) -> bool:
        changed = False
        for store in collect_ops(module, bufferization.MaterializeInDestinationOp):
            while (reshape := _reshaped_source(store)) is not None:
                with ir.InsertionPoint(store), store.location:
                    dest = _reshaped_destination(reshape, store.dest)
                    moved = bufferization.MaterializeInDestinationOp(
                        None, reshape.src, dest, restrict=True, writable=True)
                store.operation.erase()
                reshape.operation.erase()
                store, changed = moved, True
        return changed
