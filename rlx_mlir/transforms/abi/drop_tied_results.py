"""rlx-drop-tied-results: results updated in place in an argument's buffer stop being results.

A function result with the attribute `rlx.tied = j` is argument `j` updated
in place (a KV cache after `rlx.kv_cache_write`): in tensor form the function
returns the new value, and the caller's buffer for argument `j` is where it
lives.  Run after one-shot-bufferize (function boundaries): each tied result
must then be block argument `j` itself, i.e. bufferization wrote into the
argument's buffer (function arguments are writable) and did not copy it;
this pass removes those results from the function and its `func.return`, so
that buffer-results-to-out-params does not copy the argument into an output
buffer.  The caller (`rlx_mlir.runtime.jit`) hands back the argument's array
as that result.

A function with callers (a decoder layer outlined by rlx-outline-blocks, its KV caches tied
to its arguments) loses the results from its calls too: each use of a dropped call result
reads the operand the caller passed for that argument, the buffer the callee wrote.
Callees are done before their callers, so that a caller's tied result is its own argument
by then.

Unlike upstream `drop-equivalent-buffer-results`, which drops every result
equivalent to an argument, only results marked `rlx.tied` are dropped (an
ordinary `return %arg` keeps its own output), and a tied result that
bufferization could not update in place is an error rather than a silent copy.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import func

from ...ir.attrs import TIED_ATTR
from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass, fail


def tied_results(function) -> dict[int, int]:
    """{result index: argument index} from the `rlx.tied` result attributes of a func.func."""
    if "res_attrs" not in function.attributes:
        return {}
    tied = {}
    for index, attrs in enumerate(ir.ArrayAttr(function.attributes["res_attrs"])):
        attrs = ir.DictAttr(attrs)
        if TIED_ATTR in attrs:
            tied[index] = ir.IntegerAttr(attrs[TIED_ATTR]).value
    return tied


@dataclasses.dataclass(frozen=True)
class DropTiedResults(RlxPass):
    name = "rlx-drop-tied-results"
    summary = "After bufferization, drop results tied to an argument (rlx.tied) that was updated in place"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> bool:
        functions = [f for f in collect_ops(module, func.FuncOp) if len(f.regions[0].blocks) > 0]
        changed = False
        calls: dict[str, list] = {}
        for call in collect_ops(module, func.CallOp):
            calls.setdefault(ir.FlatSymbolRefAttr(call.attributes["callee"]).value, []).append(call)
        # Callees first: a caller's tied result is then its own argument, no longer a call's result.
        for function in _callees_first(functions, calls):
            tied = tied_results(function)
            if tied:
                self._drop(function, tied, calls.get(ir.StringAttr(function.sym_name).value, []))
                changed = True
        return changed

    def _drop(self, function, tied: dict[int, int], callers: list) -> None:
        name = ir.StringAttr(function.sym_name).value
        block = function.regions[0].blocks[0]
        arguments = list(block.arguments)
        for ret in collect_ops(function.operation, func.ReturnOp):
            operands = list(ret.operands)
            for result, argument in tied.items():
                value = operands[result]
                if isinstance(value.type, ir.RankedTensorType):
                    raise fail(ret, f"{self.name}: run after one-shot-bufferize (result #{result} is still a tensor)")
                if not 0 <= argument < len(arguments):
                    raise fail(ret, f"result #{result} is tied to argument #{argument}, but @{name} has "
                                    f"{len(arguments)} arguments")
                if value != arguments[argument]:
                    raise fail(ret, f"result #{result} is tied to argument #{argument} ({TIED_ATTR}), but "
                                    f"bufferization did not update that argument in place (is it read after "
                                    f"it is written?)")
            with ir.InsertionPoint(ret), ret.location:
                func.ReturnOp([v for i, v in enumerate(operands) if i not in tied])
            ret.erase()
        function_type = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
        kept = [i for i in range(len(function_type.results)) if i not in tied]
        function.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(list(function_type.inputs), [function_type.results[i] for i in kept])
        )
        result_attrs = list(ir.ArrayAttr(function.attributes["res_attrs"]))
        function.attributes["res_attrs"] = ir.ArrayAttr.get([result_attrs[i] for i in kept])
        for call in callers:  # the updated argument is the buffer the caller passed
            _drop_from_call(call, tied, kept)


def _drop_from_call(call, tied: dict[int, int], kept: list[int]) -> None:
    """Replaces `call` by one without the tied results; their uses read the operand passed for them."""
    operands = list(call.operands)
    with ir.InsertionPoint(call), call.location:
        replacement = func.CallOp([call.results[i].type for i in kept], call.attributes["callee"], operands)
    for position in range(len(call.attributes)):  # no_inline, and any other but the results' attributes
        named = call.attributes[position]
        if named.name not in replacement.attributes and named.name != "res_attrs":
            replacement.attributes[named.name] = named.attr
    if "res_attrs" in call.attributes:
        result_attrs = list(ir.ArrayAttr(call.attributes["res_attrs"]))
        replacement.attributes["res_attrs"] = ir.ArrayAttr.get([result_attrs[i] for i in kept])
    for result, argument in tied.items():
        call.results[result].replace_all_uses_with(operands[argument])
    for old, new in zip([call.results[i] for i in kept], replacement.results):
        old.replace_all_uses_with(new)
    call.erase()


def _callees_first(functions: list, calls: dict[str, list]) -> list:
    """`functions` ordered so that each comes after every function it calls (the call graph is acyclic)."""
    by_name = {ir.StringAttr(f.sym_name).value: f for f in functions}
    ordered, seen = [], set()

    def visit(name: str) -> None:
        if name in seen or name not in by_name:
            return
        seen.add(name)
        for call in collect_ops(by_name[name].operation, func.CallOp):
            visit(ir.FlatSymbolRefAttr(call.attributes["callee"]).value)
        ordered.append(by_name[name])

    for name in by_name:
        visit(name)
    return ordered
