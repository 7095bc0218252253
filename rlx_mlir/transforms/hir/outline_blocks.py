"""rlx-outline-blocks: compile repeated HIR blocks once.

A model repeats the same block with the same shapes (12 decoder layers differ only in
their weights). Lowered in place, each copy is planned, lowered and compiled by LLVM
on its own, so compile time grows with the depth. This pass moves each repeated block
into a private function and replaces every copy with a `func.call` marked `no_inline`:
twelve layers become twelve calls of one function. The function is planned as a
function of its own (its arena is used only during a call, and calls run one after
another) and keeps its identity down to LLVM.

Two kinds of block are outlined:

- an HIR block op of the kinds listed in `ops` (`rlx_hir.llama_decoder_block`): one
  function per distinct (op name, attributes, operand and result types);
- a *named block*: a run of consecutive ops of a function that carry the same name
  location (`GraphModule.named("layers.3", ...)`; the name up to its first `/`), of at
  least two ops. Blocks whose ops are the same ops with the same attributes and types,
  wired the same way (to each other and to the values they take from outside), share one
  function; the values taken from outside are its arguments, in the order the block first
  reads them, and the values used after the block are its results. This covers layers
  built from several ops (a KV-cache step's layers, layers with quantised projections).
  A function already planned (`rlx_lir.plan`) is left alone.

In-place results: when a block's result is returned by the enclosing function as
argument `j` updated in place (`rlx.tied = j`, a KV cache after `rlx.kv_cache_write`) and
that argument is one the block takes, the outlined function's result is tied to its own
argument (`rlx.tied`), and so is the call's (`res_attrs`): the layer writes the caller's
cache in place (rlx-mir-to-lir plans the call's result as a view of the cache,
rlx-drop-tied-results drops the result from the function and its calls after
bufferization).
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Optional

from mlir import ir
from mlir.dialects import func

from ...dialects.rlx_lir.ir_plan import has_plan
from ...ir.attrs import OUTLINED_ATTR, TIED_ATTR
from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass, option


def _attributes(op: ir.Operation) -> list:
    return sorted((op.attributes[i].name, str(op.attributes[i].attr)) for i in range(len(op.attributes)))


def _signature(op: ir.Operation) -> str:
    types = [str(v.type) for v in op.operands] + ["->"] + [str(r.type) for r in op.results]
    return f"{op.name}|{_attributes(op)}|{types}"


def _symbol(kind: str, signature: str) -> str:
    return f"__rlx_block_{kind}_{hashlib.sha256(signature.encode()).hexdigest()[:12]}"


def _block_name(location: ir.Location) -> Optional[str]:
    """The top-level named block (`GraphModule.named`) of an op's location, if any."""
    if location.is_a_name():
        return location.name_str.split("/", 1)[0]
    return None


def _tied(function) -> dict[int, int]:
    """{result index: argument index} from a func.func's `rlx.tied` result attributes."""
    if "res_attrs" not in function.attributes:
        return {}
    tied = {}
    for index, attrs in enumerate(ir.ArrayAttr(function.attributes["res_attrs"])):
        attrs = ir.DictAttr(attrs)
        if TIED_ATTR in attrs:
            tied[index] = ir.IntegerAttr(attrs[TIED_ATTR]).value
    return tied


