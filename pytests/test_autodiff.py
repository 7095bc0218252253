"""Reverse mode (transforms/autodiff, GraphModule.grad, rlx-grad): every VJP rule against central
finite differences of a float64 numpy reference of the op, written from its documented semantics
(dialect/rlx.md); broadcasting corner cases; the errors.

Each case builds `loss = sum(op(inputs) * R)` (R a fixed random tensor, so every output element
matters), compiles the gradient function, and compares each gradient with
`(f(x + h e_i) - f(x - h e_i)) / 2h` of the numpy reference, elementwise.  Shapes are drawn by
hypothesis, a few per op.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mlir import ir

import rlx_mlir
from rlx_mlir import GraphModule, quant
from rlx_mlir.dialects import rlx
from rlx_mlir.driver import Compilation
from rlx_mlir.dsl import element_type_from_name
from rlx_mlir.frontend.builder import BuildError

# --- the harness ---------------------------------------------------------------------------


def _values(rng, spec):
    """An input from (shape, kind): kind 'f' normal, 'pos' in [0.5, 2), 'idx<n>' i64 in [-1, n] (clamped)."""
    shape, kind = spec
    if kind == "f":
        return rng.standard_normal(shape)
    if kind == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if kind == "bool01":
        return (rng.uniform(0, 1, shape) < 0.7).astype(np.float64)
    n = int(kind[3:])
    return rng.integers(-1, n + 1, shape).astype(np.int64)


def check_gradients(build, reference, specs, wrt, seed=0, tol=2e-3):
    """Compiles grad(sum(build(...) * R)) w.r.t. the inputs at positions `wrt` and compares each
    gradient with central differences of `reference` in float64."""
    rng = np.random.default_rng(seed)
    arrays = [_values(rng, s) for s in specs]
    y = np.asarray(reference(*arrays))
    weights = rng.standard_normal(y.shape)

    g = GraphModule.mir("f")
    args = []
    for i, (shape, kind) in enumerate(specs):
        args.append(g.input(f"a{i}", shape, "i64" if kind.startswith("idx") else "f32"))
    out = build(g, *args)
    loss = g.op(rlx.ReduceOp, out * g.constant(weights.astype(np.float32)), kind="sum", axes=list(range(len(y.shape))) or [0]) \
        if y.shape else out * g.constant(weights.astype(np.float32))
    loss_value, grads = g.value_and_grad(loss, [args[i] for i in wrt])
    g.set_outputs([loss_value, *grads])
    feed = {f"a{i}": a.astype(np.int64 if s[1].startswith("idx") else np.float32) for i, (s, a) in enumerate(zip(specs, arrays))}
    results = g.compile()(**feed)

    def f(*xs):
        return float(np.sum(np.asarray(reference(*xs)) * weights))

    np.testing.assert_allclose(results[0], f(*arrays), rtol=1e-3, atol=1e-3)
    for grad, position in zip(results[1:], wrt):
        base = arrays[position]
        fd = np.zeros_like(base)
        h = 1e-6
        for index in np.ndindex(base.shape):
            plus, minus = [a.copy() for a in arrays], [a.copy() for a in arrays]
            plus[position][index] += h
            minus[position][index] -= h
            fd[index] = (f(*plus) - f(*minus)) / (2 * h)
        scale = max(1.0, float(np.max(np.abs(fd))) if fd.size else 1.0)
        np.testing.assert_allclose(grad, fd, rtol=tol, atol=tol * scale, err_msg=f"gradient of input #{position}")


# --- numpy references (from dialect/rlx.md) --------------------------------------------------

_erf = np.vectorize(math.erf)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


ACTIVATIONS = {
    "relu": (rlx.ReluOp, lambda x: np.maximum(x, 0)),
    "gelu": (rlx.GeluOp, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    "gelu_approx": (rlx.GeluApproxOp, lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))),
    "silu": (rlx.SiluOp, lambda x: x * _sigmoid(x)),
    "sigmoid": (rlx.SigmoidOp, _sigmoid),
    "tanh": (rlx.TanhOp, np.tanh),
    "none": (None, lambda x: x),
}
UNARY = {
    "exp": (rlx.ExpOp, np.exp, "f"),
    "log": (rlx.LogOp, np.log, "pos"),
    "sqrt": (rlx.SqrtOp, np.sqrt, "pos"),
    "rsqrt": (rlx.RsqrtOp, lambda x: 1 / np.sqrt(x), "pos"),
    "neg": (rlx.NegOp, np.negative, "f"),
    "abs": (rlx.AbsOp, np.abs, "f"),
    "softplus": (rlx.SoftplusOp, lambda x: np.logaddexp(0.0, x), "f"),
    "sin": (rlx.SinOp, np.sin, "f"),
    "cos": (rlx.CosOp, np.cos, "f"),
    **{k: (c, f, "f") for k, (c, f) in ACTIVATIONS.items() if c is not None},
}
BINARY = {
    "add": (rlx.AddOp, np.add, "f"),
    "sub": (rlx.SubOp, np.subtract, "f"),
    "mul": (rlx.MulOp, np.multiply, "f"),
    "div": (rlx.DivOp, np.divide, "pos"),
    "max": (rlx.MaxOp, np.maximum, "f"),
    "min": (rlx.MinOp, np.minimum, "f"),
    "pow": (rlx.PowOp, np.power, "pos"),
}


def _norm(x, gamma, beta, axis, eps, layer):
    centred = x - x.mean(axis=axis, keepdims=True) if layer else x
    stat = (centred**2).mean(axis=axis, keepdims=True)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return centred / np.sqrt(stat + eps) * gamma.reshape(shape) + beta.reshape(shape)


def _rope(x, cos, sin, head_dim, n_rot):
    b, s, c = x.shape
    heads = x.reshape(b, s, c // head_dim, head_dim).copy()
    half = n_rot // 2
    x1, x2 = heads[..., :half].copy(), heads[..., half:n_rot].copy()
    cs, sn = cos[None, :, None, :], sin[None, :, None, :]
    heads[..., :half] = x1 * cs - x2 * sn
    heads[..., half:n_rot] = x2 * cs + x1 * sn
    return heads.reshape(b, s, c)


def _attention(q, k, v, mask, h, d, kind, window=None, scale=None, softcap=None):
    b, sq, _ = q.shape
    sk = k.shape[1]
    hkv = k.shape[2] // d
    groups = h // hkv
    scale = 1 / math.sqrt(d) if scale is None else scale
    out = np.zeros_like(q)
    offset = sk - sq
    for bi in range(b):
        for hi in range(h):
            qh = q[bi, :, hi * d:(hi + 1) * d]
            kv = hi // groups
            kh, vh = k[bi, :, kv * d:(kv + 1) * d], v[bi, :, kv * d:(kv + 1) * d]
            s = qh @ kh.T * scale
            if softcap is not None:
                s = softcap * np.tanh(s / softcap)
            visible = np.ones((sq, sk), bool)
            i, j = np.arange(sq)[:, None], np.arange(sk)[None, :]
            if kind in ("causal", "sliding_window"):
                visible = j <= i + offset
                if kind == "sliding_window":
                    visible &= j > i + offset - window
            if kind == "custom":
                visible = np.broadcast_to(mask[bi][None, :] != 0, (sq, sk))
            if kind == "bias":
                s = s + mask[bi, hi]
            s = np.where(visible, s, -np.inf)
            for row in range(sq):
                if not visible[row].any():
                    continue
                e = np.exp(s[row] - s[row].max())
                out[bi, row, hi * d:(hi + 1) * d] = (e / e.sum()) @ vh
    return out


# --- the cases: name -> (shapes strategy, builder of (specs, build, reference, wrt)) ---------------

dim = st.integers(1, 3)


def _unary_case(name):
    cls, ref, kind = UNARY[name]

    def make(shape):
        return [(shape, kind)], lambda g, x: g.op(cls, x), ref, [0]

    return st.lists(dim, min_size=1, max_size=3), make


@st.composite
def broadcast_shapes(draw):
    full = draw(st.lists(st.integers(2, 3), min_size=1, max_size=3))

    def side():
        rank = draw(st.integers(0, len(full)))
        return [1 if draw(st.booleans()) else n for n in full[len(full) - rank:]]

    return side(), side()


def _binary_case(name):
    cls, ref, kind = BINARY[name]

    def make(shapes):
        a, b = shapes
        return [(a, kind), (b, kind)], lambda g, x, y: g.op(cls, x, y), ref, [0, 1]

    return broadcast_shapes(), make


CASES = {f"unary_{n}": _unary_case(n) for n in UNARY}
CASES.update({f"binary_{n}": _binary_case(n) for n in BINARY})


@st.composite
def _matmul_shapes(draw):
    m, k, n = draw(dim), draw(dim), draw(dim)
    batch = draw(st.lists(st.integers(1, 2), max_size=2))
    a_batch = batch[draw(st.integers(0, len(batch))):]
    b_batch = [1 if draw(st.booleans()) else x for x in batch[draw(st.integers(0, len(batch))):]]
    return [*a_batch, m, k], [*b_batch, k, n]


CASES["matmul"] = (
    _matmul_shapes(),
    lambda s: ([(s[0], "f"), (s[1], "f")], lambda g, a, b: a @ b, np.matmul, [0, 1]),
)


def test_matmul_gradient_in_both_forms_of_d_x():
    """`d x = dy @ w^T` is built as `(w @ dy^T)^T` when the rows are fewer than the weight's
    elements allow (no weight-sized transposed copy) and directly otherwise: both forms equal
    central differences (lit_tests/mir-passes/grad-matmul-forms.mlir pins which form is built)."""
    for x_shape, w_shape in [((1, 2, 6), (6, 7)), ((2, 6), (6, 7)), ((9, 2), (2, 3))]:
        check_gradients(lambda g, a, b: a @ b, np.matmul, [(x_shape, "f"), (w_shape, "f")], [0, 1])

DOT_GENERAL = [
    # (lhs shape, rhs shape, lhs_c, rhs_c, lhs_b, rhs_b, einsum)
    ((3, 4), (4, 2), [1], [0], [], [], "mk,kn->mn"),
    ((2, 3, 4), (2, 4, 5), [2], [1], [0], [0], "bmk,bkn->bmn"),
    ((4, 3), (2, 4), [0], [1], [], [], "km,nk->mn"),
    ((2, 3, 4, 2), (4, 2, 2, 3), [2, 3], [0, 1], [0], [2], "bmkj,kjbn->bmn"),
    ((3, 2), (4,), [], [], [], [], "mk,n->mkn"),
]
CASES["dot_general"] = (
    st.sampled_from(DOT_GENERAL),
    lambda c: (
        [(c[0], "f"), (c[1], "f")],
        lambda g, a, b: g.op(rlx.DotGeneralOp, a, b, lhs_contracting=c[2], rhs_contracting=c[3], lhs_batch=c[4], rhs_batch=c[5]),
        lambda a, b: np.einsum(c[6], a, b),
        [0, 1],
    ),
)


@st.composite
def _fmba(draw):
    return draw(st.sampled_from(list(ACTIVATIONS))), draw(st.lists(dim, min_size=1, max_size=2)), draw(dim), draw(dim)


def _make_fmba(c):
    act, lead, k, n = c
    ref = ACTIVATIONS[act][1]
    return (
        [([*lead, k], "f"), ([k, n], "f"), ([n], "f")],
        lambda g, x, w, b: g.op(rlx.FusedMatmulBiasActOp, x, w, b, activation=act),
        lambda x, w, b: ref(x @ w + b),
        [0, 1, 2],
    )


CASES["fused_matmul_bias_act"] = (_fmba(), _make_fmba)


@st.composite
def _reduce(draw):
    shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    axes = draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=len(shape), unique_by=lambda a: a % len(shape)))
    return draw(st.sampled_from(["sum", "mean", "max", "min"])), shape, axes, draw(st.booleans())


def _make_reduce(c):
    kind, shape, axes, keep = c
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[kind]
    return (
        [(shape, "f")],
        lambda g, x: g.op(rlx.ReduceOp, x, kind=kind, axes=axes, keep_dim=keep),
        lambda x: fn(x, axis=tuple(a % len(shape) for a in axes), keepdims=keep),
        [0],
    )


CASES["reduce"] = (_reduce(), _make_reduce)


@st.composite
def _axis_case(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    return shape, draw(st.integers(-len(shape), len(shape) - 1)), draw(st.booleans())


def _softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


CASES["softmax"] = (
    _axis_case(),
    lambda c: ([(c[0], "f")], lambda g, x: g.op(rlx.SoftmaxOp, x, axis=c[1]), lambda x: _softmax_ref(x, c[1]), [0]),
)
CASES["cumsum"] = (
    _axis_case(),
    lambda c: (
        [(c[0], "f")],
        lambda g, x: g.op(rlx.CumsumOp, x, axis=c[1], exclusive=c[2]),
        lambda x: np.cumsum(x, axis=c[1]) - (x if c[2] else 0),
        [0],
    ),
)


@st.composite
def _shape_and_perm(draw):
    shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
    return shape, draw(st.permutations(list(range(len(shape)))))


CASES["transpose"] = (
    _shape_and_perm(),
    lambda c: ([(c[0], "f")], lambda g, x: g.op(rlx.TransposeOp, x, perm=c[1]), lambda x: np.transpose(x, c[1]), [0]),
)
CASES["reshape"] = (
    _shape_and_perm(),
    lambda c: (
        [(c[0], "f")],
        lambda g, x: g.op(rlx.ReshapeOp, x, result_type=_type(g, [c[0][p] for p in c[1]], "f32")),
        lambda x: x.reshape([c[0][p] for p in c[1]]),
        [0],
    ),
)


@st.composite
def _narrow(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    size = shape[axis]
    start = draw(st.integers(0, size - 1))
    return shape, axis, start, draw(st.integers(1, size - start))


CASES["narrow"] = (
    _narrow(),
    lambda c: (
        [(c[0], "f")],
        lambda g, x: g.op(rlx.NarrowOp, x, axis=c[1], start=c[2], len=c[3]),
        lambda x: np.take(x, range(c[2], c[2] + c[3]), axis=c[1]),
        [0],
    ),
)


@st.composite
def _concat(draw):
    shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    other = list(shape)
    other[axis] = draw(st.integers(1, 3))
    return shape, other, axis


CASES["concat"] = (
    _concat(),
    lambda c: (
        [(c[0], "f"), (c[1], "f")],
        lambda g, a, b: g.op(rlx.ConcatOp, a, b, axis=c[2]),
        lambda a, b: np.concatenate([a, b], axis=c[2]),
        [0, 1],
    ),
)


@st.composite
def _expand(draw):
    target = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    rank = draw(st.integers(0, len(target)))
    source = [1 if draw(st.booleans()) else n for n in target[len(target) - rank:]]
    return source, target


CASES["expand"] = (
    _expand(),
    lambda c: ([(c[0], "f")], lambda g, x: g.op(rlx.ExpandOp, x, shape=c[1]), lambda x: np.broadcast_to(x, c[1]), [0]),
)


@st.composite
def _gather(draw):
    table = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    axis = draw(st.integers(-len(table), len(table) - 1))
    indices = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    return table, indices, axis


CASES["gather"] = (
    _gather(),
    lambda c: (
        [(c[0], "f"), (c[1], f"idx{c[0][c[2]]}")],
        lambda g, t, i: g.op(rlx.GatherOp, t, i, axis=c[2]),
        lambda t, i: np.take(t, i, axis=c[2], mode="clip"),
        [0],
    ),
)


CASES["where"] = (
    broadcast_shapes(),
    lambda c: (
        [(c[0], "f"), (c[1], "f")],
        # the condition compares the first operand: compare lies on its path, as a selector only
        lambda g, a, b: g.op(rlx.WhereOp, g.op(rlx.CompareOp, a, g.constant(np.float32(0.25)), predicate="gt"), a, b),
        lambda a, b: np.where(a > 0.25, a, b),
        [0, 1],
    ),
)
CASES["cast"] = (
    st.lists(dim, min_size=1, max_size=2),
    lambda s: (
        [(s, "f")],
        lambda g, x: g.op(rlx.CastOp, g.op(rlx.CastOp, x, result_type=_type(g, s, "f16")), result_type=_type(g, s, "f32")),
        lambda x: x,
        [0],
    ),
)


def _type(g, shape, dtype):
    with g.context, ir.Location.unknown():
        return ir.RankedTensorType.get(list(shape), element_type_from_name(dtype))


@st.composite
def _norm_case(draw):
    shape = draw(st.lists(st.integers(2, 4), min_size=1, max_size=3))
    return shape, draw(st.integers(-len(shape), len(shape) - 1)), draw(st.booleans())


def _make_norm(c):
    shape, axis, layer = c
    n = shape[axis]
    cls = rlx.LayerNormOp if layer else rlx.RmsNormOp
    return (
        [(shape, "f"), ([n], "f"), ([n], "f")],
        lambda g, x, ga, be: g.op(cls, x, ga, be, axis=axis, eps=1e-3),
        lambda x, ga, be: _norm(x, ga, be, axis % len(shape), 1e-3, layer),
        [0, 1, 2],
    )


CASES["norm"] = (_norm_case(), _make_norm)


@st.composite
def _residual_norm_case(draw):
    return draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)), draw(st.integers(2, 4)), draw(st.booleans()), draw(st.booleans())


def _make_residual_norm(c):
    lead, d, layer, bias = c
    cls = rlx.FusedResidualLayerNormOp if layer else rlx.FusedResidualRmsNormOp
    specs = [([*lead, d], "f"), ([*lead, d], "f"), ([d], "f"), ([d], "f")] + ([([d], "f")] if bias else [])

    def build(g, x, r, ga, be, *b):
        return g.op(cls, x, r, gamma=ga, beta=be, bias=b[0] if b else None, eps=1e-3)

    def ref(x, r, ga, be, *b):
        h = x + r + (b[0] if b else 0)
        return _norm(h, ga, be, h.ndim - 1, 1e-3, layer)

    return specs, build, ref, list(range(len(specs)))


CASES["fused_residual_norm"] = (_residual_norm_case(), _make_residual_norm)


def _swiglu_ref(x):
    n = x.shape[-1] // 2
    up, gate = x[..., :n], x[..., n:]
    return up * gate * _sigmoid(gate)


CASES["fused_swiglu"] = (
    st.tuples(st.lists(dim, max_size=2), dim),
    lambda c: ([([*c[0], 2 * c[1]], "f")], lambda g, x: g.op(rlx.FusedSwigluOp, x), _swiglu_ref, [0]),
)


@st.composite
def _rope_case(draw):
    head_dim = draw(st.sampled_from([2, 4]))
    n_rot = draw(st.sampled_from([r for r in (2, 4) if r <= head_dim]))
    return draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 2)), head_dim, n_rot


CASES["rope"] = (
    _rope_case(),
    lambda c: (
        [([c[0], c[1], c[2] * c[3]], "f"), ([c[1], c[4] // 2], "f"), ([c[1], c[4] // 2], "f")],
        lambda g, x, co, si: g.op(rlx.RopeOp, x, co, si, head_dim=c[3], n_rot=c[4]),
        lambda x, co, si: _rope(x, co, si, c[3], c[4]),
        [0, 1, 2],
    ),
)


@st.composite
def _attention_case(draw):
    kind = draw(st.sampled_from(["none", "causal", "sliding_window", "custom", "bias"]))
    hkv = draw(st.integers(1, 2))
    h = hkv * draw(st.integers(1, 2))
    sq, sk = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    extra = {}
    if kind == "sliding_window":
        extra["window"] = draw(st.integers(1, 2))
    if draw(st.booleans()):
        extra["softcap"] = 2.0
    if draw(st.booleans()):
        extra["score_scale"] = 0.7
    return kind, draw(st.integers(1, 2)), h, hkv, 2, sq, sk, extra


def _make_attention(c):
    kind, b, h, hkv, d, sq, sk, extra = c
    specs = [([b, sq, h * d], "f"), ([b, sk, hkv * d], "f"), ([b, sk, hkv * d], "f")]
    if kind == "custom":
        specs.append(([b, sk], "bool01"))
    if kind == "bias":
        specs.append(([b, h, sq, sk], "f"))

    def build(g, q, k, v, *mask):
        return g.op(rlx.AttentionOp, q, k, v, mask=mask[0] if mask else None, num_heads=h, head_dim=d, mask_kind=kind, **extra)

    def ref(q, k, v, *mask):
        return _attention(q, k, v, mask[0] if mask else None, h, d, kind, extra.get("window"),
                          extra.get("score_scale"), extra.get("softcap"))

    return specs, build, ref, [0, 1, 2] + ([3] if kind == "bias" else [])


CASES["attention"] = (_attention_case(), _make_attention)


def _conv_ref(x, w, pad):
    k = w.shape[-1]
    xp = np.concatenate([pad, x], axis=1)
    taps = w.reshape(w.shape[0], k)
    return sum(taps[:, j] * xp[:, j:j + x.shape[1]] for j in range(k))


@st.composite
def _conv_case(draw):
    return draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 3))


CASES["depthwise_conv1d_causal"] = (
    _conv_case(),
    lambda c: (
        [([c[0], c[1], c[2]], "f"), ([c[2], 1, 1, c[3]], "f"), ([c[0], c[3] - 1, c[2]], "f")],
        lambda g, x, w, pad: g.op(rlx.DepthwiseConv1dCausalOp, x, w, pad, kernel_size=c[3]),
        _conv_ref,
        [0, 1, 2] if c[3] > 1 else [0, 1],
    ),
)


def _rope_at_ref(x, cos, sin, pos, head_dim, n_rot):
    s = x.shape[1]
    p = int(np.clip(pos, 0, cos.shape[0] - s))
    return _rope(x, cos[p:p + s], sin[p:p + s], head_dim, n_rot)


@st.composite
def _rope_at_case(draw):
    b, s, h, head_dim, n_rot = draw(_rope_case())
    return b, s, h, head_dim, n_rot, s + draw(st.integers(0, 3))


CASES["rope_at"] = (
    _rope_at_case(),
    lambda c: (
        [([c[0], c[1], c[2] * c[3]], "f"), ([c[5], c[4] // 2], "f"), ([c[5], c[4] // 2], "f"), ([], f"idx{c[5]}")],
        lambda g, x, co, si, pos: g.op(rlx.RopeAtOp, x, co, si, pos, head_dim=c[3], n_rot=c[4]),
        lambda x, co, si, pos: _rope_at_ref(x, co, si, pos, c[3], c[4]),
        [0],
    ),
)


def _make_dequant(c):
    lead, n, scheme = c
    weight = np.random.default_rng(n).standard_normal((n, 32)).astype(np.float32)
    packed = quant.quantize(weight, scheme)
    decoded = quant.dequantize(packed, scheme, weight.shape).astype(np.float64)
    return (
        [([*lead, 32], "f")],
        lambda g, x: g.dequant_matmul(x, g.constant(packed), scheme),
        lambda x: x @ decoded.T,
        [0],
    )


CASES["dequant_matmul"] = (
    st.tuples(st.lists(dim, min_size=1, max_size=2), st.integers(1, 3), st.sampled_from(["q8_0", "q4_0"])),
    _make_dequant,
)


def _selective_scan_ref(x, delta, a, b_in, c):
    b, s, h = x.shape
    y = np.zeros_like(x)
    for bb in range(b):
        st = np.zeros_like(a)
        for t in range(s):
            st = np.exp(delta[bb, t][:, None] * a) * st + (delta[bb, t] * x[bb, t])[:, None] * b_in[bb, t][None, :]
            y[bb, t] = st @ c[bb, t]
    return y


CASES["selective_scan"] = (
    st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    lambda c: (
        [([c[0], c[1], c[2]], "f"), ([c[0], c[1], c[2]], "pos"), ([c[2], c[3]], "f"),
         ([c[0], c[1], c[3]], "f"), ([c[0], c[1], c[3]], "f")],
        lambda g, x, d, a, bi, cc: g.op(rlx.SelectiveScanOp, x, d, a, bi, cc, state_size=c[3])[0],
        _selective_scan_ref,
        [0, 1, 2, 3, 4],
    ),
)


def _gated_delta_net_ref(q, k, v, g, beta, state=None):
    b, s, h, n = q.shape
    out = np.zeros_like(q)
    final = np.zeros((b, h, n, n))
    for bb in range(b):
        for hh in range(h):
            st = state[bb, hh].copy() if state is not None else np.zeros((n, n))
            for t in range(s):
                st = np.exp(g[bb, t, hh]) * st
                u = beta[bb, t, hh] * (v[bb, t, hh] - st @ k[bb, t, hh])
                st = st + np.outer(u, k[bb, t, hh])
                out[bb, t, hh] = st @ (q[bb, t, hh] / np.sqrt(n))
            final[bb, hh] = st
    return out, final


@st.composite
def _gdn_case(draw):
    return draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(1, 3)), \
        draw(st.booleans()), draw(st.booleans())


def _make_gdn(c):
    b, s, h, n, with_state, use_final = c
    specs = [([b, s, h, n], "f")] * 3 + [([b, s, h], "f"), ([b, s, h], "pos")]
    if with_state:
        specs.append(([b, h, n, n], "f"))

    def build(g, q, k, v, gg, beta, *state):
        # two results: the builder's multi-result path (GatedDeltaNetOp.build)
        out, final = g._emit(rlx.GatedDeltaNetOp, [q, k, v, gg, beta],
                             {"state": state[0] if state else None, "state_size": n}, None, results=2)
        return final if use_final else out

    def ref(*arrays):
        out, final = _gated_delta_net_ref(*arrays)
        return final if use_final else out

    return specs, build, ref, list(range(len(specs)))


CASES["gated_delta_net"] = (_gdn_case(), _make_gdn)


def _scan_options_ref(x, delta, a, b_in, c, d, z, state, use_final):
    """selective_scan with softplus(delta), the d skip, the z gate and an initial state."""
    b, s, h = x.shape
    dt = np.logaddexp(0.0, delta)
    y = np.zeros_like(x)
    final = np.zeros_like(state)
    for bb in range(b):
        st = state[bb].copy()
        for t in range(s):
            st = np.exp(dt[bb, t][:, None] * a) * st + (dt[bb, t] * x[bb, t])[:, None] * b_in[bb, t][None, :]
            y[bb, t] = (st @ c[bb, t] + d * x[bb, t]) * z[bb, t] * _sigmoid(z[bb, t])
        final[bb] = st
    return final if use_final else y


def _make_scan_options(c):
    b, s, h, n, use_final = c
    specs = [([b, s, h], "f"), ([b, s, h], "f"), ([h, n], "f"), ([b, s, n], "f"), ([b, s, n], "f"),
             ([h], "f"), ([b, s, h], "f"), ([b, h, n], "f")]

    def build(g, x, delta, a, bi, cc, d, z, state):
        y, final = g.op(rlx.SelectiveScanOp, x, delta, a, bi, cc, state_size=n, d=d, z=z, state=state,
                        delta_softplus=True)
        return final if use_final else y

    return specs, build, lambda *arrays: _scan_options_ref(*arrays, use_final), list(range(len(specs)))


CASES["selective_scan_options"] = (
    st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.booleans()),
    _make_scan_options,
)


def _gdn_options_ref(q, k, v, g, beta, state, l2norm, keys_first, use_final):
    """gated_delta_net with grouped value heads, dk != dv, the q / k L2 norm and either state layout."""
    b, s, hk, dk = q.shape
    hv, dv = v.shape[2], v.shape[3]
    group = hv // hk
    out = np.zeros((b, s, hv, dv))
    final = np.zeros_like(state)
    for bb in range(b):
        for hh in range(hv):
            st = state[bb, hh].T.copy() if keys_first else state[bb, hh].copy()
            for t in range(s):
                q_t, k_t = q[bb, t, hh // group], k[bb, t, hh // group]
                if l2norm:
                    q_t, k_t = q_t / np.sqrt(np.sum(q_t * q_t) + 1e-6), k_t / np.sqrt(np.sum(k_t * k_t) + 1e-6)
                st = np.exp(g[bb, t, hh]) * st
                st = st + np.outer(beta[bb, t, hh] * (v[bb, t, hh] - st @ k_t), k_t)
                out[bb, t, hh] = st @ (q_t / np.sqrt(dk))
            final[bb, hh] = st.T if keys_first else st
    return final if use_final else out


def _make_gdn_options(c):
    b, s, hk, group, dk, dv, l2norm, keys_first, use_final = c
    hv = hk * group
    state_shape = [b, hv, dk, dv] if keys_first else [b, hv, dv, dk]
    specs = [([b, s, hk, dk], "f"), ([b, s, hk, dk], "f"), ([b, s, hv, dv], "f"), ([b, s, hv], "f"),
             ([b, s, hv], "pos"), (state_shape, "f")]

    def build(g, q, k, v, gg, beta, state):
        out, final = g.op(rlx.GatedDeltaNetOp, q, k, v, gg, beta, state=state, state_size=dk,
                          use_qk_l2norm=True if l2norm else None, state_layout="k_v" if keys_first else None)
        return final if use_final else out

    def ref(*arrays):
        return _gdn_options_ref(*arrays, l2norm, keys_first, use_final)

    return specs, build, ref, list(range(len(specs)))


CASES["gated_delta_net_options"] = (
    st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 2), st.integers(1, 2), st.integers(1, 3),
              st.integers(1, 3), st.booleans(), st.booleans(), st.booleans()),
    _make_gdn_options,
)


def _make_clamp(shape):
    def build(g, x):
        return g.op(rlx.ClampOp, x, min=-0.5, max=0.7)

    return [(shape, "f")], build, lambda x: np.clip(x, -0.5, 0.7), [0]


CASES["clamp"] = (st.lists(dim, min_size=1, max_size=3), _make_clamp)


@pytest.mark.parametrize("case", sorted(CASES))
def test_vjp_matches_finite_differences(case):
    strategy, make = CASES[case]

    @settings(max_examples=6, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(strategy, st.integers(0, 2**16))
    def run(params, seed):
        specs, build, reference, wrt = make(params)
        check_gradients(build, reference, specs, wrt, seed)

    run()


# --- broadcasting corner cases ------------------------------------------------------------------

@pytest.mark.parametrize("a, b", [
    ((2, 3), ()),                 # rank 0 against a matrix
    ((), (2, 3)),
    ((2, 1, 3), (4, 1)),          # both stretched, different ranks
    ((1, 1), (3, 4)),             # all size-1
    ((3, 1), (1, 3)),             # outer sum
    ((1,), (1,)),                 # nothing to reduce
    ((2, 3, 4), (3, 1)),          # missing leading dim and a stretched one
])
@pytest.mark.parametrize("name", ["add", "mul", "div", "max"])
def test_broadcast_cotangents_sum_back(a, b, name):
    cls, ref, kind = BINARY[name]
    check_gradients(lambda g, x, y: g.op(cls, x, y), ref, [(list(a), kind), (list(b), kind)], [0, 1], seed=7)


def test_value_used_twice_accumulates():
    """x feeds three uses (x * x + tanh(x)): the cotangents add."""
    check_gradients(lambda g, x: x * x + g.op(rlx.TanhOp, x), lambda x: x * x + np.tanh(x), [([3, 2], "f")], [0])


def test_wrt_the_loss_does_not_depend_on_is_zero():
    g = GraphModule.mir("f")
    x, w = g.input("x", (2, 3)), g.param("w", (3,))
    loss = g.op(rlx.ReduceOp, g.op(rlx.ExpOp, x), kind="sum", axes=[0, 1])
    _, (dx, dw) = g.value_and_grad(loss, [x, w])
    g.set_outputs([loss, dx, dw])
    values = np.ones((2, 3), np.float32)
    out = g.compile()(x=values, w=np.ones(3, np.float32))
    np.testing.assert_allclose(out[1], np.exp(values), rtol=1e-6)
    np.testing.assert_array_equal(out[2], np.zeros(3, np.float32))


def test_rlx_grad_pass_matches_the_builder():
    """The pass on a module: @f_grad gives [loss, dx, dw] equal to the closed form."""
    text = """
    func.func @f(%x: tensor<3x4xf32> {rlx.name = "x"}, %w: tensor<4x2xf32> {rlx.name = "w"}) -> tensor<f32> {
      %0 = "rlx.matmul"(%x, %w) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
      %1 = "rlx.mul"(%0, %0) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
      %2 = "rlx.reduce"(%1) {axes = array<i64: 0, 1>, keep_dim = false, kind = "sum"} : (tensor<3x2xf32>) -> tensor<f32>
      return %2 : tensor<f32>
    }"""
    with Compilation() as job:
        module = job.parse(text)
        job.run(module, "builtin.module(rlx-grad{wrt=x,w})", "rlx-grad failed")
    exe = rlx_mlir.compile(module, entry="f_grad")
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    loss, dx, dw = exe(x, w)
    y = x.astype(np.float64) @ w
    np.testing.assert_allclose(loss, np.sum(y * y), rtol=1e-5)
    np.testing.assert_allclose(dx, 2 * y @ w.T, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dw, x.T @ (2 * y), rtol=1e-4, atol=1e-5)


# --- errors -----------------------------------------------------------------------------------------


def _sum(g, t):
    return g.op(rlx.ReduceOp, t, kind="sum", axes=list(range(len(t.shape)))) if t.shape else t


def test_error_nonscalar_loss():
    g = GraphModule.mir("f")
    x = g.input("x", (4,))
    with pytest.raises(BuildError, match=r"the loss must be a float scalar \(one element\), got \[4\] f32"):
        g.grad(g.op(rlx.TanhOp, x), [x])


def test_error_wrt_not_an_argument():
    g = GraphModule.mir("f")
    x = g.input("x", (4,))
    h = g.op(rlx.TanhOp, x)
    with pytest.raises(BuildError, match=r"wrt #0 \(Tensor\(\[4\], f32\)\) is not an argument of 'f'"):
        g.grad(_sum(g, h), [h])


@pytest.mark.parametrize("make, op_name", [
    (lambda g, x: g.op(rlx.CastOp, g.op(rlx.ArgmaxOp, x, axis=0), result_type=_type(g, [], "f32")), "rlx.argmax"),
    (lambda g, x: g.op(rlx.CastOp, g.op(rlx.CompareOp, x, x, predicate="ge"), result_type=_type(g, [4], "f32")), "rlx.compare"),
    (lambda g, x: g.op(rlx.CastOp, g.op(rlx.TopkOp, x, k=2), result_type=_type(g, [2], "f32")), "rlx.topk"),
])
def test_error_names_the_op_without_derivative(make, op_name):
    g = GraphModule.mir("f")
    x = g.input("x", (4,))
    with pytest.raises(BuildError, match=rf"'{op_name}' has no derivative: .* result lies on a path from 'x' to the loss"):
        g.grad(_sum(g, make(g, x)), [x])


def test_error_sample_on_every_path():
    g = GraphModule.mir("f")
    logits, table = g.input("logits", (2, 5)), g.param("table", (5, 3))
    ids = g.op(rlx.SampleOp, logits, temperature=0.0)
    loss = _sum(g, g.op(rlx.GatherOp, table, ids, axis=0))
    with pytest.raises(BuildError, match=r"'rlx.sample' has no derivative and lies on every path from 'logits' to the loss"):
        g.grad(loss, [logits])
    # with respect to the table the gather is differentiable
    (d_table,) = GraphModule.grad(g, loss, [table])
    assert d_table.shape == (5, 3)


def test_error_located_at_a_named_block():
    g = GraphModule.mir("f")
    x = g.input("x", (4,))
    i = g.named("pick", lambda: g.op(rlx.ArgmaxOp, x, axis=0))
    loss = g.op(rlx.CastOp, i, result_type=_type(g, [], "f32"))
    with pytest.raises(BuildError, match=r'loc\("pick"\): .rlx.argmax. has no derivative'):
        g.grad(loss, [x])


def test_error_hir_stage():
    g = GraphModule.hir("f")
    x = g.input("x", (4,))
    with pytest.raises(BuildError, match="grad differentiates MIR ops; 'f' is at stage 'hir'"):
        g.grad(x, [x])


# --- ops with bodies ------------------------------------------------------------------------------

_BODIES = """
func.func private @square(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "rlx.mul"(%x, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
// deliberately not the derivative of @square: d_input = 3 * d_output
func.func private @three_times(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %dy: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = "rlx.constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %d = "rlx.mul"(%dy, %c) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %d : tensor<2x3xf32>
}
func.func private @exp(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "rlx.exp"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
"""


def _grad_of(body: str, arguments: str, wrt: str):
    text = _BODIES + f"""
    func.func @f({arguments}, %w: tensor<2x3xf32> {{rlx.name = "w"}}) -> tensor<f32> {{
      {body}
      %l = "rlx.mul"(%r, %w) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %s = "rlx.reduce"(%l) {{axes = array<i64: 0, 1>, keep_dim = false, kind = "sum"}} : (tensor<2x3xf32>) -> tensor<f32>
      return %s : tensor<f32>
    }}"""
    with Compilation() as job:
        module = job.parse(text)
        job.run(module, f"builtin.module(rlx-grad{{wrt={wrt} func=f}})", "rlx-grad failed")
    return rlx_mlir.compile(module, entry="f_grad")


def test_custom_fn_uses_its_vjp():
    exe = _grad_of('%r = "rlx.custom_fn"(%x) {fwd = @square, vjp = @three_times} : (tensor<2x3xf32>) -> tensor<2x3xf32>',
                   '%x: tensor<2x3xf32> {rlx.name = "x"}', "x")
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    loss, dx = exe(x=x, w=w)
    np.testing.assert_allclose(loss, np.sum(x * x * w), rtol=1e-5)
    np.testing.assert_allclose(dx, 3 * w, rtol=1e-6)  # the custom gradient, not 2 x w


def test_custom_fn_without_vjp_differentiates_its_forward():
    exe = _grad_of('%r = "rlx.custom_fn"(%x) {fwd = @square} : (tensor<2x3xf32>) -> tensor<2x3xf32>',
                   '%x: tensor<2x3xf32> {rlx.name = "x"}', "x")
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    _, dx = exe(x=x, w=w)
    np.testing.assert_allclose(dx, 2 * x * w, rtol=1e-5)


@pytest.mark.parametrize("taken", [True, False])
def test_if_differentiates_the_taken_branch(taken):
    exe = _grad_of('%r = "rlx.if"(%p, %x) {then_branch = @square, else_branch = @exp, operandSegmentSizes = array<i32: 1, 1>}'
                   ' : (tensor<i1>, tensor<2x3xf32>) -> tensor<2x3xf32>',
                   '%p: tensor<i1> {rlx.name = "p"}, %x: tensor<2x3xf32> {rlx.name = "x"}', "x")
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    loss, dx = exe(p=np.array(taken), x=x, w=w)
    expected = 2 * x * w if taken else np.exp(x) * w
    np.testing.assert_allclose(dx, expected, rtol=1e-5)



_LOOP_BODIES = """
func.func private @step(%c: tensor<3xf32>, %b: tensor<3xf32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %m = "rlx.mul"(%c, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %t = "rlx.tanh"(%m) : (tensor<3xf32>) -> tensor<3xf32>
  %n = "rlx.add"(%t, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %n : tensor<3xf32>
}
func.func private @small(%c: tensor<3xf32>) -> tensor<i1> {
  %s = "rlx.reduce"(%c) {axes = array<i64: 0>, keep_dim = false, kind = "sum"} : (tensor<3xf32>) -> tensor<f32>
  %k = "rlx.constant"() {value = dense<20.0> : tensor<f32>} : () -> tensor<f32>
  %p = "rlx.compare"(%s, %k) {predicate = "lt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
  return %p : tensor<i1>
}
func.func private @grow(%c: tensor<3xf32>) -> tensor<3xf32> {
  %k = "rlx.constant"() {value = dense<1.5> : tensor<f32>} : () -> tensor<f32>
  %n = "rlx.mul"(%c, %k) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %n : tensor<3xf32>
}
"""


def _loop_grad(body: str, arguments: str, result_type: str, wrt: str):
    text = _LOOP_BODIES + f"""
    func.func @f({arguments}, %w: {result_type} {{rlx.name = "w"}}) -> tensor<f32> {{
      {body}
      %l = "rlx.mul"(%r, %w) : ({result_type}, {result_type}) -> {result_type}
      %s = "rlx.reduce"(%l) {{axes = array<i64: {', '.join(str(i) for i in range(result_type.count('x')))}>, keep_dim = false, kind = "sum"}} : ({result_type}) -> tensor<f32>
      return %s : tensor<f32>
    }}"""
    with Compilation() as job:
        module = job.parse(text)
        job.run(module, f"builtin.module(rlx-grad{{wrt={wrt} func=f}})", "rlx-grad failed")
    return rlx_mlir.compile(module, entry="f_grad")


@pytest.mark.parametrize("trajectory, checkpoints", [(False, 0), (True, 0), (False, 1), (False, 2), (True, 2),
                                                     (True, 3), (False, 4)])
def test_scan_gradient_matches_finite_differences(trajectory, checkpoints):
    result_type = "tensor<4x3xf32>" if trajectory else "tensor<3xf32>"
    exe = _loop_grad(
        '%r = "rlx.scan"(%c, %b, %xs) {body = @step, length = 4 : i64, save_trajectory = ' + str(trajectory).lower()
        + ', num_checkpoints = ' + str(checkpoints) + ' : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3xf32>, tensor<3xf32>, tensor<4x3xf32>) -> ' + result_type,
        '%c: tensor<3xf32> {rlx.name = "c"}, %b: tensor<3xf32> {rlx.name = "b"}, %xs: tensor<4x3xf32> {rlx.name = "xs"}',
        result_type, "c,b,xs")
    rng = np.random.default_rng(4)
    c, b, xs = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal((4, 3))
    w = rng.standard_normal((4, 3) if trajectory else 3)

    def f(c, b, xs):
        carries = []
        for t in range(4):
            c = np.tanh(c * b) + xs[t]
            carries.append(c)
        return float(np.sum((np.stack(carries) if trajectory else c) * w))

    out = exe(*(a.astype(np.float32) for a in (c, b, xs, w)))
    assert out[0] == pytest.approx(f(c, b, xs), rel=1e-5)
    for position, grad in enumerate(out[1:]):
        args = [c, b, xs]
        fd = np.zeros_like(args[position])
        for index in np.ndindex(fd.shape):
            plus, minus = [a.copy() for a in args], [a.copy() for a in args]
            plus[position][index] += 1e-6
            minus[position][index] -= 1e-6
            fd[index] = (f(*plus) - f(*minus)) / 2e-6
        np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-5)


def test_bounded_while_gradient_counts_the_iterations_taken():
    exe = _loop_grad('%r = "rlx.while"(%c) {cond = @small, body = @grow, max_iterations = 6 : i64} : (tensor<3xf32>) -> tensor<3xf32>',
                     '%c: tensor<3xf32> {rlx.name = "c"}', "tensor<3xf32>", "c")
    w = np.array([1.0, -2.0, 0.5], np.float32)
    # sum 6 -> 9 -> 13.5 -> 20.25: three steps; 0.5 -> ... stays under 20 for all six
    for init, steps in ((np.array([1.0, 2.0, 3.0], np.float32), 3), (np.array([0.1, 0.2, 0.2], np.float32), 6)):
        loss, dc = exe(c=init, w=w)
        np.testing.assert_allclose(dc, 1.5**steps * w, rtol=1e-6)


def test_hvp_matches_finite_differences_of_the_gradient():
    """H v by reverse over reverse: differentiating the backward ops of tanh, matmul, softmax,
    relu, max-reduce and rms_norm again; against central differences of the analytic gradient
    in float64."""
    rng = np.random.default_rng(9)
    x0, w0, gamma0 = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.uniform(0.5, 1.5, 4)
    vx, vw, vg = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal(4)
    r = rng.standard_normal((3, 5))

    g = GraphModule.mir("f")
    x, w, gamma = g.input("x", (3, 4)), g.input("w", (4, 5)), g.input("gamma", (4,))
    normed = g.op(rlx.RmsNormOp, x, gamma, g.constant(np.zeros(4, np.float32)), eps=1e-3)
    h = g.op(rlx.SoftmaxOp, g.op(rlx.TanhOp, normed @ w), axis=-1) + g.op(rlx.ReluOp, normed @ w)
    peak = g.op(rlx.ReduceOp, h * g.constant(r.astype(np.float32)), kind="max", axes=[1])
    loss = g.op(rlx.ReduceOp, peak * peak, kind="sum", axes=[0])
    vectors = [g.input(n, s) for n, s in (("vx", (3, 4)), ("vw", (4, 5)), ("vg", (4,)))]
    hv = g.hvp(loss, [x, w, gamma], vectors)
    g.set_outputs(hv)
    f32 = {k: v.astype(np.float32) for k, v in dict(x=x0, w=w0, gamma=gamma0, vx=vx, vw=vw, vg=vg).items()}
    out = g.compile()(**f32)

    def grad(x, w, gamma):  # the analytic gradient, in float64
        rms = np.sqrt(np.mean(x * x, -1, keepdims=True) + 1e-3)
        n = x / rms * gamma
        z = n @ w
        t = np.tanh(z)
        e = np.exp(t - t.max(-1, keepdims=True))
        s = e / e.sum(-1, keepdims=True)
        hh = s + np.maximum(z, 0)
        q = hh * r
        idx = q.argmax(1)
        peak = q[np.arange(3), idx]
        dq = np.zeros_like(q)
        dq[np.arange(3), idx] = 2 * peak
        dh = dq * r
        ds = dh
        dt = s * (ds - np.sum(ds * s, -1, keepdims=True))
        dz = dt * (1 - t * t) + dh * (z > 0)
        dw = n.T @ dz
        dn = dz @ w.T
        dgamma = np.sum(dn * x / rms, 0)
        dxhat = dn * gamma
        xhat = x / rms
        dx = (dxhat - xhat * np.mean(dxhat * xhat, -1, keepdims=True)) / rms
        return dx, dw, dgamma

    eps = 1e-6
    plus = grad(x0 + eps * vx, w0 + eps * vw, gamma0 + eps * vg)
    minus = grad(x0 - eps * vx, w0 - eps * vw, gamma0 - eps * vg)
    for got, p, m in zip(out, plus, minus):
        fd = (p - m) / (2 * eps)
        np.testing.assert_allclose(got, fd, rtol=2e-3, atol=2e-3 * max(1.0, np.abs(fd).max()))


def _scan_gradient_arena(checkpoints: int, length: int = 16, n: int = 256) -> int:
    """Arena bytes of the LIR plan of the gradient of a scan of `length` tanh steps on [n]."""
    from mlir.dialects import func

    from rlx_mlir.dialects.rlx_lir.ir_plan import find_plan
    from rlx_mlir.ir.walk import collect_ops

    t = f"tensor<{n}xf32>"
    text = f"""
    func.func private @step(%c: {t}, %b: {t}) -> {t} {{
      %m = "rlx.mul"(%c, %b) : ({t}, {t}) -> {t}
      %y = "rlx.tanh"(%m) : ({t}) -> {t}
      return %y : {t}
    }}
    func.func @f(%c: {t} {{rlx.name = "c"}}, %b: {t} {{rlx.name = "b"}}) -> tensor<f32> {{
      %r = "rlx.scan"(%c, %b) {{body = @step, length = {length} : i64, save_trajectory = false,
        num_checkpoints = {checkpoints} : i64, operandSegmentSizes = array<i32: 1, 1, 0>}} : ({t}, {t}) -> {t}
      %s = "rlx.reduce"(%r) {{axes = array<i64: 0>, keep_dim = false, kind = "sum"}} : ({t}) -> tensor<f32>
      return %s : tensor<f32>
    }}"""
    with Compilation() as job:
        module = job.parse(text)
        job.run(module, "builtin.module(rlx-grad{wrt=c,b func=f},rlx-mir-to-lir)", "planning the gradient failed")
        (grad,) = [f for f in collect_ops(module.operation, func.FuncOp) if f.sym_name.value == "f_grad"]
        return find_plan(grad.operation).arena_size


def test_checkpointed_scan_gradient_plans_a_smaller_arena():
    """16 steps: the saved trajectory keeps every carry and activation (18 KiB for [256] f32);
    4 checkpoints keep 4 carries and one segment of 4 steps (half of that)."""
    full = _scan_gradient_arena(0)
    assert _scan_gradient_arena(16) == full  # K = length: every carry is a checkpoint
    assert _scan_gradient_arena(4) <= full // 2
    assert _scan_gradient_arena(2) < full
