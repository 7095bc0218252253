"""rlx-grad: reverse-mode differentiation of a MIR function into a new function.

    rlx-opt f.mlir --pass-pipeline='builtin.module(rlx-grad{wrt=x,w})'

For the function `@f` whose one result is a scalar loss, adds `@f_grad` with the
same arguments and the results `[loss, d loss / d wrt...]`, each gradient of its
argument's type (RLX's `grad_with_loss`, with the seed `d loss = 1` built in).
`@f` is kept.  `wrt` names the arguments, by `rlx.name` or position, separated
by commas; empty means every argument marked `rlx.param`.  `func` names the
function (default: the module's only public function).  The transformation is
`transforms.autodiff` (docs/design.md, "Reverse mode").

Errors, at the offending op or function: a function that is not found or has
not exactly one result, a `wrt` that is not an argument, a non-scalar loss, an
op without a derivative (argmax, topk, sample, compare, an op with no VJP rule
yet) on a path from a `wrt` argument to the loss.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import func

from ...ir.attrs import NAME_ATTR, PARAM_ATTR
from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass, fail, option
from ..autodiff import GradError, gradients


def argument_names(function) -> list[str]:
    """The `rlx.name` of each argument (`arg<i>` where it has none)."""
    names = []
    attrs = function.arg_attrs if "arg_attrs" in function.attributes else None
    for index in range(len(function.arguments)):
        entry = ir.DictAttr(attrs[index]) if attrs is not None else None
        if entry is not None and NAME_ATTR in entry:
            names.append(ir.StringAttr(entry[NAME_ATTR]).value)
        else:
            names.append(f"arg{index}")
    return names


def parameter_positions(function) -> list[int]:
    """The positions of the arguments marked `rlx.param`."""
    if "arg_attrs" not in function.attributes:
        return []
    return [i for i, a in enumerate(function.arg_attrs) if PARAM_ATTR in ir.DictAttr(a)]


def resolve_wrt(function, spelled: str) -> list[int]:
    """Argument positions for `wrt` (names or positions, comma-separated); GradError if one is no argument."""
    if not spelled.strip():
        positions = parameter_positions(function)
        if not positions:
            raise GradError(f"@{function.sym_name.value} has no argument marked rlx.param: name the arguments in wrt=")
        return positions
    return named_positions(function, spelled, "wrt", GradError)


def named_positions(function, spelled: str, option: str, error: type) -> list[int]:
    """The argument positions a pass option spells (names or positions, comma-separated, in the
    order given); `error` naming `option` for an item that is no argument."""
    names = argument_names(function)
    positions = []
    for item in (part.strip() for part in spelled.split(",")):
        if item in names:
            positions.append(names.index(item))
        elif item.isdigit() and int(item) < len(names):
            positions.append(int(item))
        else:
            raise error(
                f"{option} '{item}' is not an argument of @{function.sym_name.value} (arguments: {', '.join(names)})"
            )
    return positions


def differentiate(function, wrt: list[int], name: str):
    """Adds `@name` after `function`: its arguments, results `[loss, grads of the wrt arguments...]`."""
    results = function.type.results
    if len(results) != 1:
        raise GradError(
            f"rlx-grad differentiates a function with one result (the loss); @{function.sym_name.value} has {len(results)}"
        )
    clone = function.operation.clone(ip=ir.InsertionPoint.after(function))
    grad = clone.opview
    grad.attributes["sym_name"] = ir.StringAttr.get(name)
    if "res_attrs" in grad.attributes:
        del grad.attributes["res_attrs"]
    block = grad.regions[0].blocks[0]
    ops = list(block.operations)
    ret = ops[-1]
    loss = ret.operands[0]
    arguments = list(block.arguments)
    names = argument_names(function)
    try:
        grads = gradients(ops[:-1], loss, [arguments[i] for i in wrt], ir.InsertionPoint(ret), [names[i] for i in wrt])
    except GradError:
        clone.erase()
        raise
    with ret.location:
        func.ReturnOp([loss, *grads], ip=ir.InsertionPoint(ret))
    ret.erase()
    inputs = [a.type for a in arguments]
    grad.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, [loss.type, *(g.type for g in grads)]))
    return grad


def select_function(module: ir.Operation, functions: list, name: str, pass_name: str):
    """The function named `name`, or the module's only public function when `name` is empty."""
    if name:
        for f in functions:
            if f.sym_name.value == name:
                return f
        raise fail(module, f"{pass_name}: no function @{name} (functions: {', '.join(f.sym_name.value for f in functions)})")
    public = [f for f in functions if "sym_visibility" not in f.attributes]
    if len(public) != 1:
        raise fail(module, f"{pass_name}: the module has {len(public)} public functions: name one with func=")
    return public[0]


@dataclasses.dataclass(frozen=True)
class Grad(RlxPass):
    name = "rlx-grad"
    summary = "Reverse-mode gradient: add @f_grad returning [loss, d loss / d wrt...]"

    wrt: str = option("", "arguments to differentiate, by rlx.name or position, comma-separated (default: the rlx.param ones)")
    func: str = option("", "the function to differentiate (default: the only public function)")

    def run(self, module: ir.Operation) -> None:
        functions = collect_ops(module, func.FuncOp)
        function = select_function(module, functions, self.func, self.name)
        name = f"{function.sym_name.value}_grad"
        if any(f.sym_name.value == name for f in functions):
            raise fail(function.operation, f"rlx-grad: the module already has a function @{name}")
        try:
            wrt = resolve_wrt(function, self.wrt)
            differentiate(function, wrt, name)
        except GradError as error:
            raise fail(error.op if error.op is not None else function.operation, error.message) from None
