"""The bridge between LIR in MLIR and the planner: buffers of a MIR function,
the plan written into it, the plan read back, and the fingerprint; which functions
a module defines and which of them carry a plan."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Optional

from mlir import ir
from mlir.dialects import arith, func

from ...dsl.traits import Elementwise
from ...ir import dtypes
from ...ir.attrs import FUSED_ATTR, PARAM_ATTR, PHASE_ATTR, SLOT_ATTR, TIED_ATTR, VIEW_ATTR
from ...ir.shapes import shape_of
from ...ir.walk import collect_ops, is_op, op_names
from ...lir.checker import check_plan
from ...lir.phases import PHASES
from ...lir.planner import Buffer, MemoryPlan
from .. import rlx
from .dialect import PlanOp

CONSTANT_OPS = (rlx.ConstantOp, arith.ConstantOp)
_VIEW_OPS = (rlx.ExpandOp, rlx.TransposeOp, rlx.ReshapeOp, rlx.KvCacheWriteOp, rlx.CastOp, rlx.NarrowOp)
# Per-op checks of the planner's loops read the op's name against those of the classes: as
# cheap as a string compare, where a typed view of every op would cost several times more.
_CONSTANT_NAMES, _VIEW_NAMES = op_names(CONSTANT_OPS), op_names(_VIEW_OPS)
# Ops whose operands may be strided views (a strided narrow read only by them is planned as a view,
# `_view_source`): their lowerings read each row of a head, so a row stride costs them nothing.
STRIDED_VIEW_READERS = (rlx.RopeOp, rlx.AttentionOp)
_STRIDED_READER_NAMES = op_names(STRIDED_VIEW_READERS)


def defined_functions(module: ir.Operation) -> list:
    """The `func.func` ops at the top level of `module` that have a body (not declarations)."""
    return [
        op for region in module.regions for block in region.blocks for op in block.operations
        if isinstance(op, func.FuncOp) and len(op.regions[0].blocks) > 0
    ]


def find_plan(function):
    """The `rlx_lir.plan` op of an LIR function, or None where the function has no plan."""
    block = function.operation.regions[0].blocks[0]
    return next((op for op in block.operations if isinstance(op, PlanOp)), None)


def has_plan(function) -> bool:
    return find_plan(function) is not None


def element_bytes(type_: ir.Type) -> int:
    """Bytes per element of a tensor type in memory (i1 is stored as a byte)."""
    element = dtypes.element_type(str(ir.RankedTensorType(type_).element_type))
    if element is None:
        raise ValueError(f"no byte size for element type {ir.RankedTensorType(type_).element_type}")
    return element.bytes


def byte_size(type_: ir.Type) -> int:
    return _count(shape_of(type_)) * element_bytes(type_)


@dataclass
class FunctionBuffers:
    """A function's values as planner buffers; ops are the schedule (plan op excluded)."""

    ops: list  # ir.Operation, in schedule order, the terminator last
    buffers: list[Buffer]
    value_ids: dict  # ir.Value -> buffer id


