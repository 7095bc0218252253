"""rlx-outline-blocks on the KV-cache step (`build_llama_step`): each layer is a named block
(`GraphModule.named("layers.i")`) of flat ops, outlined into one function called once per layer,
its caches passed in and written in place.  Outlined and layer-by-layer builds compute the same
logits and leave the same caches, f32 and with quantised (q8_0) projections."""

from __future__ import annotations

import functools
import re
from unittest import mock

import numpy as np
import pytest

from rlx_mlir.models.generate import CachedLlama, generate
from rlx_mlir.models.llama import LlamaConfig, random_weights
from rlx_mlir.models.llama_cached import build_llama_step, cache_names, cache_shape
from rlx_mlir.pipelines.lower_to_llvm import LowerToLLVM
from rlx_mlir.runtime import jit

CAPACITY = 16
PROMPT = np.array([[5, 17, 42, 3, 88]])


def _config(quant):
    return LlamaConfig(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=97, quant=quant)


def _steps(config, outline: bool):
    """The prefill (5 tokens) and decode steps, compiled with rlx-outline-blocks on or off."""
    pipeline = functools.partial(LowerToLLVM, outline_blocks=outline)
    with mock.patch.object(jit, "LowerToLLVM", pipeline):
        return [build_llama_step(config, seq, CAPACITY).compile(cache=False) for seq in (PROMPT.shape[1], 1)]


def _run(config, weights, steps):
    """Logits of the prompt, then of three decode steps, and the caches they leave."""
    caches = {name: np.zeros(cache_shape(config, CAPACITY), np.float32) for name in cache_names(config)}
    prefill, decode = steps
    outputs = prefill(tokens=PROMPT, pos=np.array(0), **caches, **weights)
    assert all(out is caches[name] for out, name in zip(outputs[1:], cache_names(config)))  # written in place
    logits = [outputs[0]]
    for position, token in enumerate([7, 11, 13], start=PROMPT.shape[1]):
        logits.append(decode(tokens=np.array([[token]]), pos=np.array(position), **caches, **weights)[0])
    return logits, caches


@pytest.mark.parametrize("quant", [None, "q8_0"])
def test_outlined_step_matches_the_layer_by_layer_step(quant):
    config = _config(quant)
    weights = random_weights(config, seed=1)
    outlined = _steps(config, outline=True)
    for step in outlined:  # one function for the layers, called once per layer
        calls = re.findall(r"llvm\.call @(__rlx_block_layers_\w+)\(", step.llvm_ir)
        assert len(calls) == config.layers and len(set(calls)) == 1
    inline = _steps(config, outline=False)
    assert "__rlx_block" not in inline[1].llvm_ir
    logits, caches = _run(config, weights, outlined)
    expected_logits, expected_caches = _run(config, weights, inline)
    for actual, expected in zip(logits, expected_logits):
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    for name in cache_names(config):
        np.testing.assert_allclose(caches[name], expected_caches[name], rtol=1e-5, atol=1e-6)
        assert np.abs(caches[name][0, :PROMPT.shape[1] + 3]).max(axis=-1).min() > 0  # rows written
        assert not caches[name][0, PROMPT.shape[1] + 3:].any()  # and only those


def test_generation_with_outlined_steps_gives_the_layer_by_layer_tokens():
    config = _config(None)
    weights = random_weights(config, seed=2)
    tokens = {}
    for outline in (True, False):
        with mock.patch.object(jit, "LowerToLLVM", functools.partial(LowerToLLVM, outline_blocks=outline)):
            tokens[outline] = generate(CachedLlama(config, weights, capacity=CAPACITY, cache=False), PROMPT[0], 8)
    np.testing.assert_array_equal(tokens[True], tokens[False])
