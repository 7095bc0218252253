"""Lowering of elementwise MIR ops: one linalg.generic each, broadcasting by indexing maps."""

from __future__ import annotations

import math
from typing import Callable

from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as mmath

from ...dialects import rlx
from . import builders as lb

# --- scalar formulas ------------------------------------------------------------


def _sigmoid(x: ir.Value) -> ir.Value:
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


ACTIVATIONS: dict[type, Callable[[ir.Value], ir.Value]] = {
    rlx.ReluOp: lambda x: arith.maximumf(x, lb.constant_like(x, 0.0)),
    rlx.GeluOp: _gelu,
    rlx.GeluApproxOp: _gelu_approx,
    rlx.SiluOp: lambda x: arith.mulf(x, _sigmoid(x)),
    rlx.SigmoidOp: _sigmoid,
    rlx.TanhOp: mmath.tanh,
    rlx.ExpOp: mmath.exp,
    rlx.LogOp: mmath.log,
    rlx.SqrtOp: mmath.sqrt,
    rlx.RsqrtOp: mmath.rsqrt,
    rlx.NegOp: arith.negf,
    rlx.AbsOp: mmath.absf,
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
    rlx.CompareOp: _lower_compare,
    rlx.WhereOp: _lower_where,
}
