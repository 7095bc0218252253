"""rlx-tile-matmul: cache blocking, register tiling and FMA vectorization of packed matmuls.

Runs a transform-dialect script on every `rlx.microkernel` generic that `rlx-pack-matmul`
produced (iteration space (M/MR, N/NR, K, MR, NR)):

1. with `threads` > 1, `tile_using_forall` splits the N panels (or, when there are too few, the
   M blocks) into one chunk per thread and fuses B's packing into the forall, so each thread packs
   the panels it multiplies (panels the function is given, packed once: rlx-hoist-param-packing,
   have no packing to fuse) (`convert-scf-to-openmp` later runs the forall on OpenMP threads);
2. cache blocks: up to MC = 256 rows, NC = 256 columns and KC = 1024 of K (2048 for bound
   panels when the rows fit one cache block: no later row block reuses a K block then), loop order N, K, M (BLIS's
   jc, pc, ic), then one MR×NR register tile per iteration, then K in steps of KR;
3. unit dims folded away inside each K loop (which replaces the generic: the step is found
   again inside that loop; the patterns run on the loop's body only, so a K loop of a single
   step, K ≤ KR, is not folded away while its handle is still needed), the 4×8×32 tile vectorized to a `vector.contract`, the C tile hoisted
   out of the K loop (it stays in registers), the contraction lowered to outer products, i.e.
   `vector.fma` on `vector<32xf32>`; the pack is lowered to pad + transpose.

A kernel whose C starts as zeros (`linalg.fill` of +0.0, the plain product) runs no fill pass
(`start_from_zero`): each register tile starts from zero accumulators while every K block before
it is a first one, and its first store writes C; a C that is a real tensor (a bias, a residual,
an accumulation) is loaded and added to as before.

Last, a kernel whose result is stored to an arena slot or returned accumulates in that slot or
in the result's buffer (`accumulate_in_slots`), not in a heap buffer copied there after every call.

Tile sizes are divisors of the (padded) extents, so every tile is full and static: no partial
tiles reach the vectorizer. The recipe and its measurements are in
shared/reference/perf_anchors.md §4.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import arith, bufferization, func, linalg, memref, scf, tensor, vector

from ...ir.attrs import KERNEL_ATTR, PACKED_ATTR, ZERO_C_ATTR
from ...ir.shapes import reassociation, shape_of
from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass, option
from ...targets.cpu import MAX_THREADS
from .pack_matmul import KR, MR, NR
from .transform_script import apply_script

CACHE_BLOCKS = (32, 8, 1024)  # MC/MR, NC/NR, KC: 256 rows, 256 columns, 1024 of K


def divisor_at_most(extent: int, limit: int) -> int:
    """The largest divisor of `extent` that is ≤ `limit` (at least 1)."""
    for size in range(max(1, min(extent, limit)), 0, -1):
        if extent % size == 0:
            return size
    return 1


@dataclasses.dataclass(frozen=True)
class KernelPlan:
    """Tile sizes of one kernel: its forall split and its cache blocks."""

    blocks_m: int
    panels_n: int
    depth: int
    threads: int
    packed: bool = True
    packed_here: bool = True  # B is packed in this function (not panels it is given: rlx-hoist-param-packing)

    def forall(self):
        """(dim, chunk) to split across threads, or None to run serially."""
        if self.threads <= 1:
            return None
        if self.panels_n >= self.threads:
            return 1, divisor_at_most(self.panels_n, self.panels_n // self.threads)
        if self.blocks_m >= self.threads:
            return 0, divisor_at_most(self.blocks_m, self.blocks_m // self.threads)
        return None

    def cache_tiles(self) -> list[int]:
        split = self.forall()
        extents = [self.blocks_m, self.panels_n]
        if split is not None:
            extents[split[0]] = split[1]
        mc = divisor_at_most(extents[0], CACHE_BLOCKS[0])
        nc = divisor_at_most(extents[1], CACHE_BLOCKS[1])
        kc_limit = CACHE_BLOCKS[2]
        if extents[0] <= CACHE_BLOCKS[0] and not self.packed_here:
            # One cache block of rows: each panel's K block is multiplied by every row block in
            # turn and never again, so KC need not keep it for a later use, only in L2 for the row
            # blocks' passes (2048 rows of a panel: 256 KiB).  The down projection's K = 1408 is
            # then one K block: C stored once, and the prefetch of the next panel follows the
            # panels in the order they are used (128x1408x512, bound panels from memory: +2-5%).
            # Only for panels the function is given (bound weights): where B is packed per call,
            # the larger K block made the 12-layer prefill 128 ~8% slower (51 -> 55 ms, 1 thread).
            kc_limit = 2 * CACHE_BLOCKS[2]
        kc = KR * divisor_at_most(self.depth // KR, kc_limit // KR)
        return [mc, nc, kc, 0, 0]


def _op(value_owner) -> ir.OpView:
    return value_owner.opview if isinstance(value_owner, ir.Operation) else value_owner


def _empty_behind(value: ir.Value):
    """The `tensor.empty` a kernel's C starts from: followed back through the results of
    `scf.for` / `scf.forall` loops to their initial values, through `linalg.fill` to its
    destination and through `tensor.expand_shape` (the [M/MR, MR, N/NR, NR] blocking of C) to its
    source; None when the chain starts elsewhere."""
    while not isinstance(value, ir.BlockArgument):
        op, index = _op(value.owner), ir.OpResult(value).result_number
        if isinstance(op, tensor.EmptyOp):
            return op
        if isinstance(op, scf.ForOp):
            value = op.initArgs[index]
        elif isinstance(op, scf.ForallOp):
            value = op.outputs[index]
        elif isinstance(op, linalg.FillOp):
            value = op.outputs[0]
        elif isinstance(op, tensor.ExpandShapeOp):
            value = op.src
        else:
            return None
    return None


def _slot_store(collapse):
    """(view, store, reshapes) when the kernel's collapsed C, through single-use
    `tensor.expand_shape` / `collapse_shape` ops (`reshapes`, in order), is stored by a
    `bufferization.materialize_in_destination` (`store`) into either a `memref.view` (an arena
    slot; the store restrict and writable) in the same block whose operands are block arguments
    or constants, or a function result's fresh `bufferization.alloc_tensor` used by nothing
    else; else None."""
    value, reshapes = collapse.result, []
    while True:
        uses = list(value.uses)
        if len(uses) != 1:
            return None
        user = _op(uses[0].owner)
        if isinstance(user, (tensor.ExpandShapeOp, tensor.CollapseShapeOp)):
            reshapes.append(user)
            value = user.result
            continue
        if not isinstance(user, bufferization.MaterializeInDestinationOp):
            return None
        break
    if isinstance(user.dest, ir.BlockArgument):
        return None
    view = _op(user.dest.owner)
    if isinstance(view, bufferization.AllocTensorOp) and not list(view.operands) and len(list(view.result.uses)) == 1:
        return view, user, reshapes  # a result's fresh buffer (the caller's, once results are out-params)
    if not isinstance(view, memref.ViewOp) or view.operation.block != user.operation.block:
        return None
    if not (user.restrict and user.writable):
        return None
    for operand in view.operands:
        if not isinstance(operand, ir.BlockArgument) and not isinstance(_op(operand.owner), arith.ConstantOp):
            return None
    return view, user, reshapes


def _unshape(value: ir.Value, reshapes: list) -> ir.Value:
    """`value`, of the type the last of `reshapes` produces, taken back through their inverses to
    the type the first one reads."""
    for op in reversed(reshapes):
        source_type = ir.RankedTensorType(op.src.type)
        groups = reassociation(op)
        if isinstance(op, tensor.ExpandShapeOp):
            value = tensor.collapse_shape(source_type, value, groups)
        else:
            value = tensor.expand_shape(source_type, value, groups, [], list(source_type.shape))
    return value


def accumulate_in_slots(module: ir.Operation) -> None:
    """Each kernel whose C starts as an uninitialised `tensor.empty` (then zero-filled) and whose
    collapsed result is stored, maybe reshaped, to an arena slot accumulates in that slot: the
    empty becomes the slot (`bufferization.to_tensor` of its view, restrict, writable, reshaped
    back; the store then drops its `restrict`, as `eliminate-empty-tensors` does). One stored to
    a function result accumulates in the result's buffer (the caller's output once
    `buffer-results-to-out-params` ran; the runtimes give an output that overlaps an input a
    temporary, or refuse it). Without it the kernel's C is a heap buffer that is copied after every call
    (`eliminate-empty-tensors` does not follow the chain through the expansion and collapse of
    the blocked C). The slot is C's alone from this op on: the plan gives a result its own bytes
    for its op's lifetime, disjoint from those of the op's operands."""
    for collapse in collect_ops(module, tensor.CollapseShapeOp):
        source_type = ir.RankedTensorType(collapse.src.type)
        if source_type.rank != 4 or not source_type.has_static_shape:
            continue
        empty = _empty_behind(collapse.src)
        found = _slot_store(collapse) if empty is not None else None
        if found is None or empty.result.type != collapse.result.type:
            continue
        view, store, reshapes = found
        if empty.operation.block != view.operation.block:
            continue
        for op in [operand.owner.operation for operand in view.operands if not isinstance(operand, ir.BlockArgument)]:
            if op.block == empty.operation.block and not op.is_before_in_block(empty.operation):
                op.move_before(empty.operation)  # the offset constant may come after the empty
        view.operation.move_before(empty.operation)
        with ir.InsertionPoint(empty), empty.location:
            if isinstance(view, bufferization.AllocTensorOp):
                slot = view.result
            else:
                del store.attributes["restrict"]
                slot_type = ir.RankedTensorType(store.source.type)
                slot = bufferization.ToTensorOp(slot_type, view.result, restrict=True, writable=True).result
            flat = _unshape(slot, reshapes)
        empty.result.replace_all_uses_with(flat)
        empty.erase()


def _positive_zero_fill(value: ir.Value):
    """The `linalg.fill` of +0.0 that `value` (a kernel's C, maybe through the expand_shape of
    its blocking) is, when it has no other use; else None. (-0.0 is no start: -0 + -0 is -0.)"""
    while not isinstance(value, ir.BlockArgument):
        op = _op(value.owner)
        if isinstance(op, tensor.ExpandShapeOp) and len(list(value.uses)) == 1:
            value = op.src
            continue
        if not isinstance(op, linalg.FillOp) or len(list(value.uses)) != 1:
            return None
        scalar = op.inputs[0]
        if isinstance(scalar, ir.BlockArgument) or not isinstance(_op(scalar.owner), arith.ConstantOp):
            return None
        attr = _op(scalar.owner).value
        if not isinstance(attr, ir.FloatAttr) or str(attr).startswith("-") or ir.FloatAttr(attr).value != 0.0:
            return None
        return op
    return None


def _depends_on(value: ir.Value, target: ir.Value) -> bool:
    """Whether `value` is `target` or computed from it (through the ops that define it)."""
    pending = [value]
    while pending:
        value = pending.pop()
        if value == target:
            return True
        if not isinstance(value, ir.BlockArgument):
            pending += list(value.owner.operands)
    return False


def _tile_reads(fill: ir.OpView):
    """Each `vector.transfer_read` of a register tile of the C that `fill` starts, with the loops
    it lies in along C's chain (scf.for / scf.forall carrying C) and the dynamic offsets of the
    slices of C taken on the way; None when C has a use that could read it otherwise."""
    reads, pending = [], [(fill.result, [], [])]
    while pending:
        value, loops, offsets = pending.pop()
        for use in value.uses:
            user, number = _op(use.owner), use.operand_number
            if isinstance(user, scf.ForOp) and number >= 3:
                pending.append((user.inner_iter_args[number - 3], loops + [user], offsets))
            elif isinstance(user, scf.ForallOp) and number >= len(user.operands) - len(user.outputs):
                index = number - (len(user.operands) - len(user.outputs))
                pending.append((user.inner_iter_args[index], loops + [user], offsets))
            elif isinstance(user, tensor.ExtractSliceOp) and number == 0:
                pending.append((user.result, loops, offsets + list(user.operands)[1:]))
            elif isinstance(user, tensor.ExpandShapeOp) and number == 0:
                pending.append((user.result, loops, offsets))
            elif isinstance(user, vector.TransferReadOp) and number == 0:
                reads.append((user, loops, offsets))
            elif isinstance(user, (tensor.InsertSliceOp, tensor.ParallelInsertSliceOp)) and number == 1:
                continue  # a tile written back into C
            elif isinstance(user, scf.YieldOp) or (isinstance(user, vector.TransferWriteOp) and number == 1):
                continue  # C carried on, or a register tile stored into it
            else:
                return None
    return reads


def _indexes(loop, offsets: list) -> bool:
    """Whether every induction variable of `loop` feeds one of `offsets` (a slice of C)."""
    ivs = list(loop.induction_variables) if isinstance(loop, scf.ForallOp) else [loop.induction_variable]
    return all(any(_depends_on(offset, iv) for offset in offsets) for iv in ivs)


def _first_visit(loops: list, offsets: list):
    """An i1 that is true when the C tile at `offsets` is visited for the first time: every
    scf.for in `loops` whose induction variable does not index C (the K blocks: the tiles of C
    that the M and N loops pick are disjoint) is at its lower bound; None when no loop revisits
    the tile (a single K block)."""
    condition = None
    for loop in loops:
        if _indexes(loop, offsets):
            continue
        first = arith.cmpi(arith.CmpIPredicate.eq, loop.induction_variable, loop.lowerBound)
        condition = first if condition is None else arith.andi(condition, first)
    return condition


def start_from_zero(module: ir.Operation) -> None:
    """Each kernel whose C starts as a zero fill (tagged before tiling) runs no fill: its register
    tiles start from zero accumulators at their first visit (no K block added to them yet) and
    are loaded from C at later ones; the fill's destination, written whole by the first stores
    (every tile is full), takes its place. The sums and their order are unchanged (0 + a·b is
    a·b, as the fill's +0.0 gave)."""
    for fill in collect_ops(module, linalg.FillOp):
        if ZERO_C_ATTR not in fill.attributes:
            continue
        del fill.attributes[ZERO_C_ATTR]
        reads = _tile_reads(fill)
        if not reads:
            continue
        if any(
            isinstance(loop, scf.ForallOp) and not _indexes(loop, offsets)
            for _, loops, offsets in reads
            for loop in loops
        ):
            continue  # a parallel loop that revisits a tile: no first visit to tell
        for read, loops, offsets in reads:
            with ir.InsertionPoint(read), read.location:
                first = _first_visit(loops, offsets)
                vector_type = ir.VectorType(read.result.type)
                zero = ir.FloatAttr.get(vector_type.element_type, 0.0)
                zeros = arith.constant(vector_type, ir.DenseElementsAttr.get_splat(vector_type, zero))
                if first is None:
                    read.result.replace_all_uses_with(zeros)
                    read.erase()
                    continue
                branch = scf.IfOp(first, [vector_type], has_else=True)
                with ir.InsertionPoint(branch.then_block):
                    scf.YieldOp([zeros])
                read.result.replace_all_uses_with(branch.result)
                with ir.InsertionPoint(branch.else_block):
                    scf.YieldOp([read.result])
                read.operation.move_before(branch.else_block.operations[0])
        fill.result.replace_all_uses_with(fill.outputs[0])
        fill.erase()


PREFETCH_PASSES = 8  # row blocks over which one panel's prefetch of the next is spread (one line per K step)
LINE = 16  # f32 elements per 64-byte cache line
PREFETCH_LOCALITY = 3  # prefetcht0


def _constant_index(value: ir.Value):
    """The value of an `arith.constant` index, else None."""
    if isinstance(value, ir.BlockArgument) or not isinstance(_op(value.owner), arith.ConstantOp):
        return None
    return ir.IntegerAttr(_op(value.owner).value).value


def _slice_offsets(slice_op, dims: int) -> list:
    """The first `dims` offsets of an `extract_slice`, each an ir.Value or an int."""
    dynamic = iter(slice_op.offsets)
    marker = ir.ShapedType.get_dynamic_stride_or_offset()
    return [next(dynamic) if offset == marker else offset for offset in list(slice_op.static_offsets)][:dims]


def _panel_position(read, panels: ir.Value, k_loop):
    """(panel, k) offsets, in `panels`, of the K block that the register step `read` (a
    vector.transfer_read of B) lies in: the sums of the dim-0 and dim-1 offsets of the rank-3
    slices between `panels` and it that are taken outside `k_loop`; None when `read` does not read
    `panels` through slices alone."""
    value, slices = read.operands[0], []
    while not isinstance(value, ir.BlockArgument) and isinstance(_op(value.owner), tensor.ExtractSliceOp):
        slices.append(_op(value.owner))
        value = _op(value.owner).source
    if value != panels:
        return None
    sums = [[], []]
    for slice_op in slices:
        inside = slice_op.operation.parent
        while inside is not None and inside != k_loop.operation:
            inside = inside.parent
        if inside is not None or ir.RankedTensorType(slice_op.source.type).rank != 3:
            continue
        for dim, offset in enumerate(_slice_offsets(slice_op, 2)):
            if not (isinstance(offset, int) and offset == 0):
                sums[dim].append(offset)
    return sums


def _function_argument(value: ir.Value) -> bool:
    """Whether `value` is an argument of a function (not of a loop body)."""
    return isinstance(value, ir.BlockArgument) and isinstance(value.owner.owner.opview, func.FuncOp)


def _const(value: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), value)


