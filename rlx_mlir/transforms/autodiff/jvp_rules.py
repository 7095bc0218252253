"""JVP rules: the tangent of each result of an op from the tangents of its operands.

A rule takes the Emitter, the forward op and one tangent per operand (None: zero, or a
selector operand) and returns one tangent per result (None: zero).  Three shapes of rule
cover most of MIR, and they share the VJP rules where the algebra allows:

* linear ops (the shape ops, sum / mean reductions, cumsum, add, sub, neg, gather in its
  table): the op itself applied to the tangents (the op cloned, zeros for operands without
  one);
* multilinear ops (mul, matmul, dot_general, the quantised matmul in its activations): the
  sum over moving operands of the op with that operand replaced by its tangent;
* ops with a symmetric Jacobian (the unary elementwise ops, softmax): the VJP rule itself
  applied to the tangent.

The nonlinear broadcasting binaries, max / min reductions, where, cast and custom_fn (its
`jvp` function when it has one) have their own rules.  Every other op with a VJP rule (norms,
RoPE, attention, the recurrences, the ops with bodies) is differentiated through its VJP rule
transposed (`forward.transposed_vjp`); `jvp_rule_for` returns None for those.
"""

from __future__ import annotations

from mlir import ir

from ...dialects import rlx
from ...dialects.rlx.control import function_signature, lookup_function
from ...ir.shapes import element_of, shape_of
from . import rules_elementwise, rules_reduction
from .emit import Emitter
from .rules_control import inline


def _with_operands(emit: Emitter, op, replacements: dict) -> ir.Value:
    """`op` cloned at the emitter's insertion point with the operands at the positions of
    `replacements` replaced (position -> value); its first result."""
    copy = op.operation.clone(ip=emit.ip)
    for position, value in replacements.items():
        copy.operands[position] = value
    return copy.results[0]


def _linear(emit, op, ts):
    """The op applied to the tangents: zeros for the float operands without one; the others
    (a gather's indices) stay."""
    replacements = {}
    for position, (operand, t) in enumerate(zip(op.operands, ts)):
        if t is not None:
            replacements[position] = t
        elif isinstance(element_of(operand.type), ir.FloatType):
            replacements[position] = emit.zeros_like(operand)
    return [_with_operands(emit, op, replacements)]


def _multilinear(emit, op, ts):
    """Linear in each operand separately: the sum of the op with one operand replaced by its tangent."""
    total = None
    for position, t in enumerate(ts):
        if t is None:
            continue
        term = _with_operands(emit, op, {position: t})
        total = term if total is None else emit.add(total, term)
    return [total]


def _only(positions):
    """Multilinear in the operands at `positions`; the others (e.g. a quantised weight's side
    tensors) are fixed data whose tangents are ignored."""

    def rule(emit, op, ts):
        return _multilinear(emit, op, [t if i in positions else None for i, t in enumerate(ts)])

    return rule


def _symmetric(vjp):
    """A one-operand op whose Jacobian is symmetric (diagonal for elementwise ops): J t = J^T t."""

    def rule(emit, op, ts):
        ((_, tangent),) = vjp(emit, op, [ts[0]])
        return [tangent]

    return rule


def _full(emit: Emitter, t, result) -> ir.Value:
    """A tangent broadcast to `result`'s shape (a broadcast operand's tangent)."""
    return emit.expand(t, shape_of(result.type))


def _combine(emit: Emitter, op, terms) -> list:
    total = None
    for term in terms:
        if term is not None:
            total = term if total is None else emit.add(total, term)
    return [_full(emit, total, op.result)]


def _div(emit, op, ts):
    # y = a / b: dy = (da - y db) / b
    ta, tb = ts
    numerator = ta
    if tb is not None:
        shift = emit.neg(emit.mul(op.result, tb))
        numerator = shift if ta is None else emit.add(ta, shift)
    return [_full(emit, emit.div(numerator, op.rhs), op.result)]


def _max_min(predicate: str):
    # the chosen operand's tangent; a tie takes the mean (the transpose of the VJP rule's halves)
    def rule(emit, op, ts):
        ta, tb = ts
        like = op.result
        chosen = emit.indicator(emit.compare(predicate, op.lhs, op.rhs), like)
        tied = emit.scale(emit.indicator(emit.compare("eq", op.lhs, op.rhs), like), 0.5)
        to_lhs = emit.add(chosen, tied)
        terms = [None if ta is None else emit.mul(ta, to_lhs),
                 None if tb is None else emit.mul(tb, emit.sub(emit.scalar(1.0, like), to_lhs))]
        return _combine(emit, op, terms)

    return rule