def function_buffers(function, fuse_elementwise: Optional[bool] = None) -> FunctionBuffers:
    """The function's buffers. Which elementwise results are fused (kind "fused", no
    buffer) is decided by `fuses_into_consumer` when planning (`fuse_elementwise`), and
    read from the ops' `rlx_lir.fused` markers otherwise (None)."""
    function = function.operation
    block = function.regions[0].blocks[0]
    ops = [op.operation for op in block.operations if not isinstance(op, PlanOp)]
    arg_attrs = list(ir.ArrayAttr(function.attributes["arg_attrs"])) if "arg_attrs" in function.attributes else []
    drafts: list[dict] = []
    value_ids: dict = {}
    sizes: dict = {}  # type -> byte_size: a long program has many values of few types

    def add(value, producer, kind, view_of=None, view_offset=0, may_alias=()):
        value_ids[value] = len(drafts)
        type_ = value.type
        size = sizes.get(type_)
        if size is None:
            size = sizes[type_] = byte_size(type_)
        drafts.append(dict(producer=producer, size=size, users=[], kind=kind,
                           view_of=view_of, view_offset=view_offset, may_alias=may_alias))

    for index, argument in enumerate(block.arguments):
        attrs = ir.DictAttr(arg_attrs[index]) if index < len(arg_attrs) else None
        add(argument, -1, "param" if attrs is not None and PARAM_ATTR in attrs else "input")
    returned = set()
    if ops and is_op(ops[-1], func.ReturnOp):
        returned = {v for v in ops[-1].operands}
    fused = _fused_ops(ops, returned, fuse_elementwise)
    executed_at = _execution_points(ops, fused)
    for index, op in enumerate(ops):
        for operand in _operands_within(op):
            if operand in value_ids:
                # A fused op reads its operands where it really runs: inside its consumer's loop.
                drafts[value_ids[operand]]["users"].append(executed_at[index])
        for position, result in enumerate(op.results):
            if not isinstance(result.type, ir.RankedTensorType):
                continue
            view = _view_source(op) or _tied_call_source(op, position)
            if view is not None and view[0] in value_ids:
                # A returned view stays a view (of an arena root, copied to the caller's buffer at return).
                add(result, index, "intermediate", value_ids[view[0]], view[1])
            else:
                kind = "constant" if op.name in _CONSTANT_NAMES else "output" if result in returned else "intermediate"
                if kind == "intermediate" and index in fused:
                    kind = "fused"
                if kind == "intermediate" and (len(op.results) > 1 or is_op(op, func.CallOp)):
                    # An op carries one rlx_lir.slot: results of multi-result ops stay out of
                    # the arena (bufferization allocates them).  So do calls' results: the
                    # callee returns them in a buffer of its own, a slot would only copy it.
                    kind = "allocated"
                # Not copied anywhere (rlx-lir-to-linalg), such a result is whatever buffer the
                # op gives it, maybe (part of) an operand's: reading it reads them.
                operands = () if kind != "allocated" else tuple(dict.fromkeys(
                    value_ids[v] for v in _operands_within(op) if v in value_ids))
                add(result, index, kind, may_alias=operands)
    buffers = [
        Buffer(id=i, producer=d["producer"], size=d["size"], users=tuple(d["users"]), kind=d["kind"],
               view_of=d["view_of"], view_offset=d["view_offset"], may_alias=d["may_alias"])
        for i, d in enumerate(drafts)
    ]
    return FunctionBuffers(ops, buffers, value_ids)


def returned_outputs(function) -> list:
    """(op, result) for each value that `function_buffers` calls an output (kind "output": a
    ranked tensor returned by the function, neither a view of another value nor a constant),
    in schedule order, read off the return and the ops it returns from without building every
    buffer (rlx-lir-to-linalg needs only these)."""
    block = function.operation.regions[0].blocks[0]
    last = block.operations[len(block.operations) - 1].operation if len(block.operations) else None
    if last is None or not is_op(last, func.ReturnOp):
        return []
    chosen = set()
    for value in last.operands:
        if not isinstance(value, ir.OpResult) or not isinstance(value.type, ir.RankedTensorType):
            continue
        op = value.owner.operation if isinstance(value.owner, ir.OpView) else value.owner
        view = _view_source(op) or _tied_call_source(op, value.result_number)
        # A view of a value with a buffer (an argument, a tensor an op makes), as in function_buffers.
        is_view = view is not None and (isinstance(view[0], ir.BlockArgument) or isinstance(view[0].type, ir.RankedTensorType))
        if not is_view and op.name not in _CONSTANT_NAMES:
            chosen.add(value)
    if not chosen:
        return []
    owners = {value.owner.operation if isinstance(value.owner, ir.OpView) else value.owner for value in chosen}
    return [(op.operation, result) for op in block.operations if op.operation in owners
            for result in op.operation.results if result in chosen]


def _fused_ops(ops: list, returned: set, fuse_elementwise: Optional[bool]) -> dict[int, int]:
    """{index of a fused op: index of its consumer}, decided (`fuse_elementwise`) or read from markers."""
    positions = {op: index for index, op in enumerate(ops)}
    fused = {}
    types = FloatTensorTypes()
    for index, op in enumerate(ops):
        if len(op.results) != 1 or op.results[0] in returned or op.name in _CONSTANT_NAMES or _view_source(op) is not None:
            continue
        result = op.results[0]
        if fuse_elementwise:
            consumer = _fusing_consumer(op, result, types)
        else:
            consumer = _only_user(result) if FUSED_ATTR in op.attributes else None
        if consumer is not None and consumer in positions:
            fused[index] = positions[consumer]
    return fused


