"""Lowering of elementwise MIR ops: one linalg.generic each, broadcasting by indexing maps."""

from __future__ import annotations

import math
from typing import Callable

from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as mmath

from ...dialects import rlx
from . import builders as lb
from .unsigned import is_unsigned, to_signless, to_unsigned

# --- scalar formulas ------------------------------------------------------------


def sigmoid(x: ir.Value) -> ir.Value:
    one = lb.constant_like(x, 1.0)
    return arith.divf(one, arith.addf(one, mmath.exp(arith.negf(x))))


def _gelu(x: ir.Value) -> ir.Value:
    inner = mmath.erf(arith.mulf(x, lb.constant_like(x, 1.0 / math.sqrt(2.0))))
    return arith.mulf(arith.mulf(lb.constant_like(x, 0.5), x), arith.addf(lb.constant_like(x, 1.0), inner))


def _gelu_approx(x: ir.Value) -> ir.Value:
    cube = arith.mulf(arith.mulf(x, x), x)
    inner = arith.addf(x, arith.mulf(lb.constant_like(x, 0.044715), cube))
    t = mmath.tanh(arith.mulf(lb.constant_like(x, math.sqrt(2.0 / math.pi)), inner))
    return arith.mulf(arith.mulf(lb.constant_like(x, 0.5), x), arith.addf(lb.constant_like(x, 1.0), t))


def _log1p(u: ir.Value) -> ir.Value:
    """log(1 + u) accurate for tiny u (Goldberg: log(w) * u / (w - 1) with w = 1 + u rounded; u where w
    rounds to 1). MLIR's math.log1p lowers to log(1 + u), which gives 0 for u below 6e-8."""
    one = lb.constant_like(u, 1.0)
    w = arith.addf(one, u)
    scaled = arith.divf(arith.mulf(mmath.log(w), u), arith.subf(w, one))
    return arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, w, one), u, scaled)


def softplus(x: ir.Value) -> ir.Value:
    """max(x, 0) + log1p(exp(-|x|)): log(1 + exp(x)) without overflow (x itself for large x) and with
    full relative accuracy for very negative x (exp(x))."""
    positive = arith.maximumf(x, lb.constant_like(x, 0.0))
    return arith.addf(positive, _log1p(mmath.exp(arith.negf(mmath.absf(x)))))


ACTIVATIONS: dict[type, Callable[[ir.Value], ir.Value]] = {
    rlx.ReluOp: lambda x: arith.maximumf(x, lb.constant_like(x, 0.0)),
    rlx.GeluOp: _gelu,
    rlx.GeluApproxOp: _gelu_approx,
    rlx.SiluOp: lambda x: arith.mulf(x, sigmoid(x)),
    rlx.SigmoidOp: sigmoid,
    rlx.TanhOp: mmath.tanh,
    rlx.ExpOp: mmath.exp,
    rlx.LogOp: mmath.log,
    rlx.SqrtOp: mmath.sqrt,
    rlx.RsqrtOp: mmath.rsqrt,
    rlx.NegOp: arith.negf,
    rlx.AbsOp: mmath.absf,
    rlx.SoftplusOp: softplus,
    rlx.SinOp: mmath.sin,
    rlx.CosOp: mmath.cos,
    rlx.FloorOp: mmath.floor,
    rlx.RoundOp: mmath.roundeven,
}

BINARIES: dict[type, Callable[[ir.Value, ir.Value], ir.Value]] = {
    rlx.AddOp: arith.addf,
    rlx.SubOp: arith.subf,
    rlx.MulOp: arith.mulf,
    rlx.DivOp: arith.divf,
    rlx.MaxOp: arith.maximumf,
    rlx.MinOp: arith.minimumf,
    rlx.PowOp: mmath.powf,
}


def _lower_activation(op) -> ir.Value:
    fn = ACTIVATIONS[type(op)]
    element = ir.RankedTensorType(op.result.type).element_type
    return lb.elementwise([op.input], op.result.type, lambda x: lb.narrow(fn(lb.widen(x)), element))


