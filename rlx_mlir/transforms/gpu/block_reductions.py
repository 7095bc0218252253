"""rlx-gpu-block-reductions: row reductions as one thread block per output element.

Runs on buffers after `convert-linalg-to-parallel-loops`, which turns a linalg
reduction (softmax's max and sum, a norm's sum of squares, `rlx.reduce`,
attention's row statistics) into

    scf.parallel (%p...) = ... {                 // one iteration per output element
      scf.for %k = %lo to %hi step %st {         // the reduced dimension, sequential
        <ops computing %g from %p, %k>
        %acc = memref.load %out[<indices of %p>]
        %new = <combine> %acc, %g                  // arith.addf, maximumf, mulf, ...
        memref.store %new, %out[<same indices>]

and rewrites such a nest, when the reduced dimension has at least
`min-length` iterations, into a `gpu.launch` with one block per output element
and T threads (T = `block-size`, or the next power of two >= the trip count K
when smaller):

- thread t < K folds `combine` over iterations t, t + T, t + 2T, ... (starting
  from its first element, so no identity value is needed) and writes its
  partial to workgroup memory;
- a tree reduction over the min(T, K) partials (strides T/2 ... 1, a
  `gpu.barrier` after each step) leaves the block's total in slot 0;
- thread 0 combines the output's initial value with the total and stores it.

The combine is re-associated (partials in a tree rather than left to right),
as any parallel reduction does; the result differs from the sequential one by
rounding only.  Any other nest (several reductions, reads of the output inside
the loop, dynamic bounds) is left for `rlx-gpu-grid-loops` (one thread per output).
"""

from __future__ import annotations

import dataclasses
import math

from mlir import ir
from mlir.dialects import arith, func, gpu, memref, scf

from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass, option

COMBINERS = (arith.AddFOp, arith.MulFOp, arith.MaximumFOp, arith.MinimumFOp, arith.MaxNumFOp, arith.MinNumFOp,
             arith.AddIOp, arith.MulIOp, arith.MaxSIOp, arith.MinSIOp, arith.MaxUIOp, arith.MinUIOp,
             arith.AndIOp, arith.OrIOp, arith.XOrIOp)


def _op(value_owner):
    return getattr(value_owner, "operation", value_owner)


def _constant_index(value: ir.Value):
    owner = _op(value.owner)
    if isinstance(owner, ir.Operation) and is_op(owner, arith.ConstantOp):
        attr = owner.attributes["value"]
        if isinstance(attr, ir.IntegerAttr):
            return attr.value
    return None


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _same(a: ir.Value, b: ir.Value) -> bool:
    return a == b


def _depends_on(value: ir.Value, root: ir.Value, within: ir.Block) -> bool:
    """Whether `value` is (transitively, through ops of `within`) computed from `root`."""
    if _same(value, root):
        return True
    owner = _op(value.owner)
    if not isinstance(owner, ir.Operation) or owner.parent is None or owner.block != within:
        return False
    return any(_depends_on(operand, root, within) for operand in owner.operands)


@dataclasses.dataclass
class _Match:
    loop: ir.Operation          # the scf.parallel
    inner: ir.Operation         # the scf.for
    load: ir.Operation          # memref.load of the accumulator
    combine: ir.Operation       # the combining op
    store: ir.Operation         # memref.store of the new accumulator
    bounds: list                # (lo, hi, step) of each parallel dimension
    trips: list                 # trip count of each parallel dimension
    k_bounds: tuple             # (lo, hi, step) of the reduced dimension
    k_trips: int