def _execution_points(ops: list, fused: dict[int, int]) -> list[int]:
    """Where each op's loop really runs: a fused op inside its (transitive) consumer's."""
    points = list(range(len(ops)))
    for index in reversed(range(len(ops))):
        if index in fused:
            points[index] = points[fused[index]]
    return points


def fuses_into_consumer(op: ir.Operation, result: ir.Value, types: Optional["FloatTensorTypes"] = None) -> bool:
    """True when `result` is computed inside its only consumer's loop nest, so needs no buffer.

    Both ops are float elementwise MIR ops of the same result shape, so the producer's
    linalg.generic fuses into the consumer's (`rlx-fuse-elementwise`, which fuses
    single-use producers: values with a slot are also used by their materialisation).
    `types`: a FloatTensorTypes shared by the calls on one function (each type is judged once).
    """
    return _fusing_consumer(op, result, types if types is not None else FloatTensorTypes()) is not None


def _fusing_consumer(op: ir.Operation, result: ir.Value, types: "FloatTensorTypes") -> Optional[ir.Operation]:
    """The consumer `result` of `op` is computed inside (`fuses_into_consumer`), or None."""
    if not types.float_elementwise(op):
        return None
    consumer = _only_user(result)
    if consumer is None or consumer.parent != op.parent or not types.float_elementwise(consumer):
        return None
    return consumer if consumer.results[0].type == result.type else None


def _only_user(value: ir.Value) -> Optional[ir.Operation]:
    """The op of `value`'s only use, or None where it has none or several."""
    uses = iter(value.uses)
    first = next(uses, None)
    if first is None or next(uses, None) is not None:
        return None
    owner = first.owner
    return owner if isinstance(owner, ir.Operation) else owner.operation


class FloatTensorTypes:
    """Which types are ranked tensors of floats and which ops are float elementwise ops, each
    judged once (a long elementwise chain has tens of thousands of values of a handful of types,
    and each op is asked about as a producer and as a consumer). One per function or pass run:
    it holds types and ops, so it must not outlive their context."""

    def __init__(self) -> None:
        self._types: dict = {}
        self._ops: dict = {}

    def __call__(self, type_: ir.Type) -> bool:
        known = self._types.get(type_)
        if known is None:
            known = self._types[type_] = isinstance(type_, ir.RankedTensorType) and isinstance(
                ir.RankedTensorType(type_).element_type, ir.FloatType)
        return known

    def float_elementwise(self, op: ir.Operation) -> bool:
        known = self._ops.get(op)
        if known is None:
            known = self._ops[op] = (
                len(op.results) == 1 and _has_elementwise_trait(op)
                and all(self(v.type) for v in op.operands) and self(op.results[0].type)
            )
        return known


_ELEMENTWISE_CLASSES: dict[str, bool] = {}  # op name -> its op class has the Elementwise trait


def _has_elementwise_trait(op: ir.Operation) -> bool:
    known = _ELEMENTWISE_CLASSES.get(op.name)
    if known is None:
        has_trait = getattr(type(op.opview), "has_trait", None)
        known = _ELEMENTWISE_CLASSES[op.name] = has_trait is not None and bool(has_trait(Elementwise))
    return known


def _operands_within(op: ir.Operation) -> list:
    """`op`'s operands and those of every op nested in its regions: all the values it reads."""
    if not op.regions:
        return list(op.operands)
    return [operand for nested in collect_ops(op) for operand in nested.operands]


