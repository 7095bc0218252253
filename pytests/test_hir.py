"""HIR blocks (dialect rlx_hir) and rlx-hir-to-mir: numerics under both fusion policies.

Each case builds a one-block HIR function as MLIR text, runs `rlx-hir-to-mir`
with the policy under test (`direct` or `fusable`), checks that no HIR op is
left, compiles the MIR with `rlx_mlir.compile` and compares with a float64
reference written here in plain numpy.  Nothing from the lowering is imported.

Tolerances (f32).  Every block is a short chain of f32 ops whose inner sums
have at most a few hundred terms (K, F, D <= 96; Sk <= 7; conv taps <= 4); to
first order each op contributes a relative error of about n * u
(u = 2**-24 ~ 6e-8) of the magnitudes it sums, so a whole decoder layer stays
below ~1e-5 of the magnitude of its values.  The test asks for
`|got - ref| <= 1e-4 * |ref| + 1e-5 * max|ref|`: 1e-4 relative (the brief's
target) with an absolute floor at 1e-5 of the largest value, for elements that
cancel to near zero (a relative bound cannot hold there: the error is relative
to the magnitudes summed, not to the result).  Formula mistakes are far
larger: a wrong gate / up order, a missing RoPE, a transposed tap or a
misaligned causal mask change elements by more than 1e-2 of max|ref|.

f16 (in and out, f32 compute inside each MIR op): each MIR op rounds its result
once to f16 (2**-11 relative), and the fusable chains round more often than
the fused ops (matmul, add, activation: three roundings, each amplified by at
most the activation's slope <= ~1.1).  Three roundings are at most 3 * 2**-11
~ 1.5e-3 relative to the magnitudes: F16_TOL = 4e-3 of |ref| plus 4e-3 of
max|ref| (f16 inputs also carry the reference's rounded data exactly, so input
rounding does not count).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import func
from op_cases import rng_for

import rlx_mlir
from rlx_mlir.conversion.hir_to_mir.hir_to_mir import HirToMir
from rlx_mlir.dialects import rlx, rlx_hir
from rlx_mlir.dialects.context import make_context
from rlx_mlir.passmanager.pipeline import run_pipeline
from rlx_mlir.pipelines.lower_to_llvm import LowerToLLVM

POLICIES = ("direct", "fusable")
DTYPES = {"f32": np.float32, "f16": np.float16}
F32_RTOL, F32_ATOL_OF_MAX = 1e-4, 1e-5
F16_TOL = 4e-3


# --- helpers ------------------------------------------------------------------------------


def tensor_type(shape, dtype: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def block_module(op: str, operand_shapes, result_shapes, attrs: str = "", dtype: str = "f32", module_attrs: str = "") -> str:
    """A function `@f` applying `"rlx_hir.<op>"` to its arguments, returning every result."""
    ins = [tensor_type(s, dtype) for s in operand_shapes]
    outs = [tensor_type(s, dtype) for s in result_shapes]
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(ins))
    args = ", ".join(f"%a{i}" for i in range(len(ins)))
    lhs = "%0" if len(outs) == 1 else f"%0:{len(outs)}"
    results = "%0" if len(outs) == 1 else ", ".join(f"%0#{i}" for i in range(len(outs)))
    out_list = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    attr_text = f" {{{attrs}}}" if attrs else ""
    text = (
        f"func.func @f({params}) -> {out_list} {{\n"
        f'  {lhs} = "rlx_hir.{op}"({args}){attr_text} : ({", ".join(ins)}) -> {out_list}\n'
        f"  return {results} : {', '.join(outs)}\n"
        f"}}\n"
    )
    if module_attrs:
        text = f"module attributes {{{module_attrs}}} {{\n{text}}}\n"
    return text


def lower_to_mir(text: str, policy: str) -> str:
    """Runs rlx-hir-to-mir (option `policy`, "" = from the module) and returns the MIR text."""
    with make_context():
        module = ir.Module.parse(text)
        run_pipeline(module.operation, [HirToMir(policy=policy)])
        return module.operation.get_asm(enable_debug_info=True)


@functools.lru_cache(maxsize=None)
def compiled(text: str, policy: str):
    mir = lower_to_mir(text, policy)
    assert "rlx_hir." not in mir
    return rlx_mlir.compile(mir, entry="f")


def run(text: str, policy: str, *arrays):
    return compiled(text, policy)(*arrays)


def assert_close(got, ref, dtype: str = "f32") -> None:
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == ref.shape
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    if dtype == "f32":
        np.testing.assert_allclose(got, ref, rtol=F32_RTOL, atol=F32_ATOL_OF_MAX * scale)
    else:
        np.testing.assert_allclose(got, ref, rtol=F16_TOL, atol=F16_TOL * scale)


def data(rng, shape, dtype: str = "f32", scale: float = 1.0) -> np.ndarray:
    return (rng.uniform(-1.0, 1.0, size=shape) * scale).astype(DTYPES[dtype])


def weight(rng, shape, dtype: str = "f32") -> np.ndarray:
    """Uniform with the 1/sqrt(fan-in) scale of initialised layers, so activations stay O(1)."""
    return data(rng, shape, dtype, 1.0 / math.sqrt(shape[0]))


def f64(*arrays):
    return [a.astype(np.float64) for a in arrays]


# --- float64 references -----------------------------------------------------------------------


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


ACTIVATIONS = {
    "none": lambda x: x,
    "relu": lambda x: np.maximum(x, 0.0),
    "gelu": lambda x: 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0))),
    "gelu_approx": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
    "silu": lambda x: x * sigmoid(x),
    "sigmoid": sigmoid,
    "tanh": np.tanh,
}


def ref_rms_norm(x, gamma, beta, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gamma + beta


def ref_swiglu(x, up_w, gate_w, down_w):
    gate = x @ gate_w
    return ((x @ up_w) * gate * sigmoid(gate)) @ down_w


def ref_rope(x, cos, sin, head_dim, n_rot):
    """NeoX rotate-half per head: feature i pairs with i + n_rot / 2."""
    out = x.copy()
    half = n_rot // 2
    for start in range(0, x.shape[-1], head_dim):
        lo = x[..., start : start + half]
        hi = x[..., start + half : start + n_rot]
        out[..., start : start + half] = lo * cos - hi * sin
        out[..., start + half : start + n_rot] = hi * cos + lo * sin
    return out


def ref_attention(q, k, v, num_heads, head_dim, mask_kind, mask=None, window=None):
    """softmax(q k^T / sqrt(D) [+ mask]) v per head; kv head of query head h is h // (H / Hkv)."""
    batch, sq, _ = q.shape
    sk = k.shape[1]
    group = num_heads // (k.shape[2] // head_dim)
    query_pos = np.arange(sq)[:, None] + (sk - sq)  # causal masks align to the end of the keys
    key_pos = np.arange(sk)[None, :]
    out = np.zeros((batch, sq, num_heads * head_dim))
    for b in range(batch):
        for h in range(num_heads):
            kv = h // group
            qh = q[b, :, h * head_dim : (h + 1) * head_dim]
            kh = k[b, :, kv * head_dim : (kv + 1) * head_dim]
            vh = v[b, :, kv * head_dim : (kv + 1) * head_dim]
            scores = qh @ kh.T / math.sqrt(head_dim)
            visible = np.ones((sq, sk), dtype=bool)
            if mask_kind in ("causal", "sliding_window"):
                visible = key_pos <= query_pos
            if mask_kind == "sliding_window":
                visible = visible & (key_pos > query_pos - window)
            if mask_kind == "custom":
                visible = np.broadcast_to(mask[b] != 0.0, (sq, sk))
            if mask_kind == "bias":
                scores = scores + mask[b, h]
            scores = np.where(visible, scores, -np.inf)
            p = np.exp(scores - scores.max(axis=-1, keepdims=True))
            p /= p.sum(axis=-1, keepdims=True)
            out[b, :, h * head_dim : (h + 1) * head_dim] = p @ vh
    return out


