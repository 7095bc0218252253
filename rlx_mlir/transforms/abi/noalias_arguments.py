"""rlx-noalias-arguments / rlx-noalias-to-llvm: tell LLVM which memref arguments never overlap.

For a pointer that arrives as a function argument, LLVM cannot prove that a loop's stores
miss its loads: the loop vectorizer guards each loop with a run-time overlap check and
keeps a scalar copy of it. The functions rlx-split-functions makes (one per run of loop
nests of a long program) receive every buffer that way; on a 50k-op elementwise chain the
checks and scalar copies are about a third of LLVM's time. Their callers know better: two
`memref.alloc`s are distinct objects, two views of one arena at disjoint constant byte
ranges never overlap.

`rlx-noalias-arguments` (on buffers, before `convert-func-to-llvm`) marks a memref argument
of a private function noalias when that is provably right at every call site:

- the function is a leaf: it reaches memory only through its arguments (no call, no
  `memref.get_global`, no LLVM or OpenMP op) and only ever through func.call (its symbol is
  never taken as a value);
- inside it, each memref argument is classified by its uses (through view ops): read (a
  linalg input, `memref.load`, `memref.dim`), freed (`memref.dealloc`), or else written;
- at each call, the origin of each operand is found through view ops: a `memref.alloc` /
  `alloca` (an object of its own), a `memref.get_global` (at a constant byte range when it
  is one `memref.view` of it), the caller's entry-block arguments (ONE object: a caller may
  pass overlapping arrays, a KV cache updated in place, an output that is an input), or
  unknown (overlaps everything). Arguments and globals count as overlapping.

An argument is noalias when it is not freed in the function and, at every call, no other
memref argument that may overlap it is accessed with a write on either side (LLVM's
`noalias` forbids an overlapping access only where the memory is modified). A tied
(in-place) argument and an output are the caller's arguments, so they never get it against
one another or against inputs.

`convert-func-to-llvm` drops argument attributes of memrefs (one memref becomes 3 + 2*rank
LLVM arguments), so the mark is the function attribute `rlx.noalias_pointers`: the positions
of the aligned pointers (the one every load and store uses: the descriptor's second field)
among the LLVM arguments. `rlx-noalias-to-llvm`, after `convert-func-to-llvm`, turns each
into `llvm.noalias` on that argument.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from mlir import ir
from mlir.dialects import arith, func, memref

from ...ir.attrs import NOALIAS_POINTERS_ATTR
from ...ir.walk import is_op, op_names
from ...passmanager.base import RlxPass, fail

_VIEW_OPS = (memref.ViewOp, memref.SubViewOp, memref.CastOp, memref.ReinterpretCastOp, memref.ExpandShapeOp,
             memref.CollapseShapeOp, memref.TransposeOp)
_READ_OPS = (memref.LoadOp, memref.DimOp)
_ALLOC_OPS = (memref.AllocOp, memref.AllocaOp)
# Ops through which a function may reach memory other than its arguments.
_FOREIGN_MEMORY_OPS = (func.CallOp, func.CallIndirectOp, memref.GetGlobalOp)
_FOREIGN_DIALECTS = ("llvm.", "omp.")
_FOREIGN_MEMORY_NAMES = op_names(_FOREIGN_MEMORY_OPS)  # read per op in _is_leaf's walk (every op of a function)

READ, WRITTEN, FREED = 0, 1, 2
ARGUMENTS = "arguments"  # the origin of every entry-block argument of a caller: one object


def llvm_positions(types: list[ir.Type]) -> Optional[list[tuple[int, int]]]:
    """For each argument type, (its first LLVM argument, how many) under convert-func-to-llvm's
    descriptor convention (a ranked memref: allocated and aligned pointer, offset, sizes, strides);
    None where a type's expansion is not certain."""
    positions, at = [], 0
    for type_ in types:
        if isinstance(type_, ir.MemRefType):
            count = 3 + 2 * type_.rank
        elif isinstance(type_, (ir.IndexType, ir.IntegerType, ir.FloatType)):
            count = 1
        else:
            return None
        positions.append((at, count))
        at += count
    return positions