def _view_source(operation: ir.Operation) -> Optional[tuple]:
    """(source value, byte offset) when `op`'s result is a pure view of its operand.

    A view gets no bytes of its own: it is planned inside its source's slot, which stays live while
    the view is read, and `rlx-lir-to-linalg` leaves its lowering alone (a memref view of the source,
    or a fresh value: both are right).  Every other planned value is computed into a slot of its
    own and read from there, so an op that is not listed here but lowers to a view (a strided
    narrow, say) costs a copy, never a wrong answer.

    A narrow is a view when it is contiguous (a row range of the leading non-unit dim), and also
    when it is strided but read only by ops that take a strided operand as cheaply as a packed one
    (`STRIDED_VIEW_READERS`: the q / k / v column ranges of a fused QKV product, read by RoPE and
    attention row by row of each head).  Its lowering, a `tensor.extract_slice` of the source read
    from its slot, then bufferizes to a strided `memref.subview` of that slot: no copy.  The bytes
    it reads lie between its offset and its root's end, inside the root, which stays live while it
    is read, as for any view.
    """
    if operation.name not in _VIEW_NAMES:
        return None  # most ops
    op = operation.opview
    if isinstance(op, (rlx.ExpandOp, rlx.TransposeOp)) and op.results[0].type == op.operands[0].type:
        if isinstance(op, rlx.ExpandOp) or list(op.perm) == sorted(op.perm):
            return op.operands[0], 0  # same shape and, for a transpose, the identity permutation
    if isinstance(op, rlx.ReshapeOp):
        return op.operands[0], 0
    if isinstance(op, rlx.KvCacheWriteOp):
        # Not a pure view: the op writes its new rows into the cache, and its result *is* the
        # cache's buffer (tensor.insert_slice, bufferized in place).  Planned as a view so it
        # gets no slot: a slot would copy the whole cache into the arena at every step.
        return op.operands[0], 0
    if isinstance(op, rlx.CastOp) and ir.RankedTensorType(op.operands[0].type).element_type == ir.RankedTensorType(op.results[0].type).element_type:
        return op.operands[0], 0
    if isinstance(op, rlx.NarrowOp):
        shape = shape_of(op.operands[0].type)
        axis = op.axis % len(shape)
        if all(d == 1 for d in shape[:axis]) or _read_only_strided(op.results[0]):
            inner = 1  # contiguous (a row range of the leading non-unit dim), or strided
            for d in shape[axis + 1:]:
                inner *= d
            return op.operands[0], op.start * inner * element_bytes(op.operands[0].type)
    return None


def _read_only_strided(value: ir.Value) -> bool:
    """Whether `value` is used, and only by ops of `STRIDED_VIEW_READERS`."""
    users = [use.owner for use in value.uses]
    return bool(users) and all((u if isinstance(u, ir.Operation) else u.operation).name in _STRIDED_READER_NAMES
                               for u in users)


def _tied_call_source(operation: ir.Operation, position: int) -> Optional[tuple]:
    """(operand, 0) when result `position` of a `func.call` is that operand, an argument of the
    calling function, updated in place by the callee (`rlx.tied` in the call's `res_attrs`: a decoder
    layer outlined by rlx-outline-blocks writing its KV caches).  Planned as a view, like the
    `rlx.kv_cache_write` it stands for: no slot (a slot would copy the whole cache at every call)."""
    if "res_attrs" not in operation.attributes or not is_op(operation, func.CallOp):
        return None
    attributes = ir.ArrayAttr(operation.attributes["res_attrs"])
    if position >= len(attributes) or TIED_ATTR not in ir.DictAttr(attributes[position]):
        return None
    index = ir.IntegerAttr(ir.DictAttr(attributes[position])[TIED_ATTR]).value
    if not 0 <= index < len(operation.operands) or not isinstance(operation.operands[index], ir.BlockArgument):
        return None  # written in place into a value of the caller's own: planned as any call result
    return operation.operands[index], 0


def _count(shape) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


def plan_from_ir(function, buffers: FunctionBuffers) -> Optional[MemoryPlan]:
    """The plan as written in an LIR function (None without a plan op)."""
    plan_op = find_plan(function)
    if plan_op is None:
        return None
    values = plan_op.attribute_values()
    offsets = {}
    roots = {}
    for op in buffers.ops:
        if SLOT_ATTR not in op.attributes:
            continue
        offset, _size = list(ir.DenseI64ArrayAttr(op.attributes[SLOT_ATTR]))
        result_id = buffers.value_ids[op.results[0]]
        offsets[result_id] = offset
    for buffer in buffers.buffers:
        root = buffer.id
        while buffers.buffers[root].view_of is not None:
            root = buffers.buffers[root].view_of
        if root != buffer.id:
            roots[buffer.id] = root
    return MemoryPlan(
        arena_size=values["arena_size"], alignment=values["alignment"], offsets=offsets, lifetimes={},
        roots=roots, lower_bound=values["lower_bound"], unshared_total=values["unshared"],
        strategy=values["strategy"],
    )


