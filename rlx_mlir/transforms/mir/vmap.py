"""rlx-vmap: batching of a MIR function over a new leading axis (RLX's `vmap`).

    rlx-opt f.mlir --pass-pipeline='builtin.module(rlx-vmap{batched=x size=8})'

For the function `@f`, adds `@f_vmap` whose arguments named in `batched` have a leading axis
of `size` and whose results all do: `@f_vmap(X)[i] == @f(X[i])`, the other arguments shared
by every batch element.  `@f` is kept.  `batched` names the arguments by `rlx.name` or
position, separated by commas; empty means every argument not marked `rlx.param` (the
examples batched, the weights shared).  `func` names the function (default: the module's
only public function).  The batching rules are `transforms.autodiff.batching`
(docs/design.md, "Forward mode and batching").

Errors, at the offending op or function: a function that is not found, a name that is not an
argument, a size below 1, an op without a batching rule reading a batched value.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import func

from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass, fail, option
from ..autodiff.batching import BatchingError, vectorize
from .grad import argument_names, named_positions, parameter_positions, select_function


def batched_positions(function, spelled: str) -> list[int]:
    """Argument positions for `batched` (names or positions, comma-separated; empty: the
    arguments not marked rlx.param); BatchingError if one is no argument."""
    names = argument_names(function)
    if not spelled.strip():
        params = set(parameter_positions(function))
        return [i for i in range(len(names)) if i not in params]
    return sorted(set(named_positions(function, spelled, "batched", BatchingError)))


def batch_function(function, positions: list[int], size: int, name: str):
    """Adds `@name` after `function`: `function` batched over the arguments at `positions`."""
    clone = function.operation.clone(ip=ir.InsertionPoint.after(function))
    batched = clone.opview
    batched.attributes["sym_name"] = ir.StringAttr.get(name)
    block = batched.regions[0].blocks[0]
    try:
        results = vectorize(block, positions, size, argument_names(function))
    except BatchingError:
        clone.erase()
        raise
    batched.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([a.type for a in block.arguments], [r.type for r in results]))
    return batched


@dataclasses.dataclass(frozen=True)
class Vmap(RlxPass):
    name = "rlx-vmap"
    summary = "Batch a function over a new leading axis: add @f_vmap"

    batched: str = option("", "arguments given the leading axis, by rlx.name or position, comma-separated (default: those not marked rlx.param)")
    size: int = option(1, "the size of the leading axis", minimum=1)
    func: str = option("", "the function to batch (default: the only public function)")

    def run(self, module: ir.Operation) -> None:
        functions = collect_ops(module, func.FuncOp)
        function = select_function(module, functions, self.func, self.name)
        name = f"{function.sym_name.value}_vmap"
        if any(f.sym_name.value == name for f in functions):
            raise fail(function.operation, f"rlx-vmap: the module already has a function @{name}")
        try:
            batch_function(function, batched_positions(function, self.batched), self.size, name)
        except BatchingError as error:
            raise fail(error.op if error.op is not None else function.operation, error.message) from None
