"""Lowering of MIR leaves and data ops: constants and casts."""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith

from ...dialects import rlx
from . import builders as lb
from . import float8, unsigned
from .unsigned import is_unsigned, to_signless


def _lower_constant(op) -> ir.Value:
    return arith.ConstantOp(op.result.type, op.operation.attributes["value"]).result


def _is_float(t: ir.Type) -> bool:
    return isinstance(t, (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type))


def _width(t: ir.Type) -> int:
    return ir.IntegerType(t).width if isinstance(t, ir.IntegerType) else 0


def convert_scalar(x: ir.Value, target: ir.Type) -> ir.Value:
    """One element converted with rlx.cast's semantics (unsigned bytes, `ui8`, zero-extend)."""
    if x.type == target:
        return x
    if float8.is_float8(x.type):  # the 8-bit float: through f32
        return convert_scalar(float8.to_f32(x), target)
    if float8.is_float8(target):
        return float8.from_f32(convert_scalar(x, lb.f32_type()))
    from_unsigned, to_unsigned = is_unsigned(x.type), is_unsigned(target)
    if not to_unsigned:
        return _convert_signless(to_signless(x), target, from_unsigned)
    signless_target = ir.IntegerType.get_signless(ir.IntegerType(target).width)
    return unsigned.to_unsigned(_convert_signless(to_signless(x), signless_target, from_unsigned, True), target)


def _convert_signless(x: ir.Value, target: ir.Type, from_unsigned: bool = False, to_unsigned: bool = False) -> ir.Value:
    source = x.type
    if source == target:
        return x
    if _width(target) == 1:  # anything to bool: x != 0, NaN true
        if _is_float(source):
            return arith.cmpf(arith.CmpFPredicate.UNE, x, arith.constant(source, 0.0))
        return arith.cmpi(arith.CmpIPredicate.ne, x, arith.constant(source, 0))
    if _is_float(source) and _is_float(target):
        if source == ir.BF16Type.get() and target == ir.F16Type.get() or source == ir.F16Type.get() and target == ir.BF16Type.get():
            return arith.truncf(target, arith.extf(lb.f32_type(), x))
        wider = ir.FloatType(target).width > ir.FloatType(source).width
        return arith.extf(target, x) if wider else arith.truncf(target, x)
    if _is_float(source):
        return arith.fptoui(target, x) if to_unsigned else arith.fptosi(target, x)
    if _width(source) == 1 or from_unsigned:  # bool to a number: 0 or 1; unsigned bytes zero-extend
        return arith.uitofp(target, x) if _is_float(target) else arith.extui(target, x)
    if _is_float(target):
        return arith.sitofp(target, x)
    return arith.extsi(target, x) if _width(target) > _width(source) else arith.trunci(target, x)


def _lower_cast(op) -> ir.Value:
    if op.input.type == op.result.type:  # a no-op: a view of its input, as LIR plans it
        return op.input
    target = ir.RankedTensorType(op.result.type).element_type
    return lb.elementwise([op.input], op.result.type, lambda x: convert_scalar(x, target))


LOWERINGS: dict[type, Callable] = {
    rlx.ConstantOp: _lower_constant,
    rlx.CastOp: _lower_cast,
}
