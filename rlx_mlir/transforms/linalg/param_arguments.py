"""Which function arguments hold parameters (weights), followed through calls.

A public function's argument marked `rlx.param` is a parameter; an argument of a private function
(a decoder layer `rlx-outline-blocks` outlined) is one when every call of the function passes a
parameter of its caller there.  `rlx-pack-matmul{pack-params}` and `rlx-hoist-param-packing` ask
this to find the GEMM B operands that can be packed once, when the weights are bound.
"""

from __future__ import annotations

from typing import Optional

from mlir import ir
from mlir.dialects import func

from ...dialects.rlx_lir.ir_plan import defined_functions
from ...ir.attrs import PARAM_ATTR
from ...ir.walk import collect_ops

Argument = tuple[str, int]  # (function name, argument index)


def is_public(function) -> bool:
    return "sym_visibility" not in function.attributes or ir.StringAttr(
        function.attributes["sym_visibility"]).value == "public"


def function_name(function) -> str:
    return ir.StringAttr(function.sym_name).value


def param_arguments(module: ir.Operation) -> set[Argument]:
    """Every (function, argument index) that holds a parameter."""
    functions = {function_name(f): f for f in defined_functions(module)}
    params: set[Argument] = set()
    for name, function in functions.items():
        if is_public(function) and "arg_attrs" in function.attributes:
            for index, attrs in enumerate(ir.ArrayAttr(function.attributes["arg_attrs"])):
                if PARAM_ATTR in ir.DictAttr(attrs):
                    params.add((name, index))
    calls: dict[str, list] = {}
    for call in collect_ops(module, func.CallOp):
        calls.setdefault(ir.FlatSymbolRefAttr(call.attributes["callee"]).value, []).append(call)
    changed = True
    while changed:  # a layer called from a function called with the weights, and so on
        changed = False
        for callee, sites in calls.items():
            function = functions.get(callee)
            if function is None or is_public(function):
                continue
            for index in range(len(function.regions[0].blocks[0].arguments)):
                if (callee, index) not in params and all(
                        param_argument_of(site.operands[index], params) is not None for site in sites):
                    params.add((callee, index))
                    changed = True
    return params


def param_argument_of(value: ir.Value, params: set[Argument]) -> Optional[Argument]:
    """(function, index) when `value` is an argument of a function's body that holds a parameter."""
    if not isinstance(value, ir.BlockArgument):
        return None
    block = value.owner
    function = block.owner
    if not isinstance(function.opview, func.FuncOp) or block != function.regions[0].blocks[0]:
        return None
    argument = (function_name(function.opview), value.arg_number)
    return argument if argument in params else None
