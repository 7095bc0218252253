"""Cached generation on the 2-layer Llama-style model against a plain numpy loop.

The reference recomputes the whole forward pass (float64, written here) over
every token so far at each step, with no cache; the model under test runs one
prefill and then one compiled decode step per token, reading and writing its
KV caches in place.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir.ir.diagnostics import DiagnosticCollector
from rlx_mlir.models.generate import CachedLlama, generate, sample
from rlx_mlir.models.llama import LlamaConfig, random_weights
from rlx_mlir.models.llama_cached import build_llama_step
from rlx_mlir.passmanager.pipeline import run_pipeline
from rlx_mlir.pipelines.lower_to_llvm import OUT_PARAMS, LowerToLLVM

CONFIG = LlamaConfig(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=97,
                     rope_theta=10000.0, eps=1e-5)
CAPACITY = 32
PROMPT = np.array([5, 17, 42, 3, 88])
NEW_TOKENS = 20


def _rms_norm(x, gain, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gain


def _rope(x, theta):
    """NeoX rotate-half of x [S, heads, hd] at positions 0 .. S - 1."""
    hd = x.shape[-1]
    angles = np.arange(x.shape[0])[:, None] * theta ** (-np.arange(0, hd, 2) / hd)[None, :]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    first, second = x[..., : hd // 2], x[..., hd // 2:]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def full_forward(tokens, w, c: LlamaConfig) -> np.ndarray:
    """Logits [S, vocab] of the whole sequence `tokens` [S], recomputed from scratch (float64)."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    seq = len(tokens)
    x = w["embed"][tokens]
    causal = np.tril(np.ones((seq, seq), bool))
    group = c.heads // c.kv_heads
    for i in range(c.layers):
        p = f"layers.{i}."
        n1 = _rms_norm(x, w[p + "ln1"], c.eps)
        q = _rope((n1 @ w[p + "q"]).reshape(seq, c.heads, c.head_dim), c.rope_theta)
        k = _rope((n1 @ w[p + "k"]).reshape(seq, c.kv_heads, c.head_dim), c.rope_theta)
        v = (n1 @ w[p + "v"]).reshape(seq, c.kv_heads, c.head_dim)
        heads = []
        for h in range(c.heads):
            scores = np.where(causal, q[:, h] @ k[:, h // group].T / np.sqrt(c.head_dim), -np.inf)
            probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
            heads.append(probs / probs.sum(axis=-1, keepdims=True) @ v[:, h // group])
        h_res = x + np.concatenate(heads, axis=-1) @ w[p + "o"]
        n2 = _rms_norm(h_res, w[p + "ln2"], c.eps)
        gate = n2 @ w[p + "gate"]
        x = h_res + (gate / (1 + np.exp(-gate)) * (n2 @ w[p + "up"])) @ w[p + "down"]
    return _rms_norm(x, w["norm"], c.eps) @ w["lm_head"]


@pytest.fixture(scope="module")
def weights():
    return random_weights(CONFIG, seed=0)


@pytest.fixture(scope="module")
def model(weights):
    return CachedLlama(CONFIG, weights, capacity=CAPACITY)


@pytest.fixture(scope="module")
def reference_greedy(weights):
    """The plain loop: recompute every logit each step, append the argmax (20 full forwards)."""
    tokens = list(PROMPT)
    for _ in range(NEW_TOKENS):
        tokens.append(int(np.argmax(full_forward(np.array(tokens), weights, CONFIG)[-1])))
    return np.array(tokens[len(PROMPT):])


def _close_to(actual, expected):
    """1e-4 relative to the logits' scale (f32 compute against a float64 reference)."""
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_greedy_generation_matches_numpy_loop(model, reference_greedy):
    generated = generate(model, PROMPT, NEW_TOKENS)
    assert generated.shape == (NEW_TOKENS,)
    np.testing.assert_array_equal(generated, reference_greedy)
    # One prefill (5 tokens) and one decode step (1 token), each compiled once, served every position.
    assert model.compiled_lengths == [1, len(PROMPT)]


def test_one_dynamic_step_serves_prefill_and_decode(weights, reference_greedy):
    """With symbolic SEQ (rlx_mlir.dims.variants), one compile runs the 5-token prefill and every decode step."""
    pytest.importorskip("rlx_mlir.dims.variants")
    dynamic = CachedLlama(CONFIG, weights, capacity=CAPACITY, dynamic=True)
    np.testing.assert_array_equal(generate(dynamic, PROMPT, 8), reference_greedy[:8])
    assert dynamic.compiled_lengths == ["SEQ"]


def test_each_decode_step_matches_recomputing_the_sequence(model, weights, reference_greedy):
    model.reset()
    tokens = list(PROMPT)
    _close_to(model.forward(PROMPT[None, :])[0], full_forward(PROMPT, weights, CONFIG))
    for token in reference_greedy[:-1]:
        tokens.append(token)
        logits = model.forward(np.array([[token]]))[0, -1]
        _close_to(logits, full_forward(np.array(tokens), weights, CONFIG)[-1])
    assert model.position == len(tokens)


def _bufferized_decode_step(**pipeline_options) -> str:
    """The decode step through rlx-lower-to-llvm up to out-params (bufferized), as text."""
    graph = build_llama_step(CONFIG, 1, CAPACITY)
    steps = LowerToLLVM(**pipeline_options).elements()
    with graph.context, DiagnosticCollector(graph.context):
        run_pipeline(graph.module.operation, steps[: steps.index(OUT_PARAMS) + 1])
    return str(graph.module)


def test_outlined_decode_step_writes_each_cache_in_place():
    """Outlined (rlx-outline-blocks), the layer's function writes one row into each of the two caches
    it takes; the step calls it once per layer with that layer's caches, its own arguments, and
    neither allocates nor copies a cache."""
    module = _bufferized_decode_step()
    cache = f"memref<1x{CAPACITY}x{CONFIG.kv_heads * CONFIG.head_dim}xf32>"
    assert re.findall(r"memref\.(?:alloc|copy)[^\n]*" + re.escape(cache), module) == []
    layer = re.search(r"func\.func private @(__rlx_block_layers_\w+)\(([^\n]*)", module)
    assert layer is not None and layer.group(2).count(cache) == 2 and "->" not in layer.group(2).split(")")[-1]
    body = module[layer.start():module.index("func.func @llama_step")]
    row_writes = re.findall(r"memref\.copy [^\n]*to memref<1x1x32xf32, strided<\[" + str(CAPACITY * 32), body)
    assert len(row_writes) == 2
    step = module[module.index("func.func @llama_step"):]
    calls = re.findall(r"call @" + layer.group(1) + r"\(([^)]*)\)", step)
    assert len(calls) == CONFIG.layers
    for i, operands in enumerate(calls):  # layer i's caches: arguments 2 + 2i and 3 + 2i of the step
        assert f"%arg{2 + 2 * i}, %arg{3 + 2 * i}," in operands


def test_decode_step_neither_allocates_nor_copies_a_cache():
    """The bufferized decode step (rlx-lower-to-llvm up to out-params) writes one row into each cache
    (layers in place: rlx-outline-blocks off, so that each layer's writes are its own)."""
    graph = build_llama_step(CONFIG, 1, CAPACITY)
    steps = LowerToLLVM(outline_blocks=False).elements()
    with graph.context, DiagnosticCollector(graph.context):
        run_pipeline(graph.module.operation, steps[: steps.index(OUT_PARAMS) + 1])
    function = str(graph.module)
    cache = f"memref<1x{CAPACITY}x{CONFIG.kv_heads * CONFIG.head_dim}xf32>"
    signature = function[function.index("func.func @llama_step"):].split("\n", 1)[0]
    assert signature.count(cache) == 2 * CONFIG.layers  # the caches are arguments, not out-params
    assert re.findall(r"memref\.(?:alloc|copy)[^\n]*" + re.escape(cache), function) == []
    row_writes = re.findall(r"memref\.copy [^\n]*to memref<1x1x32xf32, strided<\[" + str(CAPACITY * 32), function)
    assert len(row_writes) == 2 * CONFIG.layers


def test_batched_prompts_generate_each_row_independently(weights, reference_greedy):
    config = dataclasses.replace(CONFIG, batch=2)
    batched = CachedLlama(config, weights, capacity=16)
    other = np.array([1, 2, 3, 4, 5])
    generated = generate(batched, np.stack([PROMPT, other]), 6)
    assert generated.shape == (2, 6)
    np.testing.assert_array_equal(generated[0], reference_greedy[:6])
    tokens = list(other)
    for _ in range(6):
        tokens.append(int(np.argmax(full_forward(np.array(tokens), weights, CONFIG)[-1])))
    np.testing.assert_array_equal(generated[1], tokens[len(other):])


def test_sampling_is_reproducible_and_respects_top_k(model, weights):
    first = generate(model, PROMPT, 8, temperature=1.0, top_k=5, seed=7)
    again = generate(model, PROMPT, 8, temperature=1.0, top_k=5, seed=7)
    np.testing.assert_array_equal(first, again)
    tokens = list(PROMPT)
    for token in first:  # every sampled token is among the 5 most likely under the reference
        logits = full_forward(np.array(tokens), weights, CONFIG)[-1]
        assert token in np.argsort(-logits)[:5]
        tokens.append(token)
    others = {tuple(generate(model, PROMPT, 8, temperature=1.0, top_k=5, seed=s)) for s in range(4)}
    assert len(others) > 1  # different seeds, different samples


def test_top_k_one_and_tiny_top_p_are_greedy(model, reference_greedy):
    np.testing.assert_array_equal(generate(model, PROMPT, 6, temperature=2.0, top_k=1, seed=0), reference_greedy[:6])
    np.testing.assert_array_equal(generate(model, PROMPT, 6, temperature=2.0, top_p=1e-6, seed=0), reference_greedy[:6])


def test_generation_beyond_the_capacity_is_rejected(model):
    with pytest.raises(ValueError, match=r"a prompt of 5 tokens and 29 new tokens need 33 cache positions; the capacity is 32"):
        generate(model, PROMPT, 29)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(temperature=-1.0), "temperature must be >= 0"),
        (dict(temperature=1.0, top_k=0), "top_k must be at least 1"),
        (dict(temperature=1.0, top_p=1.5), r"top_p must be in \(0, 1\]"),
    ],
)
def test_bad_sampling_options_are_rejected(model, options, message):
    with pytest.raises(ValueError, match=message):
        generate(model, PROMPT, 3, **options)


def test_prefill_buckets_serve_every_prompt_length_with_one_compile_per_bucket(weights, reference_greedy):
    """Prompts of 3, 5 and 8 tokens run in the 8-token bucket (padded); their logits and the greedy
    tokens after them equal the unpadded reference, and multi-token runs after the prefill too."""
    bucketed = CachedLlama(CONFIG, weights, capacity=CAPACITY, prefill_buckets=(8, 16))
    for length in (3, 5, 8):
        bucketed.reset()
        prompt = np.array([5, 17, 42, 3, 88, 9, 60, 1])[:length]
        _close_to(bucketed.forward(prompt[None])[0], full_forward(prompt, weights, CONFIG))
        assert bucketed.position == length
    np.testing.assert_array_equal(generate(bucketed, PROMPT, NEW_TOKENS), reference_greedy)
    assert bucketed.compiled_lengths == [1, 8]
    # A later run of 2 tokens (bucket 8) attends to the prompt, not to the padding written past it.
    bucketed.reset()
    bucketed.forward(PROMPT[None])
    extra = np.array([7, 30])
    _close_to(bucketed.forward(extra[None])[0], full_forward(np.concatenate([PROMPT, extra]), weights, CONFIG)[-2:])
    assert bucketed.compiled_lengths == [1, 8]


def test_a_new_prompt_length_within_a_bucket_compiles_nothing(weights):
    """The documented bound (README, "KV cache"): every prompt length up to the largest bucket runs in
    an already compiled step once its bucket has been compiled: `compile` is not even asked (no cache
    hit or miss) for the new lengths, and the first length of the next bucket is one compile."""
    rlx_mlir.clear_compile_cache()
    bucketed = CachedLlama(CONFIG, weights, capacity=CAPACITY, prefill_buckets=(8, 16))
    bucketed.forward(np.arange(5)[None])
    before = rlx_mlir.compile_cache_info()
    for length in (1, 2, 3, 6, 7, 8):
        bucketed.reset()
        prompt = (np.arange(length) * 7 + 3) % CONFIG.vocab
        _close_to(bucketed.forward(prompt[None])[0, -1], full_forward(prompt, weights, CONFIG)[-1])
    after = rlx_mlir.compile_cache_info()
    # length 1 is the decode step: its one compile is the only request for a new executable
    assert (after.hits + after.misses) - (before.hits + before.misses) == 1
    bucketed.reset()
    bucketed.forward(np.arange(12)[None])
    assert rlx_mlir.compile_cache_info().misses - after.misses == 1
    assert bucketed.compiled_lengths == [1, 8, 16]


def test_prefill_buckets_fall_back_to_the_exact_length(weights):
    """Longer than every bucket, or a bucket that would pass the capacity: the run's own length."""
    bucketed = CachedLlama(CONFIG, weights, capacity=12, prefill_buckets=(8,))
    prompt = np.arange(10) % CONFIG.vocab
    _close_to(bucketed.forward(prompt[None])[0], full_forward(prompt, weights, CONFIG))
    bucketed.reset()
    bucketed.forward(np.arange(6)[None])
    bucketed.forward(np.arange(3)[None])  # 6 + 8 > 12: runs as 3
    assert bucketed.compiled_lengths == [3, 8, 10]


@pytest.mark.parametrize("buckets, message", [
    ((8, 4), r"prefill_buckets must be strictly ascending, got \[8, 4\]"),
    ((0, 4), r"prefill_buckets must be a sequence of positive integers, got \(0, 4\)"),
    (16, r"prefill_buckets must be a sequence of positive integers, got 16"),
])
def test_bad_prefill_buckets_are_rejected(weights, buckets, message):
    with pytest.raises(ValueError, match=message):
        CachedLlama(CONFIG, weights, capacity=CAPACITY, prefill_buckets=buckets)


def test_sampling_a_row_without_a_finite_softmax_is_greedy():
    """Rows with a NaN or +inf logit, all logits -inf, or logits / temperature overflowing get the
    greedy choice (NaN the largest), `rlx.sample`'s rule, whatever top_k and top_p; numpy's sampler
    raised "Probabilities contain NaN" (a model whose f16 logits overflowed ended generate())."""
    logits = np.array([
        [0.0, np.nan, 1.0, np.nan],
        [0.0, np.inf, 1.0, np.inf],
        [-np.inf, -np.inf, -np.inf, -np.inf],
        [1.0, 3.0, 2.0, 3.0],  # divided by 1e-310: +inf
        [np.nan, 1.0, 0.0, 2.0],  # top_k = 2 would drop the NaN
    ])
    rng = np.random.default_rng(0)
    for temperature, top_k, top_p in [(1.0, None, None), (1e-310, None, None), (1.0, 2, 0.5)]:
        got = sample(logits, rng, temperature=temperature, top_k=top_k, top_p=top_p)
        want = [1, 1, 0, 1, 0] if temperature == 1e-310 else [1, 1, 0, None, 0]
        assert [g for g, w in zip(got.tolist(), want) if w is not None] == [w for w in want if w is not None]
    # a finite row still samples: the last one of three rows, at temperature 1, over many draws
    draws = {int(sample(np.array([[0.0, 0.0, 0.0]]), rng, temperature=1.0)[0]) for _ in range(60)}
    assert draws == {0, 1, 2}
