"""The KV-cache ops against plain numpy, and caches updated in place through `rlx_mlir.compile`.

Each case compiles a small MLIR function (text) with `rlx_mlir.compile` and
compares its result with a float64 numpy reference written here.  Positions
are runtime inputs (`tensor<i64>`); out-of-range positions are clamped to
`[0, C - S]` (documented op semantics), which the references do explicitly.
"""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir

# f32: a handful of correctly rounded operations per element (writes are exact
# copies; rope is two products and a sum; attention sums at most 16 products per
# score and per output, and exp / division by the row sum), so results are within
# a few tens of f32 ulps of the float64 reference: rtol 1e-5 (~80 ulps).  atol
# 1e-6 covers outputs that cancel to near zero.
F32 = dict(rtol=1e-5, atol=1e-6)
# f16 storage, f32 compute, one final rounding: within one f16 ulp (2**-11
# relative) plus the f32 error; rtol 2e-3 is two ulps, atol for values near zero.
F16 = dict(rtol=2e-3, atol=1e-4)


def _t(shape, element="f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def _clamp(pos: int, highest: int) -> int:
    return min(max(pos, 0), highest)


# --- rlx.kv_cache_write --------------------------------------------------------------


def _write_module(b, c, w, s, element="f32", tied=False) -> str:
    cache, new = _t((b, c, w), element), _t((b, s, w), element)
    result = f"({cache} {{rlx.tied = 0 : i64}})" if tied else cache
    return f"""
func.func @write(%cache: {cache}, %new: {new}, %pos: tensor<i64>) -> {result} {{
  %0 = "rlx.kv_cache_write"(%cache, %new, %pos) : ({cache}, {new}, tensor<i64>) -> {cache}
  return %0 : {cache}
}}"""


def _write_reference(cache, new, pos):
    out = cache.copy()
    p = _clamp(pos, cache.shape[1] - new.shape[1])
    out[:, p:p + new.shape[1]] = new
    return out


WRITE_CASES = [  # (B, C, W, S, pos)
    (1, 8, 4, 1, 0),
    (1, 8, 4, 1, 7),  # the last position
    (2, 8, 6, 3, 5),  # several rows, batch 2: rows 5..7
    (1, 6, 4, 2, 9),  # clamped to C - S = 4
    (2, 5, 3, 5, -3),  # S = C, clamped to 0
]


@pytest.mark.parametrize("b,c,w,s,pos", WRITE_CASES, ids=lambda v: str(v))
def test_kv_cache_write_matches_numpy(b, c, w, s, pos):
    rng = np.random.default_rng(0)
    cache = rng.standard_normal((b, c, w)).astype(np.float32)
    new = rng.standard_normal((b, s, w)).astype(np.float32)
    before = cache.copy()
    out = rlx_mlir.compile(_write_module(b, c, w, s), entry="write")(cache, new, np.array(pos))
    np.testing.assert_array_equal(out, _write_reference(before, new, pos))
    np.testing.assert_array_equal(cache, before)  # untied: the argument is left alone


def test_kv_cache_write_f16_copies_exactly():
    rng = np.random.default_rng(1)
    cache = rng.standard_normal((2, 7, 4)).astype(np.float16)
    new = rng.standard_normal((2, 2, 4)).astype(np.float16)
    out = rlx_mlir.compile(_write_module(2, 7, 4, 2, "f16"), entry="write")(cache, new, np.array(3))
    np.testing.assert_array_equal(out, _write_reference(cache, new, 3))


def test_tied_cache_is_updated_in_place_across_calls():
    """The result tied to the cache *is* the caller's array; successive writes accumulate in it."""
    exe = rlx_mlir.compile(_write_module(1, 6, 4, 1, tied=True), entry="write")
    assert exe.signature.outputs[0].tied_input == 0
    cache = np.zeros((1, 6, 4), np.float32)
    rows = np.arange(24, dtype=np.float32).reshape(6, 1, 1, 4) + 1
    for position in range(6):
        out = exe(cache, rows[position], np.array(position))
        assert out is cache
    np.testing.assert_array_equal(cache[0], rows[:, 0, 0])


def test_tied_cache_must_be_writable():
    exe = rlx_mlir.compile(_write_module(1, 6, 4, 1, tied=True), entry="write")
    cache = np.zeros((1, 6, 4), np.float32)
    cache.flags.writeable = False
    with pytest.raises(ValueError, match="argument 'arg0' of @write is updated in place .* must be a writable array"):
        exe(cache, np.ones((1, 1, 4), np.float32), np.array(0))


@pytest.mark.parametrize(
    "result, message",
    [
        ("(tensor<1x6x4xf32> {rlx.tied = 3 : i64})", r"rlx.tied must name an argument index below 3"),
        ("(tensor<1x6x4xf32>, tensor<1x1x4xf32> {rlx.tied = 0 : i64})",
         r"result #1: tied to argument #0 of type tensor<1x6x4xf32>, but the result is tensor<1x1x4xf32>"),
    ],
)
def test_bad_tied_attribute_is_rejected(result, message):
    results = "tensor<1x6x4xf32>" if "," not in result else "tensor<1x6x4xf32>, tensor<1x1x4xf32>"
    returned = "%0" if "," not in result else "%0, %new"
    text = f"""
func.func @write(%cache: tensor<1x6x4xf32>, %new: tensor<1x1x4xf32>, %pos: tensor<i64>) -> {result} {{
  %0 = "rlx.kv_cache_write"(%cache, %new, %pos) : (tensor<1x6x4xf32>, tensor<1x1x4xf32>, tensor<i64>) -> tensor<1x6x4xf32>
  return {returned} : {results}
}}"""
    with pytest.raises(ValueError, match=message):
        rlx_mlir.compile(text, entry="write")


def test_tied_result_that_cannot_be_in_place_is_a_compile_error():
    text = """
func.func @f(%cache: tensor<1x6x4xf32>, %new: tensor<1x1x4xf32>, %pos: tensor<i64>)
    -> (tensor<1x6x4xf32> {rlx.tied = 0 : i64}, tensor<1x6x4xf32>) {
  %0 = "rlx.kv_cache_write"(%cache, %new, %pos) : (tensor<1x6x4xf32>, tensor<1x1x4xf32>, tensor<i64>) -> tensor<1x6x4xf32>
  %1 = "rlx.add"(%cache, %cache) : (tensor<1x6x4xf32>, tensor<1x6x4xf32>) -> tensor<1x6x4xf32>
  return %0, %1 : tensor<1x6x4xf32>, tensor<1x6x4xf32>
}"""
    with pytest.raises(rlx_mlir.CompileError, match="bufferization did not update that argument in place"):
        rlx_mlir.compile(text, entry="f")


# --- rlx.rope_at -----------------------------------------------------------------------


def _rope_reference(x, cos, sin, head_dim, n_rot):
    """NeoX rotate-half per head, tables already per row of x (float64)."""
    b, s, width = x.shape
    heads = x.reshape(b, s, width // head_dim, head_dim).astype(np.float64)
    half = n_rot // 2
    c, sn = cos[None, :, None, :].astype(np.float64), sin[None, :, None, :].astype(np.float64)
    first, second = heads[..., :half], heads[..., half:n_rot]
    out = heads.copy()
    out[..., :half] = first * c - second * sn
    out[..., half:n_rot] = second * c + first * sn
    return out.reshape(b, s, width)


ROPE_CASES = [  # (B, S, H, head_dim, n_rot, P, pos)
    (1, 1, 2, 8, 8, 10, 6),  # one decode token
    (2, 3, 2, 8, 4, 12, 4),  # partial rotary, batch 2
    (1, 2, 1, 4, 4, 5, 7),  # clamped to P - S = 3
]


@pytest.mark.parametrize("b,s,h,head_dim,n_rot,p_rows,pos", ROPE_CASES, ids=lambda v: str(v))
def test_rope_at_matches_numpy(b, s, h, head_dim, n_rot, p_rows, pos):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((b, s, h * head_dim)).astype(np.float32)
    angles = rng.uniform(-3, 3, (p_rows, n_rot // 2))
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    xt, tt = _t(x.shape), _t(cos.shape)
    text = f"""
func.func @rope(%x: {xt}, %cos: {tt}, %sin: {tt}, %pos: tensor<i64>) -> {xt} {{
  %0 = "rlx.rope_at"(%x, %cos, %sin, %pos) {{head_dim = {head_dim} : i64, n_rot = {n_rot} : i64}} : ({xt}, {tt}, {tt}, tensor<i64>) -> {xt}
  return %0 : {xt}
}}"""
    out = rlx_mlir.compile(text, entry="rope")(x, cos, sin, np.array(pos))
    p = _clamp(pos, p_rows - s)
    np.testing.assert_allclose(out, _rope_reference(x, cos[p:p + s], sin[p:p + s], head_dim, n_rot), **F32)


# --- rlx.cached_attention --------------------------------------------------------------


def _attention_reference(q, k_cache, v_cache, pos, heads, head_dim, scale):
    """Causal attention of the S queries at positions p .. p + S - 1 over the first p + S keys (float64)."""
    b, s, _ = q.shape
    p = _clamp(pos, k_cache.shape[1] - s)
    length = p + s
    kv_heads = k_cache.shape[2] // head_dim
    group = heads // kv_heads
    qh = q.astype(np.float64).reshape(b, s, heads, head_dim)
    kh = k_cache[:, :length].astype(np.float64).reshape(b, length, kv_heads, head_dim)
    vh = v_cache[:, :length].astype(np.float64).reshape(b, length, kv_heads, head_dim)
    kh, vh = np.repeat(kh, group, axis=2), np.repeat(vh, group, axis=2)
    scores = np.einsum("bihd,bjhd->bhij", qh, kh) * scale
    visible = np.arange(length)[None, :] <= (p + np.arange(s))[:, None]
    scores = np.where(visible, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("bhij,bjhd->bihd", weights, vh).reshape(b, s, heads * head_dim)


ATTENTION_CASES = [  # (B, S, H, Hkv, D, C, pos)
    (1, 1, 4, 2, 4, 12, 0),  # the first token: one key
    (1, 1, 4, 2, 4, 12, 7),  # decode, grouped-query heads
    (2, 3, 2, 2, 8, 10, 4),  # a chunk of 3 queries (causal among them), multi-head, batch 2
    (1, 2, 4, 1, 4, 6, 11),  # multi-query, pos clamped to C - S = 4 (the full cache)
    (1, 1, 4, 2, 16, 64, 37),  # decode over a larger cache
    # Query and key blocks of 16 or more: the CPU pipeline's tiled loop nest.
    (1, 16, 4, 2, 16, 64, 21),  # 37 keys: the one block, holding the filled length, is partial
    (1, 20, 4, 2, 16, 96, 27),  # 47 keys in blocks of 48: one partial block
    (2, 16, 2, 1, 16, 64, 48),  # 64 keys: every block full
    (1, 32, 2, 1, 16, 128, 70),  # 102 keys: one full block, one partial
    (1, 64, 2, 2, 8, 128, 0),  # a prompt of 64 from position 0: causal blocks skipped
    (1, 16, 2, 2, 16, 48, 60),  # pos clamped to C - S = 32: the whole cache
]


def _attention_module(q_shape, cache_shape, heads, head_dim, element="f32", scale=None) -> str:
    qt, ct = _t(q_shape, element), _t(cache_shape, element)
    scale_attr = f", score_scale = {scale} : f32" if scale is not None else ""
    return f"""
func.func @attend(%q: {qt}, %k: {ct}, %v: {ct}, %pos: tensor<i64>) -> {qt} {{
  %0 = "rlx.cached_attention"(%q, %k, %v, %pos) {{num_heads = {heads} : i64, head_dim = {head_dim} : i64{scale_attr}}} : ({qt}, {ct}, {ct}, tensor<i64>) -> {qt}
  return %0 : {qt}
}}"""


@pytest.mark.parametrize("b,s,heads,kv_heads,head_dim,c,pos", ATTENTION_CASES, ids=lambda v: str(v))
def test_cached_attention_matches_numpy(b, s, heads, kv_heads, head_dim, c, pos):
    rng = np.random.default_rng(3)
    q = rng.standard_normal((b, s, heads * head_dim)).astype(np.float32)
    k = rng.standard_normal((b, c, kv_heads * head_dim)).astype(np.float32)
    v = rng.standard_normal((b, c, kv_heads * head_dim)).astype(np.float32)
    p = _clamp(pos, c - s)
    expected = _attention_reference(q, k, v, pos, heads, head_dim, 1.0 / np.sqrt(head_dim))
    # Positions past p + S are never read: NaN there must not reach the output.
    k[:, p + s:], v[:, p + s:] = np.nan, np.nan
    out = rlx_mlir.compile(_attention_module(q.shape, k.shape, heads, head_dim), entry="attend")(q, k, v, np.array(pos))
    np.testing.assert_allclose(out, expected, **F32)


def test_cached_attention_f16_with_score_scale():
    rng = np.random.default_rng(4)
    q = rng.standard_normal((1, 2, 8)).astype(np.float16)
    k = rng.standard_normal((1, 5, 8)).astype(np.float16)
    v = rng.standard_normal((1, 5, 8)).astype(np.float16)
    exe = rlx_mlir.compile(_attention_module(q.shape, k.shape, 2, 4, "f16", scale=0.3), entry="attend")
    out = exe(q, k, v, np.array(2))
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.astype(np.float64), _attention_reference(q, k, v, 2, 2, 4, 0.3), **F16)


def test_builder_tie_outputs_updates_the_named_input_in_place():
    from rlx_mlir import GraphModule
    from rlx_mlir.frontend.builder import BuildError

    g = GraphModule("write")
    cache = g.input("cache", (1, 6, 4))
    new = g.input("new", (1, 2, 4))
    pos = g.input("pos", (), "i64")
    g.set_outputs([g.op(rlx_mlir.dialects.rlx.ReduceOp, new, kind="sum", axes=[1]),
                   g.op(rlx_mlir.dialects.rlx.KvCacheWriteOp, cache, new, pos)])
    with pytest.raises(BuildError, match=r"output #1 is tensor<1x6x4xf32>, but input 'new' is tensor<1x2x4xf32>"):
        g.tie_outputs({1: "new"})
    with pytest.raises(BuildError, match="'write' has no input named 'kv'"):
        g.tie_outputs({1: "kv"})
    with pytest.raises(BuildError, match=r"output #2 does not exist \('write' has 2\)"):
        g.tie_outputs({2: "cache"})
    g.tie_outputs({1: "cache"})
    exe = g.compile()
    assert [spec.tied_input for spec in exe.signature.outputs] == [None, 0]
    buffer = np.zeros((1, 6, 4), np.float32)
    rows = np.arange(8, dtype=np.float32).reshape(1, 2, 4)
    exe(cache=buffer, new=rows, pos=np.array(3, np.int64))
    expected = np.zeros((1, 6, 4), np.float32)
    expected[0, 3:5] = rows[0]
    np.testing.assert_array_equal(buffer, expected)  # written in the caller's array