def _pow(emit, op, ts):
    # y = a ** b: dy = da b a^(b - 1) + db y log(a)
    ta, tb = ts
    terms = [None, None]
    if ta is not None:
        power = emit.binary(rlx.PowOp, op.lhs, emit.sub(op.rhs, emit.scalar(1.0, op.rhs)))
        terms[0] = emit.mul(ta, emit.mul(op.rhs, power))
    if tb is not None:
        terms[1] = emit.mul(tb, emit.mul(op.result, emit.unary(rlx.LogOp, op.lhs)))
    return _combine(emit, op, terms)


def _where(emit, op, ts):
    _, t_true, t_false = ts
    zero = emit.scalar(0.0, op.result)
    selected = emit.where(op.condition, zero if t_true is None else t_true, zero if t_false is None else t_false)
    return [_full(emit, selected, op.result)]


def _cast(emit, op, ts):
    # float to float: the tangent converts; to an integer or bool the driver reports the op
    (t,) = ts
    element = element_of(op.result.type)
    if not isinstance(element, ir.FloatType):
        return [t]
    return [emit.cast(t, element)]


def _reduce(emit, op, ts):
    kind = str(op.kind)
    if kind in ("sum", "mean"):
        return _linear(emit, op, ts)
    # max / min: the mean of the tangents of the elements equal to the extremum
    (t,) = ts
    x = op.input
    shape = shape_of(x.type)
    axes = sorted(a % len(shape) for a in op.axes)
    keep = bool(op.keep_dim)
    extremum = rules_reduction.spread(emit, op.result, shape, axes)
    hit = emit.indicator(emit.compare("eq", x, extremum), x)
    return [emit.div(emit.sum(emit.mul(t, hit), axes, keep), emit.sum(hit, axes, keep))]


def _custom_fn(emit, op, ts):
    """With a `jvp` function: `jvp(input, primal_output, tangent) -> d_output` (RLX's `tangent_i`
    convention, as `vjp` takes `d_output`), inlined.  Without either: the forward body inlined
    and swept (with only a `vjp`, `jvp_rule_for` sends the op to its VJP rule, transposed)."""
    (t,) = ts
    loc = emit.loc
    if op.jvp is not None:
        function = lookup_function(op, op.jvp, "jvp")
        inputs, results = function_signature(function)
        expected = [op.input.type, op.result.type, op.input.type]
        if inputs != expected or results != [op.result.type]:
            raise NotImplementedError(
                f"its jvp @{op.jvp}: it must take (input, primal_output, tangent) of types "
                f"({', '.join(map(str, expected))}) and return the output tangent of type {op.result.type}"
            )
        _, (tangent,) = inline(emit, function, [op.input, op.result, t])
    else:
        ops, (output,) = inline(emit, lookup_function(op, op.fwd, "fwd"), [op.input])
        (tangent,) = emit.forward(ops, [op.input], [t], [output])
    emit.loc = loc
    return [tangent]


_SYMMETRIC_UNARY = (
    rlx.ReluOp, rlx.GeluOp, rlx.GeluApproxOp, rlx.SiluOp, rlx.SigmoidOp, rlx.TanhOp, rlx.ExpOp, rlx.LogOp,
    rlx.SqrtOp, rlx.RsqrtOp, rlx.AbsOp, rlx.SoftplusOp, rlx.SinOp, rlx.CosOp, rlx.FloorOp, rlx.RoundOp,
    rlx.ClampOp,
)

JVP_RULES: dict = {
    **{cls: _linear for cls in (rlx.AddOp, rlx.SubOp, rlx.NegOp, rlx.ReshapeOp, rlx.TransposeOp, rlx.NarrowOp,
                                rlx.ConcatOp, rlx.ExpandOp, rlx.CumsumOp, rlx.GatherOp)},
    **{cls: _multilinear for cls in (rlx.MulOp, rlx.MatmulOp, rlx.DotGeneralOp)},
    rlx.DequantMatmulOp: _only({0}),
    **{cls: _symmetric(rules_elementwise.RULES[cls]) for cls in _SYMMETRIC_UNARY},
    rlx.SoftmaxOp: _symmetric(rules_reduction.RULES[rlx.SoftmaxOp]),
    rlx.DivOp: _div,
    rlx.MaxOp: _max_min("gt"),
    rlx.MinOp: _max_min("lt"),
    rlx.PowOp: _pow,
    rlx.WhereOp: _where,
    rlx.CastOp: _cast,
    rlx.ReduceOp: _reduce,
    rlx.CustomFnOp: _custom_fn,
}


def jvp_rule_for(op):
    """The JVP rule of `op` (a typed view), or None (then its VJP rule is transposed, if it has one:
    also a custom_fn's user `vjp` when it has no `jvp`, so both modes agree)."""
    if isinstance(op, rlx.CustomFnOp) and op.jvp is None and op.vjp is not None:
        return None
    return JVP_RULES.get(type(op))
