"""Hugging Face checkpoints: a directory with `config.json` and `*.safetensors` (Llama family).

    config, weights = load_hf("path/to/model")                    # float32 as stored
    config, weights = load_hf("path/to/model", quantize="q8_0")   # projections through q8_0 and back

`config.json` (`model_type` `llama`): `hidden_size`, `intermediate_size`, `num_hidden_layers`,
`num_attention_heads`, `num_key_value_heads` (default: heads), `head_dim` (default: hidden /
heads), `vocab_size`, `rms_norm_eps`, `rope_theta` (default 10000), `tie_word_embeddings`
(default false).  Features the Llama builder does not have are an error naming them:
`attention_bias` / `mlp_bias`, `rope_scaling` other than the default, a `hidden_act` other
than `silu`, Qwen2's q/k/v biases (`model_type` `qwen2`) and Qwen3's per-head q/k RMSNorm
(`qwen3`).

Tensors (every `*.safetensors` file of the directory; F32, F16, BF16 and F8_E4M3, all widened to
float32 exactly; an FP8 checkpoint's scale tensors, e.g. `weight_scale_inv`, are not read: an error):
`model.embed_tokens.weight`, `model.layers.{i}.input_layernorm.weight`,
`.self_attn.{q,k,v,o}_proj.weight`, `.post_attention_layernorm.weight`,
`.mlp.{gate,up,down}_proj.weight`, `model.norm.weight`, `lm_head.weight` (not read when the
embeddings are tied).  HF's rotate-half RoPE is rlx's (`rlx.rope`), so q/k rows are taken as
they are.  Any other tensor is an error (never silently dropped), except the `rotary_emb.inv_freq`
buffers old checkpoints carry.

`quantize="q8_0"` (any GGUF scheme of `rlx_mlir.quant`) quantises every projection and the LM
head along its input dimension and decodes it again at load: a *simulation* of running the
model on quantised weights (same numbers, float32 storage and speed).  With
`keep_quantized=True` the quantised projections stay packed instead (`uint8 [out, row_bytes]`)
and the config's `quant` is the scheme: the model runs them through `rlx.dequant_matmul`
(q4_0, q8_0, q2_k..q6_k), same numbers, a quarter (q8_0) to an eighth (q4_k) of the memory.
The embedding and the norms stay as stored.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import replace
from pathlib import Path

import numpy as np

from ...ir.dtypes import load_numpy_dtype
from ..llama import DEQUANT_SCHEMES, LlamaConfig
from .weights import (
    CheckpointError,
    builder_weights,
    check_quantize_option,
    make_config,
    quantize_weight,
    simulate_quantization,
)

# Hugging Face tensor name (without `model.layers.{i}.` and `.weight`) -> the builder's layer weight.
LAYER_TENSORS = {"input_layernorm": "ln1", "self_attn.q_proj": "q", "self_attn.k_proj": "k",
                  "self_attn.v_proj": "v", "self_attn.o_proj": "o", "post_attention_layernorm": "ln2",
                  "mlp.gate_proj": "gate", "mlp.up_proj": "up", "mlp.down_proj": "down"}
# Hugging Face tensor name (without `.weight`) -> the builder's weight, outside the layers.
GLOBAL_TENSORS = {"model.embed_tokens": "embed", "model.norm": "norm", "lm_head": "lm_head"}
_UNSUPPORTED_FAMILIES = {
    "qwen2": "q/k/v projection biases",
    "qwen3": "per-head q/k RMSNorm (q_norm, k_norm)",
}


def load_hf(path, *, quantize: str | None = None, keep_quantized: bool = False,
            **runtime) -> tuple[LlamaConfig, dict[str, np.ndarray]]:
    """`(config, weights)` of a Hugging Face Llama checkpoint directory for `build_llama` / `CachedLlama`.

    `quantize` names a GGUF scheme the projections are quantised to at load, simulated in float32
    or, with `keep_quantized`, kept packed (see the module doc); `runtime` sets LlamaConfig's
    batch, seq, max_seq or policy.
    """
    check_quantize_option(quantize)
    if keep_quantized and quantize not in DEQUANT_SCHEMES:
        raise CheckpointError(
            f"keep_quantized=True needs quantize= one of the schemes the model runs packed "
            f"({', '.join(DEQUANT_SCHEMES)}), got quantize={quantize!r}"
        )
    directory = Path(path)
    source = os.fspath(path)
    if not directory.is_dir():
        raise CheckpointError(f"{source}: not a directory (a Hugging Face checkpoint is a directory with "
                              "config.json and *.safetensors)")
    settings = read_config(directory)
    config = _config(settings, os.fspath(directory / "config.json"), runtime)
    tensors = read_safetensors(directory)
    tied = bool(settings.get("tie_word_embeddings", False))
    named = {}
    for name, tensor in tensors.items():
        target = _builder_name(name, source)
        if target is None or (target == "lm_head" and tied):
            continue
        named[target] = tensor
    if tied and "embed" in named:
        named["lm_head"] = named["embed"]
    if quantize is not None:
        for name, tensor in named.items():
            if tensor.ndim == 2 and name != "embed":
                if keep_quantized:
                    named[name] = quantize_weight(tensor, quantize, name, source)
                else:
                    named[name] = simulate_quantization(tensor, quantize, name, source)
    if keep_quantized:  # every projection was quantised above, so their sizes fit the scheme's blocks
        config = replace(config, quant=quantize)
    return config, builder_weights(config, named, source)


def read_config(directory: Path) -> dict:
    """The object of the checkpoint directory's `config.json` (CheckpointError when missing or not a JSON object)."""
    file = directory / "config.json"
    if not file.is_file():
        raise CheckpointError(f"{os.fspath(directory)}: no config.json")
    try:
        settings = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{os.fspath(file)}: not valid JSON ({e})") from None
    if not isinstance(settings, dict):
        raise CheckpointError(f"{os.fspath(file)}: expected a JSON object")
    return settings


