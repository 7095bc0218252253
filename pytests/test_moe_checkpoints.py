"""Mixtral and Qwen2-MoE Hugging Face checkpoints (`load_hf_moe`): a small checkpoint written in
each family's tensor names and PyTorch `[out, in]` layout loads back as the builder's weights
(experts stacked and transposed), with its config; wrong or unsupported tensors are errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rlx_mlir.models.checkpoints.hf_moe import load_hf_moe
from rlx_mlir.models.checkpoints.weights import CheckpointError
from rlx_mlir.models.moe import MoeConfig, random_weights

safetensors_numpy = pytest.importorskip("safetensors.numpy")

BASE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=50,
            rms_norm_eps=1e-5, rope_theta=10000.0)
ATTENTION = {"ln1": "input_layernorm", "q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
             "o": "self_attn.o_proj", "ln2": "post_attention_layernorm"}


def hf_tensors(config: MoeConfig, weights: dict, family: str) -> dict:
    """The builder's weights under the family's HF names, matrices as PyTorch's [out, in]."""
    out = {"model.embed_tokens.weight": weights["embed"], "model.norm.weight": weights["norm"],
           "lm_head.weight": weights["lm_head"].T}
    for i in range(config.layers):
        p, hf = f"layers.{i}.", f"model.layers.{i}."
        for ours, theirs in ATTENTION.items():
            w = weights[p + ours]
            out[hf + theirs + ".weight"] = w.T if w.ndim == 2 else w
        if family == "mixtral":
            out[hf + "block_sparse_moe.gate.weight"] = weights[p + "router"].T
            for j in range(config.experts):
                for ours, theirs in (("gate", "w1"), ("up", "w3"), ("down", "w2")):
                    out[hf + f"block_sparse_moe.experts.{j}.{theirs}.weight"] = weights[p + "experts." + ours][j].T
        else:
            out[hf + "mlp.gate.weight"] = weights[p + "router"].T
            for j in range(config.experts):
                for ours in ("gate", "up", "down"):
                    out[hf + f"mlp.experts.{j}.{ours}_proj.weight"] = weights[p + "experts." + ours][j].T
            for ours in ("gate", "up", "down"):
                out[hf + f"mlp.shared_expert.{ours}_proj.weight"] = weights[p + "shared." + ours].T
            out[hf + "mlp.shared_expert_gate.weight"] = weights[p + "shared_gate"].T
    return {k: np.ascontiguousarray(v, np.float32) for k, v in out.items()}


def write_checkpoint(directory, settings, tensors):
    directory.mkdir(exist_ok=True)
    (directory / "config.json").write_text(json.dumps(settings))
    safetensors_numpy.save_file(tensors, str(directory / "model.safetensors"))