def _access(value: ir.Value) -> int:
    """How the function uses memref `value` (an argument), through view ops: the strongest of
    READ < WRITTEN < FREED; an op not known to only read counts as a write."""
    strongest, pending = READ, [value]
    while pending:
        for use in pending.pop().uses:
            owner = use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner
            if is_op(owner, memref.DeallocOp):
                return FREED
            if is_op(owner, _VIEW_OPS) and use.operand_number == 0:
                pending.extend(owner.results)
            elif is_op(owner, _READ_OPS):
                continue
            elif owner.name.startswith("linalg.") and "operandSegmentSizes" in owner.attributes:
                inputs = list(ir.DenseI32ArrayAttr(owner.attributes["operandSegmentSizes"]))[0]
                if use.operand_number >= inputs:
                    strongest = WRITTEN
            else:
                strongest = WRITTEN
    return strongest


def _is_leaf(function: ir.Operation) -> bool:
    """Whether `function` reaches memory only through its arguments (and its own allocations)."""
    leaf = True

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal leaf
        name = op.name
        if name in _FOREIGN_MEMORY_NAMES or name.startswith(_FOREIGN_DIALECTS):
            leaf = False
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    function.walk(visit, ir.WalkOrder.PRE_ORDER)
    return leaf


def _byte_size(type_: ir.MemRefType) -> Optional[int]:
    element = type_.element_type
    width = element.width if isinstance(element, (ir.IntegerType, ir.FloatType)) else None
    if not type_.has_static_shape or width is None or width % 8:
        return None
    count = 1
    for size in type_.shape:
        count *= size
    return count * width // 8


def _constant_index(value: ir.Value) -> Optional[int]:
    if not (isinstance(value, ir.OpResult) and is_op(value.owner, arith.ConstantOp)):
        return None
    attribute = value.owner.attributes["value"]
    return ir.IntegerAttr(attribute).value if isinstance(attribute, ir.IntegerAttr) else None


def _span(view: ir.Operation) -> Optional[tuple[int, int]]:
    """The bytes [start, end) of its source that a `memref.view` covers, where they are constant."""
    shift, size = _constant_index(view.operands[1]), _byte_size(ir.MemRefType(view.results[0].type))
    if len(view.operands) != 2 or shift is None or size is None:
        return None  # dynamic sizes, a computed shift
    return shift, shift + size


def origin(value: ir.Value, entry: ir.Block):
    """(object, byte range or None for all of it) that memref `value` of a caller lies in; None: unknown.

    The object is a `memref.alloc`/`alloca` op, a global's name, or ARGUMENTS (the caller's
    entry-block arguments, which may all overlap one another). The range is known for one
    `memref.view` straight of its object at a constant byte shift."""
    views = []
    while isinstance(value, ir.OpResult) and is_op(value.owner, _VIEW_OPS):
        views.append(value.owner.operation if isinstance(value.owner, ir.OpView) else value.owner)
        value = views[-1].operands[0]
    span = _span(views[0]) if len(views) == 1 and is_op(views[0], memref.ViewOp) else None
    if isinstance(value, ir.BlockArgument):
        return (ARGUMENTS, None) if value.owner == entry else None
    owner = value.owner.operation if isinstance(value.owner, ir.OpView) else value.owner
    if is_op(owner, _ALLOC_OPS):
        return owner, span
    if is_op(owner, memref.GetGlobalOp):
        return "@" + ir.FlatSymbolRefAttr(owner.attributes["name"]).value, span
    return None


def may_overlap(first, second) -> bool:
    """Whether two origins (see `origin`) may share a byte."""
    if first is None or second is None:
        return True
    (a, a_span), (b, b_span) = first, second
    if a is ARGUMENTS or b is ARGUMENTS:
        # The caller's arguments may overlap each other, and (conservatively) any global.
        return not (isinstance(a, ir.Operation) or isinstance(b, ir.Operation))
    if a != b:
        return False  # two allocations, an allocation and a global, two globals
    if a_span is None or b_span is None:
        return True
    return a_span[0] < b_span[1] and b_span[0] < a_span[1]