def plan_problems(function) -> list[str]:
    """What is wrong with the plan written in `function`: its structure, then the
    independent checker's findings (overlaps, alignment, views, bounds)."""
    problems = _structure_problems(function.operation)
    if problems:
        return problems
    try:
        buffers = function_buffers(function)
    except ValueError as error:
        return [str(error)]
    problems = _annotation_problems(buffers)
    if problems:
        return problems
    plan = plan_from_ir(function, buffers)
    if plan is None:
        return ["no rlx_lir.plan op"]
    return check_plan(buffers.buffers, len(buffers.ops), plan)


def _structure_problems(function: ir.Operation) -> list[str]:
    views = list(function.regions[0].blocks[0].operations)
    operations = [view.operation for view in views]
    plans = [i for i, view in enumerate(views) if isinstance(view, PlanOp)]
    if plans != [0]:
        return ["'rlx_lir.plan' must be the first op of a func.func, and its only plan"]
    problems = []
    types = FloatTensorTypes()
    for op in operations[1:]:
        attrs = op.attributes
        if PHASE_ATTR in attrs:
            phase = attrs[PHASE_ATTR]
            if not isinstance(phase, ir.StringAttr) or ir.StringAttr(phase).value not in PHASES:
                problems.append(f"'{op.name}': {PHASE_ATTR} {phase} is not one of {', '.join(PHASES)}")
        if SLOT_ATTR in attrs:
            slot = attrs[SLOT_ATTR]
            if not isinstance(slot, ir.DenseI64ArrayAttr) or len(ir.DenseI64ArrayAttr(slot)) != 2:
                problems.append(f"'{op.name}': {SLOT_ATTR} must be array<i64: offset, size>, got {slot}")
            elif len(op.results) != 1 or not isinstance(op.results[0].type, ir.RankedTensorType):
                problems.append(f"'{op.name}': {SLOT_ATTR} on an op without exactly one tensor result")
            else:
                size = list(ir.DenseI64ArrayAttr(slot))[1]
                if size != byte_size(op.results[0].type):
                    problems.append(
                        f"'{op.name}': slot size {size} is not the {byte_size(op.results[0].type)} bytes of "
                        f"{op.results[0].type}"
                    )
        if VIEW_ATTR in attrs and SLOT_ATTR not in attrs:
            problems.append(f"'{op.name}': {VIEW_ATTR} without a {SLOT_ATTR}")
        if FUSED_ATTR in attrs and (len(op.results) != 1 or not fuses_into_consumer(op, op.results[0], types)):
            problems.append(
                f"'{op.name}' is marked {FUSED_ATTR} but its result is not a float elementwise value used "
                "only by a float elementwise op of the same type"
            )
        if FUSED_ATTR in attrs and SLOT_ATTR in attrs:
            problems.append(f"'{op.name}': {FUSED_ATTR} and {SLOT_ATTR} together (a fused value has no buffer)")
    return problems


def _annotation_problems(buffers: FunctionBuffers) -> list[str]:
    """`rlx_lir.view` must mark exactly the placed buffers that are views."""
    problems = []
    for op in buffers.ops:
        if SLOT_ATTR not in op.attributes:
            continue
        buffer = buffers.buffers[buffers.value_ids[op.results[0]]]
        marked = VIEW_ATTR in op.attributes
        if marked and buffer.view_of is None:
            problems.append(f"'{op.name}' is marked {VIEW_ATTR} but computes its result")
        elif not marked and buffer.view_of is not None:
            problems.append(f"'{op.name}' is a view of its operand but lacks {VIEW_ATTR}")
    return problems


_FINGERPRINT = re.compile(r'fingerprint = "[^"]*"')


def fingerprint(function) -> str:
    """SHA-256 of the function's generic form without locations or the fingerprint itself."""
    text = function.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    return "sha256:" + hashlib.sha256(_FINGERPRINT.sub("", text).encode()).hexdigest()


# Public name for rlx-lir-to-linalg, which follows views of an argument updated in place.
view_source = _view_source