MIXTRAL_SETTINGS = {**BASE, "model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2, "intermediate_size": 24}
QWEN_SETTINGS = {**BASE, "model_type": "qwen2_moe", "num_experts": 6, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
                 "shared_expert_intermediate_size": 40, "norm_topk_prob": False}


@pytest.mark.parametrize("family,settings,expected", [
    ("mixtral", MIXTRAL_SETTINGS, dict(experts=4, top_k=2, expert_ffn=24, normalize=True, shared_ffn=0, shared_gate=False)),
    ("qwen2_moe", QWEN_SETTINGS, dict(experts=6, top_k=2, expert_ffn=16, normalize=False, shared_ffn=40, shared_gate=True)),
])
def test_checkpoint_loads_as_the_builder_weights(tmp_path, family, settings, expected):
    config = MoeConfig(layers=2, hidden=32, heads=4, kv_heads=2, head_dim=8, vocab=50, eps=1e-5, **expected)
    weights = random_weights(config, seed=4)
    write_checkpoint(tmp_path / family, settings, hf_tensors(config, weights, family))
    loaded_config, loaded = load_hf_moe(tmp_path / family, seq=5)
    assert loaded_config == MoeConfig(layers=2, hidden=32, heads=4, kv_heads=2, head_dim=8, vocab=50, eps=1e-5, seq=5, **expected)
    assert sorted(loaded) == sorted(weights)
    for name, w in weights.items():
        assert np.array_equal(loaded[name], w), name


def test_missing_expert_and_attention_bias_are_errors(tmp_path):
    config = MoeConfig(layers=2, hidden=32, heads=4, kv_heads=2, head_dim=8, vocab=50, experts=4, expert_ffn=24)
    tensors = hf_tensors(config, random_weights(config), "mixtral")
    del tensors["model.layers.1.block_sparse_moe.experts.2.w3.weight"]
    write_checkpoint(tmp_path / "a", MIXTRAL_SETTINGS, tensors)
    with pytest.raises(CheckpointError, match=r"'layers.1.experts.up' has experts \[0, 1, 3\]; the config has 4"):
        load_hf_moe(tmp_path / "a")
    tensors = hf_tensors(config, random_weights(config), "mixtral")
    tensors["model.layers.0.self_attn.q_proj.bias"] = np.zeros(32, np.float32)
    write_checkpoint(tmp_path / "b", MIXTRAL_SETTINGS, tensors)
    with pytest.raises(CheckpointError, match="'model.layers.0.self_attn.q_proj.bias' is an attention bias"):
        load_hf_moe(tmp_path / "b")
    write_checkpoint(tmp_path / "c", {**MIXTRAL_SETTINGS, "model_type": "llama"}, tensors)
    with pytest.raises(CheckpointError, match="unsupported model_type 'llama'; supported: 'mixtral', 'qwen2_moe'"):
        load_hf_moe(tmp_path / "c")


def test_quantize_at_load_packs_the_hf_rows_and_runs_as_the_decoded_model(tmp_path):
    from rlx_mlir import quant
    from rlx_mlir.models.moe import build_moe

    settings = {**MIXTRAL_SETTINGS, "intermediate_size": 32}
    config = MoeConfig(layers=2, hidden=32, heads=4, kv_heads=2, head_dim=8, vocab=50, eps=1e-5, experts=4, expert_ffn=32)
    tensors = hf_tensors(config, random_weights(config, seed=7), "mixtral")
    write_checkpoint(tmp_path / "m", settings, tensors)
    packed_config, packed = load_hf_moe(tmp_path / "m", quantize="q8_0", keep_quantized=True, seq=5)
    assert packed_config.quant == "q8_0"
    # GGUF rows are PyTorch's [out, in] rows: each expert's tensor quantised as stored.
    for j in range(4):
        want = quant.quantize(tensors[f"model.layers.1.block_sparse_moe.experts.{j}.w2.weight"], "q8_0")
        assert np.array_equal(packed["layers.1.experts.down"][j], want)
    assert np.array_equal(packed["layers.0.q"], quant.quantize(tensors["model.layers.0.self_attn.q_proj.weight"], "q8_0"))
    assert packed["layers.0.router"].dtype == np.float32 and packed["embed"].dtype == np.float32
    simulated_config, simulated = load_hf_moe(tmp_path / "m", quantize="q8_0", seq=5)
    assert simulated_config.quant is None
    assert np.array_equal(simulated["layers.0.experts.up"][2],
                          quant.dequantize(quant.quantize(tensors["model.layers.0.block_sparse_moe.experts.2.w3.weight"],
                                                          "q8_0"), "q8_0", (32, 32)).T)
    tokens = np.array([[1, 7, 3, 30, 49]], np.int64)
    got = build_moe(packed_config).compile()(tokens=tokens, **packed)
    want = build_moe(simulated_config).compile()(tokens=tokens, **simulated)
    assert np.allclose(got, want, rtol=1e-4, atol=1e-4), np.abs(got - want).max()


def test_quantize_at_load_errors(tmp_path):
    config = MoeConfig(layers=2, hidden=32, heads=4, kv_heads=2, head_dim=8, vocab=50, experts=6, expert_ffn=16,
                       shared_ffn=40, shared_gate=True)
    write_checkpoint(tmp_path / "q", QWEN_SETTINGS, hf_tensors(config, random_weights(config), "qwen2_moe"))
    with pytest.raises(CheckpointError, match="cannot quantise to q8_0: quant: 'layers.0.experts.down' has 16 inputs"):
        load_hf_moe(tmp_path / "q", quantize="q8_0", keep_quantized=True)
    with pytest.raises(CheckpointError, match=r"quantize='int8/32': expected None or a GGUF scheme"):
        load_hf_moe(tmp_path / "q", quantize="int8/32")
    with pytest.raises(CheckpointError, match="keep_quantized=True needs quantize="):
        load_hf_moe(tmp_path / "q", keep_quantized=True)