@dataclasses.dataclass(frozen=True)
class NoaliasArguments(RlxPass):
    name = "rlx-noalias-arguments"
    summary = "Mark memref arguments of private leaf functions that never overlap another accessed one (rlx.noalias_pointers)"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> bool:
        top = module.regions[0].blocks[0]
        changed = False
        functions = {ir.StringAttr(op.attributes["sym_name"]).value: op.operation
                     for op in top.operations if isinstance(op, func.FuncOp)}
        calls, taken = _calls(list(functions.values()))
        for name, function in functions.items():
            private = "sym_visibility" in function.attributes and \
                ir.StringAttr(function.attributes["sym_visibility"]).value == "private"
            if not private or name in taken or not calls.get(name) or not function.regions[0].blocks:
                continue
            noalias = self._noalias(function, calls[name])
            positions = llvm_positions(list(function.regions[0].blocks[0].arguments.types))
            if noalias and positions is not None:
                function.attributes[NOALIAS_POINTERS_ATTR] = ir.DenseI64ArrayAttr.get(
                    [positions[index][0] + 1 for index in noalias])
                changed = True
        return changed

    @staticmethod
    def _noalias(function: ir.Operation, calls: list[ir.Operation]) -> list[int]:
        """Indices of the memref arguments of `function` that can be noalias at every call."""
        arguments = list(function.regions[0].blocks[0].arguments)
        memrefs = [i for i, argument in enumerate(arguments) if isinstance(argument.type, ir.MemRefType)]
        if not memrefs or not _is_leaf(function):
            return []
        access = {i: _access(arguments[i]) for i in memrefs}
        chosen = [i for i in memrefs if access[i] != FREED]
        for call in calls:
            entry = _entry_block(call)
            origins = {i: origin(call.operands[i], entry) for i in memrefs}
            chosen = [
                i for i in chosen
                if not any(j != i and (access[i] != READ or access[j] != READ) and may_overlap(origins[i], origins[j])
                           for j in memrefs)
            ]
        return chosen


def _calls(functions: list[ir.Operation]) -> tuple[dict[str, list[ir.Operation]], set[str]]:
    """{callee: its func.call ops} in the bodies of `functions`, and the functions whose symbol is
    used another way (func.constant: an address that may be called with anything)."""
    calls: dict[str, list[ir.Operation]] = {}
    taken: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        if is_op(op, func.CallOp):
            calls.setdefault(ir.FlatSymbolRefAttr(op.attributes["callee"]).value, []).append(op)
        elif is_op(op, func.ConstantOp):
            taken.add(ir.FlatSymbolRefAttr(op.attributes["value"]).value)
        elif op.name.startswith("linalg."):
            return ir.WalkResult.SKIP  # a loop body: scalar code
        return ir.WalkResult.ADVANCE

    for function in functions:
        function.walk(visit, ir.WalkOrder.PRE_ORDER)
    return calls, taken


def _entry_block(op: ir.Operation) -> Optional[ir.Block]:
    """The entry block of the function that holds `op`."""
    while not is_op(op, func.FuncOp):
        op = op.parent
        op = op.operation if isinstance(op, ir.OpView) else op
    return op.regions[0].blocks[0]


@dataclasses.dataclass(frozen=True)
class NoaliasToLLVM(RlxPass):
    name = "rlx-noalias-to-llvm"
    summary = "After convert-func-to-llvm: llvm.noalias on the arguments that rlx.noalias_pointers names"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> bool:
        changed = False
        for op in module.regions[0].blocks[0].operations:
            function = op.operation
            if NOALIAS_POINTERS_ATTR not in function.attributes:
                continue
            changed = True
            if not function.name.startswith("llvm."):
                raise fail(function, f"{self.name}: run after convert-func-to-llvm ({function.name} still has "
                                     f"'{NOALIAS_POINTERS_ATTR}')")
            positions = list(ir.DenseI64ArrayAttr(function.attributes[NOALIAS_POINTERS_ATTR]))
            parameters = list(function.regions[0].blocks[0].arguments.types) if function.regions[0].blocks else []
            existing = list(ir.ArrayAttr(function.attributes["arg_attrs"])) if "arg_attrs" in function.attributes else []
            updated = [ir.DictAttr(existing[i]) if i < len(existing) else ir.DictAttr.get({}) for i in range(len(parameters))]
            for position in positions:
                if position >= len(parameters) or str(parameters[position]) != "!llvm.ptr":
                    raise fail(function, f"{self.name}: LLVM argument {position} is not a pointer: the memref "
                                         "descriptor convention changed")
                attrs = updated[position]
                entries = {attrs[i].name: attrs[i].attr for i in range(len(attrs))}
                entries["llvm.noalias"] = ir.UnitAttr.get()
                updated[position] = ir.DictAttr.get(entries)
            function.attributes["arg_attrs"] = ir.ArrayAttr.get(updated)
            del function.attributes[NOALIAS_POINTERS_ATTR]
        return changed
