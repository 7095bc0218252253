"""A float64 numpy interpreter of the fuzzed MIR ops, written from dialect/rlx.md.

Every value carries its exact (float64) result and an elementwise bound on how far a correct
f32 implementation may be from it: the errors of its operands, propagated through the op, plus
the op's own f32 rounding (and, for f16 / bf16 results, one rounding to that type, simulated here
as round-to-nearest-even). A compiled result is correct when it lies within that bound (times a
safety factor, see `runner.TOLERANCE`). For i1 / i64 results the bound is 0 where the answer is
certain and at least 1 where rounding could change it (a comparison of nearly equal values, an
argmax of a near tie), so those elements are not compared.

`evaluate_op` raises `OutOfDomain` where the op is not well defined on its operands (log of a
non-positive value, a division by a value near 0, a non-finite result): the generator then picks
another op, and the shrinker drops that candidate.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

F32_ROUNDING = 2.0 ** -24
UNIT_ROUNDING = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}
SMALLEST = {"f32": 2.0 ** -149, "f16": 2.0 ** -24, "bf16": 2.0 ** -133}
FLOATS = ("f32", "f16", "bf16")
INTEGERS = ("i32", "i64")
LARGEST_MAGNITUDE = 1e4  # larger results are out of the fuzzed domain (they overflow f16)


class OutOfDomain(ValueError):
    """The op is not well defined (or not well conditioned) on these operands."""


@dataclasses.dataclass
class RefValue:
    value: np.ndarray  # float64 for floats, int64 for integers, bool for i1
    err: np.ndarray  # float64, same shape: the elementwise bound
    dtype: str


# ---------------------------------------------------------------------------------------- rounding

def round_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """Round-to-nearest-even of float64 values to f32, f16 or bf16, returned as float64."""
    values = np.asarray(values, np.float64)
    if dtype == "f16":
        return values.astype(np.float16).astype(np.float64)
    single = values.astype(np.float32)
    if dtype == "f32":
        return single.astype(np.float64)
    bits = single.view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def _finish(exact, propagated, dtype, relative=4.0, absolute=0.0) -> RefValue:
    """The result of an op computed in f32 (`relative` f32 roundings of |exact|, plus `absolute`)
    and, for f16 / bf16, rounded once to `dtype`: a flip of that rounding costs one full ulp."""
    exact = np.asarray(exact, np.float64)
    if not np.all(np.isfinite(exact)) or np.any(np.abs(exact) > LARGEST_MAGNITUDE):
        raise OutOfDomain("result out of range")
    err = np.asarray(propagated, np.float64) + relative * F32_ROUNDING * np.abs(exact) + absolute
    if dtype == "f32":
        return RefValue(exact, err, dtype)
    rounded = round_to(exact, dtype)
    err = err + 2 * UNIT_ROUNDING[dtype] * (np.abs(exact) + err) + SMALLEST[dtype]
    return RefValue(rounded, err, dtype)


def _certain(values, uncertain, dtype) -> RefValue:
    """An i1 or integer result: elements that rounding could change get an infinite bound."""
    return RefValue(values, np.where(uncertain, np.inf, 0.0), dtype)


# -------------------------------------------------------------------------------------- elementwise

def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# name: (f(x), bound on |f'| over the operand's error interval, given x and its error e)
UNARY = {
    "neg": (lambda x: -x, lambda x, e: 1.0),
    "abs": (np.abs, lambda x, e: 1.0),
    "relu": (lambda x: np.maximum(x, 0.0), lambda x, e: 1.0),
    "tanh": (np.tanh, lambda x, e: 1.0),
    "sigmoid": (_sigmoid, lambda x, e: 0.25),
    "silu": (lambda x: x * _sigmoid(x), lambda x, e: 1.1),
    "gelu": (lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))), lambda x, e: 1.13),
    "gelu_approx": (
        lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))),
        lambda x, e: 1.13,
    ),
    "exp": (np.exp, lambda x, e: np.exp(x + e)),
    "log": (np.log, lambda x, e: 1.0 / (x - e)),
    "sqrt": (np.sqrt, lambda x, e: 0.5 / np.sqrt(x - e)),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), lambda x, e: 0.5 * (x - e) ** -1.5),
    "softplus": (lambda x: np.logaddexp(0.0, x), lambda x, e: 1.0),
    "sin": (np.sin, lambda x, e: 1.0),
    "cos": (np.cos, lambda x, e: 1.0),
}
# Inline polynomials (rlx-approximate-math): <= 1 ulp for exp/log, <= 5e-7 absolute for tanh/erf.
UNARY_ABSOLUTE = {"softplus": 2e-6, "sin": 1e-6, "cos": 1e-6, "tanh": 2e-6, "sigmoid": 2e-6, "silu": 2e-6, "gelu": 2e-6, "gelu_approx": 2e-6, "log": 1e-6}
POSITIVE_DOMAIN = ("log", "sqrt", "rsqrt")


def unary(kind, x: RefValue) -> RefValue:
    function, slope = UNARY[kind]
    if kind in POSITIVE_DOMAIN and np.any(x.value - x.err <= 1e-3):
        raise OutOfDomain(f"{kind} of a value near or below 0")
    if kind == "exp" and np.any(x.value + x.err > 8):
        raise OutOfDomain("exp overflows the fuzzed range")
    exact = function(x.value)
    propagated = np.abs(np.asarray(slope(x.value, x.err), np.float64)) * x.err
    return _finish(exact, propagated, x.dtype, relative=8.0, absolute=UNARY_ABSOLUTE.get(kind, 0.0))


def _times(x, y):
    """x * y of non-negative magnitudes and bounds, with inf * 0 = 0: an unbounded error (an integer
    cast that rounding could change) times an exact zero adds nothing, where numpy gives NaN."""
    with np.errstate(invalid="ignore"):
        return np.where((x == 0) | (y == 0), 0.0, x * y)


def binary(kind, a: RefValue, b: RefValue) -> RefValue:
    x, y, ex, ey = a.value, b.value, a.err, b.err
    if kind == "add":
        exact, propagated = x + y, ex + ey
    elif kind == "sub":
        exact, propagated = x - y, ex + ey
    elif kind == "mul":
        exact = x * y
        propagated = _times(np.abs(x), ey) + _times(np.abs(y), ex) + _times(ex, ey)
    elif kind == "div":
        if np.any(np.abs(y) - ey < 0.05):
            raise OutOfDomain("division by a value near 0")
        exact = x / y
        propagated = (ex + np.abs(exact) * ey) / (np.abs(y) - ey)
    elif kind in ("max", "min"):
        exact, propagated = (np.maximum if kind == "max" else np.minimum)(x, y), np.maximum(ex, ey)
    elif kind == "pow":
        if np.any(x - ex < 0.05) or np.any(np.abs(y) > 4):
            raise OutOfDomain("pow outside positive bases and small exponents")
        exact = x ** y
        low, high = x - ex, x + ex
        propagated = np.abs(exact) * (np.abs(y) * np.maximum(np.log(high / x), np.log(x / low))
                                      + np.abs(np.log(np.maximum(high, 1 / low))) * ey)
        propagated = propagated * (1 + propagated)  # first order -> a bound for small errors
        return _finish(exact, propagated, a.dtype, relative=16.0 * (1 + np.abs(y * np.log(x))))
    else:
        raise KeyError(kind)
    return _finish(exact, propagated, a.dtype, relative=2.0)


COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
           "gt": np.greater, "ge": np.greater_equal}


def compare(predicate, a: RefValue, b: RefValue) -> RefValue:
    close = np.abs(a.value - b.value) <= (a.err + b.err)
    uncertain = close & ((a.err + b.err) > 0)
    return _certain(COMPARE[predicate](a.value, b.value), uncertain, "i1")


def where(condition: RefValue, on_true: RefValue, on_false: RefValue) -> RefValue:
    value = np.where(condition.value, on_true.value, on_false.value)
    err = np.where(condition.value, on_true.err, on_false.err)
    unsure = np.broadcast_to(condition.err > 0, value.shape)
    either = np.abs(on_true.value - on_false.value) + np.maximum(on_true.err, on_false.err)
    err = np.where(unsure, np.broadcast_to(either, value.shape), err)
    if on_true.dtype == "i1":
        err = np.where(err > 0, np.inf, 0.0)
    return RefValue(value, err, on_true.dtype)


def cast(x: RefValue, dtype: str) -> RefValue:
    if dtype == "i1":  # x != 0
        return _certain(x.value != 0, (np.abs(x.value) <= x.err) & (x.err > 0), "i1")
    if x.dtype == "i1":
        return RefValue(x.value.astype(np.float64) if dtype in FLOATS else x.value.astype(np.int64),
                        np.where(x.err > 0, 1.0, 0.0) if dtype in FLOATS else x.err, dtype)
    if dtype in INTEGERS:
        if x.dtype in INTEGERS:
            return RefValue(x.value.astype(np.int64), x.err, dtype)
        low, high = np.trunc(x.value - x.err), np.trunc(x.value + x.err)
        return _certain(np.trunc(x.value).astype(np.int64), low != high, dtype)
    if x.dtype in INTEGERS:
        return _finish(x.value.astype(np.float64), x.err, dtype, relative=0.0)
    if dtype == "f32" or dtype == x.dtype:
        return RefValue(x.value, x.err, dtype)  # widening is exact
    return _finish(x.value, x.err, dtype, relative=0.0)


# ------------------------------------------------------------------------------------------- views

def _axis(axis, rank):
    return axis + rank if axis < 0 else axis


def view(kind, attrs, x: RefValue, result_shape) -> RefValue:
    """Pure data movement: applied to the value and to its bound alike."""
    def move(a):
        if kind == "reshape":
            return a.reshape(result_shape)
        if kind == "transpose":
            return np.transpose(a, attrs["perm"])
        if kind == "narrow":
            axis = _axis(attrs["axis"], a.ndim)
            return np.take(a, np.arange(attrs["start"], attrs["start"] + attrs["len"]), axis=axis)
        if kind == "expand":
            return np.broadcast_to(a, attrs["shape"]).copy()
        raise KeyError(kind)
    return RefValue(move(x.value), move(x.err), x.dtype)


def concat(axis, a: RefValue, b: RefValue) -> RefValue:
    axis = _axis(axis, a.value.ndim)
    return RefValue(np.concatenate([a.value, b.value], axis), np.concatenate([a.err, b.err], axis), a.dtype)


def gather(axis, table: RefValue, indices: RefValue) -> RefValue:
    if np.any(indices.err > 0):
        raise OutOfDomain("gather by indices that rounding could change")
    axis = _axis(axis, table.value.ndim)
    return RefValue(np.take(table.value, indices.value, axis=axis, mode="clip"),
                    np.take(table.err, indices.value, axis=axis, mode="clip"), table.dtype)


# ------------------------------------------------------------------------------------- reductions

def reduce(kind, axes, keep_dim, x: RefValue) -> RefValue:
    axes = tuple(sorted(_axis(a, x.value.ndim) for a in axes))
    count = int(np.prod([x.value.shape[a] for a in axes]))
    if count == 0:
        raise OutOfDomain("reduction over an empty axis")
    v, e = x.value, x.err
    if kind in ("sum", "mean"):
        exact = v.sum(axis=axes, keepdims=keep_dim)
        propagated = e.sum(axis=axes, keepdims=keep_dim)
        rounding = 2 * (count + 2) * F32_ROUNDING * np.abs(v).sum(axis=axes, keepdims=keep_dim)
        if kind == "mean":
            exact, propagated, rounding = exact / count, propagated / count, rounding / count
        return _finish(exact, propagated + rounding, x.dtype)
    if kind in ("max", "min"):
        exact = (v.max if kind == "max" else v.min)(axis=axes, keepdims=keep_dim)
        return _finish(exact, e.max(axis=axes, keepdims=keep_dim), x.dtype, relative=0.0)
    if kind == "prod":
        exact = v.prod(axis=axes, keepdims=keep_dim)
        magnitude = np.abs(v).prod(axis=axes, keepdims=keep_dim)
        propagated = (np.abs(v) + e).prod(axis=axes, keepdims=keep_dim) - magnitude
        return _finish(exact, propagated + 2 * (count + 2) * F32_ROUNDING * magnitude, x.dtype)
    raise KeyError(kind)


def softmax(axis, x: RefValue) -> RefValue:
    axis = _axis(axis, x.value.ndim)
    shifted = np.exp(x.value - x.value.max(axis=axis, keepdims=True))
    exact = shifted / shifted.sum(axis=axis, keepdims=True)
    worst = x.err.max(axis=axis, keepdims=True)
    n = x.value.shape[axis]
    return _finish(exact, exact * np.expm1(2 * worst), x.dtype, relative=16.0 + 2 * n, absolute=1e-7)


def cumsum(axis, exclusive, x: RefValue) -> RefValue:
    axis = _axis(axis, x.value.ndim)
    n = x.value.shape[axis]
    exact, propagated = np.cumsum(x.value, axis), np.cumsum(x.err, axis)
    steps = np.arange(1, n + 1, dtype=np.float64).reshape([-1 if d == axis else 1 for d in range(x.value.ndim)])
    rounding = 2 * (steps + 2) * F32_ROUNDING * np.cumsum(np.abs(x.value), axis)
    if exclusive:
        exact, propagated, rounding = (a - b for a, b in ((exact, x.value), (propagated, x.err), (rounding, 0)))
        propagated = np.abs(propagated)
    return _finish(exact, propagated + rounding, x.dtype, relative=2.0)


def argmax(axis, keep_dim, x: RefValue) -> RefValue:
    axis = _axis(axis, x.value.ndim)
    if x.value.shape[axis] == 0:
        raise OutOfDomain("argmax of an empty axis")
    best = np.argmax(x.value, axis=axis)
    top = np.expand_dims(np.take_along_axis(x.value, np.expand_dims(best, axis), axis).squeeze(axis), axis)
    top_err = np.expand_dims(np.take_along_axis(x.err, np.expand_dims(best, axis), axis).squeeze(axis), axis)
    rivals = x.value + x.err >= top - top_err  # could be (or tie with) the maximum
    exact_ties = (x.value == top) & (x.err == 0) & (top_err == 0)
    uncertain = np.any(rivals & ~exact_ties, axis=axis)
    if keep_dim:
        best, uncertain = np.expand_dims(best, axis), np.expand_dims(uncertain, axis)
    return _certain(best.astype(np.int64), uncertain, "i64")


# ------------------------------------------------------------------------------------------- norms

def _broadcast_along(vector, axis, rank):
    return vector.reshape([-1 if d == axis else 1 for d in range(rank)])


def _scale_and_slack(mean_square, slack, eps):
    """s = 1/sqrt(m + eps) and the bound on |s' - s| when m is off by at most `slack`."""
    if np.any(mean_square + eps - slack <= 0):
        raise OutOfDomain("normalising statistic not bounded away from 0")
    scale = 1.0 / np.sqrt(mean_square + eps)
    return scale, 1.0 / np.sqrt(mean_square + eps - slack) - scale


