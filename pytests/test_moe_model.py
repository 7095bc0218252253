"""The Mixtral / Qwen2-MoE-shaped model of `rlx_mlir.models.moe`: a 2-layer model's logits under
both fusion policies against a float64 numpy forward written from the module's description
(per-token routing loop), and KV-cache generation against recomputing the whole sequence.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rlx_mlir.models.generate import generate
from rlx_mlir.models.moe import CachedMoe, MoeConfig, build_moe, random_weights

MIXTRAL = MoeConfig(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, experts=4, top_k=2, expert_ffn=48,
                    vocab=97, seq=7, normalize=True)
QWEN2_MOE = dataclasses.replace(MIXTRAL, experts=6, top_k=2, normalize=False, shared_ffn=40, shared_gate=True)


def rms_norm(x, gain, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gain


def rope(x, positions, theta):
    hd = x.shape[-1]
    half = hd // 2
    angles = positions[:, None] * theta ** (-np.arange(0, hd, 2) / hd)[None, :]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    first, second = x[..., :half], x[..., half:]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def silu(v):
    return v / (1 + np.exp(-v))


def moe_ffn(rows, w, p, c: MoeConfig):
    out = np.zeros_like(rows)
    for t, row in enumerate(rows):
        logits = row @ w[p + "router"]
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        chosen = sorted(range(c.experts), key=lambda e: (-probs[e], e))[: c.top_k]
        weights = np.array([probs[e] for e in chosen])
        if c.normalize:
            weights /= weights.sum()
        for e, weight in zip(chosen, weights):
            out[t] += weight * ((silu(row @ w[p + "experts.gate"][e]) * (row @ w[p + "experts.up"][e])) @ w[p + "experts.down"][e])
        if c.shared_ffn:
            shared = (silu(row @ w[p + "shared.gate"]) * (row @ w[p + "shared.up"])) @ w[p + "shared.down"]
            if c.shared_gate:
                shared = shared / (1 + np.exp(-(row @ w[p + "shared_gate"])[0]))
            out[t] += shared
    return out


def reference_forward(tokens, w, c: MoeConfig):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    logits = []
    for row in tokens:
        x = w["embed"][row]
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
                scores = np.where(causal, q[:, h] @ k[:, h // group].T / np.sqrt(c.head_dim), -np.inf)
                probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
                heads.append(probs / probs.sum(axis=-1, keepdims=True) @ v[:, h // group])
            h_res = x + np.concatenate(heads, axis=-1) @ w[p + "o"]
            x = h_res + moe_ffn(rms_norm(h_res, w[p + "ln2"], c.eps), w, p, c)
        logits.append(rms_norm(x, w["norm"], c.eps) @ w["lm_head"])
    return np.stack(logits)


@pytest.mark.parametrize("config", [MIXTRAL, QWEN2_MOE], ids=["mixtral", "qwen2-moe"])
@pytest.mark.parametrize("policy", ["direct", "fusable"])
def test_two_layer_moe_model_matches_numpy(config, policy):
    config = dataclasses.replace(config, policy=policy)
    weights = random_weights(config, seed=1)
    tokens = np.random.default_rng(2).integers(0, config.vocab, (config.batch, config.seq)).astype(np.int64)
    got = build_moe(config).compile()(tokens=tokens, **weights)
    want = reference_forward(tokens, weights, config)
    assert got.shape == (config.batch, config.seq, config.vocab)
    assert np.allclose(got, want, rtol=1e-3, atol=1e-3), np.abs(got - want).max()


def test_cached_generation_matches_recomputing_the_sequence():
    config = dataclasses.replace(QWEN2_MOE, layers=2)
    weights = random_weights(config, seed=3)
    prompt = np.array([[5, 17, 42]], np.int64)
    model = CachedMoe(config, weights, capacity=16)
    ids = generate(model, prompt, max_new_tokens=4)
    assert ids.shape == (1, 4)  # the new tokens
    # Greedy by a full recomputation at each length: the argmax of the last position's logits.
    sequence = prompt[0].tolist()
    for _ in range(4):
        logits = reference_forward(np.array([sequence]), weights, config)
        sequence.append(int(np.argmax(logits[0, -1])))
    assert ids[0].tolist() == sequence[3:]
    assert model.compiled_lengths == [1, 3]  # one prefill, one decode step for every position


def test_config_rejects_bad_routing():
    with pytest.raises(ValueError, match="top_k 5 must be between 1 and experts 4"):
        MoeConfig(experts=4, top_k=5)
    with pytest.raises(ValueError, match=r"shared_gate needs a shared expert \(shared_ffn > 0\)"):
        MoeConfig(shared_gate=True)


# --- quantised weights ----------------------------------------------------------------------------

QUANT_MIXTRAL = dataclasses.replace(MIXTRAL, expert_ffn=64, quant="q8_0")
QUANT_QWEN2 = dataclasses.replace(QWEN2_MOE, expert_ffn=32, shared_ffn=64, quant={
    "layers.0.q": "q4_0", "layers.0.experts.gate": "q8_0", "layers.0.experts.down": "q4_0",
    "layers.1.experts.up": "q4_0", "layers.1.shared.up": "q8_0", "layers.1.o": "q8_0", "lm_head": "q4_0",
    "embed": "q8_0"})


def dequantized(packed, scheme, shape, name=""):
    """Written plainly: each expert's (or the matrix's) GGUF rows `W [out, in]` decoded, transposed to
    `[in, out]`; the embedding's rows are the table's rows."""
    from rlx_mlir import quant

    if name == "embed":
        return quant.dequantize(packed, scheme, shape)
    if len(shape) == 3:
        return np.stack([quant.dequantize(packed[e], scheme, (shape[2], shape[1])).T for e in range(shape[0])])
    return quant.dequantize(packed, scheme, (shape[1], shape[0])).T


@pytest.mark.parametrize("config", [QUANT_MIXTRAL, QUANT_QWEN2], ids=["mixtral-q8_0", "qwen2-moe-mixed"])
@pytest.mark.parametrize("policy", ["direct", "fusable"])
def test_quantized_moe_model_matches_numpy_on_the_decoded_weights(config, policy):
    from rlx_mlir.models.moe import quant_schemes, weight_shapes

    config = dataclasses.replace(config, policy=policy)
    weights = random_weights(config, seed=4)
    schemes, shapes = quant_schemes(config), weight_shapes(config)
    for name, scheme in schemes.items():  # packed as the module doc says: u8 [(E,) out, row bytes], embed's rows as is
        rows, k = shapes[name] if name == "embed" else (shapes[name][-1], shapes[name][-2])
        row_bytes = {"q4_0": 18, "q8_0": 34}[scheme] * k // 32
        assert weights[name].dtype == np.uint8 and weights[name].shape[-2:] == (rows, row_bytes), name
    decoded = {n: dequantized(w, schemes[n], shapes[n], n) if n in schemes else w for n, w in weights.items()}
    tokens = np.random.default_rng(5).integers(0, config.vocab, (config.batch, config.seq)).astype(np.int64)
    got = build_moe(config).compile()(tokens=tokens, **weights)
    want = reference_forward(tokens, decoded, config)
    assert np.allclose(got, want, rtol=1e-3, atol=1e-3), np.abs(got - want).max()


def test_quantized_moe_generation_matches_the_float_model_on_the_decoded_weights():
    from rlx_mlir.models.moe import dequantize_weights, projection_names

    # Every projection and the embedding packed (the step's lookup is rlx.dequant_gather).
    config = dataclasses.replace(QUANT_QWEN2, quant={**dict.fromkeys(projection_names(QUANT_QWEN2), "q8_0"),
                                                     "embed": "q8_0"})
    weights = random_weights(config, seed=6)
    prompt = np.array([[3, 11, 60, 2]], np.int64)
    ids = generate(CachedMoe(config, weights, capacity=16), prompt, max_new_tokens=4)
    sequence = prompt[0].tolist()
    decoded = dequantize_weights(config, weights)
    for _ in range(4):
        logits = reference_forward(np.array([sequence]), decoded, config)
        sequence.append(int(np.argmax(logits[0, -1])))
    assert ids[0].tolist() == sequence[4:]


def test_quantized_config_errors_name_the_weight():
    with pytest.raises(ValueError, match="quant names 'layers.0.router', which is not a projection"):
        dataclasses.replace(MIXTRAL, quant={"layers.0.router": "q8_0"})
    with pytest.raises(ValueError, match="'layers.0.experts.down' has 48 inputs, not a multiple of the 32-weight blocks of q8_0"):
        dataclasses.replace(MIXTRAL, quant="q8_0")
    with pytest.raises(ValueError, match="'layers.1.k' has scheme 'int8/32'"):
        dataclasses.replace(MIXTRAL, quant={"layers.1.k": "int8/32"})


def test_dynamic_moe_model_and_generation_serve_every_length():
    """A symbolic token count: one compile of `build_moe(dynamic=True)` runs two lengths (each
    specialised on first use), and `CachedMoe(dynamic=True)` compiles one step for prefill and decode."""
    config = dataclasses.replace(MIXTRAL, layers=1)
    weights = random_weights(config, seed=8)
    exe = build_moe(config, dynamic=True).compile()
    rng = np.random.default_rng(9)
    for seq in (3, 6):
        tokens = rng.integers(0, config.vocab, (1, seq)).astype(np.int64)
        got = exe(tokens=tokens, **weights)
        want = reference_forward(tokens, weights, config)
        assert got.shape == (1, seq, config.vocab)
        assert np.allclose(got, want, rtol=1e-3, atol=1e-3), np.abs(got - want).max()
    prompt = np.array([[4, 9, 33]], np.int64)
    model = CachedMoe(config, weights, capacity=16, dynamic=True)
    ids = generate(model, prompt, max_new_tokens=3)
    sequence = prompt[0].tolist()
    for _ in range(3):
        sequence.append(int(np.argmax(reference_forward(np.array([sequence]), weights, config)[0, -1])))
    assert ids[0].tolist() == sequence[3:]
    assert model.compiled_lengths == ["SEQ"]
