"""rlx-readonly-arguments: bufferization may write into an argument only when a result is tied to it.

one-shot-bufferize (with function boundaries) treats function arguments as
writable unless they carry `bufferization.writable = false`: an op that
updates a tensor in place (`tensor.insert_slice`, as `rlx.kv_cache_write`
lowers to) would then write into the caller's buffer even when the function
does not return the update, silently changing the caller's input.  Before
bufferization, this pass marks every argument of every public function
`bufferization.writable = false`, except the arguments named by a result's
`rlx.tied = N` (a KV cache updated in place), which it marks
`bufferization.writable = true`.  Bufferization then copies before writing
into a read-only argument, and writes a tied one in place.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import func

from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass
from .drop_tied_results import tied_results

WRITABLE_ATTR = "bufferization.writable"


@dataclasses.dataclass(frozen=True)
class ReadonlyArguments(RlxPass):
    name = "rlx-readonly-arguments"
    summary = "Mark arguments read-only for bufferization (bufferization.writable), except those tied to a result"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> None:
        for function in collect_ops(module, func.FuncOp):
            private = "sym_visibility" in function.attributes and \
                ir.StringAttr(function.attributes["sym_visibility"]).value != "public"
            if private or len(function.regions[0].blocks) == 0:
                continue  # bodies of scan / if / while are inlined; only entry points face callers
            count = len(function.regions[0].blocks[0].arguments)
            tied = set(tied_results(function).values())
            existing = list(ir.ArrayAttr(function.attributes["arg_attrs"])) if "arg_attrs" in function.attributes else []
            updated = []
            arguments = function.regions[0].blocks[0].arguments
            for index in range(count):
                attrs = ir.DictAttr(existing[index]) if index < len(existing) else ir.DictAttr.get({})
                entries = {attrs[i].name: attrs[i].attr for i in range(len(attrs))}
                if isinstance(arguments[index].type, ir.RankedTensorType):  # not the arena (a memref)
                    entries[WRITABLE_ATTR] = ir.BoolAttr.get(index in tied)
                updated.append(ir.DictAttr.get(entries))
            function.attributes["arg_attrs"] = ir.ArrayAttr.get(updated)