def norm(kind, axis, eps, x: RefValue, gamma: RefValue, beta: RefValue) -> RefValue:
    rank = x.value.ndim
    axis = _axis(axis, rank)
    n = x.value.shape[axis]
    g, eg = _broadcast_along(gamma.value, axis, rank), _broadcast_along(gamma.err, axis, rank)
    b, eb = _broadcast_along(beta.value, axis, rank), _broadcast_along(beta.err, axis, rank)
    v, e = x.value, x.err
    if kind == "rms_norm":
        centred, centred_err = v, e
    else:
        mean = v.mean(axis=axis, keepdims=True)
        centred, centred_err = v - mean, e + e.mean(axis=axis, keepdims=True)
    statistic = (centred ** 2).mean(axis=axis, keepdims=True)
    slack = (2 * np.abs(centred) * centred_err + centred_err ** 2).mean(axis=axis, keepdims=True)
    scale, scale_err = _scale_and_slack(statistic, slack, eps)
    exact = centred * scale * g + b
    propagated = (np.abs(g) * (centred_err * scale + np.abs(centred) * scale_err + centred_err * scale_err)
                  + eg * np.abs(centred) * (scale + scale_err) + eb)
    # f32 rounding of the statistic (also if computed as E[x^2] - mean^2) and of the centring.
    magnitude = (v ** 2).mean(axis=axis, keepdims=True)
    rounding = (n + 8) * F32_ROUNDING * np.abs(g) * (
        scale * (np.abs(v) + np.abs(v).mean(axis=axis, keepdims=True))
        + np.abs(centred) * scale ** 3 * magnitude)
    return _finish(exact, propagated + 4 * rounding, x.dtype, relative=8.0, absolute=8 * F32_ROUNDING * np.abs(b))


