"""VJP rules of the elementwise ops: binaries (with broadcasting), activations, where, cast.

A rule takes the Emitter, the forward op and the cotangents of its results (None
for a result without one) and returns `(operand, cotangent)` pairs; the driver
sums the pairs per operand.  Cotangents of broadcast operands are summed back to
the operand's shape (`Emitter.unbroadcast`).
"""

from __future__ import annotations

import math

from mlir import ir

from ...dialects import rlx
from ...ir.shapes import element_of, shape_of
from .emit import Emitter

# --- binaries ------------------------------------------------------------------------


def _to_operands(emit: Emitter, op, d_lhs, d_rhs):
    pairs = []
    if d_lhs is not None:
        pairs.append((op.lhs, emit.unbroadcast(d_lhs, shape_of(op.lhs.type))))
    if d_rhs is not None:
        pairs.append((op.rhs, emit.unbroadcast(d_rhs, shape_of(op.rhs.type))))
    return pairs


def _add(emit, op, cts):
    (dy,) = cts
    return _to_operands(emit, op, dy, dy)


def _sub(emit, op, cts):
    (dy,) = cts
    return _to_operands(emit, op, dy, emit.neg(dy))


def _mul(emit, op, cts):
    (dy,) = cts
    return _to_operands(emit, op, emit.mul(dy, op.rhs), emit.mul(dy, op.lhs))


def _div(emit, op, cts):
    # y = a / b: da = dy / b, db = -dy * y / b
    (dy,) = cts
    d_lhs = emit.div(dy, op.rhs)
    d_rhs = emit.neg(emit.div(emit.mul(dy, op.result), op.rhs))
    return _to_operands(emit, op, d_lhs, d_rhs)


def _max_min(predicate: str):
    """max / min: the cotangent goes to the operand that was chosen; a tie splits it in halves."""

    def rule(emit, op, cts):
        (dy,) = cts
        chosen = emit.indicator(emit.compare(predicate, op.lhs, op.rhs), dy)
        tied = emit.scale(emit.indicator(emit.compare("eq", op.lhs, op.rhs), dy), 0.5)
        to_lhs = emit.add(chosen, tied)
        d_lhs = emit.mul(dy, to_lhs)
        d_rhs = emit.sub(dy, d_lhs)
        return _to_operands(emit, op, d_lhs, d_rhs)

    return rule


def _pow(emit, op, cts):
    # y = a ** b: da = dy * b * a ** (b - 1), db = dy * y * log(a) (a > 0, where it is defined)
    (dy,) = cts
    one = emit.scalar(1.0, dy)
    power = emit.binary(rlx.PowOp, op.lhs, emit.sub(op.rhs, one))
    d_lhs = emit.mul(dy, emit.mul(op.rhs, power))
    d_rhs = emit.mul(dy, emit.mul(op.result, emit.unary(rlx.LogOp, op.lhs)))
    return _to_operands(emit, op, d_lhs, d_rhs)


# --- activations --------------------------------------------------------------------------


