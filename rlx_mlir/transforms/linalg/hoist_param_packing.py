"""rlx-hoist-param-packing: the B panels of parameters become arguments, packed by companion functions.

After `rlx-pack-matmul{pack-params}`, every GEMM whose B is a parameter reads it through a packing
op tagged `rlx.b_panels` (`linalg.pack` into [N/NR, K, NR] column panels, after a `tensor.pad` of K
where K needs one).  This pass moves that packing out of the compiled function, so that it runs
once, when the weights are bound (`Executable.bind_params`), not on every call:

    func.func @f(%x: ..., %w: tensor<64x100xf32> {rlx.name = "w", rlx.param}, %arena: memref<?xi8>) {
      %p = linalg.pack %w ... {rlx.b_panels} : tensor<64x100xf32> -> tensor<4x64x32xf32>
      ... the kernel reads %p
becomes

    func.func @f(%x: ..., %w: ..., %p: tensor<4x64x32xf32> {rlx.name = "w:panels0"}, %arena: memref<?xi8>)
        attributes {rlx.packed_params = [{function = "f__pack0", param = "w", type = tensor<4x64x32xf32>}]}
    func.func @f__pack0(%w: tensor<64x100xf32> {rlx.name = "w", rlx.param}) -> tensor<4x64x32xf32> {
      the packing of %w
    }

The panels are new arguments after the source's (before the caller's arena, which stays last), one
per distinct (parameter, panel type); `rlx.packed_params` lists them in order with the public
function that computes each.  The source's arguments stay as they were (a parameter may have other
uses), so an unbound call only adds the packing calls in front.

In a private function (a decoder layer `rlx-outline-blocks` outlined) whose argument is a parameter
at every call (transforms/linalg/param_arguments.py), the packing moves to the callers first: the
function takes the panels as a new last argument and each call packs what it passes there, which is
then hoisted out of the public caller as above.  A public function that another function calls
keeps its signature, and so its packing.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import func, linalg, tensor

from ...dialects.rlx_lir.ir_plan import defined_functions
from ...ir.attrs import ARENA_ATTR, NAME_ATTR, PACKED_PARAMS_ATTR, PANELS_ATTR, PARAM_ATTR
from ...ir.shapes import shape_of
from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass, fail
from .pack_matmul import NR, pack_panels
from .param_arguments import function_name, is_public, param_argument_of, param_arguments

PACK_FUNCTION = "{function}__pack{index}"  # the companion computing a function's packed argument #index


def _defining_op(value: ir.Value):
    """The op that defines `value`, or None for a block argument."""
    return None if isinstance(value, ir.BlockArgument) else value.owner.operation


def _panel_source(pack) -> ir.Value:
    """The B a panel packing reads: its source, or the source of the K padding in front of it."""
    source = pack.operands[0]
    owner = _defining_op(source)
    if owner is not None and isinstance(owner.opview, tensor.PadOp):
        return owner.operands[0]
    return source


def _packs_by_function(module: ir.Operation, params) -> dict:
    """function name -> {(argument index, panel type): [packing ops]} for the panels of parameters."""
    found: dict = {}
    for pack in collect_ops(module, linalg.PackOp):
        if PANELS_ATTR not in pack.attributes:
            continue
        argument = param_argument_of(_panel_source(pack), params)
        if argument is not None:
            name, index = argument
            found.setdefault(name, {}).setdefault((index, str(pack.results[0].type)), []).append(pack)
    return found


def _erase_packing(pack) -> None:
    """Erases a packing op whose result was replaced, and the padding and destination only it used."""
    operands = [op for op in map(_defining_op, pack.operands) if op is not None]
    pack.erase()
    for op in operands:
        if isinstance(op.opview, (tensor.PadOp, tensor.EmptyOp)) and not any(
                len(list(result.uses)) for result in op.results):
            op.erase()


def _panels_of(value: ir.Value, panel_type: ir.Type) -> ir.Value:
    """`value` packed into panels of `panel_type` ([N/NR, K', NR]) as rlx-pack-matmul packs it."""
    panels, kp, _ = shape_of(panel_type)
    return pack_panels(value, kp, panels * NR, tag=True)


def _set_arguments(function, attrs: list) -> None:
    """The function's type and `arg_attrs` from its body's arguments and `attrs` (one per argument)."""
    block = function.regions[0].blocks[0]
    old = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    function.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([argument.type for argument in block.arguments], list(old.results)))
    function.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


def _argument_attrs(function) -> list:
    count = len(function.regions[0].blocks[0].arguments)
    if "arg_attrs" not in function.attributes:
        return [ir.DictAttr.get({}) for _ in range(count)]
    return list(ir.ArrayAttr(function.attributes["arg_attrs"]))


def _move_to_callers(function, groups: dict, calls: list) -> None:
    """The panels `groups` packs inside private `function` become its last arguments; each call packs them."""
    block = function.regions[0].blocks[0]
    attrs = _argument_attrs(function)
    moved = []  # (argument index, panel type) of each new argument
    for (index, _), packs in groups.items():
        panel_type = packs[0].results[0].type
        argument = block.add_argument(panel_type, packs[0].location)
        attrs.append(ir.DictAttr.get({}))
        for pack in packs:
            pack.results[0].replace_all_uses_with(argument)
            _erase_packing(pack)
        moved.append((index, panel_type))
    _set_arguments(function, attrs)
    for call in calls:
        with ir.InsertionPoint(call), call.location:
            panels = [_panels_of(call.operands[index], panel_type) for index, panel_type in moved]
            replacement = func.CallOp([result.type for result in call.results],
                                      ir.FlatSymbolRefAttr(call.attributes["callee"]), [*call.operands, *panels])
        for index in range(len(call.attributes)):
            named = call.attributes[index]
            if named.name not in replacement.attributes:
                replacement.attributes[named.name] = named.attr
        for old, new in zip(call.results, replacement.results):
            old.replace_all_uses_with(new)
        call.erase()


def _hoist(module: ir.Operation, function, groups: dict) -> None:
    """The panels `groups` packs inside public `function` become its arguments, each computed by a
    public companion function; `rlx.packed_params` lists them."""
    name = function_name(function)
    block = function.regions[0].blocks[0]
    attrs = _argument_attrs(function)
    arguments = list(block.arguments)
    has_arena = ARENA_ATTR in function.attributes and isinstance(arguments[-1].type, ir.MemRefType)
    source_count = len(arguments) - (1 if has_arena else 0)
    symbols = {ir.StringAttr(op.attributes["sym_name"]).value for op in module.regions[0].blocks[0].operations
               if "sym_name" in op.attributes}
    entries, new_attrs = [], []
    for position, ((index, _), packs) in enumerate(groups.items()):
        panel_type, location = packs[0].results[0].type, packs[0].location
        param_attrs = ir.DictAttr(attrs[index])
        param = ir.StringAttr(param_attrs[NAME_ATTR]).value if NAME_ATTR in param_attrs else f"arg{index}"
        companion = PACK_FUNCTION.format(function=name, index=position)
        if companion in symbols:
            raise fail(function, f"rlx-hoist-param-packing: the packing function '@{companion}' it would add "
                                 "is a symbol of the module already")
        argument = block.add_argument(panel_type, location)
        for pack in packs:
            pack.results[0].replace_all_uses_with(argument)
            _erase_packing(pack)
        with ir.InsertionPoint(module.regions[0].blocks[0]), location:
            packer = func.FuncOp(companion, ([arguments[index].type], [panel_type]))
            packer.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get({
                NAME_ATTR: ir.StringAttr.get(param), PARAM_ATTR: ir.UnitAttr.get()})])
            body = packer.add_entry_block()
            with ir.InsertionPoint(body):
                func.ReturnOp([_panels_of(body.arguments[0], panel_type)])
        entries.append(ir.DictAttr.get({"param": ir.StringAttr.get(param), "function": ir.StringAttr.get(companion),
                                        "type": ir.TypeAttr.get(panel_type)}))
        new_attrs.append(ir.DictAttr.get({NAME_ATTR: ir.StringAttr.get(f"{param}:panels{position}")}))
    final_attrs = attrs[:source_count] + new_attrs
    if has_arena:  # the caller's arena stays the last argument
        old_arena = arguments[-1]
        arena = block.add_argument(old_arena.type, old_arena.location)
        old_arena.replace_all_uses_with(arena)
        block.erase_argument(source_count)
        final_attrs.append(attrs[source_count])
    _set_arguments(function, final_attrs)
    function.attributes[PACKED_PARAMS_ATTR] = ir.ArrayAttr.get(entries)


@dataclasses.dataclass(frozen=True)
class HoistParamPacking(RlxPass):
    name = "rlx-hoist-param-packing"
    summary = "Pack the GEMM B panels of parameters in companion functions (once, at bind time); the panels become arguments"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> bool:
        changed = False
        while True:  # from each layer to its callers, until the packing is in public functions
            functions = {function_name(f): f for f in defined_functions(module)}
            found = _packs_by_function(module, param_arguments(module))
            private = [name for name in found if not is_public(functions[name])]
            if not private:
                break
            calls: dict = {}
            for call in collect_ops(module, func.CallOp):
                calls.setdefault(ir.FlatSymbolRefAttr(call.attributes["callee"]).value, []).append(call)
            for name in private:
                _move_to_callers(functions[name], found[name], calls.get(name, []))
            changed = True
        called = {ir.FlatSymbolRefAttr(call.attributes["callee"]).value for call in collect_ops(module, func.CallOp)}
        for name, groups in found.items():
            if name not in called:  # a public function another calls keeps its signature, and its packing
                _hoist(module, functions[name], groups)
                changed = True
        return changed
