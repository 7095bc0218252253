"""rlx-bf16-as-i16: bf16 in memory as i16 bit patterns, its conversions as integer arithmetic.

Runs on the LLVM dialect, last in `rlx-lower-to-llvm`. bf16 is a storage type in RLX
(arithmetic runs in f32), so after lowering it appears in loads, stores and the f32 <-> bf16
conversions (`llvm.fpext`, `llvm.fptrunc`). Left as `bfloat`, LLVM's loop and SLP vectorizers
turn copies of bf16 (a transpose, a strided view) into bf16 vectors of odd lengths and shuffles
that the x86 backend cannot legalize on CPUs with AVX512-BF16 (LLVM 22 aborts the process:
"Do not know how to soft promote this operator's operand!", e.g. a 17x4 bf16 transpose).
With this pass no `bfloat` value reaches LLVM:

- `llvm.load` / `llvm.store` of bf16 (or a vector of it) load and store i16;
- `llvm.getelementptr` over bf16 elements steps over i16 ones (the same 2-byte strides), so
  not even address arithmetic names bfloat (LLVM keeps a typed GEP into a caller's buffer);
- `fpext` bf16 -> f32 is the bits shifted into the high half of an i32 (exact);
- `fptrunc` f32 -> bf16 rounds to nearest, ties to even, on the integer bits: add
  0x7fff + (bit 16), keep the high half (overflow carries into infinity, as it should);
  a NaN keeps its sign and high payload bits and becomes quiet (bit 6 of the result set),
  where the rounding could carry it into infinity.

The bitcasts between bf16 and i16 that this leaves between a load and a store (a copy) cancel.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from mlir import ir
from mlir.dialects import llvm

from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass

ICMP_UGT = 8  # LLVM dialect ICmpPredicate


def _is_bf16(type_: ir.Type) -> bool:
    element = ir.VectorType(type_).element_type if isinstance(type_, ir.VectorType) else type_
    return isinstance(element, ir.BF16Type)


def _like(type_: ir.Type, element: ir.Type) -> ir.Type:
    """`element`, or a vector of it shaped as `type_` when that is a vector."""
    if isinstance(type_, ir.VectorType):
        return ir.VectorType.get(ir.VectorType(type_).shape, element)
    return element


def _op(name: str, operands: list, result: ir.Type, attributes: Optional[dict] = None) -> ir.Value:
    return ir.Operation.create(name, results=[result], operands=operands, attributes=attributes or {}).result


def _constant(type_: ir.Type, value: int) -> ir.Value:
    if isinstance(type_, ir.VectorType):
        element = ir.VectorType(type_).element_type
        attr = ir.DenseElementsAttr.get_splat(type_, ir.IntegerAttr.get(element, value))
    else:
        attr = ir.IntegerAttr.get(type_, value)
    return _op("llvm.mlir.constant", [], type_, {"value": attr})


class _Rewriter:
    def __init__(self):
        self.bitcasts: list[ir.Operation] = []

    def bitcast(self, value: ir.Value, type_: ir.Type) -> ir.Value:
        """`value` as `type_`; the source of a bitcast it came from when that has `type_`."""
        owner = value.owner
        if isinstance(owner, llvm.BitcastOp) and owner.operands[0].type == type_:
            return owner.operands[0]
        result = _op("llvm.bitcast", [value], type_)
        self.bitcasts.append(result.owner)
        return result

    def load(self, op: ir.Operation) -> None:
        bf16_type = op.results[0].type
        attributes = {name: op.attributes[name] for name in op.attributes}
        bits = _op("llvm.load", list(op.operands), _like(bf16_type, ir.IntegerType.get_signless(16)), attributes)
        op.results[0].replace_all_uses_with(self.bitcast(bits, bf16_type))
        op.erase()

    def store(self, op: ir.Operation) -> None:
        value = op.operands[0]
        op.operands[0] = self.bitcast(value, _like(value.type, ir.IntegerType.get_signless(16)))

    def extend(self, op: ir.Operation) -> None:
        """bf16 -> f32 (then to the result type, if wider): the bits in the high half."""
        source, result_type = op.operands[0], op.results[0].type
        i16, i32 = (_like(source.type, ir.IntegerType.get_signless(w)) for w in (16, 32))
        wide = _op("llvm.zext", [self.bitcast(source, i16)], i32)
        shifted = _op("llvm.shl", [wide, _constant(i32, 16)], i32)
        f32 = _like(source.type, ir.F32Type.get())
        value = _op("llvm.bitcast", [shifted], f32)
        if f32 != result_type:
            value = _op("llvm.fpext", [value], result_type)
        op.results[0].replace_all_uses_with(value)
        op.erase()

    def truncate(self, op: ir.Operation) -> None:
        """f32 (or wider, first rounded to f32) -> bf16, round to nearest even."""
        source, result_type = op.operands[0], op.results[0].type
        f32 = _like(source.type, ir.F32Type.get())
        if source.type != f32:
            source = _op("llvm.fptrunc", [source], f32)
        i16, i32 = (_like(source.type, ir.IntegerType.get_signless(w)) for w in (16, 32))
        bits = _op("llvm.bitcast", [source], i32)
        high = _op("llvm.lshr", [bits, _constant(i32, 16)], i32)
        lowest_kept = _op("llvm.and", [high, _constant(i32, 1)], i32)
        bias = _op("llvm.add", [lowest_kept, _constant(i32, 0x7FFF)], i32)
        rounded = _op("llvm.lshr", [_op("llvm.add", [bits, bias], i32), _constant(i32, 16)], i32)
        magnitude = _op("llvm.and", [bits, _constant(i32, 0x7FFFFFFF)], i32)
        is_nan = _op(
            "llvm.icmp",
            [magnitude, _constant(i32, 0x7F800000)],
            _like(source.type, ir.IntegerType.get_signless(1)),
            {"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), ICMP_UGT)},
        )
        quiet_nan = _op("llvm.or", [high, _constant(i32, 0x40)], i32)
        chosen = _op("llvm.select", [is_nan, quiet_nan, rounded], i32)
        result = self.bitcast(_op("llvm.trunc", [chosen], i16), result_type)
        op.results[0].replace_all_uses_with(result)
        op.erase()

    def address(self, op: ir.Operation) -> None:
        element = ir.TypeAttr(op.attributes["elem_type"]).value
        op.attributes["elem_type"] = ir.TypeAttr.get(_like(element, ir.IntegerType.get_signless(16)))

    def erase_dead_bitcasts(self) -> None:
        for op in reversed(self.bitcasts):
            if next(iter(op.results[0].uses), None) is None:
                op.erase()


# op class -> (its rewrite, whether an op of the class computes on bf16)
_HANDLERS = {
    llvm.LoadOp: (_Rewriter.load, lambda op: _is_bf16(op.results[0].type)),
    llvm.StoreOp: (_Rewriter.store, lambda op: _is_bf16(op.operands[0].type)),
    llvm.FPExtOp: (_Rewriter.extend, lambda op: _is_bf16(op.operands[0].type)),
    llvm.FPTruncOp: (_Rewriter.truncate, lambda op: _is_bf16(op.results[0].type)),
    llvm.GEPOp: (_Rewriter.address, lambda op: _is_bf16(ir.TypeAttr(op.attributes["elem_type"]).value)),
}
_HANDLED = tuple(_HANDLERS)


def _handler(op: ir.Operation):
    if not is_op(op, _HANDLED):  # one check for the many ops of no interest
        return None
    for op_class, (rewrite, applies) in _HANDLERS.items():
        if is_op(op, op_class):
            return rewrite if applies(op) else None
    return None


@dataclasses.dataclass(frozen=True)
class Bf16AsI16(RlxPass):
    name = "rlx-bf16-as-i16"
    summary = "LLVM dialect: load/store bf16 as i16 and convert f32<->bf16 with integer ops (no bf16 vectors for LLVM)"
    creates_rlx_ops = False

    def run(self, module: ir.Operation) -> bool:
        rewriter = _Rewriter()
        # Selected by op name first (a cheap test in the walk of every op), then by the handlers' own tests.
        handled = [view.operation for view in collect_ops(module, _HANDLED) if _handler(view.operation) is not None]
        if not handled:
            return False  # nothing changed: the pass manager need not verify the module again
        for op in handled:
            with ir.InsertionPoint(op), op.location:
                _handler(op)(rewriter, op)
        rewriter.erase_dead_bitcasts()
