"""rlx-fuse-elementwise: compute elementwise producers inside their consumer's loop nest.

A `linalg.generic` P is fused into the `linalg.generic` C that reads its result when

- P is elementwise: every loop parallel, one result written through the identity map,
  and its body does not read the result's initial value (a pure map of its inputs);
- P's result has no other use (a value the LIR plan gave a slot is also used by its
  materialisation, so it stays: the plan decides what lives in memory);
- C reads it through a permutation of all of C's loops, so P's body runs exactly once per
  element, as before (no recomputation under broadcasts or reductions); through the identity
  when P's body reads loop indices (`linalg.index`), which name P's own loops.

C is rebuilt with P's inputs in place of P's result (their maps composed with C's) and P's
body inlined ahead of C's. Repeated to a fixed point, a chain of elementwise ops becomes
one loop nest. Upstream `linalg-fuse-elementwise-ops` is not used: in LLVM 22 it also fuses
producers that read their initial value into consumers with more loops, which rewrites
that value on every extra iteration (a recurrence step computed wrongly), and it cannot be
restricted from the pipeline.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from mlir import ir
from mlir.dialects import linalg

from ..ir_walk import collect_ops
from .base import RlxPass


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _iterators(op) -> list[str]:
    return [str(it).split("<")[-1].rstrip(">") for it in ir.ArrayAttr(op.attributes["iterator_types"])]


def _body(op) -> ir.Block:
    return op.regions[0].blocks[0]


def _is_elementwise_producer(op) -> bool:
    if op.name != "linalg.generic" or len(op.results) != 1:
        return False
    if any(it != "parallel" for it in _iterators(op)):
        return False
    maps = _maps(op)
    if not maps[-1].is_permutation or any(not m.is_projected_permutation for m in maps):
        return False
    if str(maps[-1]) != str(ir.AffineMap.get_identity(maps[-1].n_dims)):
        return False
    out_argument = _body(op).arguments[len(op.operands) - 1]
    return len(list(out_argument.uses)) == 0


def _fusable_operand(consumer) -> Optional[int]:
    """Index of an input of `consumer` produced by a fusable elementwise generic, if any."""
    if consumer.name != "linalg.generic":
        return None
    maps = _maps(consumer)
    inputs = len(consumer.operands) - len(consumer.results)
    for index in range(inputs):
        value = consumer.operands[index]
        producer = value.owner
        if not isinstance(producer, ir.Operation) and hasattr(producer, "operation"):
            producer = producer.operation
        if not isinstance(producer, ir.Operation) or not _is_elementwise_producer(producer):
            continue
        if len(list(value.uses)) != 1 or producer.parent != consumer.parent:
            continue
        if not maps[index].is_permutation or maps[index].n_dims != _maps(producer)[-1].n_dims:
            continue
        # linalg.index in the producer names its own loops: only the identity keeps them.
        identity = str(maps[index]) == str(ir.AffineMap.get_identity(maps[index].n_dims))
        if identity or not any(inner.operation.name == "linalg.index" for inner in _body(producer).operations):
            return index
    return None


def _compose(inner: ir.AffineMap, outer: ir.AffineMap) -> ir.AffineMap:
    """`inner` (over the producer's loops) expressed over the consumer's loops via `outer`."""
    return ir.AffineMap.get(outer.n_dims, 0, [expr.compose(outer) for expr in inner.results])


def _fuse(consumer, index: int) -> ir.Operation:
    """Replaces `consumer` and the producer of its input `index` by one generic; returns it."""
    producer_value = consumer.operands[index]
    producer = producer_value.owner
    if not isinstance(producer, ir.Operation):
        producer = producer.operation
    consumer_maps, producer_maps = _maps(consumer), _maps(producer)
    consumer_inputs = len(consumer.operands) - len(consumer.results)
    producer_inputs = len(producer.operands) - 1
    operand_map = consumer_maps[index]

    new_inputs = [consumer.operands[i] for i in range(consumer_inputs) if i != index]
    new_maps = [consumer_maps[i] for i in range(consumer_inputs) if i != index]
    new_inputs += [producer.operands[i] for i in range(producer_inputs)]
    new_maps += [_compose(producer_maps[i], operand_map) for i in range(producer_inputs)]
    outputs = [consumer.operands[i] for i in range(consumer_inputs, len(consumer.operands))]
    new_maps += consumer_maps[consumer_inputs:]

    with ir.InsertionPoint(consumer), consumer.location:
        fused = linalg.GenericOp(
            [r.type for r in consumer.results],
            new_inputs,
            outputs,
            ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps]),
            consumer.attributes["iterator_types"],
        )
        element_types = [ir.ShapedType(v.type).element_type for v in (*new_inputs, *outputs)]
        block = fused.regions[0].blocks.append(*element_types)
    args = list(block.arguments)
    consumer_args = list(_body(consumer).arguments)
    producer_args = list(_body(producer).arguments)
    # Block arguments of the consumer (its fused input removed) and of the producer's inputs.
    kept = [a for i, a in enumerate(consumer_args[:consumer_inputs]) if i != index]
    mapping = dict(zip(kept, args[: len(kept)]))
    mapping.update(zip(producer_args[:producer_inputs], args[len(kept): len(kept) + producer_inputs]))
    mapping.update(zip(consumer_args[consumer_inputs:], args[len(kept) + producer_inputs:]))
    with ir.InsertionPoint(block):
        yielded = _inline(_body(producer), mapping)
        mapping[consumer_args[index]] = yielded[0]
        _inline(_body(consumer), mapping, keep_terminator=True)
    for old, new in zip(consumer.results, fused.results):
        old.replace_all_uses_with(new)
    consumer.erase()
    producer.erase()
    return fused.operation


def _inline(body: ir.Block, mapping: dict, keep_terminator: bool = False) -> list:
    """Clones `body`'s ops at the insertion point, remapping operands; returns the yielded values
    (the yield itself is cloned only with `keep_terminator`)."""
    yielded = []
    for op in body.operations:
        op = op.operation
        if op.name == "linalg.yield":
            yielded = [mapping.get(v, v) for v in op.operands]
            if keep_terminator:
                linalg.YieldOp(yielded)
            break
        clone = op.clone()
        for i, operand in enumerate(op.operands):
            if operand in mapping:
                clone.operands[i] = mapping[operand]
        for old, new in zip(op.results, clone.results):
            mapping[old] = new
    return yielded


@dataclasses.dataclass(frozen=True)
class FuseElementwise(RlxPass):
    name = "rlx-fuse-elementwise"
    summary = "Fuse single-use elementwise linalg.generic producers into the consumer's loop nest"

    def run(self, module: ir.Operation) -> None:
        # In program order a producer comes before its consumers, so it has absorbed its own
        # producers by the time it is fused: one pass fuses whole chains.
        for consumer in collect_ops(module, lambda op: op.name == "linalg.generic"):
            index = _fusable_operand(consumer)
            while index is not None:
                consumer = _fuse(consumer, index)
                index = _fusable_operand(consumer)
