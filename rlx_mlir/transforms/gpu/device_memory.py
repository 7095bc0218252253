"""rlx-gpu-device-memory: one device allocation per function call holds every buffer.

Compiled GPU functions take device pointers for their arguments and results
(the runtime uploads inputs and weights and downloads results).  Inside a
function, on buffers after bufferization:

ONE `gpu.alloc` of bytes (the device arena) at the top of the function, freed
by one `gpu.dealloc` before each return, holds, each at its own offset
(256-byte aligned) as a `memref.view`:
- the LIR arena (`memref.get_global` of an uninitialized global), whose own
  views (the plan's slots, reused across disjoint lifetimes) now point into it;
- every other buffer bufferization allocated (`memref.alloc`; `memref.dealloc`
  is dropped: the arena is freed as a whole);
- every constant global (an initialized `memref.global`), filled by
  `gpu.memcpy` from the host copy where the global was read.

The globals are left for `symbol-dce`.  An allocation nested in a loop, a
dynamically sized one or one with a non-identity layout is an error (the plan
and `buffer-loop-hoisting` hoist and size them statically).
"""

from __future__ import annotations

import dataclasses
import math

from mlir import ir
from mlir.dialects import arith, func, gpu, memref

from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass, fail

ALIGNMENT = 256  # bytes between buffers in the device arena (cudaMalloc's own alignment)


def _globals(module: ir.Operation) -> dict[str, ir.Operation]:
    return {
        ir.StringAttr(op.attributes["sym_name"]).value: op.operation
        for op in module.regions[0].blocks[0].operations
        if isinstance(op, memref.GlobalOp)
    }


def _initialized(global_op: ir.Operation) -> bool:
    # `= uninitialized` prints a unit `initial_value`; a constant holds elements.
    return "initial_value" in global_op.attributes and not isinstance(
        global_op.attributes["initial_value"], ir.UnitAttr
    )


@dataclasses.dataclass(frozen=True)
class GpuDeviceMemory(RlxPass):
    name = "rlx-gpu-device-memory"
    summary = "One gpu.alloc per function call holding the LIR arena, every other buffer and the constants"

    def run(self, module: ir.Operation) -> None:
        globals_ = _globals(module)
        for function in [op.operation for op in module.regions[0].blocks[0].operations
                         if isinstance(op, func.FuncOp) and op.regions[0].blocks]:
            self._function(function, globals_)

    def _function(self, function: ir.Operation, globals_: dict[str, ir.Operation]) -> None:
        entry = function.regions[0].blocks[0]
        buffers = []  # (op, type, byte offset in the device arena)
        size = 0
        allocations = (memref.GetGlobalOp, memref.AllocOp, memref.DeallocOp)
        for op in collect_ops(function, lambda o: is_op(o, allocations)):
            if is_op(op, memref.DeallocOp):
                op.erase()  # the device arena is freed as a whole before each return
                continue
            if op.parent != function:
                raise fail(op, f"'{op.name}' inside a loop or region cannot become a device allocation "
                               "(allocations must be hoisted to the function body)")
            memref_type = ir.MemRefType(op.results[0].type)
            if not memref_type.has_static_shape or not _identity_layout(memref_type):
                raise fail(op, f"'{op.name}' of type {memref_type} is not supported on the GPU "
                               "(static shapes with the identity layout only)")
            size = -(-size // ALIGNMENT) * ALIGNMENT
            buffers.append((op, memref_type, size))
            size += math.prod(memref_type.shape) * _element_bytes(memref_type.element_type)
        if not buffers:
            return
        i8 = ir.IntegerType.get_signless(8)
        with ir.InsertionPoint.at_block_begin(entry), function.location:
            arena = gpu.AllocOp(ir.MemRefType.get([max(size, 1)], i8), None, [], [], []).memref
            views = [
                memref.ViewOp(memref_type, arena, arith.ConstantOp(ir.IndexType.get(), offset).result, []).result
                for _, memref_type, offset in buffers
            ]
        for (op, _, _), view in zip(buffers, views):
            symbol = ir.FlatSymbolRefAttr(op.attributes["name"]).value if is_op(op, memref.GetGlobalOp) else None
            if symbol is not None and _initialized(globals_[symbol]):
                # A constant: copied from its host global into its slot; everything else reads the slot.
                with ir.InsertionPoint.after(op), op.location:
                    copy = gpu.MemcpyOp(None, [], view, op.results[0])
                op.results[0].replace_all_uses_except(view, copy.operation)
            else:
                op.results[0].replace_all_uses_with(view)
                op.erase()
        for ret in [op for op in entry.operations if isinstance(op, func.ReturnOp)]:
            with ir.InsertionPoint(ret), ret.location:
                gpu.DeallocOp(None, [], arena)


def _element_bytes(element: ir.Type) -> int:
    width = element.width if hasattr(element, "width") else ir.IntegerType(element).width
    return max(1, (width + 7) // 8)


def _identity_layout(memref_type: ir.MemRefType) -> bool:
    layout = memref_type.layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(memref_type.rank)