def ref_depthwise_conv1d_causal(x, weight_, left_pad):
    """out[b, s, c] = sum_k weight[c, 0, 0, k] * xp[b, s + k, c], xp = concat(left_pad, x) on axis 1."""
    kernel = weight_.shape[-1]
    xp = np.concatenate([left_pad, x], axis=1)
    out = np.zeros_like(x)
    for s in range(x.shape[1]):
        for k in range(kernel):
            out[:, s, :] += weight_[:, 0, 0, k][None, :] * xp[:, s + k, :]
    return out


def ref_llama_decoder(x, ln1_g, ln1_b, q_w, k_w, v_w, o_w, ln2_g, ln2_b, gate_w, up_w, down_w, cos, sin,
                      mask, *, num_heads, head_dim, eps, mask_kind, window=None):
    n1 = ref_rms_norm(x, ln1_g, ln1_b, eps)
    q = ref_rope(n1 @ q_w, cos, sin, head_dim, head_dim)
    k = ref_rope(n1 @ k_w, cos, sin, head_dim, head_dim)
    v = n1 @ v_w
    h = x + ref_attention(q, k, v, num_heads, head_dim, mask_kind, mask, window) @ o_w
    return h + ref_swiglu(ref_rms_norm(h, ln2_g, ln2_b, eps), up_w, gate_w, down_w)


