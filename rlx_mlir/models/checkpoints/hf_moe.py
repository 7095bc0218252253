"""Hugging Face mixture-of-experts checkpoints (Mixtral, Qwen2-MoE) for `rlx_mlir.models.moe`.

    config, weights = load_hf_moe("path/to/mixtral")
    logits = build_moe(config).compile()(tokens=tokens, **weights)

`config.json`: the Llama fields of `load_hf` (`hidden_size`, `num_hidden_layers`,
`num_attention_heads`, `num_key_value_heads`, `head_dim`, `vocab_size`, `rms_norm_eps`,
`rope_theta`, `tie_word_embeddings`) and
- `model_type` `mixtral`: `num_local_experts`, `num_experts_per_tok`, `intermediate_size` (each
  expert's hidden size); the top-k probabilities are renormalised (Mixtral's softmax over the
  chosen logits);
- `model_type` `qwen2_moe`: `num_experts`, `num_experts_per_tok`, `moe_intermediate_size`,
  `shared_expert_intermediate_size`, `norm_topk_prob` (default false); every layer must be sparse
  (`decoder_sparse_step` 1, no `mlp_only_layers`).

Tensors, PyTorch `[out, in]` (transposed to the builder's `[in, out]`; experts stacked, expert
outermost): the attention and norm tensors of `load_hf`, and per layer `i`
- Mixtral: `model.layers.{i}.block_sparse_moe.gate.weight` `[E, D]` (the router),
  `.block_sparse_moe.experts.{j}.w1` (gate), `.w3` (up) `[F, D]`, `.w2` (down) `[D, F]`;
- Qwen2-MoE: `model.layers.{i}.mlp.gate.weight` (the router), `.mlp.experts.{j}.gate_proj` /
  `up_proj` / `down_proj`, `.mlp.shared_expert.gate_proj` / `up_proj` / `down_proj`,
  `.mlp.shared_expert_gate.weight` `[1, D]`.
Qwen2's attention q/k/v biases are not supported by the model: a checkpoint that has them is an
error naming them (never silently dropped), as is any other tensor the model does not have.

`quantize="q8_0"` (a GGUF scheme `rlx.dequant_matmul` decodes: q4_0, q8_0, q2_k..q6_k) quantises
every projection of `rlx_mlir.models.moe.projection_names` (attention, expert stacks, shared
expert, LM head; not the router, the shared expert's gate, the embedding or the norms) along its
input dimension at load.  With `keep_quantized=True` they stay packed (`uint8`, the layouts of
`MoeConfig.quant`) and the config's `quant` is the scheme: the experts run through
`rlx.dequant_grouped_matmul`, a quarter (q8_0) to an eighth (q4_k) of the memory.  Without it the
weights are decoded again (float32: a simulation of the quantised model, as `load_hf`'s).

    config, weights = load_hf_moe("path/to/mixtral", quantize="q4_k", keep_quantized=True)
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from ...dialects.rlx.quant import GGUF_SCHEMES
from ..moe import MoeConfig, dequantize_weight, quant_schemes, quantize_weight, weight_shapes
from .hf import GLOBAL_TENSORS, LAYER_TENSORS, read_config, read_safetensors
from .weights import RUNTIME_FIELDS, CheckpointError

_SCHEMES = tuple(GGUF_SCHEMES)
_ATTENTION = {k: v for k, v in LAYER_TENSORS.items() if not k.startswith("mlp.")}
_EXPERT_PROJECTIONS = {
    "mixtral": (r"block_sparse_moe\.experts\.(\d+)\.(w1|w2|w3)", {"w1": "gate", "w3": "up", "w2": "down"}),
    "qwen2_moe": (r"mlp\.experts\.(\d+)\.(gate_proj|up_proj|down_proj)", {"gate_proj": "gate", "up_proj": "up", "down_proj": "down"}),
}
_ROUTERS = {"mixtral": "block_sparse_moe.gate", "qwen2_moe": "mlp.gate"}
_SHARED = {"mlp.shared_expert.gate_proj": "shared.gate", "mlp.shared_expert.up_proj": "shared.up",
           "mlp.shared_expert.down_proj": "shared.down", "mlp.shared_expert_gate": "shared_gate"}


def load_hf_moe(path, *, quantize: str | None = None, keep_quantized: bool = False,
                **runtime) -> tuple[MoeConfig, dict[str, np.ndarray]]:
    """`(config, weights)` of a Mixtral or Qwen2-MoE checkpoint directory for `build_moe` / `CachedMoe`;
    `quantize` (and `keep_quantized`) as the module doc says; `runtime` sets batch, seq, max_seq or policy."""
    if quantize is not None and (not isinstance(quantize, str) or quantize not in _SCHEMES):
        raise CheckpointError(f"quantize={quantize!r}: expected None or a GGUF scheme the MoE model decodes "
                              f"({', '.join(_SCHEMES)})")
    if keep_quantized and quantize is None:
        raise CheckpointError("keep_quantized=True needs quantize= a GGUF scheme")
    directory, source = Path(path), os.fspath(path)
    if not directory.is_dir():
        raise CheckpointError(f"{source}: not a directory (a Hugging Face checkpoint is a directory with "
                              "config.json and *.safetensors)")
    settings = read_config(directory)
    config = _config(settings, os.fspath(directory / "config.json"), runtime)
    family = settings["model_type"]
    tied = bool(settings.get("tie_word_embeddings", False))
    experts: dict[str, dict[int, np.ndarray]] = {}
    named = {}
    for name, tensor in read_safetensors(directory).items():
        target = _builder_name(name, family, source)
        if target is None or (target == "lm_head" and tied):
            continue
        if isinstance(target, tuple):  # (stacked weight, expert)
            experts.setdefault(target[0], {})[target[1]] = tensor
        else:
            named[target] = tensor
    if tied and "embed" in named:
        named["lm_head"] = named["embed"]
    for stacked, by_expert in experts.items():
        if sorted(by_expert) != list(range(config.experts)):
            raise CheckpointError(f"{source}: '{stacked}' has experts {sorted(by_expert)}; the config has "
                                  f"{config.experts} (0 .. {config.experts - 1})")
        named[stacked] = np.stack([by_expert[j] for j in range(config.experts)])
    weights = _builder_weights(config, named, source)
    if quantize is None:
        return config, weights
    try:
        quantized = replace(config, quant=quantize)  # checks every projection's size against the blocks
    except ValueError as error:
        raise CheckpointError(f"{source}: cannot quantise to {quantize}: {error}") from None
    shapes = weight_shapes(config)
    for name in quant_schemes(quantized):
        packed = quantize_weight(weights[name], quantize, name)
        weights[name] = packed if keep_quantized else dequantize_weight(packed, quantize, shapes[name], name)
    return (quantized if keep_quantized else config), weights


def _config(settings: dict, source: str, runtime: dict) -> MoeConfig:
    family = settings.get("model_type")
    if family not in _ROUTERS:
        raise CheckpointError(f"{source}: unsupported model_type {family!r}; supported: 'mixtral', 'qwen2_moe'")
    unknown = sorted(set(runtime) - set(RUNTIME_FIELDS))
    if unknown:
        raise CheckpointError(f"{source}: {', '.join(unknown)} cannot be given at load time; only "
                              f"{', '.join(RUNTIME_FIELDS)} may")
    if settings.get("hidden_act", "silu") != "silu":
        raise CheckpointError(f"{source}: hidden_act '{settings['hidden_act']}' is not supported (SwiGLU uses silu)")

    def need(key):
        value = settings.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise CheckpointError(f"{source}: '{key}' must be a positive integer, got {value!r}")
        return value

    heads, hidden = need("num_attention_heads"), need("hidden_size")
    moe = {}
    if family == "mixtral":
        moe = dict(experts=need("num_local_experts"), expert_ffn=need("intermediate_size"), normalize=True)
    else:
        if settings.get("decoder_sparse_step", 1) != 1 or settings.get("mlp_only_layers"):
            raise CheckpointError(f"{source}: only checkpoints whose every layer is a MoE layer are supported "
                                  "(decoder_sparse_step 1, no mlp_only_layers)")
        moe = dict(experts=need("num_experts"), expert_ffn=need("moe_intermediate_size"),
                   normalize=bool(settings.get("norm_topk_prob", False)),
                   shared_ffn=need("shared_expert_intermediate_size"), shared_gate=True)
    try:
        return MoeConfig(
            layers=need("num_hidden_layers"), hidden=hidden, heads=heads,
            kv_heads=settings.get("num_key_value_heads") or heads, head_dim=settings.get("head_dim") or hidden // heads,
            vocab=need("vocab_size"), rope_theta=float(settings.get("rope_theta", 10000.0)),
            eps=float(settings.get("rms_norm_eps", 1e-6)), top_k=need("num_experts_per_tok"), **moe, **runtime,
        )
    except ValueError as error:
        raise CheckpointError(f"{source}: {error}") from None


def _builder_name(name: str, family: str, source: str):
    """The builder's name of an HF tensor, `(stacked name, expert)` for an expert's projection,
    None for a buffer to skip; an error for anything else."""
    match = re.fullmatch(r"model\.layers\.(\d+)\.(.+)\.weight", name)
    if match:
        layer, rest = f"layers.{int(match.group(1))}.", match.group(2)
        if rest in _ATTENTION:
            return layer + _ATTENTION[rest]
        if rest == _ROUTERS[family]:
            return layer + "router"
        pattern, projections = _EXPERT_PROJECTIONS[family]
        expert = re.fullmatch(pattern, rest)
        if expert:
            return layer + "experts." + projections[expert.group(2)], int(expert.group(1))
        if family == "qwen2_moe" and rest in _SHARED:
            return layer + _SHARED[rest]
    if name.endswith(".weight") and name[: -len(".weight")] in GLOBAL_TENSORS:
        return GLOBAL_TENSORS[name[: -len(".weight")]]
    if name.endswith("rotary_emb.inv_freq"):
        return None
    if re.fullmatch(r"model\.layers\.\d+\.self_attn\.[qkv]_proj\.bias", name):
        raise CheckpointError(f"{source}: tensor '{name}' is an attention bias, which rlx's MoE model does not have")
    raise CheckpointError(f"{source}: tensor '{name}' is not part of the {family} architecture rlx builds")


def _builder_weights(config: MoeConfig, tensors: dict[str, np.ndarray], source: str) -> dict[str, np.ndarray]:
    """The builder's weights from PyTorch-layout tensors: matrices and each expert transposed."""
    expected = weight_shapes(config)
    missing = [name for name in expected if name not in tensors]
    if missing:
        raise CheckpointError(f"{source}: missing tensor(s) for {', '.join(missing)}")
    weights = {}
    for name, shape in expected.items():
        tensor = np.asarray(tensors[name], np.float32)
        # PyTorch stores [out, in] (per expert: [E, out, in]); the builder takes [in, out]. The embedding is as stored.
        transposed = len(shape) >= 2 and name != "embed"
        stored = (*shape[:-2], shape[-1], shape[-2]) if transposed else shape
        if tuple(tensor.shape) != stored:
            raise CheckpointError(f"{source}: tensor for '{name}' has shape {list(tensor.shape)}; the config needs "
                                  f"{list(stored)}")
        weights[name] = np.ascontiguousarray(np.swapaxes(tensor, -1, -2) if transposed else tensor)
    return weights


__all__ = ["load_hf_moe"]
