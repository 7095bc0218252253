"""Unsigned bytes (`ui8`) in lowered code.

MIR types raw bytes as `ui8` (see `rlx_mlir.ir.dtypes`), but arith and linalg compute on
signless integers only.  A lowering that reads or writes `ui8` elements converts at the
element with `to_signless` / `to_unsigned` (an `unrealized_conversion_cast`, no code), and
computes with the unsigned arith ops (`extui`, `uitofp`, `fptoui`).  Once every RLX op is
lowered, `retype_unsigned_as_signless` rewrites every remaining `ui8` (tensor types, scalars,
function signatures, constants) as `i8` holding the same bits, and the casts, now from a type
to itself, disappear.  The numpy signature was read before lowering, so callers still pass
`uint8` arrays.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from mlir import ir
from mlir.dialects import arith, builtin

from ...ir.walk import collect_ops, is_op


def is_unsigned(type_: ir.Type) -> bool:
    return isinstance(type_, ir.IntegerType) and ir.IntegerType(type_).is_unsigned


def _signless_element(element: ir.Type) -> ir.Type:
    return ir.IntegerType.get_signless(ir.IntegerType(element).width) if is_unsigned(element) else element


def _cast(value: ir.Value, target: ir.Type) -> ir.Value:
    if value.type == target:
        return value
    return ir.Operation.create("builtin.unrealized_conversion_cast", results=[target], operands=[value]).result


def to_signless(value: ir.Value) -> ir.Value:
    """A `ui8` scalar or vector as the `i8` of the same bits (other values unchanged)."""
    return _cast(value, _signless(value.type) or value.type)


def to_unsigned(value: ir.Value, target: ir.Type) -> ir.Value:
    """A signless scalar as the unsigned `target` of the same bits."""
    return _cast(value, target)


def _signless(type_: ir.Type) -> Optional[ir.Type]:
    """`type_` with every unsigned element type made signless, or None if it has none."""
    if is_unsigned(type_):
        return _signless_element(type_)
    if isinstance(type_, ir.RankedTensorType):
        t = ir.RankedTensorType(type_)
        if is_unsigned(t.element_type):
            return ir.RankedTensorType.get(list(t.shape), _signless_element(t.element_type), t.encoding)
    if isinstance(type_, ir.VectorType):
        t = ir.VectorType(type_)
        if is_unsigned(t.element_type):
            return ir.VectorType.get(list(t.shape), _signless_element(t.element_type))
    if isinstance(type_, ir.MemRefType):
        t = ir.MemRefType(type_)
        if is_unsigned(t.element_type):
            return ir.MemRefType.get(list(t.shape), _signless_element(t.element_type), t.layout, t.memory_space)
    if isinstance(type_, ir.FunctionType):
        f = ir.FunctionType(type_)
        inputs = [_signless(t) or t for t in f.inputs]
        results = [_signless(t) or t for t in f.results]
        if inputs != list(f.inputs) or results != list(f.results):
            return ir.FunctionType.get(inputs, results)
    return None


def retype_unsigned_as_signless(module: ir.Operation) -> None:
    """Rewrites every unsigned integer type in `module` as the signless one of its width."""
    ops = collect_ops(module)
    for op in ops:
        for region in op.regions:
            for block in region.blocks:
                for argument in block.arguments:
                    new = _signless(argument.type)
                    if new is not None:
                        argument.set_type(new)
        for value in op.results:
            new = _signless(value.type)
            if new is not None:
                value.set_type(new)
        if "function_type" in op.attributes:
            new = _signless(ir.TypeAttr(op.attributes["function_type"]).value)
            if new is not None:
                op.attributes["function_type"] = ir.TypeAttr.get(new)
        if is_op(op, arith.ConstantOp):
            _retype_constant(op)
    for op in ops:
        if is_op(op, builtin.UnrealizedConversionCastOp) and len(op.operands) == 1 and len(op.results) == 1:
            if op.operands[0].type == op.results[0].type:
                op.results[0].replace_all_uses_with(op.operands[0])
                op.erase()


def _retype_constant(op: ir.Operation) -> None:
    attr = op.attributes["value"]
    new_type = _signless(attr.type)
    if new_type is None:
        return
    if isinstance(attr, ir.IntegerAttr):
        op.attributes["value"] = ir.IntegerAttr.get(new_type, ir.IntegerAttr(attr).value)
        return
    dense = ir.DenseIntElementsAttr(attr)
    if dense.is_splat:
        splat = ir.IntegerAttr(dense.get_splat_value()).value
        value = ir.DenseElementsAttr.get_splat(new_type, ir.IntegerAttr.get(_signless_element(dense.type.element_type), splat))
    else:
        width = ir.IntegerType(dense.type.element_type).width
        data = np.array(dense, dtype=f"uint{width}").view(f"int{width}").reshape(dense.type.shape)
        value = ir.DenseElementsAttr.get(data, type=new_type)
    op.attributes["value"] = value
