"""rlx-outline-blocks: compile repeated HIR blocks once.

A model repeats the same block with the same shapes (12 decoder layers differ only in
their weights). Lowered in place, each copy is planned, lowered and compiled by LLVM
on its own, so compile time grows with the depth. This pass moves every HIR block op
of the listed kinds into a private function, one per distinct (op name, attributes,
operand and result types), and replaces the op with a `func.call` marked `no_inline`:
twelve layers become twelve calls of one function. The function is planned as a
function of its own (its arena is used only during a call, and calls run one after
another) and keeps its identity down to LLVM.
"""

from __future__ import annotations

import dataclasses
import hashlib

from mlir import ir
from mlir.dialects import func

from ...ir.attrs import OUTLINED_ATTR
from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass, option


def _signature(op: ir.Operation) -> str:
    attributes = sorted((op.attributes[i].name, str(op.attributes[i].attr)) for i in range(len(op.attributes)))
    types = [str(v.type) for v in op.operands] + ["->"] + [str(r.type) for r in op.results]
    return f"{op.name}|{attributes}|{types}"


@dataclasses.dataclass(frozen=True)
class OutlineBlocks(RlxPass):
    name = "rlx-outline-blocks"
    summary = "Move repeated HIR blocks into one private function per shape, called (not inlined) per use"
    ops: str = option("rlx_hir.llama_decoder_block", "comma-separated op names to outline")
    min_uses: int = option(2, "outline a block signature only when it occurs at least this often", minimum=1)

    def run(self, module: ir.Operation) -> bool:
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
            symbol = f"__rlx_block_{ops[0].name.split('.')[-1]}_{hashlib.sha256(signature.encode()).hexdigest()[:12]}"
            self._define(body, symbol, ops[0])
            for op in ops:
                with ir.InsertionPoint(op), op.location:
                    callee = ir.FlatSymbolRefAttr.get(symbol)
                    call = func.CallOp([r.type for r in op.results], callee, list(op.operands))
                    call.operation.attributes["no_inline"] = ir.UnitAttr.get()
                for old, new in zip(op.results, call.results):
                    old.replace_all_uses_with(new)
                op.erase()
        return changed

    @staticmethod
    def _define(body: ir.Block, symbol: str, template: ir.Operation) -> None:
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