def _index_sum(terms: list) -> ir.Value:
    total = None
    for term in terms:
        value = arith.constant(ir.IndexType.get(), term) if isinstance(term, int) else term
        total = value if total is None else arith.addi(total, value)
    return total if total is not None else arith.constant(ir.IndexType.get(), 0)


def prefetch_next_panels(module: ir.Operation, panel_arguments: list) -> None:
    """Each K loop of a kernel whose B panels are a function argument (bound weights:
    rlx-hoist-param-packing) prefetches the next panel's K block while it multiplies the current
    one: one cache line per K step, the row block `i` of the enclosing loop over row blocks taking
    lines [(i mod 8)·q, (i mod 8 + 1)·q) of the 2·KC lines (q = KC/KR steps per K loop).

    Bound weights are read once per call, from memory rather than a cache (a 12-layer model's are
    150 MB): without it the first row block of each panel waits for the panel at memory speed
    while the other row blocks find it in L2 (measured: 10-18% of a 128-row GEMM's time); with it
    the stream is spread over the previous panel's row blocks.  A prefetch reads nothing and
    changes no value."""
    buffers = []  # (panels argument, its memref read at its function's entry); a Value is no dict key
    prefetching = []  # the K loops given their prefetch
    for read in collect_ops(module, vector.TransferReadOp):
        k_loop = read.operation.parent.opview
        if not isinstance(k_loop, scf.ForOp):
            continue
        m_loop = k_loop.operation.parent.opview
        if not isinstance(m_loop, scf.ForOp):
            continue
        for panels in panel_arguments:
            position = _panel_position(read, panels, k_loop)
            if position is not None:
                break
        else:
            continue
        lower, upper, step = (_constant_index(v) for v in (k_loop.lowerBound, k_loop.upperBound, k_loop.step))
        if lower != 0 or upper is None or step != KR:
            continue
        if any(_depends_on(term, m_loop.induction_variable) for terms in position for term in terms
               if not isinstance(term, int)):
            continue  # the loop around is not one over row blocks of the same panel
        if any(loop == k_loop.operation for loop in prefetching):
            continue  # one prefetch per K loop (its step reads B in several transfer_reads)
        prefetching.append(k_loop.operation)
        count = shape_of(panels.type)[0]
        steps = upper // KR
        buffer = next((memory for argument, memory in buffers if argument == panels), None)
        if buffer is None:
            with ir.InsertionPoint.at_block_begin(panels.owner), read.location:
                buffer_type = ir.MemRefType.get(shape_of(panels.type), ir.RankedTensorType(panels.type).element_type)
                buffer = bufferization.ToBufferOp(buffer_type, panels, read_only=True).result
            buffers.append((panels, buffer))
        with ir.InsertionPoint.at_block_begin(k_loop.body), read.location:
            panel = _index_sum(position[0])
            following = arith.minui(arith.addi(panel, _const(1)), _const(count - 1))
            passes = arith.remui(m_loop.induction_variable, _const(PREFETCH_PASSES))
            line = arith.addi(arith.muli(passes, _const(steps)), arith.divui(k_loop.induction_variable, _const(KR)))
            row = arith.addi(_index_sum(position[1]), arith.divui(line, _const(NR // LINE)))
            column = arith.muli(arith.remui(line, _const(NR // LINE)), _const(LINE))
            memref.PrefetchOp(buffer, [following, row, column], False, PREFETCH_LOCALITY, True)


def _any(n: int) -> str:
    return ", ".join(["!transform.any_op"] * n)


def inside_forall(op: ir.OpView) -> bool:
    """Whether `op` is nested in an `scf.forall`: it then runs as one thread's share of a parallel
    loop (e.g. `rlx.grouped_matmul`'s column blocks), and splitting it across threads again would
    nest parallel regions."""
    parent = op.operation.parent
    while parent is not None:
        if isinstance(parent.opview, scf.ForallOp):
            return True
        parent = parent.parent
    return False


def _tile_kernel(index: int, plan: KernelPlan) -> list[str]:
    """Transform ops tiling kernel `index` down to one KR×MR×NR step."""
    k = f"%k{index}"
    lines = [
        f"{k}_0 = transform.structured.match ops{{[\"linalg.generic\"]}} attributes {{{KERNEL_ATTR} = {index} : i64}}"
        " in %root : (!transform.any_op) -> !transform.any_op",
    ]
    kernel = f"{k}_0"
    split = plan.forall()
    if split is not None:
        dim, chunk = split
        sizes = [0] * 5
        sizes[dim] = chunk
        fuse_pack = dim == 1 and plan.packed and plan.packed_here  # each thread packs the B panels it multiplies
        if fuse_pack:
            lines.append(
                f"{k}_packed = transform.get_producer_of_operand {kernel}[1] : (!transform.any_op) -> !transform.any_op"
            )
        lines.append(
            f"{k}_par, {k}_forall = transform.structured.tile_using_forall {kernel} tile_sizes {sizes}"
            f" : (!transform.any_op) -> ({_any(2)})"
        )
        kernel = f"{k}_par"
        if fuse_pack:
            lines.append(
                f"{k}_fp, {k}_f1 = transform.structured.fuse_into_containing_op {k}_packed into {k}_forall"
                f" : ({_any(2)}) -> ({_any(2)})"
            )
    lines += [
        f"{k}_cache, {k}_cl:3 = transform.structured.tile_using_for {kernel} tile_sizes {plan.cache_tiles()}"
        f" interchange = [1, 2, 0] : (!transform.any_op) -> ({_any(4)})",
        f"{k}_reg, {k}_rl:2 = transform.structured.tile_using_for {k}_cache tile_sizes [1, 1, 0, 0, 0]"
        f" interchange = [1, 0] : (!transform.any_op) -> ({_any(3)})",
        f"{k}_step, {k}_kl = transform.structured.tile_using_for {k}_reg tile_sizes [0, 0, {KR}, 0, 0]"
        f" : (!transform.any_op) -> ({_any(2)})",
    ]
    return lines


_VECTORIZE = """
%funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
{VECTORIZE_STEPS}
transform.apply_patterns to %funcs {
  transform.apply_patterns.vector.reduction_to_contract
  transform.apply_patterns.vector.transfer_permutation_patterns
  transform.apply_patterns.canonicalization
} : !transform.any_op
%loops = transform.structured.match ops{["scf.for"]} in %root : (!transform.any_op) -> !transform.any_op
transform.foreach %loops : !transform.any_op {
^bb0(%loop: !transform.any_op):
  transform.loop.hoist_loop_invariant_subsets %loop : !transform.any_op
}
transform.apply_patterns to %funcs {
  transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
  transform.apply_patterns.vector.lower_outerproduct
  transform.apply_patterns.vector.lower_transpose
  transform.apply_patterns.vector.lower_broadcast
  transform.apply_patterns.vector.lower_shape_cast
  transform.apply_patterns.canonicalization
} : !transform.any_op
%packs = transform.structured.match ops{["linalg.pack"]} in %root : (!transform.any_op) -> !transform.any_op
transform.foreach %packs : !transform.any_op {
^bb0(%pack: !transform.any_op):
  %typed = transform.cast %pack : !transform.any_op to !transform.op<"linalg.pack">
  transform.structured.lower_pack %typed : (!transform.op<"linalg.pack">)
    -> (!transform.op<"tensor.pad">, !transform.op<"tensor.expand_shape">, !transform.op<"linalg.transpose">)
}
transform.apply_patterns to %funcs { transform.apply_patterns.canonicalization } : !transform.any_op
""".replace("MR", str(MR)).replace("NR", str(NR)).replace("KR", str(KR))


def _vectorize_steps(index: int) -> str:
    """Vectorize kernel `index`'s KR×MR×NR step, found again inside its K loop (folding
    the unit dims replaced the generic and dropped its tag). The patterns apply to the ops
    nested in the loop, not to the loop: canonicalizing it would fold a single-step K loop
    into its body and leave the `%k_kl` handle with no replacement."""
    return (
        f"transform.apply_patterns to %k{index}_kl {{\n"
        "  transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices\n"
        "  transform.apply_patterns.canonicalization\n"
        "} : !transform.any_op\n"
        f"%step{index} = transform.structured.match ops{{[\"linalg.generic\"]}} in %k{index}_kl"
        " : (!transform.any_op) -> !transform.any_op\n"
        f"transform.structured.vectorize %step{index} : !transform.any_op"
    )


def transform_script(plans: list[KernelPlan]) -> str:
    body = [line for index, plan in enumerate(plans) for line in _tile_kernel(index, plan)]
    vectorize = "\n".join(_vectorize_steps(index) for index in range(len(plans)))
    return "\n".join(body) + _VECTORIZE.replace("{VECTORIZE_STEPS}", vectorize)


@dataclasses.dataclass(frozen=True)
class TileMatmul(RlxPass):
    name = "rlx-tile-matmul"
    summary = "Tile, vectorize (and split across threads) the GEMM kernels of rlx-pack-matmul"
    creates_rlx_ops = False
    threads: int = option(1, "threads to split each kernel across (scf.forall; 1 = serial)", minimum=1, maximum=MAX_THREADS)

    def run(self, module: ir.Operation) -> bool:
        kernels = [op for op in collect_ops(module, linalg.GenericOp) if KERNEL_ATTR in op.attributes]
        if not kernels:
            return False  # nothing changed: the pass manager need not verify the module again
        plans, panel_arguments = [], []
        for index, op in enumerate(kernels):
            packed = PACKED_ATTR not in op.attributes or ir.BoolAttr(op.attributes[PACKED_ATTR]).value
            b_shape = shape_of(op.operands[1].type)  # [n/NR, k, NR] packed, [k, n/NR, NR] in place
            panels_n, depth = (b_shape[0], b_shape[1]) if packed else (b_shape[1], b_shape[0])
            # A kernel inside an scf.forall is already one thread's share of a parallel loop: serial.
            threads = 1 if inside_forall(op) else self.threads
            packed_here = not isinstance(op.operands[1], ir.BlockArgument)
            if packed and _function_argument(op.operands[1]) and op.operands[1] not in panel_arguments:
                panel_arguments.append(op.operands[1])
            blocks_m = shape_of(op.operands[-1].type)[0]  # C [m/MR, MR, n/NR, NR] (A may be viewed transposed)
            plans.append(KernelPlan(blocks_m, panels_n, depth, threads, packed, packed_here))
            zero_fill = _positive_zero_fill(op.operands[2]) if len(op.operands) == 3 else None
            if zero_fill is not None:
                zero_fill.attributes[ZERO_C_ATTR] = ir.UnitAttr.get()
            op.attributes[KERNEL_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), index)
        apply_script(module, transform_script(plans), kernels[0].location, "tiling the matmul kernels")
        start_from_zero(module)
        accumulate_in_slots(module)
        prefetch_next_panels(module, panel_arguments)
