"""A 2-layer Llama-style decoder built with the GraphModule builder, compiled and
run, against a forward pass written plainly in numpy here (float64)."""

from __future__ import annotations

import numpy as np
import pytest

from rlx_mlir.models.llama import LlamaConfig, build_llama, random_weights

CONFIG = LlamaConfig(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=97, seq=7,
                     rope_theta=10000.0, eps=1e-5)


def rms_norm(x, gain, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gain


def rope(x, positions, theta):
    # x: [S, heads, hd]; NeoX rotate-half on every head dim.
    hd = x.shape[-1]
    half = hd // 2
    freqs = theta ** (-np.arange(0, hd, 2) / hd)
    angles = positions[:, None] * freqs[None, :]  # [S, half]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    first, second = x[..., :half], x[..., half:]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def reference_forward(tokens, w, c: LlamaConfig):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    logits = []
    for row in tokens:
        x = w["embed"][row]  # [S, D]
        seq = len(row)
        positions = np.arange(seq, dtype=np.float64)
        causal = np.tril(np.ones((seq, seq), bool))
        for i in range(c.layers):
            p = f"layers.{i}."
            n1 = rms_norm(x, w[p + "ln1"], c.eps)
            q = rope((n1 @ w[p + "q"]).reshape(seq, c.heads, c.head_dim), positions, c.rope_theta)
            k = rope((n1 @ w[p + "k"]).reshape(seq, c.kv_heads, c.head_dim), positions, c.rope_theta)
            v = (n1 @ w[p + "v"]).reshape(seq, c.kv_heads, c.head_dim)
            group = c.heads // c.kv_heads
            heads = []
            for h in range(c.heads):
                scores = q[:, h] @ k[:, h // group].T / np.sqrt(c.head_dim)
                scores = np.where(causal, scores, -np.inf)
                probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
                probs /= probs.sum(axis=-1, keepdims=True)
                heads.append(probs @ v[:, h // group])
            attn = np.concatenate(heads, axis=-1) @ w[p + "o"]
            h_res = x + attn
            n2 = rms_norm(h_res, w[p + "ln2"], c.eps)
            gate = n2 @ w[p + "gate"]
            ffn = (gate / (1 + np.exp(-gate)) * (n2 @ w[p + "up"])) @ w[p + "down"]
            x = h_res + ffn
        logits.append(rms_norm(x, w["norm"], c.eps) @ w["lm_head"])
    return np.stack(logits)


@pytest.fixture(scope="module")
def weights():
    return random_weights(CONFIG, seed=0)


@pytest.fixture(scope="module")
def tokens():
    return np.random.default_rng(1).integers(0, CONFIG.vocab, (CONFIG.batch, CONFIG.seq)).astype(np.int64)


@pytest.fixture(scope="module")
def compiled_direct():
    return build_llama(CONFIG).compile()


def test_two_layer_llama_matches_numpy(compiled_direct, weights, tokens):
    logits = compiled_direct(tokens=tokens, **weights)
    expected = reference_forward(tokens, weights, CONFIG)
    assert logits.shape == (CONFIG.batch, CONFIG.seq, CONFIG.vocab)
    # 1e-4 relative to the logits' scale (f32 through 2 layers of 64-wide sums).
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_fusion_policies_give_the_same_logits(compiled_direct, weights, tokens):
    fusable = build_llama(LlamaConfig(**{**CONFIG.__dict__, "policy": "fusable"})).compile()
    np.testing.assert_allclose(
        fusable(tokens=tokens, **weights), compiled_direct(tokens=tokens, **weights), rtol=1e-5, atol=1e-5
    )


def test_lowered_model_keeps_block_names():
    g = build_llama(CONFIG)
    assert g.stage == "hir"
    g.lower()
    assert g.stage == "mir"
    summary = g.inspect()
    assert "@ layers.1" in summary and "@ lm_head" in summary
    assert "rlx_hir." not in str(g)
    assert "rlx.fused_swiglu" in summary  # the direct policy emits RLX's fused ops


def test_optimized_fusable_model_fuses_and_keeps_the_logits(compiled_direct, weights, tokens):
    g = build_llama(LlamaConfig(**{**CONFIG.__dict__, "policy": "fusable"}))
    g.optimize()
    assert g.stage == "mir"
    fused_results = [entry.result for entry in g.fusion_report.fused]
    assert any("fused_swiglu" in r for r in fused_results)
    assert any("3 matmuls into one" in r for r in fused_results)  # q/k/v merged
    assert "fusion report" in g.inspect()
    np.testing.assert_allclose(
        g.compile()(tokens=tokens, **weights), compiled_direct(tokens=tokens, **weights), rtol=1e-5, atol=1e-5
    )


def _rss_bytes() -> int:
    import os

    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"), reason="needs /proc to read the RSS")
def test_ten_thousand_calls_do_not_grow_memory(compiled_direct, weights, tokens):
    # The LIR arena is one global; results are numpy arrays the caller owns.
    import gc

    for _ in range(200):
        compiled_direct(tokens=tokens, **weights)
    gc.collect()
    before = _rss_bytes()
    for _ in range(10_000):
        compiled_direct(tokens=tokens, **weights)
    gc.collect()
    growth = _rss_bytes() - before
    # one leaked activation set would be ~76 KB a call (760 MB in all)
    assert growth < 8 * 1024 * 1024, f"RSS grew by {growth / 1e6:.1f} MB over 10,000 calls"


def test_planned_model_inspects_its_plan():
    g = build_llama(CONFIG)
    g.plan()
    assert g.stage == "lir"
    summary = g.inspect()
    assert "plan: fingerprint sha256:" in summary
    assert "arena " in summary and "lower bound" in summary and "I/O: inputs tokens" in summary
    assert "slot [" in summary and "steady" in summary
    planned = g.compile()
    assert planned.signature.inputs[0].name == "tokens"


def test_planned_and_direct_paths_give_the_same_logits(compiled_direct, weights, tokens):
    direct = build_llama(CONFIG).compile(plan=False)
    np.testing.assert_array_equal(direct(tokens=tokens, **weights), compiled_direct(tokens=tokens, **weights))
