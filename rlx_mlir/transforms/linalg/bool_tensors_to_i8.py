"""rlx-bool-tensors-to-i8: store boolean tensors as bytes.

LLVM 22's memref-to-LLVM conversion asserts (aborting the process) on loads
and stores of i1, so `tensor<...xi1>` must never reach bufferization.  This
pass retypes every i1 tensor in the module as i8 (0 or 1, the layout of numpy
bool arrays, so the JIT's ABI is unchanged) and converts at the few places
where a scalar meets a tensor element: linalg.generic block arguments and
yields, tensor.extract / tensor.insert, linalg.fill and dense constants.
Any other op that mixes i1 scalars with boolean tensors is reported, not
miscompiled.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np
from mlir import ir
from mlir.dialects import arith, func, linalg, tensor

from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass, fail


def _i1() -> ir.Type:
    return ir.IntegerType.get_signless(1)


def _i8() -> ir.Type:
    return ir.IntegerType.get_signless(8)


def _is_bool_tensor(type_: ir.Type) -> bool:
    return isinstance(type_, (ir.RankedTensorType, ir.MemRefType)) and type_.element_type == _i1()


def _as_i8(type_: ir.Type) -> ir.Type:
    if isinstance(type_, ir.RankedTensorType) and type_.element_type == _i1():
        return ir.RankedTensorType.get(list(type_.shape), _i8(), type_.encoding)
    if isinstance(type_, ir.MemRefType) and type_.element_type == _i1():  # e.g. LIR's arena views
        return ir.MemRefType.get(list(type_.shape), _i8(), type_.layout, type_.memory_space)
    return type_


def _narrow_after(value: ir.Value, insertion: ir.InsertionPoint) -> None:
    """Retypes scalar `value` (an i1 read from a byte) as i8 and gives its users an i1 again."""
    value.set_type(_i8())
    with insertion, value.location:
        narrowed = arith.trunci(_i1(), value)
    value.replace_all_uses_except(narrowed, narrowed.owner.operation)


def _widen_operand(op: ir.Operation, index: int) -> None:
    """Replaces i1 scalar operand `index` of `op` by its zero-extension to i8."""
    with ir.InsertionPoint(op), op.location:
        op.operands[index] = arith.extui(_i8(), op.operands[index])


def _fix_generic(op: ir.Operation) -> None:
    block = op.regions[0].blocks[0]
    operands = list(op.operands)
    first = block.operations[0] if len(block.operations) else None
    for operand, argument in zip(operands, block.arguments):
        if _is_bool_tensor(operand.type) and argument.type == _i1():
            _narrow_after(argument, ir.InsertionPoint(first))
    outputs = operands[len(operands) - len(op.results):]
    terminator = block.operations[len(block.operations) - 1]
    for index, output in enumerate(outputs):
        if _is_bool_tensor(output.type) and terminator.operands[index].type == _i1():
            _widen_operand(terminator, index)


# Named linalg ops whose body only forwards an element: bytes forward as well as bits.
_DATA_MOVEMENT = (linalg.BroadcastOp, linalg.TransposeOp, linalg.CopyOp)


def _fix_data_movement(op: ir.Operation) -> None:
    for region in op.regions:
        for block in region.blocks:
            for argument in block.arguments:
                if argument.type == _i1():
                    argument.set_type(_i8())


def _fix_constant(op: ir.Operation) -> None:
    attr = ir.DenseIntElementsAttr(op.attributes["value"])
    new_type = _as_i8(op.results[0].type)
    values = [int(bool(v)) for v in attr] if not attr.is_splat else None
    with ir.InsertionPoint(op), op.location:
        if values is None:
            splat = int(bool(ir.IntegerAttr(attr.get_splat_value()).value))
            value = ir.DenseElementsAttr.get_splat(new_type, ir.IntegerAttr.get(_i8(), splat))
        else:
            value = ir.DenseElementsAttr.get(np.array(values, np.int8).reshape(new_type.shape), type=new_type)
        replacement = arith.ConstantOp(new_type, value)
    op.results[0].replace_all_uses_with(replacement.result)
    op.erase()


def _touches_bool_tensor(op: ir.Operation) -> bool:
    return any(_is_bool_tensor(v.type) for v in (*op.operands, *op.results))


def _mixes_scalar_i1(op: ir.Operation) -> bool:
    return any(v.type == _i1() for v in (*op.operands, *op.results))


def _holds_bool_tensors(module: ir.Operation) -> bool:
    """Whether a boolean tensor type occurs in `module`: as an op's result, a block argument
    or in a function signature. The scalar payload regions of linalg ops are not entered
    (they compute on elements: a boolean tensor there is a value from outside, seen there),
    which keeps this scan cheap after approximate-math has filled them with scalar code."""
    i1 = _i1()
    found = False

    def is_bool_tensor(type_: ir.Type) -> bool:
        return isinstance(type_, (ir.RankedTensorType, ir.MemRefType)) and type_.element_type == i1

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal found
        found = any(is_bool_tensor(v.type) for v in op.results) or any(
            is_bool_tensor(a.type) for region in op.regions for block in region.blocks for a in block.arguments
        )
        if not found and is_op(op, func.FuncOp):
            signature = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            found = any(is_bool_tensor(t) for t in (*signature.inputs, *signature.results))
        if found:
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.SKIP if op.name.startswith("linalg.") else ir.WalkResult.ADVANCE

    module.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


@dataclasses.dataclass(frozen=True)
class BoolTensorsToI8(RlxPass):
    name = "rlx-bool-tensors-to-i8"
    summary = "Store i1 tensors as i8 (LLVM cannot load or store i1 memrefs)"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> Optional[bool]:
        if not _holds_bool_tensors(module):  # nothing to do: skip the walks over every op
            return False  # and the verification of the module it received
        ops = collect_ops(module, _touches_bool_tensor)
        # Scalar boundaries first, while every boolean tensor still reads i1 ...
        for op in ops:
            view = op.opview
            if isinstance(view, linalg.GenericOp):
                _fix_generic(op)
            elif isinstance(view, _DATA_MOVEMENT):
                _fix_data_movement(op)
            elif isinstance(view, tensor.ExtractOp):
                _narrow_after(op.results[0], ir.InsertionPoint.after(op))
            elif isinstance(view, (tensor.InsertOp, linalg.FillOp)) and op.operands[0].type == _i1():
                _widen_operand(op, 0)
            elif not isinstance(view, arith.ConstantOp) and _mixes_scalar_i1(op):
                raise fail(op, f"'{op.name}' mixes i1 scalars with boolean tensors; rlx-bool-tensors-to-i8 cannot store it as bytes")
        # ... then constants, which are replaced, and finally every type.
        for op in ops:
            if is_op(op, arith.ConstantOp):
                _fix_constant(op)
        self._retype(module)

    @staticmethod
    def _retype(module: ir.Operation) -> None:
        def visit(op: ir.Operation) -> ir.WalkResult:
            for result in op.results:
                result.set_type(_as_i8(result.type))
            for region in op.regions:
                for block in region.blocks:
                    for argument in block.arguments:
                        argument.set_type(_as_i8(argument.type))
            if is_op(op, func.FuncOp):
                function_type = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                new_type = ir.FunctionType.get(
                    [_as_i8(t) for t in function_type.inputs], [_as_i8(t) for t in function_type.results]
                )
                op.attributes["function_type"] = ir.TypeAttr.get(new_type)
            return ir.WalkResult.ADVANCE

        module.walk(visit)