def _lower_binary(op) -> ir.Value:
    fn = BINARIES[type(op)]
    element = ir.RankedTensorType(op.result.type).element_type
    return lb.elementwise(
        [op.lhs, op.rhs], op.result.type, lambda a, b: lb.narrow(fn(lb.widen(a), lb.widen(b)), element)
    )


def _lower_clamp(op) -> ir.Value:
    low, high = op.min, op.max
    element = ir.RankedTensorType(op.result.type).element_type

    def clamp(x: ir.Value) -> ir.Value:
        x = lb.widen(x)
        if low is not None:
            x = arith.maximumf(x, lb.constant_like(x, low))
        if high is not None:
            x = arith.minimumf(x, lb.constant_like(x, high))
        return lb.narrow(x, element)

    return lb.elementwise([op.input], op.result.type, clamp)


def _shift_amount_in_range(amount: ir.Value) -> ir.Value:
    """amount < width, comparing unsigned: a negative amount is out of range too (as numpy)."""
    width = arith.constant(amount.type, ir.IntegerType(amount.type).width)
    return arith.cmpi(arith.CmpIPredicate.ult, amount, width)


def _shift_left(a: ir.Value, b: ir.Value, unsigned: bool) -> ir.Value:
    return arith.select(_shift_amount_in_range(b), arith.shli(a, b), arith.constant(a.type, 0))


def _shift_right(a: ir.Value, b: ir.Value, unsigned: bool) -> ir.Value:
    if unsigned:
        return arith.select(_shift_amount_in_range(b), arith.shrui(a, b), arith.constant(a.type, 0))
    # An arithmetic shift by width - 1 gives what any larger amount would: 0 or -1.
    last = arith.constant(b.type, ir.IntegerType(b.type).width - 1)
    return arith.shrsi(a, arith.select(_shift_amount_in_range(b), b, last))


BITWISE: dict[type, Callable[[ir.Value, ir.Value, bool], ir.Value]] = {
    rlx.BitwiseAndOp: lambda a, b, unsigned: arith.andi(a, b),
    rlx.BitwiseOrOp: lambda a, b, unsigned: arith.ori(a, b),
    rlx.BitwiseXorOp: lambda a, b, unsigned: arith.xori(a, b),
    rlx.ShiftLeftOp: _shift_left,
    rlx.ShiftRightOp: _shift_right,
}


def _lower_bitwise(op) -> ir.Value:
    fn = BITWISE[type(op)]
    element = ir.RankedTensorType(op.result.type).element_type
    unsigned = is_unsigned(element)

    def body(a: ir.Value, b: ir.Value) -> ir.Value:
        return to_unsigned(fn(to_signless(a), to_signless(b), unsigned), element)

    return lb.elementwise([op.lhs, op.rhs], op.result.type, body)


_FLOAT_PREDICATES = {"eq": "OEQ", "ne": "UNE", "lt": "OLT", "le": "OLE", "gt": "OGT", "ge": "OGE"}
_INT_PREDICATES = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}


def _compare(predicate: str, a: ir.Value, b: ir.Value) -> ir.Value:
    if isinstance(a.type, ir.IntegerType):
        kind = getattr(arith.CmpIPredicate, _INT_PREDICATES[predicate])
        return arith.cmpi(kind, a, b)
    kind = getattr(arith.CmpFPredicate, _FLOAT_PREDICATES[predicate])
    return arith.cmpf(kind, a, b)


def _lower_compare(op) -> ir.Value:
    predicate = op.predicate
    return lb.elementwise([op.lhs, op.rhs], op.result.type, lambda a, b: _compare(predicate, a, b))


def _lower_where(op) -> ir.Value:
    return lb.elementwise(
        [op.condition, op.on_true, op.on_false], op.result.type, lambda c, t, f: arith.select(c, t, f)
    )


LOWERINGS: dict[type, Callable] = {
    **{cls: _lower_activation for cls in ACTIVATIONS},
    **{cls: _lower_binary for cls in BINARIES},
    **{cls: _lower_bitwise for cls in BITWISE},
    rlx.ClampOp: _lower_clamp,
    rlx.CompareOp: _lower_compare,
    rlx.WhereOp: _lower_where,
}