def _config(settings: dict, source: str, runtime: dict) -> LlamaConfig:
    family = settings.get("model_type")
    if family in _UNSUPPORTED_FAMILIES:
        raise CheckpointError(
            f"{source}: model_type '{family}' has {_UNSUPPORTED_FAMILIES[family]}, which rlx's Llama builder "
            "does not support yet; supported: 'llama'"
        )
    if family != "llama":
        raise CheckpointError(f"{source}: unsupported model_type {family!r}; supported: 'llama'")
    for flag in ("attention_bias", "mlp_bias"):
        if settings.get(flag):
            raise CheckpointError(f"{source}: {flag} = true is not supported (rlx's Llama has no projection biases)")
    scaling = settings.get("rope_scaling")
    if scaling and (not isinstance(scaling, dict) or (scaling.get("rope_type") or scaling.get("type")) != "default"):
        raise CheckpointError(f"{source}: rope_scaling {scaling} is not supported (plain RoPE only)")
    if settings.get("hidden_act", "silu") != "silu":
        raise CheckpointError(f"{source}: hidden_act '{settings['hidden_act']}' is not supported (SwiGLU uses silu)")

    def need(key):
        if key not in settings:
            raise CheckpointError(f"{source}: missing '{key}'")
        return settings[key]

    heads = need("num_attention_heads")
    hidden = need("hidden_size")
    computable = isinstance(hidden, int) and isinstance(heads, int) and heads > 0
    head_dim = settings.get("head_dim") or (hidden // heads if computable else 0)  # 0: make_config reports heads
    return make_config(
        source, runtime,
        layers=need("num_hidden_layers"), hidden=hidden, heads=heads,
        kv_heads=settings.get("num_key_value_heads") or heads, head_dim=head_dim,
        ffn=need("intermediate_size"), vocab=need("vocab_size"),
        rope_theta=settings.get("rope_theta", 10000.0), eps=need("rms_norm_eps"),
    )


def read_safetensors(directory: Path) -> dict[str, np.ndarray]:
    """Every tensor of the directory's `*.safetensors` files by name, as numpy arrays (BF16 widened to float32)."""
    try:
        from safetensors import SafetensorError, safe_open  # optional dependency (the `test` extra)
    except ImportError:
        raise CheckpointError("loading Hugging Face checkpoints needs the 'safetensors' package: "
                              "pip install safetensors") from None
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        raise CheckpointError(f"{os.fspath(directory)}: no *.safetensors files")
    tensors = {}
    for file in files:
        try:
            with safe_open(file, framework="numpy") as f:
                for name in f.keys():
                    if name in tensors:
                        raise CheckpointError(f"{os.fspath(file)}: tensor '{name}' is also in another file")
                    kind = f.get_slice(name).get_dtype()
                    if kind in _RAW_FLOATS:  # numpy has no bfloat16 / float8: widen the raw bytes
                        tensors[name] = _raw_float_tensor(file, name, kind)
                    elif kind in ("F32", "F16"):
                        tensors[name] = f.get_tensor(name).astype(np.float32)
                    else:
                        raise CheckpointError(
                            f"{os.fspath(file)}: tensor '{name}' has dtype {kind}; supported: F32, F16, BF16, F8_E4M3"
                        )
        except SafetensorError as e:
            raise CheckpointError(f"{os.fspath(file)}: not a readable safetensors file ({e})") from None
    return tensors


# safetensors dtypes numpy lacks, read from their raw bytes: the little-endian integer of their bits
# and how it widens to float32 (BF16: the high half of an f32; F8_E4M3: ml_dtypes' float8_e4m3fn,
# OCP FP8 E4M3, exactly representable in f32).
_RAW_FLOATS = {"BF16": "<u2", "F8_E4M3": "u1"}


def _raw_float_tensor(file: Path, name: str, kind: str) -> np.ndarray:
    """A BF16 or F8_E4M3 tensor of a safetensors file as float32 (exactly), from the header's
    offsets (8-byte header length, JSON header)."""
    with open(file, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        entry = json.loads(f.read(length))[name]
        begin, end = entry["data_offsets"]
        f.seek(8 + length + begin)
        bits = np.frombuffer(f.read(end - begin), _RAW_FLOATS[kind])
    if kind == "BF16":
        values = (bits.astype(np.uint32) << 16).view(np.float32)
    else:
        try:
            values = bits.view(load_numpy_dtype("float8_e4m3fn", f"{os.fspath(file)}: tensor '{name}'")).astype(np.float32)
        except ValueError as error:  # ml_dtypes missing
            raise CheckpointError(str(error)) from None
    return values.reshape(entry["shape"])


def _builder_name(name: str, source: str) -> str | None:
    """The builder's name for an HF tensor, None for a buffer to skip, an error for anything else."""
    match = re.fullmatch(r"model\.layers\.(\d+)\.(.+)\.weight", name)
    if match and match.group(2) in LAYER_TENSORS:
        return f"layers.{int(match.group(1))}.{LAYER_TENSORS[match.group(2)]}"
    if name.endswith(".weight") and name[: -len(".weight")] in GLOBAL_TENSORS:
        return GLOBAL_TENSORS[name[: -len(".weight")]]
    if name.endswith("rotary_emb.inv_freq"):
        return None
    raise CheckpointError(
        f"{source}: tensor '{name}' is not part of the Llama architecture rlx builds (no biases, no q/k norms); "
        "this checkpoint uses a feature the loader does not support"
    )


__all__ = ["GLOBAL_TENSORS", "LAYER_TENSORS", "load_hf", "read_config", "read_safetensors"]
