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

    def run(self, module: ir.Operation) -> None:
        for function in collect_ops(module, func.FuncOp):
            tied = tied_results(function)
            if tied and len(function.regions[0].blocks) > 0:
                self._drop(module, function, tied)

    def _drop(self, module: ir.Operation, function, tied: dict[int, int]) -> None:
        name = ir.StringAttr(function.sym_name).value
        callers = [
            op for op in collect_ops(module, func.CallOp) if ir.FlatSymbolRefAttr(op.attributes["callee"]).value == name
        ]
        if callers:
            raise fail(callers[0], f"{self.name}: @{name} has tied results and callers; only entry functions may")
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
