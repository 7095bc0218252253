"""Llama-architecture GGUF files (llama.cpp's format), read with the `gguf` package.

    config, weights = load_gguf("model.gguf")            # LlamaConfig + the builder's f32 weights
    model = CachedLlama(config, weights, capacity=256)

Metadata read (`general.architecture` must be `llama`): `llama.block_count`,
`llama.embedding_length`, `llama.feed_forward_length`, `llama.attention.head_count`,
`llama.attention.head_count_kv` (default: head_count), `llama.attention.layer_norm_rms_epsilon`,
`llama.rope.freq_base` (default 10000), `llama.attention.key_length` (head size; default
embedding_length / head_count), `llama.rope.dimension_count` (must be the head size: rlx rotates
whole heads), `llama.rope.scaling.type` (absent or `none`), `llama.vocab_size` (checked against
`token_embd`).  Tensors: `token_embd.weight`, `blk.{i}.attn_norm / attn_q / attn_k / attn_v /
attn_output / ffn_norm / ffn_gate / ffn_up / ffn_down.weight`, `output_norm.weight` and
`output.weight` (absent: tied to `token_embd`).  Any other tensor (biases, `rope_freqs`) is an
unsupported feature and an error, never silently dropped.

Tensor types: F32, F16 and BF16 as they are; the GGUF block formats that `rlx_mlir.quant`
decodes (Q4_0, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K) are decoded to float32 (bit-exact with
ggml).  Other types (Q4_1, Q5_0, the IQ formats, ...) are an error naming the type.

RoPE layout: llama.cpp's Llama rotates adjacent pairs `(2j, 2j + 1)` of each head, and
`convert_hf_to_gguf.py` permutes the rows of `attn_q` / `attn_k` so that this matches Hugging
Face's rotate-half: within each head, HF row `t * head_dim/2 + j` is stored at row `2j + t`.  rlx
rotates halves (`rlx.rope`, NeoX form, as HF), so the loader undoes that permutation
(`unpermute_rope_rows`); it only reorders rows, so quantised rows move as bytes, undecoded.

`read_gguf(path)` stops before decoding: the projections stay `QuantizedWeight`s (packed bytes
of `W [out, in]`, rows already un-permuted).  `load_gguf(path, keep_quantized=True)` hands them
to the model packed: the config's `quant` names every projection (and the LM head) stored in a
scheme `rlx.dequant_matmul` decodes (Q4_0, Q8_0, Q2_K..Q6_K), and their weights are those bytes
(`uint8 [out, row_bytes]`); the model never builds their float32 copy.  A quantised `token_embd`
stays packed too (`uint8 [vocab, row_bytes]`, looked up by `rlx.dequant_gather`, which decodes only
the picked rows; with tied embeddings the LM head uses the same bytes).  The norms and any Q8_K
tensor are decoded to float32 as usual.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

import numpy as np

from ..llama import DEQUANT_SCHEMES, LlamaConfig, projection_names
from .weights import CheckpointError, QuantizedWeight, builder_weights, dequantize_weight, make_config

# GGUF tensor types decoded by rlx_mlir.quant, by their gguf.GGMLQuantizationType name.
QUANTIZED_TYPES = {"Q4_0": "q4_0", "Q8_0": "q8_0", "Q2_K": "q2_k", "Q3_K": "q3_k", "Q4_K": "q4_k",
                   "Q5_K": "q5_k", "Q6_K": "q6_k", "Q8_K": "q8_k"}
FLOAT_TYPES = ("F32", "F16", "BF16")

_LAYER_TENSORS = {"attn_norm": "ln1", "attn_q": "q", "attn_k": "k", "attn_v": "v", "attn_output": "o",
                  "ffn_norm": "ln2", "ffn_gate": "gate", "ffn_up": "up", "ffn_down": "down"}
_GLOBAL_TENSORS = {"token_embd": "embed", "output_norm": "norm", "output": "lm_head"}


@dataclass
class GgufCheckpoint:
    """A GGUF Llama as read: the config and every tensor under the builder's name in PyTorch
    layout (`W [out, in]`), quantised projections as `QuantizedWeight`, the rest float32."""

    config: LlamaConfig
    tensors: dict  # builder name -> np.ndarray | QuantizedWeight
    tied_embeddings: bool


def unpermute_rope_rows(rows: np.ndarray, heads: int) -> np.ndarray:
    """Undoes convert_hf_to_gguf.py's q/k row permutation of `rows [heads * head_dim, ...]`.

    llama.cpp stores HF row `h * head_dim + t * head_dim/2 + j` (t in {0, 1}) at row
    `h * head_dim + 2j + t`; this returns the rows in HF order.
    """
    out = rows.shape[0]
    if out % (2 * heads):
        raise CheckpointError(f"{out} rows do not split into {heads} heads of an even size")
    half = out // heads // 2
    return rows.reshape(heads, half, 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def read_gguf(path, **runtime) -> GgufCheckpoint:
    """The config and tensors of a Llama GGUF file, quantised tensors still packed (see the module doc).

    `runtime` sets LlamaConfig's batch, seq, max_seq, policy or quant_activations."""
    reader = _open(path)
    source = os.fspath(path)
    metadata = _Metadata(reader, source)
    arch = metadata.get("general.architecture")
    if arch != "llama":
        raise CheckpointError(
            f"{source}: unsupported architecture {arch!r}; the GGUF loader reads 'llama' (Llama-family) files"
        )
    raw = {}
    for tensor in reader.tensors:
        raw[_builder_name(tensor.name, source)] = _tensor(tensor, source)
    if "embed" not in raw:
        raise CheckpointError(f"{source}: missing tensor 'token_embd.weight'")
    vocab = raw["embed"].shape[0]
    heads = metadata.integer("llama.attention.head_count")
    embedding = metadata.integer("llama.embedding_length")
    head_dim = metadata.integer("llama.attention.key_length", embedding // heads if heads > 0 else 0)
    rotated = metadata.integer("llama.rope.dimension_count", head_dim)
    if rotated != head_dim:
        raise CheckpointError(
            f"{source}: partial rotary embedding (llama.rope.dimension_count = {rotated}, head size {head_dim}) "
            "is not supported; rlx's Llama rotates whole heads"
        )
    scaling = metadata.get("llama.rope.scaling.type", "none")
    if scaling != "none":
        raise CheckpointError(f"{source}: RoPE scaling '{scaling}' (llama.rope.scaling.type) is not supported")
    declared_vocab = metadata.integer("llama.vocab_size", vocab)
    if declared_vocab != vocab:
        raise CheckpointError(f"{source}: llama.vocab_size is {declared_vocab} but token_embd has {vocab} rows")
    config = make_config(
        source, runtime,
        layers=metadata.integer("llama.block_count"),
        hidden=embedding,
        heads=heads,
        kv_heads=metadata.integer("llama.attention.head_count_kv", heads),
        head_dim=head_dim,
        ffn=metadata.integer("llama.feed_forward_length"),
        vocab=vocab,
        rope_theta=metadata.real("llama.rope.freq_base", 10000.0),
        eps=metadata.real("llama.attention.layer_norm_rms_epsilon"),
    )
    tied = "lm_head" not in raw
    if tied:
        raw["lm_head"] = raw["embed"]
    for i in range(config.layers):
        for name, heads_of in (("q", config.heads), ("k", config.kv_heads)):
            key = f"layers.{i}.{name}"
            if key in raw:
                raw[key] = _unpermute(raw[key], heads_of, config.head_dim, key, source)
    return GgufCheckpoint(config, raw, tied)


def load_gguf(path, *, keep_quantized: bool = False, **runtime) -> tuple[LlamaConfig, dict[str, np.ndarray]]:
    """`(config, weights)` of a Llama GGUF file for `build_llama` / `CachedLlama`.

    Every tensor float32 by default; `keep_quantized=True` keeps the quantised projections packed
    (the config's `quant` says which; see the module doc).  `runtime` sets LlamaConfig's batch,
    seq, max_seq, policy or quant_activations (`"q8"`: 8-bit activations for the q4_k projections).
    """
    checkpoint = read_gguf(path, **runtime)
    config, tensors = checkpoint.config, checkpoint.tensors
    if keep_quantized:
        kept = {name: tensors[name].scheme for name in [*projection_names(config), "embed"]
                if isinstance(tensors.get(name), QuantizedWeight) and tensors[name].scheme in DEQUANT_SCHEMES}
        config = replace(config, quant=kept or None)
    else:
        tensors = {name: dequantize_weight(t, name) for name, t in tensors.items()}
    return config, builder_weights(config, tensors, os.fspath(path))


def _open(path):
    try:
        import gguf  # optional dependency (the `test` extra): only GGUF loading needs it
    except ImportError:
        raise CheckpointError("loading GGUF files needs the 'gguf' package: pip install gguf") from None
    if not os.path.isfile(path):
        raise CheckpointError(f"{os.fspath(path)}: no such file")
    try:
        return gguf.GGUFReader(path)
    except (ValueError, OSError, KeyError, IndexError) as e:
        raise CheckpointError(f"{os.fspath(path)}: not a readable GGUF file ({e})") from None


class _Metadata:
    def __init__(self, reader, source: str):
        self.reader, self.source = reader, source

    def get(self, key: str, default=None):
        field = self.reader.get_field(key)
        if field is None:
            if default is None:
                raise CheckpointError(f"{self.source}: missing metadata '{key}'")
            return default
        return field.contents()

    def integer(self, key: str, default=None) -> int:
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise CheckpointError(f"{self.source}: metadata '{key}' must be one integer, got {value!r}")
        return int(value)

    def real(self, key: str, default=None) -> float:
        """A number; an f32 one as the shortest decimal that rounds to it (1e-5, not 9.99999974e-06)."""
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise CheckpointError(f"{self.source}: metadata '{key}' must be a number, got {value!r}")
        field = self.reader.get_field(key)
        if field is not None and field.types and field.types[0].name == "FLOAT32":
            return float(str(np.float32(value)))
        return float(value)


def _builder_name(name: str, source: str) -> str:
    match = re.fullmatch(r"blk\.(\d+)\.(\w+)\.weight", name)
    if match and match.group(2) in _LAYER_TENSORS:
        return f"layers.{int(match.group(1))}.{_LAYER_TENSORS[match.group(2)]}"
    match = re.fullmatch(r"(\w+)\.weight", name)
    if match and match.group(1) in _GLOBAL_TENSORS:
        return _GLOBAL_TENSORS[match.group(1)]
    raise CheckpointError(
        f"{source}: tensor '{name}' is not part of the Llama architecture rlx builds "
        "(no biases, no rope_freqs); this checkpoint uses a feature the loader does not support"
    )


def _tensor(tensor, source: str):
    """float32 `[out, in]` (numpy order, the reverse of GGUF's ne) or a QuantizedWeight."""
    kind = tensor.tensor_type.name
    shape = tuple(int(d) for d in reversed(tensor.shape.tolist()))
    if kind in QUANTIZED_TYPES:
        return QuantizedWeight(QUANTIZED_TYPES[kind], np.array(tensor.data, np.uint8), shape)
    if kind == "BF16":  # read as bytes: numpy has no bfloat16
        halves = np.ascontiguousarray(tensor.data).view(np.uint16).astype(np.uint32)
        return (halves << 16).view(np.float32).reshape(shape)
    if kind in ("F32", "F16"):
        return np.array(tensor.data, np.float32).reshape(shape)
    raise CheckpointError(
        f"{source}: tensor '{tensor.name}' has type {kind}; supported: {', '.join(FLOAT_TYPES)}, "
        f"{', '.join(QUANTIZED_TYPES)}"
    )


def _unpermute(weight, heads: int, head_dim: int, name: str, source: str):
    rows = weight.shape[0]
    if rows != heads * head_dim:
        raise CheckpointError(
            f"{source}: tensor for '{name}' has {rows} rows; {heads} heads of {head_dim} need {heads * head_dim}"
        )
    if isinstance(weight, QuantizedWeight):
        return QuantizedWeight(weight.scheme, np.ascontiguousarray(unpermute_rope_rows(weight.data, heads)), weight.shape)
    return np.ascontiguousarray(unpermute_rope_rows(weight, heads))


__all__ = ["GgufCheckpoint", "load_gguf", "read_gguf", "unpermute_rope_rows"]
