"""Numerics of `rlx.attention` and `rlx.rope` against direct float64 numpy references.

Each case builds a one-op module as MLIR text, compiles it with
`rlx_mlir.compile` and compares the result with a reference written here in
float64 numpy: softmax(Q Kᵀ · scale [softcapped] + mask) · V per head, with
the kv head of query head h being h // (H / Hkv), and the NeoX rotate-half
formula for RoPE.  Nothing from the lowering is imported.

Tolerances are computed per element from the data (see `attention_bound` and
`rope_bound`): they are the standard first-order rounding-error bounds of the
f32 computation, times a safety factor, plus one f16 ulp of the result for f16.
"""

from __future__ import annotations

import functools
import math
import zlib

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import func

import rlx_mlir
from rlx_mlir import compile as rlx_compile
from rlx_mlir.dialects import rlx

U32 = 2.0**-24  # f32 unit roundoff
F16_ULP_REL = 2.0**-10  # one f16 ulp, relative to the value (worst case, at a power of two)
F16_TINY = 2.0**-24  # f16 subnormal spacing: the absolute resolution near zero
SAFETY = 4.0  # slack on the first-order bounds (higher-order terms, libm's few-ulp exp / tanh)

DTYPES = {"f32": np.float32, "f16": np.float16}


@functools.lru_cache(maxsize=None)
def compiled(text: str):
    return rlx_compile(text, entry="f")


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def tensor_type(shape, dtype: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def module_text(op: str, shapes, dtype: str, result_shape, attrs: str) -> str:
    types = [tensor_type(s, dtype) for s in shapes]
    out = tensor_type(result_shape, dtype)
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    args = ", ".join(f"%a{i}" for i in range(len(types)))
    return (
        f"func.func @f({params}) -> {out} {{\n"
        f'  %0 = "rlx.{op}"({args}) {{{attrs}}} : ({", ".join(types)}) -> {out}\n'
        f"  return %0 : {out}\n"
        f"}}\n"
    )


def assert_within(actual: np.ndarray, expected: np.ndarray, bound: np.ndarray, dtype: str) -> None:
    """|actual - expected| <= bound elementwise, with one extra f16 ulp for f16 results."""
    assert actual.dtype == DTYPES[dtype]
    assert actual.shape == expected.shape
    if dtype == "f16":
        # The f32 result is rounded once to f16: at most half an f16 ulp of
        # the result, taken as a full ulp (2**-10 relative) to cover results
        # close to a rounding boundary, plus the subnormal spacing near zero.
        bound = bound + F16_ULP_REL * np.abs(expected) + F16_TINY
    error = np.abs(actual.astype(np.float64) - expected)
    worst = np.unravel_index(np.argmax(error - bound), error.shape)
    assert np.all(error <= bound), (
        f"error {error[worst]:.3g} exceeds bound {bound[worst]:.3g} at {worst}: "
        f"got {actual[worst]}, expected {expected[worst]}"
    )


# --- attention -------------------------------------------------------------------------


def reference_attention(q, k, v, mask, *, num_heads, head_dim, mask_kind, window=None, scale=None, softcap=None):
    """Float64 softmax(Q Kᵀ scale + mask) V per head, and the per-element error bound of an f32 evaluation.

    Returns (out, bound), both `[B, Sq, H * D]`.
    """
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    batch, sq, _ = q.shape
    sk = k.shape[1]
    kv_heads = k.shape[2] // head_dim
    group = num_heads // kv_heads
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    # Query i is key position i + (Sk - Sq): causal masks align to the end.
    query_pos = np.arange(sq)[:, None] + (sk - sq)
    key_pos = np.arange(sk)[None, :]
    out = np.zeros((batch, sq, num_heads, head_dim))
    bound = np.zeros_like(out)
    for b in range(batch):
        for h in range(num_heads):
            kvh = h // group
            qh = q[b, :, h * head_dim : (h + 1) * head_dim]  # [Sq, D]
            kh = k[b, :, kvh * head_dim : (kvh + 1) * head_dim]  # [Sk, D]
            vh = v[b, :, kvh * head_dim : (kvh + 1) * head_dim]  # [Sk, D]
            scores = (qh @ kh.T) * scale
            # Rounding error of the f32 logits: the D-term dot product
            # (D * u * |q|.|k|), then the scale multiply, the softcap's divide,
            # tanh and multiply and the bias add (a few u of |score| each).
            logit_error = head_dim * U32 * (np.abs(qh) @ np.abs(kh).T) * abs(scale) + 4 * U32 * np.abs(scores)
            if softcap is not None:
                scores = softcap * np.tanh(scores / softcap)
            visible = np.ones((sq, sk), dtype=bool)
            if mask_kind in ("causal", "sliding_window"):
                visible = key_pos <= query_pos
            if mask_kind == "sliding_window":
                visible &= key_pos > query_pos - window
            if mask_kind == "custom":
                visible = np.broadcast_to(mask[b].astype(np.float64) != 0.0, (sq, sk)).copy()
            if mask_kind == "bias":
                bias = mask[b, h].astype(np.float64)
                visible = np.isfinite(bias)
                scores = scores + np.where(visible, bias, 0.0)
                logit_error += 2 * U32 * np.abs(scores)
            for i in range(sq):
                keys = visible[i]
                if not keys.any():
                    continue  # nothing visible: the op outputs zeros
                s = scores[i, keys]
                p = np.exp(s - s.max())
                p /= p.sum()
                out[b, i, h] = p @ vh[keys]
                # Each probability is off by at most (2 * max logit error) in
                # relative terms from the logits (its own and the row max via
                # the sum), plus exp's ulps and the f32 sum of n terms; the
                # P.V accumulation adds n * u, the division u.  All scale
                # with sum_j p_j |v_j|.
                n = int(keys.sum())
                relative = 2 * logit_error[i, keys].max() + (2 * n + 8) * U32
                bound[b, i, h] = SAFETY * relative * (p @ np.abs(vh[keys])) + 1e-30
    return out.reshape(batch, sq, -1), bound.reshape(batch, sq, -1)


def attention_text(dtype, shapes, *, num_heads, head_dim, mask_kind, window=None, scale=None, softcap=None):
    attrs = [f"num_heads = {num_heads}", f"head_dim = {head_dim}", f'mask_kind = "{mask_kind}"']
    if window is not None:
        attrs.append(f"window = {window}")
    if scale is not None:
        attrs.append(f"score_scale = {scale!r} : f32")
    if softcap is not None:
        attrs.append(f"softcap = {softcap!r} : f32")
    return module_text("attention", shapes, dtype, shapes[0], ", ".join(attrs))


# (id, B, Sq, Sk, H, Hkv, D, mask_kind, extra attributes)
ATTENTION_CASES = [
    ("none-mha", 1, 5, 5, 2, 2, 8, "none", {}),
    ("none-scale-decode", 2, 2, 9, 4, 4, 4, "none", {"scale": 0.3}),
    ("causal-gqa", 2, 6, 6, 4, 2, 4, "causal", {}),
    ("causal-mqa-decode1", 1, 1, 7, 4, 1, 8, "causal", {}),
    ("causal-gqa-decode3", 2, 3, 7, 6, 3, 4, "causal", {}),
    ("causal-more-queries-than-keys", 1, 5, 3, 2, 1, 4, "causal", {}),  # first 2 rows see nothing
    ("causal-softcap", 2, 4, 4, 2, 2, 8, "causal", {"softcap": 2.0, "scale": 1.5}),
    ("window3-mqa", 1, 6, 6, 2, 1, 8, "sliding_window", {"window": 3}),
    ("window2-decode1", 2, 1, 7, 4, 2, 4, "sliding_window", {"window": 2}),
    ("window4-decode3", 2, 3, 7, 2, 2, 4, "sliding_window", {"window": 4}),
    ("window1-self-only", 1, 4, 4, 2, 2, 4, "sliding_window", {"window": 1}),
    ("window-wider-than-keys", 1, 3, 7, 2, 1, 4, "sliding_window", {"window": 10}),
    ("custom-gqa", 3, 4, 5, 2, 1, 8, "custom", {}),
    ("bias-gqa-decode3", 2, 3, 7, 4, 2, 4, "bias", {}),
    ("bias-softcap-scale", 1, 4, 6, 2, 2, 4, "bias", {"softcap": 5.0, "scale": 0.25}),
    # Larger scores: the CPU pipeline's tiled loop nest (key blocks of 40 to 64, an online softmax).
    ("tiled-causal-gqa", 1, 80, 96, 4, 2, 16, "causal", {}),
    ("tiled-causal-more-queries-than-keys", 1, 96, 64, 2, 1, 8, "causal", {}),
    ("tiled-window37", 1, 128, 128, 2, 1, 8, "sliding_window", {"window": 37}),
    ("tiled-none-softcap", 2, 48, 112, 2, 2, 8, "none", {"softcap": 2.0, "scale": 1.5}),
    ("tiled-custom", 3, 40, 128, 2, 1, 8, "custom", {}),
    ("tiled-bias", 2, 64, 80, 2, 1, 8, "bias", {}),
    # Blocks of 64 and head dims that 16 divides: tiles transposed in registers, the output's
    # product accumulated in place; query blocks with key blocks below the diagonal (no mask)
    # and on it (masked), also offset (Sq < Sk) and partly visible (window, custom, bias).
    ("tiled-causal-blocks64", 1, 192, 192, 4, 2, 32, "causal", {}),
    ("tiled-causal-offset-blocks64", 1, 64, 192, 2, 1, 16, "causal", {}),
    ("tiled-causal-blocks48", 1, 96, 96, 2, 2, 16, "causal", {}),  # Bq = 48: register tiles three vectors wide
    ("tiled-window70-blocks64", 1, 128, 128, 2, 1, 16, "sliding_window", {"window": 70}),
    ("tiled-custom-blocks64", 3, 64, 128, 2, 1, 16, "custom", {}),
    ("tiled-bias-softcap-blocks64", 1, 64, 128, 2, 1, 16, "bias", {"softcap": 5.0}),
    ("tiled-causal-softcap-blocks64", 1, 128, 128, 2, 1, 16, "causal", {"softcap": 2.0}),
]


def _attention_inputs(rng, case, dtype):
    _, batch, sq, sk, heads, kv_heads, dim, mask_kind, _ = case
    np_dtype = DTYPES[dtype]
    q = rng.uniform(-2.0, 2.0, (batch, sq, heads * dim)).astype(np_dtype)
    k = rng.uniform(-2.0, 2.0, (batch, sk, kv_heads * dim)).astype(np_dtype)
    v = rng.uniform(-2.0, 2.0, (batch, sk, kv_heads * dim)).astype(np_dtype)
    mask = None
    if mask_kind == "custom":
        # 1.0 = valid, 0.0 = masked; batch 1 masks every key (its rows output
        # zeros), one entry uses 0.5 (any nonzero value counts as valid).
        mask = (rng.random((batch, sk)) < 0.6).astype(np_dtype)
        mask[0, 0] = 1.0
        mask[1, :] = 0.0
        mask[2, :] = 1.0
        mask[2, 1] = 0.0
        mask[2, 3] = 0.5
    elif mask_kind == "bias":
        mask = rng.uniform(-2.0, 2.0, (batch, heads, sq, sk)).astype(np_dtype)
        mask[rng.random(mask.shape) < 0.2] = -np.inf  # -inf bias hides a key
        mask[0, 0, 0, :] = -np.inf  # one row that sees nothing
    return q, k, v, mask


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("case", ATTENTION_CASES, ids=[c[0] for c in ATTENTION_CASES])
def test_attention(case, dtype):
    name, batch, sq, sk, heads, kv_heads, dim, mask_kind, extra = case
    rng = rng_for("attention", name, dtype)
    q, k, v, mask = _attention_inputs(rng, case, dtype)
    inputs = [q, k, v] + ([mask] if mask is not None else [])
    attrs = dict(num_heads=heads, head_dim=dim, mask_kind=mask_kind, **extra)
    exe = compiled(attention_text(dtype, [a.shape for a in inputs], **attrs))
    actual = exe(*inputs)
    expected, bound = reference_attention(q, k, v, mask, **attrs)
    assert_within(actual, expected, bound, dtype)


def test_rows_that_see_no_key_are_exactly_zero():
    """causal with Sq > Sk: queries 0 and 1 sit before the first key; a custom all-zero mask row."""
    rng = rng_for("zero-rows")
    q = rng.uniform(-1, 1, (1, 4, 4)).astype(np.float32)
    k = rng.uniform(-1, 1, (1, 2, 4)).astype(np.float32)
    v = rng.uniform(-1, 1, (1, 2, 4)).astype(np.float32)
    exe = compiled(attention_text("f32", [q.shape, k.shape, v.shape], num_heads=1, head_dim=4, mask_kind="causal"))
    out = exe(q, k, v)
    assert np.all(out[0, :2] == 0.0) and np.all(np.isfinite(out))
    # The last query sees both keys, the one before only key 0: its output is v[0].
    np.testing.assert_allclose(out[0, 2], v[0, 0], rtol=1e-6)


# Causal blocks of 64 on one, two and three threads, with the benchmark model's head dim:
# self-attention and an offset that 64 divides (the diagonal block's products skip the strips only
# hidden pairs fill), an offset it does not (key blocks of 56: the diagonal crosses blocks),
# 48-blocks, and an odd length whose blocks (50) are not whole vectors (linalg.matmul products).
TILED_CAUSAL_THREADS_CASES = [  # (Sq, Sk, H, Hkv, D)
    (256, 256, 4, 2, 64),
    (128, 256, 2, 1, 64),
    (128, 224, 2, 2, 32),
    (96, 96, 3, 3, 16),
    (150, 150, 3, 1, 64),
]


@pytest.mark.parametrize("case", TILED_CAUSAL_THREADS_CASES, ids=["x".join(map(str, c)) for c in TILED_CAUSAL_THREADS_CASES])
def test_tiled_causal_attention_on_one_and_two_threads(case):
    sq, sk, heads, kv_heads, dim = case
    rng = rng_for("tiled-causal-threads", case)
    q = rng.uniform(-2.0, 2.0, (1, sq, heads * dim)).astype(np.float32)
    k = rng.uniform(-2.0, 2.0, (1, sk, kv_heads * dim)).astype(np.float32)
    v = rng.uniform(-2.0, 2.0, (1, sk, kv_heads * dim)).astype(np.float32)
    attrs = dict(num_heads=heads, head_dim=dim, mask_kind="causal")
    text = attention_text("f32", [q.shape, k.shape, v.shape], **attrs)
    expected, bound = reference_attention(q, k, v, None, **attrs)
    outputs = [rlx_compile(text, entry="f", threads=threads)(q, k, v) for threads in (1, 2, 3)]
    for actual in outputs:
        assert_within(actual, expected, bound, "f32")
    # Threads share out whole query blocks: each output is computed the same way on any count.
    for actual in outputs[1:]:
        np.testing.assert_array_equal(outputs[0], actual)


def test_python_builder_with_optional_operand_and_attributes():
    """Build with the op classes (mask and softcap given, score_scale left out) and run it."""
    with rlx_mlir.make_context(), ir.Location.unknown():
        f32 = ir.F32Type.get()
        q_type = ir.RankedTensorType.get([1, 3, 8], f32)
        kv_type = ir.RankedTensorType.get([1, 5, 4], f32)
        bias_type = ir.RankedTensorType.get([1, 2, 3, 5], f32)
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):

            @func.FuncOp.from_py_func(q_type, kv_type, kv_type, bias_type)
            def f(q, k, v, bias):
                op = rlx.AttentionOp(q, k, v, 2, 4, "bias", mask=bias, softcap=3.0)
                assert op.result.type == q_type
                assert op.mask == bias and op.window is None and op.score_scale is None
                assert op.softcap == pytest.approx(3.0)
                with pytest.raises(ValueError, match=r"'rlx.attention' op mask_kind 'bias' requires a mask operand"):
                    rlx.AttentionOp(q, k, v, 2, 4, "bias")
                with pytest.raises(ValueError, match=r"'rlx.rope' op n_rot 6 exceeds head_dim 4"):
                    rlx.RopeOp(k, k, k, 4, 6)
                return op.result

    exe = rlx_compile(module, entry="f")
    rng = rng_for("builder")
    q = rng.uniform(-1, 1, (1, 3, 8)).astype(np.float32)
    k = rng.uniform(-1, 1, (1, 5, 4)).astype(np.float32)
    v = rng.uniform(-1, 1, (1, 5, 4)).astype(np.float32)
    bias = rng.uniform(-1, 1, (1, 2, 3, 5)).astype(np.float32)
    expected, bound = reference_attention(q, k, v, bias, num_heads=2, head_dim=4, mask_kind="bias", softcap=3.0)
    assert_within(exe(q, k, v, bias), expected, bound, "f32")


