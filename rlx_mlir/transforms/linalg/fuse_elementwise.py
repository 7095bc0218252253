"""rlx-fuse-elementwise: compute elementwise producers inside their consumer's loop nest.

A `linalg.generic` P is fused into the `linalg.generic` C that reads its result when

- P is elementwise: every loop parallel, one result written through the identity map,
  and its body does not read the result's initial value (a pure map of its inputs);
- P's result has no other use (a value the LIR plan gave a slot is also used by its
  materialisation, so it stays: the plan decides what lives in memory); or its only use
  stores it (`bufferization.materialize_in_destination`: a returned result, maybe into a
  tied argument, as an optimiser's new state) and the stored value is read by one op
  besides `func.return`, through the identity, and C's loops are all parallel (a reduction
  would write the extra result on every step): C then becomes a multi-result generic that
  also yields P's value, written where P wrote it, and the store moves after it. A
  parameter update and the state updates it reads (AdamW's m, v, then p) are one pass.
  P then runs in C's loop, later than where the LIR plan saw it read its inputs (a returned
  value is no `fused` value): when an arena slot P's tree reads (as an operand, or by name in
  its body: a gather's table) may be written from P on, up to C's own results (the plan let
  them share bytes), no stored producer fuses into C;
- C reads it through a permutation of all of C's loops, so P's body runs exactly once per
  element, as before (no recomputation under broadcasts or reductions); through the identity
  when P's body reads loop indices (`linalg.index`), which name P's own loops;
- every loop of C is still the whole range of some dimension of an operand of the fused op:
  linalg reads its loop bounds off the operands (the concatenated indexing maps must be
  invertible), so P's inputs must range over each loop that only P's result ranged over
  (a gather, whose table is read by `tensor.extract`, does not range over its gathered rows).

C is rebuilt with P's inputs in place of P's result (their maps composed with C's) and P's
body ahead of C's. Each generic, visited last to first, absorbs the whole tree of producers
fusable into it (producers of producers, maps composed down to its loops) in one rebuild
that moves their ops, so a chain of n elementwise ops becomes one loop nest in O(n) steps.
An input read twice through the same map becomes one operand. A fused body stops growing
at `max-body-ops` ops: LLVM takes super-linear time in the size of one loop body, so a longer
chain becomes several loop nests of bounded size. The ops are counted as they are here; in
`rlx-lower-to-llvm`, `rlx-approximate-math` runs later and turns each exp/log/tanh/erf into 17 to
42 ops, so that pipeline bounds bodies at 100 ops (see FUSED_BODY_OPS there).
Upstream `linalg-fuse-elementwise-ops` is not used: in LLVM 22 it also fuses
producers that read their initial value into consumers with more loops, which rewrites
that value on every extra iteration (a recurrence step computed wrongly), and it cannot be
restricted from the pipeline.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

from mlir import ir
from mlir.dialects import arith, bufferization, func, linalg, memref, tensor

from ...ir import dtypes
from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass, option


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _iterators(op) -> list[str]:
    return [str(it).split("<")[-1].rstrip(">") for it in ir.ArrayAttr(op.attributes["iterator_types"])]


def _body(op) -> ir.Block:
    return op.regions[0].blocks[0]


def _is_elementwise_producer(op) -> bool:
    if not is_op(op, linalg.GenericOp) or len(op.results) != 1:
        return False
    if any(it != "parallel" for it in _iterators(op)):
        return False
    maps = _maps(op)
    if not maps[-1].is_permutation or any(not m.is_projected_permutation for m in maps):
        return False
    if maps[-1] != ir.AffineMap.get_identity(maps[-1].n_dims):
        return False
    out_argument = _body(op).arguments[len(op.operands) - 1]
    return _use_count(out_argument, at_most=1) == 0


def _use_count(value: ir.Value, at_most: int) -> int:
    """How many uses `value` has, counting no further than `at_most + 1`."""
    count = 0
    for _ in value.uses:
        count += 1
        if count > at_most:
            break
    return count


def _defining_generic(value: ir.Value) -> Optional[ir.Operation]:
    owner = value.owner
    if not isinstance(owner, linalg.GenericOp):
        return None
    return owner.operation


def _reads_loop_indices(op) -> bool:
    return any(isinstance(inner, linalg.IndexOp) for inner in _body(op).operations)


def _op_count(block: ir.Block) -> int:
    return sum(1 for _ in block.operations)


def _compose(inner: ir.AffineMap, outer: ir.AffineMap) -> ir.AffineMap:
    """`inner` (over the producer's loops) expressed over the consumer's loops via `outer`."""
    return ir.AffineMap.get(outer.n_dims, 0, [expr.compose(outer) for expr in inner.results])


def _ranged_loops(map_: ir.AffineMap) -> set[int]:
    """The loops whose whole range some dimension of an operand read through `map_` spans."""
    return {expr.position for expr in map_.results if isinstance(expr, ir.AffineDimExpr)}


@dataclasses.dataclass(eq=False)
class _Input:
    """An input of the fused op being planned: a value, its map over the consumer's loops, the
    block arguments (of the consumer's or a fused producer's body) that read it, and, once it is
    fused, the generic that computes it."""

    value: ir.Value
    map: ir.AffineMap
    arguments: list
    producer: Optional[ir.Operation] = None
    # When the value is a producer's result stored (bufferization.materialize_in_destination,
    # a returned or tied result) and read here: the store, which the fused op's extra result feeds.
    store: Optional[ir.Operation] = None


def _stored_producer(value: ir.Value) -> Optional[tuple[ir.Operation, ir.Operation]]:
    """(producer, store) when `value` is the result of materialising a generic's result, used
    only there, in a destination (a result the function returns, maybe into a tied argument),
    and is read by one op besides func.return: the fused op computes the producer's value once
    and both writes it to the destination and uses it."""
    store = value.owner
    if not isinstance(store, bufferization.MaterializeInDestinationOp):
        return None
    store = store.operation
    source = store.operands[0]
    producer = _defining_generic(source)
    if producer is None or _use_count(source, at_most=1) != 1:
        return None
    readers = [use.owner for use in value.uses if not isinstance(use.owner, func.ReturnOp)]
    return (producer, store) if len(readers) == 1 else None


# Ops that only name (part of) their first operand's memory: a slot seen through them is the slot.
_MEMREF_ALIASES = (memref.SubViewOp, memref.CollapseShapeOp, memref.ExpandShapeOp, memref.CastOp,
                   memref.ReinterpretCastOp)
_TENSOR_ALIASES = (tensor.ExtractSliceOp, tensor.CollapseShapeOp, tensor.ExpandShapeOp, tensor.CastOp)


def _arena_bytes(buffer: ir.Value) -> Optional[tuple]:
    """(arena, first byte, end byte) of a `memref.view` (the LIR plan's slots) or of a part of
    one (the whole view's bytes), the range None where it is not constant; None for any other
    memref."""
    while isinstance(buffer.owner, _MEMREF_ALIASES):
        buffer = buffer.owner.operands[0]
    view = buffer.owner
    if not isinstance(view, memref.ViewOp):
        return None
    shift = view.byte_shift.owner
    type_ = ir.MemRefType(view.result.type)
    element = dtypes.element_type(str(type_.element_type))
    if not isinstance(shift, arith.ConstantOp) or not type_.has_static_shape or element is None:
        return (view.source, None, None)
    start = ir.IntegerAttr(shift.value).value
    return (view.source, start, start + math.prod(type_.shape) * element.bytes)


def _tensor_arena_bytes(value: ir.Value) -> Optional[tuple]:
    """`_arena_bytes` of the slot a tensor is read from (`bufferization.to_tensor`, maybe sliced or
    reshaped), None where it is no slot's."""
    while isinstance(value.owner, _TENSOR_ALIASES):
        value = value.owner.operands[0]
    owner = value.owner
    return _arena_bytes(owner.buffer) if isinstance(owner, bufferization.ToTensorOp) else None


def _arena_writes(op) -> list:
    """The arena slots `op` may write: every slot (or part of one) it uses, except to read it as
    a tensor or to name part of it."""
    op = op.operation if isinstance(op, ir.OpView) else op
    view = op.opview
    if isinstance(view, (memref.ViewOp, *_MEMREF_ALIASES)) or (
            isinstance(view, bufferization.ToTensorOp) and "writable" not in op.attributes):
        return []
    slots = (_arena_bytes(v) for v in op.operands if isinstance(v.type, ir.MemRefType))
    return [slot for slot in slots if slot is not None]


def _overlap(a: tuple, b: tuple) -> bool:
    if a[0] != b[0]:
        return False
    if a[1] is None or b[1] is None:
        return True
    return a[1] < b[2] and b[1] < a[2]


def _captured_tensors(op) -> list[ir.Value]:
    """The ranked tensors that `op`'s body uses but does not define (not its operands: a gather's
    table, read by `tensor.extract` at computed indices)."""
    defined, used = set(_body(op).arguments), []

    def visit(inner) -> ir.WalkResult:
        inner = inner.operation if isinstance(inner, ir.OpView) else inner
        defined.update(argument for region in inner.regions for block in region.blocks for argument in block.arguments)
        defined.update(inner.results)
        used.extend(inner.operands)
        return ir.WalkResult.ADVANCE

    for inner in _body(op).operations:
        inner.operation.walk(visit)
    return list(dict.fromkeys(v for v in used if v not in defined and isinstance(v.type, ir.RankedTensorType)))


def _ops_between(first, last):
    """The ops of their block after `first`, up to `last` included."""
    inside = False
    for other in first.operation.block.operations:
        if inside:
            yield other.operation
            if other.operation == last.operation:
                return
        elif other.operation == first.operation:
            inside = True


class _FusionPlan:
    """The producers fusable into one consumer, found by a worklist over the fused op's inputs."""

    def __init__(self, consumer, max_body_ops: int, stored: bool = True):
        self.consumer = consumer
        self.max_body_ops = max_body_ops
        self.stored = stored  # whether stored producers may fuse (see moves_arena_reads_past_writes)
        self.body_ops = _op_count(_body(consumer))
        maps = _maps(consumer)
        self.loops = maps[0].n_dims if maps else 0
        self.all_parallel = all(it == "parallel" for it in _iterators(consumer))
        self.input_count = len(consumer.operands) - len(consumer.results)
        self.inputs: list[_Input] = []
        self.fused: list[_Input] = []  # in the order they were fused: each consumer before its producers
        self._by_key: dict = {}
        # How many operands of the fused op range over each loop (linalg's loop bounds come from them).
        self._ranging = [0] * self.loops
        for map_ in maps[self.input_count:]:
            self._count(map_, +1)
        arguments = _body(consumer).arguments
        for index in range(self.input_count):
            self._add(consumer.operands[index], maps[index], arguments[index])
        position = 0
        while position < len(self.inputs):  # grows as fused producers add their inputs
            self._try_fuse(self.inputs[position])
            position += 1

    def _count(self, map_: ir.AffineMap, step: int) -> None:
        for loop in _ranged_loops(map_):
            self._ranging[loop] += step

    def _add(self, value: ir.Value, map_: ir.AffineMap, argument: ir.BlockArgument) -> None:
        same = self._by_key.get((value, map_))
        if same is not None:
            same.arguments.append(argument)
            return
        entry = _Input(value, map_, [argument])
        self.inputs.append(entry)
        self._by_key[(value, map_)] = entry
        self._count(map_, +1)

    def _try_fuse(self, entry: _Input) -> None:
        store = None
        producer = _defining_generic(entry.value)
        if producer is None:
            stored = _stored_producer(entry.value) if self.stored else None
            if stored is None or entry.map != ir.AffineMap.get_identity(self.loops):
                return  # (read elsewhere than where it is written, an update in place would need a copy)
            if not self.all_parallel:
                return  # a result written by every step of a reduction loop is not one write per element
            producer, store = stored
            if store.parent != self.consumer.parent:
                return
        elif _use_count(entry.value, at_most=1) != 1:
            return
        if producer.parent != self.consumer.parent or not entry.map.is_permutation:
            return
        if not _is_elementwise_producer(producer) or _maps(producer)[-1].n_dims != self.loops:
            return
        # linalg.index in the producer names its own loops: only the identity keeps them.
        if entry.map != ir.AffineMap.get_identity(self.loops) and _reads_loop_indices(producer):
            return
        producer_ops = _op_count(_body(producer)) - 1  # its yield is dropped
        if self.body_ops + producer_ops > self.max_body_ops:
            return
        producer_maps = _maps(producer)
        inputs = len(producer.operands) - 1
        composed = [_compose(producer_maps[i], entry.map) for i in range(inputs)]
        ranged = set().union(*map(_ranged_loops, composed))
        lost = _ranged_loops(entry.map) - ranged
        if any(self._ranging[loop] == 1 for loop in lost):
            return  # a loop only this input ranged over would have no bound
        entry.producer = producer
        entry.store = store
        self.body_ops += producer_ops
        self.fused.append(entry)
        del self._by_key[(entry.value, entry.map)]
        if store is None:  # a stored value stays an output of the fused op: its loops keep their bound
            self._count(entry.map, -1)
        arguments = _body(producer).arguments
        for index in range(inputs):
            self._add(producer.operands[index], composed[index], arguments[index])

    def moves_arena_reads_past_writes(self) -> bool:
        """Whether a stored producer, computed in the consumer's loop instead of where it was,
        would read an arena slot after it was overwritten. The LIR plan let a slot that P's tree
        reads be shared with values written from P on, up to C's own results: it saw P's last
        read at P (a returned value is no fused value, its producer runs where it stands), and
        `bufferization.to_tensor ... restrict` promises one-shot-bufferize no such overlap."""
        stored = [entry.producer for entry in self.fused if entry.store is not None]
        if not stored:
            return False
        read_values = [entry.value for entry in self.inputs if entry.producer is None]
        for entry in self.fused:  # and what their bodies read by name (a gather's table: tensor.extract)
            read_values += _captured_tensors(entry.producer)
        reads = [_tensor_arena_bytes(value) for value in read_values]
        reads = [read for read in reads if read is not None]
        if not reads:
            return False
        first = stored[0]
        for op in stored[1:]:
            if op.is_before_in_block(first):
                first = op
        writes = []
        for op in _ops_between(first, self.consumer):
            op.walk(lambda inner: (writes.extend(_arena_writes(inner)), ir.WalkResult.ADVANCE)[1])
        for result in self.consumer.results:  # C's results stored into their slots: written by the loop
            for use in result.uses:
                writes.extend(_arena_writes(use.owner))
        writes += [_tensor_arena_bytes(operand) for operand in list(self.consumer.operands)[self.input_count:]]
        return any(_overlap(read, write) for read in reads for write in writes if write is not None)

    def apply(self) -> None:
        """Replaces the consumer and the fused producers by one generic."""
        consumer = self.consumer
        live = [entry for entry in self.inputs if entry.producer is None]
        stored = [entry for entry in self.fused if entry.store is not None]
        # A stored producer's value is an extra result, written where the producer wrote it.
        outputs = list(consumer.operands)[self.input_count:] + [entry.producer.operands[-1] for entry in stored]
        maps = [entry.map for entry in live] + _maps(consumer)[self.input_count:] + [entry.map for entry in stored]
        with ir.InsertionPoint(consumer), consumer.location:
            fused = linalg.GenericOp(
                [r.type for r in consumer.results] + [entry.producer.results[0].type for entry in stored],
                [entry.value for entry in live],
                outputs,
                ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                consumer.attributes["iterator_types"],
            )
            element_types = [ir.ShapedType(v.type).element_type for v in [e.value for e in live] + outputs]
            block = fused.regions[0].blocks.append(*element_types)
        consumer_body = _body(consumer)
        old_yield = list(consumer_body.operations)[-1]
        stored_values = [list(_body(entry.producer).operations)[-1].operands[0] for entry in stored]
        with ir.InsertionPoint(block), consumer.location:
            new_yield = linalg.YieldOp(list(old_yield.operands) + stored_values)
        # Producers fused last compute what the earlier ones read: their ops come first.
        for op in [entry.producer for entry in reversed(self.fused)] + [consumer]:
            for inner in list(_body(op).operations)[:-1]:
                inner.move_before(new_yield)
        new_arguments = list(block.arguments)
        for entry, argument in zip(live, new_arguments):
            for old in entry.arguments:
                old.replace_all_uses_with(argument)
        for old, argument in zip(list(consumer_body.arguments)[self.input_count:], new_arguments[len(live):]):
            old.replace_all_uses_with(argument)
        for entry in reversed(self.fused):  # a producer's own fused inputs are replaced before it
            yielded = list(_body(entry.producer).operations)[-1].operands[0]
            for old in entry.arguments:
                old.replace_all_uses_with(yielded)
        for old, new in zip(consumer.results, fused.results):
            old.replace_all_uses_with(new)
        for entry, result in zip(stored, list(fused.results)[len(consumer.results):]):
            # The store now writes the fused op's result, after it (its destination is older).
            entry.store.operands[0] = result
            entry.store.move_after(fused.operation)
        consumer.erase()
        for entry in self.fused:  # each after its only user
            entry.producer.erase()


@dataclasses.dataclass(frozen=True)
class FuseElementwise(RlxPass):
    name = "rlx-fuse-elementwise"
    summary = "Fuse single-use elementwise linalg.generic producers into the consumer's loop nest"
    creates_rlx_ops = False
    max_body_ops: int = option(2000, "largest fused loop body, in ops (LLVM slows super-linearly on longer ones)")

    def run(self, module: ir.Operation) -> None:
        # Last to first: a consumer absorbs its producers' whole trees before they are visited.
        generics = collect_ops(module, linalg.GenericOp)
        position = {op.operation: index for index, op in enumerate(generics)}
        absorbed: set[int] = set()
        for index in reversed(range(len(generics))):
            if index in absorbed:
                continue
            plan = _FusionPlan(generics[index], self.max_body_ops)
            if plan.moves_arena_reads_past_writes():
                plan = _FusionPlan(generics[index], self.max_body_ops, stored=False)
            if plan.fused:
                absorbed.update(position[entry.producer] for entry in plan.fused)
                plan.apply()