def erf(emit: Emitter, x: ir.Value) -> ir.Value:
    """erf(x) from exp (Abramowitz & Stegun 7.1.26, absolute error below 1.5e-7): MIR has no erf op."""
    p, coefficients = 0.3275911, (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
    a = emit.unary(rlx.AbsOp, x)
    t = emit.div(emit.scalar(1.0, x), emit.add(emit.scalar(1.0, x), emit.scale(a, p)))
    poly = emit.scalar(coefficients[-1], x)
    for c in reversed(coefficients[:-1]):
        poly = emit.add(emit.mul(poly, t), emit.scalar(c, x))
    poly = emit.mul(poly, t)
    tail = emit.mul(poly, emit.unary(rlx.ExpOp, emit.neg(emit.mul(x, x))))
    magnitude = emit.sub(emit.scalar(1.0, x), tail)
    negative = emit.compare("lt", x, emit.scalar(0.0, x))
    return emit.where(negative, emit.neg(magnitude), magnitude)


def activation_derivative(emit: Emitter, kind: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """d act(x) / dx for the activation named `kind` (the names of rlx.fused_matmul_bias_act),
    from its input `x` and output `y = act(x)`."""
    one = emit.scalar(1.0, x)
    if kind == "none":
        return emit.splat(1.0, shape_of(x.type), element_of(x.type))
    if kind == "relu":
        return emit.indicator(emit.compare("gt", x, emit.scalar(0.0, x)), x)
    if kind == "sigmoid":
        return emit.mul(y, emit.sub(one, y))
    if kind == "tanh":
        return emit.sub(one, emit.mul(y, y))
    if kind == "silu":
        s = emit.unary(rlx.SigmoidOp, x)
        return emit.mul(s, emit.add(one, emit.mul(x, emit.sub(one, s))))
    if kind == "gelu":
        # Phi(x) + x * phi(x)
        cdf = emit.scale(emit.add(one, erf(emit, emit.scale(x, 1.0 / math.sqrt(2.0)))), 0.5)
        pdf = emit.scale(emit.unary(rlx.ExpOp, emit.scale(emit.mul(x, x), -0.5)), 1.0 / math.sqrt(2.0 * math.pi))
        return emit.add(cdf, emit.mul(x, pdf))
    if kind == "gelu_approx":
        # y = 0.5 x (1 + tanh(u)), u = c (x + 0.044715 x^3)
        c = math.sqrt(2.0 / math.pi)
        x2 = emit.mul(x, x)
        u = emit.scale(emit.add(x, emit.scale(emit.mul(x2, x), 0.044715)), c)
        t = emit.unary(rlx.TanhOp, u)
        du = emit.scale(emit.add(one, emit.scale(x2, 3 * 0.044715)), c)
        left = emit.scale(emit.add(one, t), 0.5)
        right = emit.mul(emit.scale(x, 0.5), emit.mul(emit.sub(one, emit.mul(t, t)), du))
        return emit.add(left, right)
    raise ValueError(f"no derivative for the activation '{kind}'")


_ACTIVATIONS = {
    rlx.ReluOp: "relu",
    rlx.GeluOp: "gelu",
    rlx.GeluApproxOp: "gelu_approx",
    rlx.SiluOp: "silu",
    rlx.SigmoidOp: "sigmoid",
    rlx.TanhOp: "tanh",
}


def _activation(emit, op, cts):
    (dy,) = cts
    kind = _ACTIVATIONS[type(op)]
    return [(op.input, emit.mul(dy, activation_derivative(emit, kind, op.input, op.result)))]


def _exp(emit, op, cts):
    (dy,) = cts
    return [(op.input, emit.mul(dy, op.result))]


def _log(emit, op, cts):
    (dy,) = cts
    return [(op.input, emit.div(dy, op.input))]


def _sqrt(emit, op, cts):
    (dy,) = cts
    return [(op.input, emit.div(emit.scale(dy, 0.5), op.result))]


def _rsqrt(emit, op, cts):
    # y = x^-1/2: dy/dx = -0.5 y^3
    (dy,) = cts
    y = op.result
    return [(op.input, emit.mul(emit.scale(dy, -0.5), emit.mul(y, emit.mul(y, y))))]


def _neg(emit, op, cts):
    (dy,) = cts
    return [(op.input, emit.neg(dy))]


def _abs(emit, op, cts):
    # sign(x); 0 at 0 (the subgradient JAX and PyTorch pick)
    (dy,) = cts
    x = op.input
    zero = emit.scalar(0.0, x)
    sign = emit.sub(emit.indicator(emit.compare("gt", x, zero), x), emit.indicator(emit.compare("lt", x, zero), x))
    return [(x, emit.mul(dy, sign))]


def _softplus(emit, op, cts):
    # d softplus(x) / dx = sigmoid(x)
    (dy,) = cts
    return [(op.input, emit.mul(dy, emit.unary(rlx.SigmoidOp, op.input)))]


def _sin(emit, op, cts):
    (dy,) = cts
    return [(op.input, emit.mul(dy, emit.unary(rlx.CosOp, op.input)))]


def _cos(emit, op, cts):
    (dy,) = cts
    return [(op.input, emit.neg(emit.mul(dy, emit.unary(rlx.SinOp, op.input))))]


def _piecewise_constant(emit, op, cts):
    # floor and round: zero wherever they are differentiable (as JAX and PyTorch define them)
    (dy,) = cts
    return [(op.input, emit.zeros_like(dy))]


def _clamp(emit, op, cts):
    # 1 where the input is inside [min, max] (bounds included, as PyTorch's clamp), else 0
    (dy,) = cts
    x = op.input
    inside = None
    for predicate, bound in (("ge", op.min), ("le", op.max)):
        if bound is None:
            continue
        mask = emit.indicator(emit.compare(predicate, x, emit.scalar(bound, x)), x)
        inside = mask if inside is None else emit.mul(inside, mask)
    return [(x, emit.mul(dy, inside))]


# --- where and cast -----------------------------------------------------------------------


def _where(emit, op, cts):
    # The condition is a selector: no cotangent flows into it.
    (dy,) = cts
    zero = emit.scalar(0.0, dy)
    d_true = emit.where(op.condition, dy, zero)
    d_false = emit.where(op.condition, zero, dy)
    return [
        (op.on_true, emit.unbroadcast(d_true, shape_of(op.on_true.type))),
        (op.on_false, emit.unbroadcast(d_false, shape_of(op.on_false.type))),
    ]


def _cast(emit, op, cts):
    # Float to float: the cotangent converts back.  From an integer or bool there is no
    # derivative: the driver reports the cast before it gets here (see driver.is_float).
    (dy,) = cts
    return [(op.input, emit.cast(dy, element_of(op.input.type)))]


RULES = {
    rlx.AddOp: _add,
    rlx.SubOp: _sub,
    rlx.MulOp: _mul,
    rlx.DivOp: _div,
    rlx.MaxOp: _max_min("gt"),
    rlx.MinOp: _max_min("lt"),
    rlx.PowOp: _pow,
    **{cls: _activation for cls in _ACTIVATIONS},
    rlx.ExpOp: _exp,
    rlx.LogOp: _log,
    rlx.SqrtOp: _sqrt,
    rlx.RsqrtOp: _rsqrt,
    rlx.NegOp: _neg,
    rlx.AbsOp: _abs,
    rlx.SoftplusOp: _softplus,
    rlx.SinOp: _sin,
    rlx.CosOp: _cos,
    rlx.FloorOp: _piecewise_constant,
    rlx.RoundOp: _piecewise_constant,
    rlx.ClampOp: _clamp,
    rlx.WhereOp: _where,
    rlx.CastOp: _cast,
}