def _match(loop: ir.Operation, min_length: int):
    view = loop.opview
    if len(view.initVals):
        return None
    body = loop.regions[0].blocks[0]
    ops = [op.operation for op in body.operations]
    if len(ops) != 2 or not is_op(ops[0], scf.ForOp) or not is_op(ops[1], scf.ReduceOp):
        return None
    inner = ops[0]
    if len(inner.results):
        return None
    bounds = [(_constant_index(a), _constant_index(b), _constant_index(c))
              for a, b, c in zip(view.lowerBound, view.upperBound, view.step)]
    k_bounds = tuple(_constant_index(v) for v in inner.operands[:3])
    if any(None in b for b in bounds) or None in k_bounds:
        return None
    k_trips = max(0, -(-(k_bounds[1] - k_bounds[0]) // k_bounds[2]))
    if k_trips < min_length:
        return None
    for_body = inner.regions[0].blocks[0]
    k = for_body.arguments[0]
    inner_ops = [op.operation for op in for_body.operations]
    stores = [op for op in inner_ops if is_op(op, memref.StoreOp)]
    if len(stores) != 1 or any(collect_ops(op, lambda o: is_op(o, memref.StoreOp)) and not is_op(op, memref.StoreOp)
                               for op in inner_ops):
        return None
    store = stores[0]
    value, target, indices = store.operands[0], store.operands[1], list(store.operands[2:])
    if any(_depends_on(i, k, for_body) for i in indices):
        return None
    combine = _op(value.owner)
    if not isinstance(combine, ir.Operation) or not is_op(combine, COMBINERS) or combine.block != for_body:
        return None
    loads = collect_ops(inner, lambda o: is_op(o, memref.LoadOp) and _same(o.operands[0], target))
    if len(loads) != 1 or loads[0].parent != inner:  # the accumulator is read once, in the loop body
        return None
    load = loads[0]
    load_indices = list(load.operands[1:])
    if len(load_indices) != len(indices) or not all(_same(a, b) for a, b in zip(load_indices, indices)):
        return None
    acc = load.results[0]
    if len(list(acc.uses)) != 1 or _op(next(iter(acc.uses)).owner) != combine:
        return None
    if len(list(combine.results[0].uses)) != 1:
        return None
    if not any(_same(operand, acc) for operand in combine.operands):
        return None
    trips = [max(0, -(-(hi - lo) // st)) for lo, hi, st in bounds]
    if math.prod(trips) == 0:
        return None
    return _Match(loop, inner, load, combine, store, bounds, trips, k_bounds, k_trips)


class _Cloner:
    """Clones ops into the current insertion point, remapping operands (nested regions too)."""

    def __init__(self, mapping: list[tuple[ir.Value, ir.Value]]):
        self.mapping = list(mapping)

    def lookup(self, value: ir.Value) -> ir.Value:
        for old, new in self.mapping:
            if _same(old, value):
                return new
        return value

    def clone(self, op: ir.Operation) -> ir.Operation:
        copy = op.clone()
        copy = _op(copy)
        for nested in collect_ops(copy):
            for i, operand in enumerate(nested.operands):
                mapped = self.lookup(operand)
                if not _same(mapped, operand):
                    nested.operands[i] = mapped
        for old, new in zip(op.results, copy.results):
            self.mapping.append((old, new))
        return copy


@dataclasses.dataclass(frozen=True)
class GpuBlockReductions(RlxPass):
    name = "rlx-gpu-block-reductions"
    summary = "Row reductions (scf.parallel over a sequential reduction loop) as block-level tree reductions"
    block_size: int = option(256, "threads per block", minimum=1, maximum=1024, power_of_two=True)
    min_length: int = option(64, "shortest reduced dimension worth a block (shorter ones: a thread per output)", minimum=1)

    def run(self, module: ir.Operation) -> None:
        loops = collect_ops(module, lambda op: is_op(op, scf.ParallelOp) and not _nested_in_parallel(op),
                            ir.WalkOrder.PRE_ORDER)
        for loop in loops:
            match = _match(loop, self.min_length)
            if match is not None:
                self._rewrite(match)

    def _rewrite(self, m: _Match) -> None:
        threads = min(self.block_size, 1 << max(0, (m.k_trips - 1).bit_length()))
        active = min(threads, m.k_trips)
        value_type = m.combine.results[0].type
        acc = m.load.results[0]
        g = next(o for o in m.combine.operands if not _same(o, acc))
        acc_first = _same(m.combine.operands[0], acc)
        for_body = m.inner.regions[0].blocks[0]
        k = for_body.arguments[0]
        skip = (m.load, m.combine, m.store)
        compute = [op.operation for op in for_body.operations
                   if not isinstance(op, scf.YieldOp) and not any(op.operation == s for s in skip)]
        k_lo, _, k_step = m.k_bounds
        shared_type = ir.MemRefType.get([threads], value_type,
                                        memory_space=ir.Attribute.parse("#gpu.address_space<workgroup>"))

        with ir.InsertionPoint(m.loop), m.loop.location:
            one = _index(1)
            launch = gpu.LaunchOp((_index(math.prod(m.trips)), one, one), (_index(threads), one, one))
            block = launch.regions[0].blocks[0]
            shared = block.add_argument(shared_type, m.loop.location)
            launch.operation.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
                ir.IntegerType.get_signless(64), 1)
        block_id, thread = block.arguments[0], block.arguments[3]

        def combine(lhs, rhs):
            # the original combine's kind and attributes, on new operands (accumulator side kept)
            new = _op(m.combine.clone())
            new.operands[0], new.operands[1] = lhs, rhs
            return new.results[0]

        with ir.InsertionPoint(block), m.loop.location:
            # parallel induction variables, delinearized from the block id
            remaining, ivs = block_id, [None] * len(m.trips)
            for dim in reversed(range(len(m.trips))):
                lo, _, st = m.bounds[dim]
                trip = _index(m.trips[dim])
                position = arith.RemUIOp(remaining, trip).result if dim else remaining
                if dim:
                    remaining = arith.DivUIOp(remaining, trip).result
                iv = arith.MulIOp(position, _index(st)).result if st != 1 else position
                ivs[dim] = arith.AddIOp(iv, _index(lo)).result if lo else iv
            parallel_map = list(zip(m.loop.regions[0].blocks[0].arguments, ivs))

            def k_value(j):
                scaled = arith.MulIOp(j, _index(k_step)).result if k_step != 1 else j
                return arith.AddIOp(scaled, _index(k_lo)).result if k_lo else scaled

            def element(j):
                cloner = _Cloner(parallel_map + [(k, k_value(j))])
                for op in compute:
                    cloner.clone(op)
                return cloner.lookup(g)

            in_range = arith.CmpIOp(arith.CmpIPredicate.ult, thread, _index(m.k_trips)).result
            partial_if = scf.IfOp(in_range, [value_type], has_else=True)
            with ir.InsertionPoint(partial_if.then_block):
                first = element(thread)
                start = arith.AddIOp(thread, _index(threads)).result
                fold = scf.ForOp(start, _index(m.k_trips), _index(threads), [first])
                with ir.InsertionPoint(fold.body):
                    scf.YieldOp([combine(fold.inner_iter_args[0], element(fold.induction_variable))])
                scf.YieldOp([fold.results[0]])
            with ir.InsertionPoint(partial_if.else_block):
                scf.YieldOp([_placeholder(value_type)])  # slot t >= K is outside the tree
            memref.StoreOp(partial_if.results[0], shared, [thread])
            gpu.BarrierOp()
            stride = threads // 2
            while stride >= 1:
                if stride < active:  # some thread t < stride has a partner t + stride < active
                    lower = arith.CmpIOp(arith.CmpIPredicate.ult, thread, _index(stride)).result
                    partner = arith.AddIOp(thread, _index(stride)).result
                    has_partner = arith.CmpIOp(arith.CmpIPredicate.ult, partner, _index(active)).result
                    step_if = scf.IfOp(arith.AndIOp(lower, has_partner).result)
                    with ir.InsertionPoint(step_if.then_block):
                        mine = memref.LoadOp(shared, [thread]).result
                        theirs = memref.LoadOp(shared, [partner]).result
                        memref.StoreOp(combine(mine, theirs), shared, [thread])
                        scf.YieldOp([])
                    gpu.BarrierOp()
                stride //= 2
            leader = arith.CmpIOp(arith.CmpIPredicate.eq, thread, _index(0)).result
            final_if = scf.IfOp(leader)
            with ir.InsertionPoint(final_if.then_block):
                cloner = _Cloner(parallel_map)
                index_ops = _index_computations(m.store, for_body)
                for op in index_ops:
                    cloner.clone(op)
                initial = _op(cloner.clone(m.load)).results[0]
                total = memref.LoadOp(shared, [_index(0)]).result
                result = combine(initial, total) if acc_first else combine(total, initial)
                memref.StoreOp(result, cloner.lookup(m.store.operands[1]),
                               [cloner.lookup(i) for i in m.store.operands[2:]])
                scf.YieldOp([])
            gpu.TerminatorOp()
        m.loop.erase()


def _placeholder(value_type: ir.Type) -> ir.Value:
    """A zero of `value_type` (the partial of a thread with no element; never read)."""
    if isinstance(value_type, ir.IntegerType):
        return arith.ConstantOp(value_type, 0).result
    return arith.ConstantOp(value_type, 0.0).result


def _index_computations(store: ir.Operation, block: ir.Block) -> list[ir.Operation]:
    """Ops of `block` the store's indices are computed by (in block order)."""
    needed = []

    def visit(value):
        owner = _op(value.owner)
        if isinstance(owner, ir.Operation) and owner.block == block and not any(owner == n for n in needed):
            for operand in owner.operands:
                visit(operand)
            needed.append(owner)

    for index in store.operands[2:]:
        visit(index)
    order = [op.operation for op in block.operations]
    return sorted(needed, key=lambda op: next(i for i, o in enumerate(order) if o == op))


def _nested_in_parallel(op: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None and not is_op(parent, func.FuncOp):
        if is_op(parent, (scf.ParallelOp, gpu.LaunchOp)):
            return True
        parent = parent.parent
    return False