def rope_tables(seq, head_dim, offset=0):
    positions = np.arange(seq) + offset
    inv_freq = 10000.0 ** (-np.arange(head_dim // 2) * 2.0 / head_dim)
    angles = positions[:, None] * inv_freq[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


# --- linear blocks ----------------------------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("activation", list(ACTIVATIONS))
def test_linear_with_bias_every_activation(activation, policy):
    shape, k, n = (2, 3, 8), 8, 12
    text = block_module("linear", [shape, (k, n), (n,)], [(*shape[:-1], n)], f'activation = "{activation}"')
    rng = rng_for("linear", activation)
    x, w, b = data(rng, shape, scale=2.0), weight(rng, (k, n)), data(rng, (n,))
    xd, wd, bd = f64(x, w, b)
    assert_close(run(text, policy, x, w, b), ACTIVATIONS[activation](xd @ wd + bd))


# (x shape, N, with bias, activation, dtype): rank 1 (one row), rank 2, rank 3, no bias, f16.
LINEAR_CASES = [
    ((16,), 5, True, "gelu", "f32"),
    ((7, 16), 9, False, "silu", "f32"),
    ((2, 1, 4, 32), 3, True, "relu", "f32"),
    ((3, 5, 8), 8, False, "none", "f32"),
    ((4, 16), 8, True, "gelu_approx", "f16"),
    ((2, 3, 8), 4, False, "tanh", "f16"),
]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", LINEAR_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-n{c[1]}-{'bias' if c[2] else 'nobias'}-{c[3]}-{c[4]}")
def test_linear_shapes(case, policy):
    shape, n, with_bias, activation, dtype = case
    k = shape[-1]
    operands = [shape, (k, n)] + ([(n,)] if with_bias else [])
    text = block_module("linear", operands, [(*shape[:-1], n)], f'activation = "{activation}"', dtype)
    rng = rng_for("linear-shapes", case)
    x, w, b = data(rng, shape, dtype, 2.0), weight(rng, (k, n), dtype), data(rng, (n,), dtype)
    xd, wd, bd = f64(x, w, b)
    args = (x, w, b) if with_bias else (x, w)
    expected = ACTIVATIONS[activation](xd @ wd + (bd if with_bias else 0.0))
    assert_close(run(text, policy, *args), expected, dtype)


# (x shape, N, activation, dtype)
LINEAR_FUSED_CASES = [((5, 8), 6, "sigmoid", "f32"), ((2, 3, 16), 16, "gelu", "f32"), ((12,), 4, "relu", "f32"), ((3, 8), 8, "silu", "f16")]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", LINEAR_FUSED_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-n{c[1]}-{c[2]}-{c[3]}")
def test_linear_fused(case, policy):
    shape, n, activation, dtype = case
    k = shape[-1]
    text = block_module("linear_fused", [shape, (k, n), (n,)], [(*shape[:-1], n)], f'activation = "{activation}"', dtype)
    rng = rng_for("linear-fused", case)
    x, w, b = data(rng, shape, dtype, 2.0), weight(rng, (k, n), dtype), data(rng, (n,), dtype)
    xd, wd, bd = f64(x, w, b)
    assert_close(run(text, policy, x, w, b), ACTIVATIONS[activation](xd @ wd + bd), dtype)


# (x shape, N1, N2)
PAIR_CASES = [((4, 8), 8, 8), ((2, 5, 16), 12, 4), ((16,), 3, 7), ((1, 1, 8), 1, 5)]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", PAIR_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-{c[1]}-{c[2]}")
def test_shared_linear_pair(case, policy):
    shape, n1, n2 = case
    k = shape[-1]
    lead = shape[:-1]
    text = block_module("shared_linear_pair", [shape, (k, n1), (k, n2)], [(*lead, n1), (*lead, n2)])
    rng = rng_for("pair", case)
    x, w1, w2 = data(rng, shape), weight(rng, (k, n1)), weight(rng, (k, n2))
    first, second = run(text, policy, x, w1, w2)
    xd, w1d, w2d = f64(x, w1, w2)
    assert_close(first, xd @ w1d)
    assert_close(second, xd @ w2d)


