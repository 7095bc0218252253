"""rlx-jvp: forward-mode differentiation of a MIR function into a new function.

    rlx-opt f.mlir --pass-pipeline='builtin.module(rlx-jvp{wrt=x,w})'

For the function `@f`, adds `@f_jvp` whose arguments are `@f`'s followed by one tangent per
`wrt` argument (of its type, named `tangent_<name>`), and whose results are `@f`'s results
followed by their tangents `J t` (RLX's `jvp`: the primal outputs and the output tangents in
one pass).  `@f` is kept.  `wrt` names the arguments by `rlx.name` or position, separated by
commas; empty means every argument marked `rlx.param`.  `func` names the function (default:
the module's only public function).  The transformation is `transforms.autodiff.forward`
(docs/design.md, "Forward mode and batching").

Errors, at the offending op or function: a function that is not found, a `wrt` that is not
an argument or not a float, an op without a derivative (argmax, topk, sample, compare turned
into a number) on a path from a `wrt` argument to a result.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import func

from ...ir.attrs import NAME_ATTR
from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass, fail, option
from ..autodiff import GradError, tangents
from .grad import argument_names, resolve_wrt, select_function


def differentiate_forward(function, wrt: list[int], name: str):
    """Adds `@name` after `function`: its arguments and a tangent per `wrt` argument, results
    `[results..., tangents of the results...]`."""
    clone = function.operation.clone(ip=ir.InsertionPoint.after(function))
    jvp = clone.opview
    jvp.attributes["sym_name"] = ir.StringAttr.get(name)
    block = jvp.regions[0].blocks[0]
    ops = list(block.operations)
    ret = ops[-1]
    outputs = list(ret.operands)
    arguments = list(block.arguments)
    names = argument_names(function)
    seeds = [block.add_argument(arguments[i].type, arguments[i].location) for i in wrt]
    attrs = [ir.DictAttr(a) for a in function.arg_attrs] if "arg_attrs" in function.attributes else \
        [ir.DictAttr.get({}) for _ in arguments]
    for i in wrt:
        attrs.append(ir.DictAttr.get({NAME_ATTR: ir.StringAttr.get(f"tangent_{names[i]}")}))
    try:
        results = tangents(ops[:-1], outputs, [arguments[i] for i in wrt], seeds, ir.InsertionPoint(ret),
                           [names[i] for i in wrt])
    except GradError:
        clone.erase()
        raise
    with ret.location:
        func.ReturnOp([*outputs, *results], ip=ir.InsertionPoint(ret))
    ret.erase()
    jvp.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
    if "res_attrs" in jvp.attributes:
        del jvp.attributes["res_attrs"]
    inputs = [a.type for a in block.arguments]
    jvp.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(inputs, [*(v.type for v in outputs), *(t.type for t in results)]))
    return jvp


@dataclasses.dataclass(frozen=True)
class Jvp(RlxPass):
    name = "rlx-jvp"
    summary = "Forward-mode derivative: add @f_jvp(args, tangents) returning [results, their tangents]"

    wrt: str = option("", "arguments to differentiate, by rlx.name or position, comma-separated (default: the rlx.param ones)")
    func: str = option("", "the function to differentiate (default: the only public function)")

    def run(self, module: ir.Operation) -> None:
        functions = collect_ops(module, func.FuncOp)
        function = select_function(module, functions, self.func, self.name)
        name = f"{function.sym_name.value}_jvp"
        if any(f.sym_name.value == name for f in functions):
            raise fail(function.operation, f"rlx-jvp: the module already has a function @{name}")
        try:
            differentiate_forward(function, resolve_wrt(function, self.wrt), name)
        except GradError as error:
            raise fail(error.op if error.op is not None else function.operation, error.message) from None