# ------------------------------------------------------------------------------------------ matmul

def _bound_product(x, y):
    """matmul(x, y) of non-negative bounds, with inf * 0 = 0: an unbounded factor (an integer cast that
    rounding could change) times an exact zero adds nothing, where plain matmul would give NaN."""
    finite = np.matmul(np.where(np.isinf(x), 0.0, x), np.where(np.isinf(y), 0.0, y))
    unbounded = (np.matmul(np.isinf(x).astype(np.float64), (y > 0).astype(np.float64))
                 + np.matmul((x > 0).astype(np.float64), np.isinf(y).astype(np.float64))) > 0
    return np.where(unbounded, np.inf, finite)


def matmul(a: RefValue, b: RefValue) -> RefValue:
    k = a.value.shape[-1]
    exact = np.matmul(a.value, b.value)
    propagated = (_bound_product(np.abs(a.value), b.err) + _bound_product(a.err, np.abs(b.value))
                  + _bound_product(a.err, b.err))
    rounding = 2 * (k + 2) * F32_ROUNDING * np.matmul(np.abs(a.value), np.abs(b.value))
    return _finish(exact, propagated + rounding, a.dtype)


# -------------------------------------------------------------------------------------------- rope

def rope(head_dim, n_rot, x: RefValue, cos: RefValue, sin: RefValue) -> RefValue:
    """Per head, features i < half: x[i] cos - x[i + half] sin; half <= i < n_rot: x[i] cos + x[i - half] sin
    (cos / sin at [s, i mod half]); the rest copied."""
    batch, seq, width = x.value.shape
    half = n_rot // 2
    heads = (x.value.reshape(batch, seq, width // head_dim, head_dim), x.err.reshape(batch, seq, width // head_dim, head_dim))
    (v, e), (c, ec), (s, es) = heads, (cos.value[None, :, None], cos.err[None, :, None]), (sin.value[None, :, None], sin.err[None, :, None])
    exact, propagated, rounding = v.copy(), e.copy(), np.zeros_like(v)
    for out, (same, e_same), (other, e_other), sign in (
        (slice(0, half), (v[..., :half], e[..., :half]), (v[..., half:n_rot], e[..., half:n_rot]), -1.0),
        (slice(half, n_rot), (v[..., half:n_rot], e[..., half:n_rot]), (v[..., :half], e[..., :half]), 1.0),
    ):
        exact[..., out] = same * c + sign * other * s
        propagated[..., out] = (np.abs(c) * e_same + ec * (np.abs(same) + e_same)
                                + np.abs(s) * e_other + es * (np.abs(other) + e_other))
        rounding[..., out] = 3 * F32_ROUNDING * (np.abs(same * c) + np.abs(other * s))
    shape = x.value.shape
    return _finish(exact.reshape(shape), propagated.reshape(shape), x.dtype, absolute=rounding.reshape(shape))


# --------------------------------------------------------------------------------------- attention

def attention(attrs, q: RefValue, k: RefValue, v: RefValue, mask: RefValue = None) -> RefValue:
    """softmax(q . k * scale [soft-capped] + mask) . v per head (dialect/rlx.md), kv head h // (H / Hkv);
    a row that sees no key is exactly 0.  Bound: the logits' error (the inputs' errors through the
    dot products, D + 4 f32 roundings) moves each probability by at most expm1(2 w) relatively (w
    the row's worst logit error), plus the values' errors and the f32 roundings of the sums."""
    heads, d, kind = attrs["num_heads"], attrs["head_dim"], attrs["mask_kind"]
    scale = attrs.get("score_scale", 1.0 / math.sqrt(d))
    cap = attrs.get("softcap")
    batch, sq, _ = q.value.shape
    sk = k.value.shape[1]
    group = heads // (k.value.shape[2] // d)
    out, err = np.zeros((batch, sq, heads * d)), np.zeros((batch, sq, heads * d))
    query_pos, key_pos = np.arange(sq)[:, None] + (sk - sq), np.arange(sk)[None, :]
    for b in range(batch):
        for h in range(heads):
            own, kv = slice(h * d, (h + 1) * d), slice((h // group) * d, (h // group + 1) * d)
            qv, qe = q.value[b, :, own], q.err[b, :, own]
            kv_, ke = k.value[b, :, kv], k.err[b, :, kv]
            vv, ve = v.value[b, :, kv], v.err[b, :, kv]
            scores = qv @ kv_.T * scale
            logit_err = abs(scale) * (np.abs(qv) @ ke.T + qe @ np.abs(kv_).T + qe @ ke.T
                                      + (d + 2) * F32_ROUNDING * (np.abs(qv) @ np.abs(kv_).T))
            if cap is not None:
                scores = cap * np.tanh(scores / cap)  # 1-Lipschitz: errors do not grow
            logit_err = logit_err + 4 * F32_ROUNDING * np.abs(scores)
            visible = np.ones((sq, sk), bool)
            if kind in ("causal", "sliding_window"):
                visible = key_pos <= query_pos
            if kind == "sliding_window":
                visible &= key_pos > query_pos - attrs["window"]
            if kind == "custom":
                if np.any(np.abs(mask.value[b]) <= mask.err[b]) and np.any(mask.err[b]):
                    raise OutOfDomain("a custom mask entry could round to zero")
                visible = np.broadcast_to(mask.value[b] != 0, (sq, sk))
            if kind == "bias":
                scores = scores + mask.value[b, h]
                logit_err = logit_err + mask.err[b, h] + 2 * F32_ROUNDING * np.abs(scores)
            for i in range(sq):
                keys = visible[i]
                if not keys.any():
                    continue
                s = scores[i, keys]
                p = np.exp(s - s.max())
                p /= p.sum()
                out[b, i, own] = p @ vv[keys]
                spread = np.expm1(2 * logit_err[i, keys].max())
                rounding = (2 * int(keys.sum()) + 16) * F32_ROUNDING
                err[b, i, own] = (spread + rounding) * (p @ np.abs(vv[keys])) + (1 + spread) * (p @ ve[keys])
    return _finish(out, err, q.dtype, absolute=1e-7)


# ----------------------------------------------------------------------------------------- driver

def evaluate_op(op, operands: list[RefValue]) -> RefValue:
    """The value of `op` (kind, attrs, result shape / dtype, see generator.Op) on its operands."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _evaluate_op(op, operands)


def _evaluate_op(op, operands: list[RefValue]) -> RefValue:
    kind, attrs = op.kind, op.attrs
    if kind in UNARY:
        return unary(kind, *operands)
    if kind in ("add", "sub", "mul", "div", "max", "min", "pow"):
        return binary(kind, *operands)
    if kind == "compare":
        return compare(attrs["predicate"], *operands)
    if kind == "where":
        return where(*operands)
    if kind == "cast":
        return cast(operands[0], op.dtype)
    if kind == "constant":
        value = np.asarray(op.constant).reshape(op.shape)
        return RefValue(value, np.zeros(value.shape), op.dtype)
    if kind in ("reshape", "transpose", "narrow", "expand"):
        return view(kind, attrs, operands[0], op.shape)
    if kind == "concat":
        return concat(attrs["axis"], *operands)
    if kind == "gather":
        return gather(attrs["axis"], *operands)
    if kind == "reduce":
        return reduce(attrs["kind"], attrs["axes"], attrs["keep_dim"], *operands)
    if kind == "softmax":
        return softmax(attrs["axis"], *operands)
    if kind == "cumsum":
        return cumsum(attrs["axis"], attrs["exclusive"], *operands)
    if kind == "argmax":
        return argmax(attrs["axis"], attrs["keep_dim"], *operands)
    if kind in ("rms_norm", "layer_norm"):
        return norm(kind, attrs["axis"], attrs["eps"], *operands)
    if kind == "matmul":
        return matmul(*operands)
    if kind == "rope":
        return rope(attrs["head_dim"], attrs["n_rot"], *operands)
    if kind == "attention":
        return attention(attrs, *operands)
    raise KeyError(f"no reference for rlx.{kind}")


def input_value(array: np.ndarray, dtype: str) -> RefValue:
    value = array.astype(np.float64) if dtype in FLOATS else np.asarray(array)
    return RefValue(value, np.zeros(array.shape), dtype)


def evaluate(program) -> dict[str, RefValue]:
    """Every value of `program` (generator.Program); raises OutOfDomain as evaluate_op does."""
    values = {arg.name: input_value(program.arrays[arg.name], arg.dtype) for arg in program.inputs}
    for op in program.ops:
        result = evaluate_op(op, [values[name] for name in op.operands])
        if tuple(result.value.shape) != tuple(op.shape):
            raise AssertionError(f"reference shape {result.value.shape} != {op.shape} for {op.kind}")
        values[op.name] = result
    return values