# (x shape, F, M, dtype)
SWIGLU_CASES = [((3, 8), 12, 8, "f32"), ((2, 5, 16), 24, 16, "f32"), ((32,), 40, 32, "f32"), ((1, 4, 8), 8, 6, "f16")]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", SWIGLU_CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-f{c[1]}-m{c[2]}-{c[3]}")
def test_swiglu_ffn(case, policy):
    shape, f, m, dtype = case
    d = shape[-1]
    text = block_module("swiglu_ffn", [shape, (d, f), (d, f), (f, m)], [(*shape[:-1], m)], dtype=dtype)
    rng = rng_for("swiglu", case)
    x, up, gate, down = data(rng, shape, dtype, 2.0), weight(rng, (d, f), dtype), weight(rng, (d, f), dtype), weight(rng, (f, m), dtype)
    assert_close(run(text, policy, x, up, gate, down), ref_swiglu(*f64(x, up, gate, down)), dtype)


# --- norms -----------------------------------------------------------------------------------

NORM_SHAPES = [(4, 8), (2, 3, 16), (64,), (1, 5, 1)]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("shape", NORM_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_rms_norm(shape, policy):
    d = shape[-1]
    text = block_module("rms_norm", [shape, (d,), (d,)], [shape], "eps = 1.0e-5 : f32")
    rng = rng_for("rms", shape)
    x, g, b = data(rng, shape, scale=3.0), data(rng, (d,)), data(rng, (d,))
    assert_close(run(text, policy, x, g, b), ref_rms_norm(*f64(x, g, b), 1e-5))


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("shape", NORM_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_residual_rms_norm(shape, policy, dtype):
    d = shape[-1]
    text = block_module("residual_rms_norm", [shape, shape, (d,), (d,)], [shape], "eps = 1.0e-5 : f32", dtype)
    rng = rng_for("residual-rms", shape, dtype)
    x, r, g, b = data(rng, shape, dtype, 2.0), data(rng, shape, dtype, 2.0), data(rng, (d,), dtype), data(rng, (d,), dtype)
    xd, rd, gd, bd = f64(x, r, g, b)
    # In f16 the fusable chain rounds the sum to f16 before the norm (one more
    # rounding, relative to |x + r|, within F16_TOL); the fused op keeps it in f32.
    assert_close(run(text, policy, x, r, g, b), ref_rms_norm(xd + rd, gd, bd, 1e-5), dtype)


# --- attention blocks ---------------------------------------------------------------------------

# (B, S, H, head_dim, n_rot)
ROPE_CASES = [(1, 5, 4, 8, 8), (2, 7, 2, 16, 8), (2, 3, 3, 6, 2)]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", ROPE_CASES, ids=lambda c: "x".join(map(str, c)))
def test_rope(case, policy):
    batch, seq, heads, head_dim, n_rot = case
    shape = (batch, seq, heads * head_dim)
    table = (seq, n_rot // 2)
    text = block_module("rope", [shape, table, table], [shape], f"head_dim = {head_dim} : i64, n_rot = {n_rot} : i64")
    rng = rng_for("rope", case)
    x = data(rng, shape, scale=3.0)
    cos, sin = rope_tables(seq, n_rot, offset=3)
    assert_close(run(text, policy, x, cos, sin), ref_rope(*f64(x, cos, sin), head_dim, n_rot))


# (B, Sq, Sk, H, Hkv, head_dim, mask_kind, window)
ATTENTION_CASES = [
    (1, 5, 5, 4, 2, 8, "causal", None),
    (2, 3, 7, 4, 4, 4, "sliding_window", 3),
    (2, 4, 6, 2, 1, 8, "custom", None),
    (1, 3, 3, 2, 2, 8, "bias", None),
    (2, 2, 5, 4, 2, 4, "none", None),
]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", ATTENTION_CASES, ids=lambda c: f"{c[6]}-{'x'.join(map(str, c[:6]))}")
def test_attention(case, policy):
    batch, sq, sk, heads, kv_heads, head_dim, mask_kind, window = case
    q_shape, kv_shape = (batch, sq, heads * head_dim), (batch, sk, kv_heads * head_dim)
    rng = rng_for("attention", case)
    q, k, v = data(rng, q_shape, scale=2.0), data(rng, kv_shape, scale=2.0), data(rng, kv_shape)
    operands, args, mask = [q_shape, kv_shape, kv_shape], [q, k, v], None
    if mask_kind == "custom":
        mask = (rng.uniform(size=(batch, sk)) > 0.4).astype(np.float32)
        mask[:, 0] = 1.0  # every query sees at least one key
    if mask_kind == "bias":
        mask = data(rng, (batch, heads, sq, sk), scale=2.0)
    if mask is not None:
        operands.append(mask.shape)
        args.append(mask)
    attrs = f'num_heads = {heads} : i64, head_dim = {head_dim} : i64, mask_kind = "{mask_kind}"'
    if window is not None:
        attrs += f", window = {window} : i64"
    text = block_module("attention", operands, [q_shape], attrs)
    expected = ref_attention(*f64(q, k, v), heads, head_dim, mask_kind, None if mask is None else mask.astype(np.float64), window)
    assert_close(run(text, policy, *args), expected)


# --- convolution ------------------------------------------------------------------------------

# (B, S, C, K)
CONV_CASES = [(1, 6, 4, 3), (2, 5, 8, 4), (2, 1, 3, 2), (1, 4, 5, 1)]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "x".join(map(str, c)))
def test_depthwise_conv1d_causal(case, policy):
    batch, seq, channels, kernel = case
    shapes = [(batch, seq, channels), (channels, 1, 1, kernel), (batch, kernel - 1, channels)]
    text = block_module("depthwise_conv1d_causal", shapes, [shapes[0]], f"kernel_size = {kernel} : i64")
    rng = rng_for("conv", case)
    x, w, pad = (data(rng, s) for s in shapes)
    assert_close(run(text, policy, x, w, pad), ref_depthwise_conv1d_causal(*f64(x, w, pad)))


def test_depthwise_conv1d_streams_in_chunks():
    """Two chunks with the pad state carried between them equal one pass over the whole sequence."""
    batch, channels, kernel = 2, 3, 3
    rng = rng_for("conv-stream")
    x = data(rng, (batch, 7, channels))
    w = data(rng, (channels, 1, 1, kernel))

    def exe(seq):
        shapes = [(batch, seq, channels), (channels, 1, 1, kernel), (batch, kernel - 1, channels)]
        return compiled(block_module("depthwise_conv1d_causal", shapes, [shapes[0]], f"kernel_size = {kernel} : i64"), "direct")

    zeros = np.zeros((batch, kernel - 1, channels), np.float32)
    whole = exe(7)(x, w, zeros)
    first = exe(4)(x[:, :4], w, zeros)
    second = exe(3)(x[:, 4:], w, np.ascontiguousarray(x[:, 4 - (kernel - 1) : 4]))
    np.testing.assert_allclose(np.concatenate([first, second], axis=1), whole, rtol=1e-6, atol=1e-7)


# --- the decoder layer ---------------------------------------------------------------------------

# (B, S, D, H, Hkv, head_dim, F, mask_kind, window)
DECODER_CASES = [
    (1, 5, 32, 4, 2, 8, 48, "causal", None),
    (2, 7, 64, 4, 2, 16, 96, "causal", None),
    (2, 6, 32, 4, 2, 16, 40, "custom", None),
    (1, 7, 64, 4, 2, 8, 64, "sliding_window", 3),
    (2, 5, 32, 4, 2, 8, 32, "bias", None),
]


def decoder_case(case):
    batch, seq, d, heads, kv_heads, head_dim, f, mask_kind, window = case
    qd, kvd = heads * head_dim, kv_heads * head_dim
    shapes = [
        (batch, seq, d), (d,), (d,), (d, qd), (d, kvd), (d, kvd), (qd, d), (d,), (d,),
        (d, f), (d, f), (f, d), (seq, head_dim // 2), (seq, head_dim // 2),
    ]
    rng = rng_for("decoder", case)
    x = data(rng, shapes[0], scale=2.0)
    ln1_g, ln1_b = 1.0 + 0.2 * data(rng, (d,)), 0.1 * data(rng, (d,))
    q_w, k_w, v_w, o_w = (weight(rng, s) for s in shapes[3:7])
    ln2_g, ln2_b = 1.0 + 0.2 * data(rng, (d,)), 0.1 * data(rng, (d,))
    gate_w, up_w, down_w = (weight(rng, s) for s in shapes[9:12])
    cos, sin = rope_tables(seq, head_dim, offset=2)
    args = [x, ln1_g, ln1_b, q_w, k_w, v_w, o_w, ln2_g, ln2_b, gate_w, up_w, down_w, cos, sin]
    mask = None
    if mask_kind == "custom":
        mask = (rng.uniform(size=(batch, seq)) > 0.3).astype(np.float32)
        mask[:, 0] = 1.0
    if mask_kind == "bias":
        mask = data(rng, (batch, heads, seq, seq))
    if mask is not None:
        shapes.append(mask.shape)
        args.append(mask)
    attrs = (
        f"num_heads = {heads} : i64, head_dim = {head_dim} : i64, num_kv_heads = {kv_heads} : i64, "
        f'eps = 1.0e-5 : f32, mask_kind = "{mask_kind}"'
    )
    if window is not None:
        attrs += f", window = {window} : i64"
    text = block_module("llama_decoder_block", shapes, [shapes[0]], attrs)
    expected = ref_llama_decoder(
        *f64(*args[:14]), None if mask is None else mask.astype(np.float64),
        num_heads=heads, head_dim=head_dim, eps=1e-5, mask_kind=mask_kind, window=window,
    )
    return text, args, expected


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", DECODER_CASES, ids=lambda c: f"{c[7]}-" + "x".join(map(str, c[:7])))
def test_llama_decoder_block(case, policy):
    text, args, expected = decoder_case(case)
    assert_close(run(text, policy, *args), expected)


def test_decoder_policies_agree_and_differ_in_ops():
    """Both policies compute the same layer; direct uses the fused ops, fusable none of them."""
    text, args, _ = decoder_case(DECODER_CASES[0])
    direct, fusable = lower_to_mir(text, "direct"), lower_to_mir(text, "fusable")
    for fused in ("rlx.fused_residual_rms_norm", "rlx.fused_swiglu"):
        assert fused in direct and fused not in fusable
    np.testing.assert_allclose(run(text, "direct", *args), run(text, "fusable", *args), rtol=1e-5, atol=1e-5)


# --- the fusion policy, locations, the escape hatch ---------------------------------------------


def test_policy_from_the_module_attribute_and_the_option():
    shape = (3, 8)
    plain = block_module("residual_rms_norm", [shape, shape, (8,), (8,)], [shape], "eps = 1.0e-6 : f32")
    fusable = block_module(
        "residual_rms_norm", [shape, shape, (8,), (8,)], [shape], "eps = 1.0e-6 : f32",
        module_attrs='rlx_hir.fusion_policy = "fusable"',
    )
    assert "rlx.fused_residual_rms_norm" in lower_to_mir(plain, "")  # no attribute: direct
    from_attr = lower_to_mir(fusable, "")
    assert "rlx.fused_residual_rms_norm" not in from_attr and '"rlx.rms_norm"' in from_attr
    assert "rlx_hir.fusion_policy" not in from_attr  # dropped: the output is MIR
    assert "rlx.fused_residual_rms_norm" in lower_to_mir(fusable, "direct")  # the option wins


def test_unknown_policy_is_an_error_at_the_module():
    text = block_module("rms_norm", [(3, 8), (8,), (8,)], [(3, 8)], "eps = 1.0e-6 : f32", module_attrs='rlx_hir.fusion_policy = "eager"')
    with make_context():
        module = ir.Module.parse(text)
        with pytest.raises(ir.MLIRError, match="unknown fusion policy 'eager' in module attribute 'rlx_hir.fusion_policy'"):
            run_pipeline(module.operation, [HirToMir()])
        module = ir.Module.parse(text.replace('"eager"', '"direct"'))
        with pytest.raises(ir.MLIRError, match=r"unknown fusion policy 'lazy' \(option 'policy'\); expected 'direct' or 'fusable'"):
            run_pipeline(module.operation, [HirToMir(policy="lazy")])


def test_named_block_location_reaches_every_mir_op():
    text = (
        "func.func @f(%x: tensor<2x8xf32>, %up: tensor<8x4xf32>, %gate: tensor<8x4xf32>, %down: tensor<4x8xf32>) -> tensor<2x8xf32> {\n"
        '  %0 = "rlx_hir.swiglu_ffn"(%x, %up, %gate, %down) : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x8xf32>)'
        ' -> tensor<2x8xf32> loc("layers.3.mlp"("model.py":7:1))\n'
        "  return %0 : tensor<2x8xf32>\n}\n"
    )
    for policy in POLICIES:
        with make_context():
            module = ir.Module.parse(text)
            run_pipeline(module.operation, [HirToMir(policy=policy)])
            ops = [op for op in module.body.operations[0].regions[0].blocks[0].operations if op.name.startswith("rlx.")]
            assert len(ops) >= 4
            for op in ops:
                assert op.location.is_a_name() and op.location.name_str == "layers.3.mlp", (op.name, op.location)


def test_mir_ops_pass_through_untouched():
    """The escape hatch: MIR ops mixed with HIR blocks compile and compute as written."""
    text = (
        "func.func @f(%x: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {\n"
        '  %0 = "rlx.softmax"(%x) {axis = -1 : i64} : (tensor<3x8xf32>) -> tensor<3x8xf32>\n'
        '  %1 = "rlx_hir.rms_norm"(%0, %g, %b) {eps = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>\n'
        '  %2 = "rlx.exp"(%1) : (tensor<3x8xf32>) -> tensor<3x8xf32>\n'
        "  return %2 : tensor<3x8xf32>\n}\n"
    )
    mir = lower_to_mir(text, "fusable")
    assert mir.index('"rlx.softmax"') < mir.index('"rlx.rms_norm"') < mir.index('"rlx.exp"')
    rng = rng_for("escape")
    x, g, b = data(rng, (3, 8), scale=3.0), data(rng, (8,)), data(rng, (8,))
    xd, gd, bd = f64(x, g, b)
    soft = np.exp(xd - xd.max(-1, keepdims=True))
    soft /= soft.sum(-1, keepdims=True)
    assert_close(run(text, "fusable", x, g, b), np.exp(ref_rms_norm(soft, gd, bd, 1e-6)))


@pytest.mark.skipif(
    not any(isinstance(e, HirToMir) for e in LowerToLLVM().elements()),
    reason="rlx-hir-to-mir is not yet part of rlx-lower-to-llvm",
)
def test_compile_runs_hir_to_mir_itself():
    text = block_module("linear", [(2, 8), (8, 4), (4,)], [(2, 4)], 'activation = "relu"')
    rng = rng_for("compile-hir")
    x, w, b = data(rng, (2, 8)), weight(rng, (8, 4)), data(rng, (4,))
    xd, wd, bd = f64(x, w, b)
    assert_close(rlx_mlir.compile(text, entry="f")(x, w, b), np.maximum(xd @ wd + bd, 0.0))


# --- builders and verification ---------------------------------------------------------------------


def test_builders_infer_result_types():
    with make_context(), ir.Location.unknown():
        module = ir.Module.create()
        f32 = ir.F32Type.get()

        def t(*shape):
            return ir.RankedTensorType.get(list(shape), f32)

        with ir.InsertionPoint(module.body):

            @func.FuncOp.from_py_func(t(2, 5, 8), t(8, 16), t(16), t(8, 4), t(16, 8))
            def f(x, w, b, w2, down):
                lin = rlx_hir.LinearOp(x, w, bias=b, activation="gelu")
                assert str(lin.result.type) == "tensor<2x5x16xf32>"
                assert lin.activation == "gelu" and lin.bias is not None
                assert rlx_hir.LinearOp(x, w).activation == "none"
                pair = rlx_hir.SharedLinearPairOp.build(x, w, w2)
                assert [str(r.type) for r in pair.results] == ["tensor<2x5x16xf32>", "tensor<2x5x4xf32>"]
                assert pair.first == pair.results[0] and pair.second == pair.results[1]
                ffn = rlx_hir.SwigluFfnOp(x, w, w, down)
                assert str(ffn.result.type) == "tensor<2x5x8xf32>"
                with pytest.raises(ValueError, match=r"'rlx_hir.linear' op contracting dimensions differ: x \[2, 5, 8\] has K = 8, w \[16, 8\] has K = 16"):
                    rlx_hir.LinearOp(x, down)
                with pytest.raises(ValueError, match=r"'rlx_hir.shared_linear_pair' op contracting dimensions differ: x \[2, 5, 8\] has K = 8, w_second \[16, 8\]"):
                    rlx_hir.SharedLinearPairOp.build(x, w, down)
                with pytest.raises(ValueError, match=r"'rlx_hir.linear_fused' op attribute 'activation' must be one of"):
                    rlx_hir.LinearFusedOp(x, w, b, activation="swish")
                return rlx.AddOp(lin.result, pair.first).result, pair.second, ffn.result

        assert rlx_mlir.dialects.verifier.verify(module.operation)
        mir = lower_to_mir(str(module), "direct")
    assert "rlx_hir." not in mir and "rlx.fused_matmul_bias_act" in mir


def test_every_hir_op_is_pure_and_documented():
    from rlx_mlir.dsl import Pure

    names = {op.OPERATION_NAME for op in rlx_hir.RlxHir.ops}
    assert names == {
        "rlx_hir.linear", "rlx_hir.linear_fused", "rlx_hir.shared_linear_pair", "rlx_hir.swiglu_ffn",
        "rlx_hir.rms_norm", "rlx_hir.residual_rms_norm", "rlx_hir.rope", "rlx_hir.attention",
        "rlx_hir.depthwise_conv1d_causal", "rlx_hir.llama_decoder_block",
        "rlx_hir.gated_delta_net", "rlx_hir.gated_delta_net_carry", "rlx_hir.dequant_linear",
        "rlx_hir.lora_linear", "rlx_hir.moe_ffn",
    }
    for op in rlx_hir.RlxHir.ops:
        assert op.has_trait(Pure), op.OPERATION_NAME
        assert "expansion" in (op.__doc__ or "").lower(), op.OPERATION_NAME