def _tied_attrs(count: int, tied: dict[int, int]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([
        ir.DictAttr.get({TIED_ATTR: ir.IntegerAttr.get(i64, tied[i])} if i in tied else {}) for i in range(count)
    ])


@dataclasses.dataclass
class _NamedBlock:
    """A run of consecutive ops with one block name, described up to the values it is given."""

    ops: list  # ir.Operation, in order
    inputs: list  # values defined outside, in order of first read
    outputs: list  # results of `ops` used after the block
    tied: dict  # {output index: input index} of outputs the function returns as that input updated in place
    signature: str


def _describe(ops: list, function, tied_arguments: dict) -> Optional[_NamedBlock]:
    """The block's inputs, outputs and structural signature; None when it cannot be a function
    (a value of it used by an op of the block that comes before its definition cannot happen in SSA;
    an op with successors or a terminator can)."""
    local: dict = {}  # value defined inside -> its name in the signature
    inside: set = set()  # every op of the block, nested ones included
    inputs: list = []
    input_index: dict = {}
    entries: list = []

    def reference(value) -> str:
        if value in local:
            return local[value]
        if value not in input_index:
            input_index[value] = len(inputs)
            inputs.append(value)
        return f"in{input_index[value]}"

    def visit(op: ir.Operation) -> None:
        number = len(entries)
        inside.add(op)
        entries.append(None)  # placeholder, filled once the operands are named
        operands = [reference(v) for v in op.operands]
        regions = []
        for r, region in enumerate(op.regions):
            blocks = []
            for b, block in enumerate(region.blocks):
                for a, argument in enumerate(block.arguments):
                    local[argument] = f"%{number}.{r}.{b}.{a}"
                blocks.append([str(a.type) for a in block.arguments])
                for nested in block.operations:
                    visit(nested.operation)
            regions.append(blocks)
        for index, result in enumerate(op.results):
            local[result] = f"%{number}#{index}"
        entries[number] = (op.name, tuple(_attributes(op)), tuple(operands),
                           tuple(str(r.type) for r in op.results), repr(regions))

    for op in ops:
        if len(op.successors) or is_op(op, func.ReturnOp):
            return None
        visit(op)
    outputs, returned_at = [], {}
    for op in ops:
        for result in op.results:
            users = [use.owner if isinstance(use.owner, ir.Operation) else use.owner.operation for use in result.uses]
            outside = [user for user in users if user not in inside]
            if outside:
                outputs.append(result)
                for user in outside:
                    if is_op(user, func.ReturnOp):  # the function's own return: results of the block are top-level
                        for position, operand in enumerate(user.operands):
                            if operand == result and position in tied_arguments:
                                returned_at.setdefault(len(outputs) - 1, tied_arguments[position])
    arguments = list(function.regions[0].blocks[0].arguments)
    tied = {}
    for output, argument in returned_at.items():
        value = arguments[argument] if 0 <= argument < len(arguments) else None
        if value is not None and value in input_index:
            tied[output] = input_index[value]
    described = (entries, [local[r] for r in outputs], sorted(tied.items()), [str(v.type) for v in inputs])
    return _NamedBlock(ops, inputs, outputs, tied, repr(described))


def _named_blocks(function) -> list[list]:
    """Maximal runs of at least two consecutive ops of `function`'s body with one block name."""
    if len(function.regions[0].blocks) != 1:
        return []
    runs, current, name = [], [], None
    for op in function.regions[0].blocks[0].operations:
        op = op.operation
        op_name = _block_name(op.location)
        if op_name is not None and op_name == name:
            current.append(op)
            continue
        if len(current) >= 2:
            runs.append(current)
        current, name = ([op], op_name) if op_name is not None else ([], None)
    if len(current) >= 2:
        runs.append(current)
    return runs


@dataclasses.dataclass(frozen=True)
class OutlineBlocks(RlxPass):
    name = "rlx-outline-blocks"
    summary = "Move repeated HIR blocks (block ops, named blocks) into one private function each, called per use"
    ops: str = option("rlx_hir.llama_decoder_block", "comma-separated op names to outline")
    min_uses: int = option(2, "outline a block signature only when it occurs at least this often", minimum=1)
    named_blocks: bool = option(True, "also outline repeated named blocks (runs of ops with one name location)")

    def run(self, module: ir.Operation) -> bool:
        changed = self._outline_ops(module)
        if self.named_blocks:
            changed = self._outline_named_blocks(module) or changed
        return changed

    # -- HIR block ops ---------------------------------------------------------------------

    def _outline_ops(self, module: ir.Operation) -> bool:
        names = {name.strip() for name in self.ops.split(",") if name.strip()}
        groups: dict[str, list[ir.Operation]] = {}
        for op in collect_ops(module, lambda o: o.name in names):
            groups.setdefault(_signature(op), []).append(op)
        body = module.regions[0].blocks[0]
        changed = False
        for signature, ops in groups.items():
            if len(ops) < self.min_uses:
                continue
            changed = True
            symbol = _symbol(ops[0].name.split(".")[-1], signature)
            _define_op(body, symbol, ops[0])
            for op in ops:
                _call(symbol, list(op.operands), list(op.results), {}, op)
                op.erase()
        return changed

    # -- named blocks ------------------------------------------------------------------------

    def _outline_named_blocks(self, module: ir.Operation) -> bool:
        body = module.regions[0].blocks[0]
        groups: dict[str, list[_NamedBlock]] = {}
        for function in [op for op in body.operations if is_op(op.operation, func.FuncOp)]:
            if OUTLINED_ATTR in function.attributes or has_plan(function):
                continue  # a planned function's slots are its own: moving its ops would void the plan
            tied_arguments = _tied(function)
            for run in _named_blocks(function):
                block = _describe(run, function, tied_arguments)
                if block is not None:
                    groups.setdefault(block.signature, []).append(block)
        chosen = [(signature, blocks) for signature, blocks in groups.items() if len(blocks) >= self.min_uses]
        symbols = {}
        for signature, blocks in chosen:  # every function first, from blocks that are still untouched
            symbols[signature] = _symbol(_block_name(blocks[0].ops[0].location).split(".")[0] or "named", signature)
            first = blocks[0]
            _define(body, symbols[signature], first.inputs, first.ops, first.outputs, first.tied)
        replaced: dict = {}  # a block's output -> the call result that replaced it (a later block's input)
        for signature, blocks in chosen:
            for block in blocks:
                inputs = [replaced.get(v, v) for v in block.inputs]
                results = _call(symbols[signature], inputs, block.outputs, block.tied, block.ops[-1])
                replaced.update(zip(block.outputs, results))
                for op in reversed(block.ops):
                    op.erase()
        return bool(chosen)


def _define_op(body: ir.Block, symbol: str, template: ir.Operation):
    """A private function `symbol` taking `template`'s operands (one argument each) and returning its results."""
    function_type = ir.FunctionType.get([v.type for v in template.operands], [r.type for r in template.results])
    with ir.InsertionPoint.at_block_begin(body), template.location:
        function = func.FuncOp(symbol, function_type, visibility="private")
        function.attributes[OUTLINED_ATTR] = ir.UnitAttr.get()
        entry = function.add_entry_block()
        with ir.InsertionPoint(entry):
            clone = template.clone()
            for index, argument in enumerate(entry.arguments):
                clone.operands[index] = argument
            func.ReturnOp(list(clone.results))
    return function


def _define(body: ir.Block, symbol: str, inputs: list, ops: list, outputs: list, tied: dict):
    """A private function `symbol` of `inputs` that runs copies of `ops` and returns `outputs`."""
    function_type = ir.FunctionType.get([v.type for v in inputs], [v.type for v in outputs])
    with ir.InsertionPoint.at_block_begin(body), ops[0].location:
        function = func.FuncOp(symbol, function_type, visibility="private")
        function.attributes[OUTLINED_ATTR] = ir.UnitAttr.get()
        if tied:
            function.attributes["res_attrs"] = _tied_attrs(len(outputs), tied)
        entry = function.add_entry_block()
    mapping = dict(zip(inputs, entry.arguments))
    with ir.InsertionPoint(entry):
        for op in ops:
            clone = op.clone()
            # The clone reads what the original read: values of the caller or of earlier ops. Its
            # nested ops too (a region's values defined inside the op itself are the clone's own).
            for nested in collect_ops(clone):
                for index, operand in enumerate(nested.operands):
                    if operand in mapping:
                        nested.operands[index] = mapping[operand]
            mapping.update(zip(op.results, clone.results))
        with ops[-1].location:
            func.ReturnOp([mapping[v] for v in outputs])
    return function


def _call(symbol: str, inputs: list, outputs: list, tied: dict, before: ir.Operation) -> list:
    """A no_inline call of `symbol` on `inputs` after `before`, whose results replace `outputs`."""
    with ir.InsertionPoint.after(before), before.location:
        callee = ir.FlatSymbolRefAttr.get(symbol)
        call = func.CallOp([v.type for v in outputs], callee, list(inputs))
        call.operation.attributes["no_inline"] = ir.UnitAttr.get()
        if tied:
            call.operation.attributes["res_attrs"] = _tied_attrs(len(outputs), tied)
    for old, new in zip(outputs, call.results):
        old.replace_all_uses_with(new)
    return list(call.results)
