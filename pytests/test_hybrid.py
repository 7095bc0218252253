"""A small hybrid model (gated DeltaNet layer + attention layer) built with the
GraphModule builder, compiled and run, against a forward pass written plainly in
numpy here (float64, Python loops for the recurrence); and the carry form of the
gated DeltaNet block run in chunks (decode-style) against the whole sequence."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

from rlx_mlir.dialects import rlx
from rlx_mlir.frontend.builder import BuildError, GraphModule

BATCH, SEQ, HIDDEN, VOCAB = 2, 6, 32, 50
GDN_HEADS, GDN_DIM = 2, 8  # gated DeltaNet: h heads of n = 8 features (h * n = 16)
ATT_HEADS, ATT_KV_HEADS, ATT_DIM = 4, 2, 8  # grouped-query attention
FFN = 48
EPS = 1e-5
THETA = 10000.0


# --- weights ---------------------------------------------------------------------------------


def weight_shapes() -> dict[str, tuple[int, ...]]:
    d, hn, f = HIDDEN, GDN_HEADS * GDN_DIM, FFN
    return {
        "embed": (VOCAB, d),
        # gated DeltaNet layer
        "gdn.norm": (d,), "gdn.q": (d, hn), "gdn.k": (d, hn), "gdn.v": (d, hn),
        "gdn.a": (d, GDN_HEADS), "gdn.a_log": (GDN_HEADS,), "gdn.b": (d, GDN_HEADS), "gdn.o": (hn, d),
        # SwiGLU FFN after it
        "ffn.norm": (d,), "ffn.gate": (d, f), "ffn.up": (d, f), "ffn.down": (f, d),
        # attention layer (Llama decoder block: attention + SwiGLU)
        "att.ln1": (d,), "att.q": (d, ATT_HEADS * ATT_DIM), "att.k": (d, ATT_KV_HEADS * ATT_DIM),
        "att.v": (d, ATT_KV_HEADS * ATT_DIM), "att.o": (ATT_HEADS * ATT_DIM, d), "att.ln2": (d,),
        "att.gate": (d, f), "att.up": (d, f), "att.down": (f, d),
        "norm": (d,), "lm_head": (d, VOCAB),
    }


def random_weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in weight_shapes().items():
        if name.endswith("norm") or name.endswith("ln1") or name.endswith("ln2"):
            w = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name == "gdn.a_log":
            w = np.log(rng.uniform(0.5, 2.0, shape))
        else:
            w = rng.standard_normal(shape) / np.sqrt(shape[0])
        if name == "gdn.k":
            # keep beta * |k|^2 below 2 so the delta rule stays a contraction (well conditioned)
            w = w / np.sqrt(GDN_DIM)
        weights[name] = w.astype(np.float32)
    return weights


def rope_tables(seq: int, head_dim: int):
    inverse = THETA ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.outer(np.arange(seq, dtype=np.float64), inverse)
    return np.cos(angles), np.sin(angles)


# --- the model with the builder ----------------------------------------------------------------


def reshape(g: GraphModule, x, shape):
    with g.context, ir.Location.unknown():
        type_ = ir.RankedTensorType.get(list(shape), ir.F32Type.get())
    return g.op(rlx.ReshapeOp, x, result_type=type_)


def gdn_inputs(g: GraphModule, x, p, zeros, one):
    """RMSNorm, then q, k, v [B, S, h, n], g = -exp(a_log) * softplus(x @ a), beta = sigmoid(x @ b)."""
    b, s, _ = x.shape
    n = g.rms_norm(x, p["gdn.norm"], zeros, eps=EPS)
    q, k, v = (reshape(g, g.linear(n, p[w]), (b, s, GDN_HEADS, GDN_DIM)) for w in ("gdn.q", "gdn.k", "gdn.v"))
    softplus = g.op(rlx.LogOp, g.op(rlx.ExpOp, g.linear(n, p["gdn.a"])) + one)
    decay = -g.op(rlx.ExpOp, p["gdn.a_log"]) * softplus  # [B, S, h], negative
    beta = g.linear(n, p["gdn.b"], activation="sigmoid")
    return q, k, v, decay, beta


def gdn_output(g: GraphModule, x, out, p):
    b, s, _ = x.shape
    return x + g.linear(reshape(g, out, (b, s, GDN_HEADS * GDN_DIM)), p["gdn.o"])


def declare_params(g: GraphModule):
    return {name: g.param(name, shape) for name, shape in weight_shapes().items()}


def build_hybrid(policy: str) -> GraphModule:
    g = GraphModule.hir("hybrid", policy=policy)
    tokens = g.input("tokens", (BATCH, SEQ), "i64")
    p = declare_params(g)
    zeros = g.constant(np.zeros(HIDDEN, np.float32))
    one = g.constant(np.ones((1,), np.float32))
    cos, sin = (g.constant(t.astype(np.float32)) for t in rope_tables(SEQ, ATT_DIM))
    x = g.named("embed", lambda: g.op(rlx.GatherOp, p["embed"], tokens, axis=0))

    def gdn_layer():
        q, k, v, decay, beta = gdn_inputs(g, x, p, zeros, one)
        return gdn_output(g, x, g.gated_delta_net(q, k, v, decay, beta), p)

    x = g.named("gdn", gdn_layer)
    x = g.named("ffn", lambda: x + g.swiglu_ffn(g.rms_norm(x, p["ffn.norm"], zeros, eps=EPS),
                                                 p["ffn.up"], p["ffn.gate"], p["ffn.down"]))
    x = g.named("att", lambda: g.llama_decoder_block(
        x, p["att.ln1"], zeros, p["att.q"], p["att.k"], p["att.v"], p["att.o"], p["att.ln2"], zeros,
        p["att.gate"], p["att.up"], p["att.down"], cos, sin,
        num_heads=ATT_HEADS, head_dim=ATT_DIM, num_kv_heads=ATT_KV_HEADS, eps=EPS))
    x = g.named("norm", lambda: g.rms_norm(x, p["norm"], zeros, eps=EPS))
    g.set_outputs(g.named("lm_head", lambda: g.linear(x, p["lm_head"])))
    return g


# --- the plain numpy forward (float64) -------------------------------------------------------------


def rms_norm(x, gain):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * gain


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    cos, sin = cos[:, None, :], sin[:, None, :]
    first, second = x[..., :half], x[..., half:]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def swiglu(x, gate, up, down):
    gx = x @ gate
    return (gx / (1 + np.exp(-gx)) * (x @ up)) @ down


def gated_delta_rule(q, k, v, decay, beta, state=None):
    """q, k, v [B, S, h, n]; decay (log-decay), beta [B, S, h]; state [B, h, n_v, n_k] → (out, state)."""
    b, s, h, n = q.shape
    out = np.zeros_like(q)
    state = np.zeros((b, h, n, n)) if state is None else state.copy()
    for bb in range(b):
        for hh in range(h):
            st = state[bb, hh]
            for t in range(s):
                st = np.exp(decay[bb, t, hh]) * st
                u = beta[bb, t, hh] * (v[bb, t, hh] - st @ k[bb, t, hh])
                st = st + np.outer(u, k[bb, t, hh])
                out[bb, t, hh] = st @ (q[bb, t, hh] / np.sqrt(n))
            state[bb, hh] = st
    return out, state


def gdn_projections(x, w):
    b, s, _ = x.shape
    n = rms_norm(x, w["gdn.norm"])
    q, k, v = ((n @ w[name]).reshape(b, s, GDN_HEADS, GDN_DIM) for name in ("gdn.q", "gdn.k", "gdn.v"))
    decay = -np.exp(w["gdn.a_log"]) * np.log1p(np.exp(n @ w["gdn.a"]))
    beta = 1 / (1 + np.exp(-(n @ w["gdn.b"])))
    return q, k, v, decay, beta


def gdn_layer_ref(x, w, state=None):
    out, state = gated_delta_rule(*gdn_projections(x, w), state)
    b, s, _ = x.shape
    return x + out.reshape(b, s, -1) @ w["gdn.o"], state


def reference_forward(tokens, w):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = w["embed"][tokens]  # [B, S, D]
    x, _ = gdn_layer_ref(x, w)
    x = x + swiglu(rms_norm(x, w["ffn.norm"]), w["ffn.gate"], w["ffn.up"], w["ffn.down"])
    cos, sin = rope_tables(SEQ, ATT_DIM)
    causal = np.tril(np.ones((SEQ, SEQ), bool))
    group = ATT_HEADS // ATT_KV_HEADS
    out = np.zeros_like(x)
    for bb in range(BATCH):
        xb = x[bb]
        n1 = rms_norm(xb, w["att.ln1"])
        q = rope((n1 @ w["att.q"]).reshape(SEQ, ATT_HEADS, ATT_DIM), cos, sin)
        k = rope((n1 @ w["att.k"]).reshape(SEQ, ATT_KV_HEADS, ATT_DIM), cos, sin)
        v = (n1 @ w["att.v"]).reshape(SEQ, ATT_KV_HEADS, ATT_DIM)
        heads = []
        for h in range(ATT_HEADS):
            scores = q[:, h] @ k[:, h // group].T / np.sqrt(ATT_DIM)
            scores = np.where(causal, scores, -np.inf)
            probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs /= probs.sum(axis=-1, keepdims=True)
            heads.append(probs @ v[:, h // group])
        hidden = xb + np.concatenate(heads, axis=-1) @ w["att.o"]
        out[bb] = hidden + swiglu(rms_norm(hidden, w["att.ln2"]), w["att.gate"], w["att.up"], w["att.down"])
    return rms_norm(out, w["norm"]) @ w["lm_head"]


# --- tests -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def weights():
    return random_weights(seed=0)


@pytest.fixture(scope="module")
def tokens():
    return np.random.default_rng(1).integers(0, VOCAB, (BATCH, SEQ)).astype(np.int64)


@pytest.mark.parametrize("policy", ["direct", "fusable"])
def test_hybrid_model_matches_numpy(policy, weights, tokens):
    logits = build_hybrid(policy).compile()(tokens=tokens, **weights)
    expected = reference_forward(tokens, weights)
    assert logits.shape == (BATCH, SEQ, VOCAB)
    # 1e-4 relative to the logits' scale: f32 through two layers of 32- to 48-wide sums
    # and a 6-step recurrence (contracting: beta * |k|^2 < 2), against float64.
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_hybrid_model_lowers_to_gated_delta_net():
    g = build_hybrid("fusable")
    g.lower()
    text = str(g)
    assert "rlx_hir." not in text
    assert text.count('"rlx.gated_delta_net"') == 1
    assert "@ gdn" in g.inspect()


CHUNKS = (3, 2, 1)  # a prompt of 3, then 2, then one decode step: SEQ = 6


def build_gdn_chunks() -> GraphModule:
    """One GDN layer over the whole sequence, and the same layer over CHUNKS with the state carried."""
    g = GraphModule.hir("gdn_chunks")
    x = g.input("x", (BATCH, SEQ, HIDDEN))
    p = declare_params(g)
    zeros = g.constant(np.zeros(HIDDEN, np.float32))
    one = g.constant(np.ones((1,), np.float32))
    whole = gdn_output(g, x, g.gated_delta_net(*gdn_inputs(g, x, p, zeros, one)), p)
    state = g.constant(np.zeros((BATCH, GDN_HEADS, GDN_DIM, GDN_DIM), np.float32))
    outputs, start = [], 0
    for length in CHUNKS:
        chunk = g.op(rlx.NarrowOp, x, axis=1, start=start, len=length)
        out, state = g.gated_delta_net_carry(*gdn_inputs(g, chunk, p, zeros, one), state)
        outputs.append(gdn_output(g, chunk, out, p))
        start += length
    g.set_outputs([whole, *outputs, state])
    return g


def test_gated_delta_net_carry_in_chunks_equals_whole_sequence(weights):
    x = np.random.default_rng(2).standard_normal((BATCH, SEQ, HIDDEN)).astype(np.float32)
    whole, *chunks, state = build_gdn_chunks().compile()(x=x, **weights)
    streamed = np.concatenate(chunks, axis=1)
    assert streamed.shape == whole.shape == (BATCH, SEQ, HIDDEN)
    # Same f32 operations in the same order per step, only split at chunk borders: agree to rounding.
    np.testing.assert_allclose(streamed, whole, rtol=1e-5, atol=1e-5 * np.abs(whole).max())
    w64 = {k: v.astype(np.float64) for k, v in weights.items()}
    expected, expected_state = gdn_layer_ref(x.astype(np.float64), w64)
    # f32 against float64 through a 6-step recurrence and 32-wide projections.
    np.testing.assert_allclose(whole, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    np.testing.assert_allclose(state, expected_state, rtol=1e-4, atol=1e-4 * np.abs(expected_state).max())


def test_gated_delta_net_carry_continues_from_a_given_state():
    """A nonzero incoming state: the block's outputs and new state follow the recurrence from it."""
    rng = np.random.default_rng(3)
    b, s, h, n = 1, 4, 3, 4
    q, k, v = (rng.standard_normal((b, s, h, n)).astype(np.float32) * 0.5 for _ in range(3))
    decay = -rng.uniform(0.05, 1.0, (b, s, h)).astype(np.float32)
    beta = rng.uniform(0.1, 0.9, (b, s, h)).astype(np.float32)
    state0 = rng.standard_normal((b, h, n, n)).astype(np.float32)
    g = GraphModule.hir("carry")
    args = [g.input(name, a.shape) for name, a in zip("qkvgbs", (q, k, v, decay, beta, state0))]
    out, new_state = g.gated_delta_net_carry(*args)
    assert out.shape == (b, s, h, n) and new_state.shape == (b, h, n, n)
    g.set_outputs([out, new_state])
    got_out, got_state = g.compile()(q, k, v, decay, beta, state0)
    want_out, want_state = gated_delta_rule(*(a.astype(np.float64) for a in (q, k, v, decay, beta, state0)))
    # f32 against float64 over 4 steps of n = 4 products.
    np.testing.assert_allclose(got_out, want_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_state, want_state, rtol=1e-4, atol=1e-5)


def test_gated_delta_net_builder_checks_shapes():
    g = GraphModule.hir("bad")
    q = g.input("q", (1, 3, 2, 4))
    k = g.input("k", (1, 3, 2, 4))
    gate = g.input("g", (1, 3, 2))
    wrong = g.input("beta", (1, 3, 3))
    with pytest.raises(BuildError, match=r"block 'gdn': .*rlx_hir.gated_delta_net.*beta has shape \[1, 3, 3\]"):
        g.named("gdn", lambda: g.gated_delta_net(q, k, k, gate, wrong))
    with pytest.raises(BuildError, match="differs from state_size 8"):
        g.gated_delta_net(q, k, k, gate, gate, state_size=8)
    bad_state = g.input("state", (1, 2, 4, 3))
    with pytest.raises(BuildError, match=r"state has shape \[1, 2, 4, 3\]"):
        g.gated_delta_net_carry(q, k, k, gate, gate, bad_state)