# --- rope ------------------------------------------------------------------------------


def reference_rope(x, cos, sin, head_dim, n_rot):
    """NeoX rotate-half per head on float64; returns (out, per-element f32 error bound)."""
    x, cos, sin = (a.astype(np.float64) for a in (x, cos, sin))
    batch, seq, width = x.shape
    half = n_rot // 2
    out = x.copy()
    bound = np.zeros_like(x)
    for head in range(width // head_dim):
        lo = x[:, :, head * head_dim : head * head_dim + half]
        hi = x[:, :, head * head_dim + half : head * head_dim + n_rot]
        c, s = cos[None], sin[None]
        out[:, :, head * head_dim : head * head_dim + half] = lo * c - hi * s
        out[:, :, head * head_dim + half : head * head_dim + n_rot] = hi * c + lo * s
        # Two f32 products and one sum: at most 2u (|x c| + |x' s|) to first order.
        magnitude = np.abs(lo * c) + np.abs(hi * s)
        bound[:, :, head * head_dim : head * head_dim + half] = SAFETY * 2 * U32 * magnitude
        magnitude = np.abs(hi * c) + np.abs(lo * s)
        bound[:, :, head * head_dim + half : head * head_dim + n_rot] = SAFETY * 2 * U32 * magnitude
    return out, bound  # copied features: bound 0, they must match exactly


# (B, S, H, head_dim, n_rot)
ROPE_SHAPES = [
    (1, 4, 2, 8, 8),  # full rotary
    (2, 3, 3, 8, 4),  # partial rotary, three heads
    (2, 5, 1, 16, 6),  # partial, n_rot not a power of two
    (3, 1, 4, 6, 2),  # one position, smallest rotation
    (1, 7, 2, 4, 4),  # full rotary on tiny heads
]


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("shape", ROPE_SHAPES, ids=["x".join(map(str, s)) for s in ROPE_SHAPES])
def test_rope(shape, dtype):
    batch, seq, heads, head_dim, n_rot = shape
    np_dtype = DTYPES[dtype]
    rng = rng_for("rope", shape, dtype)
    x = rng.uniform(-3.0, 3.0, (batch, seq, heads * head_dim)).astype(np_dtype)
    # Real RoPE tables: angle = position * 10000^(-2i / n_rot), positions offset by a cache length.
    positions = np.arange(seq) + rng.integers(0, 50)
    inv_freq = 10000.0 ** (-np.arange(n_rot // 2) * 2.0 / n_rot)
    angles = positions[:, None] * inv_freq[None, :]
    cos, sin = np.cos(angles).astype(np_dtype), np.sin(angles).astype(np_dtype)
    attrs = f"head_dim = {head_dim}, n_rot = {n_rot}"
    exe = compiled(module_text("rope", [x.shape, cos.shape, sin.shape], dtype, x.shape, attrs))
    actual = exe(x, cos, sin)
    expected, bound = reference_rope(x, cos, sin, head_dim, n_rot)
    assert_within(actual, expected, bound, dtype)
    # The features past n_rot of every head are copied bit for bit.
    tail = np.arange(heads * head_dim) % head_dim >= n_rot
    np.testing.assert_array_equal(actual[..., tail], x[..., tail])


def _projected_attention():
    """x @ w split into q, k, v (strided views of the product's arena slot) and causal attention
    over 128 tokens, one head of 64: two query blocks of 64, each with a diagonal key block."""
    from rlx_mlir import GraphModule

    g = GraphModule.hir("projected_attention")
    x = g.input("x", (1, 128, 64))
    qkv = g.linear(x, g.param("w", (64, 3 * 64)))
    q, k, v = (g.op(rlx.NarrowOp, qkv, axis=2, start=i * 64, len=64) for i in range(3))
    g.set_outputs(g.attention(q, k, v, num_heads=1, head_dim=64, mask_kind="causal"))
    return g


def test_diagonal_block_strips_are_not_copied():
    """The diagonal key block's output is computed in strips of 16 query columns.  Taken out of the
    carried accumulator with extract_slice and put back with insert_slice, the strips were hoisted
    out of the key loop, and bufferization copied three of them into fresh buffers before the loop
    and back after it (scalar `memref.copy` loops, mallocs) when q, k, v were views of a GEMM's
    slot, as in a decoder layer.  Each strip is now read and written in place."""
    from rlx_mlir.driver import Compilation
    from rlx_mlir.pipelines.lower_to_llvm import HOIST, LowerToLLVM

    steps = LowerToLLVM(threads=1).elements()
    with Compilation() as compilation:
        module = compilation.parse(str(_projected_attention()))
        compilation.run(module, steps[: steps.index(HOIST) + 1], "to buffers")
        text = str(module)
    strips = [line for line in text.splitlines() if "memref.copy" in line and "64x16xf32" in line]
    assert not strips, "\n".join(strips)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_projected_attention_matches_numpy(threads):
    rng = rng_for("projected-attention")
    x = rng.uniform(-1.0, 1.0, (1, 128, 64)).astype(np.float32)
    w = (rng.uniform(-1.0, 1.0, (64, 192)) / 8).astype(np.float32)
    exe = _projected_attention().compile(threads=threads)
    actual = exe(x=x, w=w)
    qkv = x.astype(np.float64) @ w.astype(np.float64)
    expected, _ = reference_attention(qkv[..., :64], qkv[..., 64:128], qkv[..., 128:], None, num_heads=1,
                                      head_dim=64, mask_kind="causal")
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())
