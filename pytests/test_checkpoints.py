"""Checkpoint loading (rlx_mlir.models.checkpoints) on tiny checkpoints the tests write themselves.

GGUF files are written with `gguf.GGUFWriter` the way llama.cpp's convert_hf_to_gguf.py writes a
Llama (q/k rows permuted for llama.cpp's adjacent-pair RoPE), quantised tensors from
`rlx_mlir.quant` bytes; Hugging Face directories with `safetensors.numpy.save_file` and a
config.json.  The reference is a plain float64 numpy Llama written here, run on the checkpoint's
own tensors as stored: for GGUF decoded by `gguf.quants.dequantize` and rotated llama.cpp's way
(adjacent pairs on the permuted rows), for HF rotated HF's way (halves).  The loaded model runs
under rlx's own RoPE (halves), so agreement shows the loader undid the permutation.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

from rlx_mlir import RlxError, quant  # noqa: E402
from rlx_mlir.models.checkpoints import CheckpointError, QuantizedWeight, load_gguf, load_hf, read_gguf  # noqa: E402
from rlx_mlir.models.generate import CachedLlama, generate  # noqa: E402
from rlx_mlir.models.llama import LlamaConfig, build_llama  # noqa: E402

SMALL = LlamaConfig(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=97,
                    rope_theta=10000.0, eps=1e-5)
# K-quants pack 256 weights per block along the input dimension, so their model is 256 wide.
WIDE = LlamaConfig(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=64, ffn=256, vocab=97,
                   rope_theta=500000.0, eps=1e-6)
PROMPT = np.array([5, 17, 42, 3, 88])
NEW_TOKENS = 4
PROJECTIONS = ("q", "k", "v", "o", "gate", "up", "down")


# ----------------------------------------------------------------------------- the reference

def hf_tensors(c: LlamaConfig, seed: int) -> dict[str, np.ndarray]:
    """Random weights under HF's names, PyTorch layout ([out, in]), float32."""
    rng = np.random.default_rng(seed)
    q_out, kv_out = c.heads * c.head_dim, c.kv_heads * c.head_dim
    shapes = {"model.embed_tokens.weight": (c.vocab, c.hidden), "model.norm.weight": (c.hidden,),
              "lm_head.weight": (c.vocab, c.hidden)}
    for i in range(c.layers):
        p = f"model.layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": (c.hidden,), p + "post_attention_layernorm.weight": (c.hidden,),
            p + "self_attn.q_proj.weight": (q_out, c.hidden), p + "self_attn.k_proj.weight": (kv_out, c.hidden),
            p + "self_attn.v_proj.weight": (kv_out, c.hidden), p + "self_attn.o_proj.weight": (c.hidden, q_out),
            p + "mlp.gate_proj.weight": (c.ffn, c.hidden), p + "mlp.up_proj.weight": (c.ffn, c.hidden),
            p + "mlp.down_proj.weight": (c.hidden, c.ffn),
        })
    return {name: ((1.0 + 0.1 * rng.standard_normal(shape)) if len(shape) == 1
                   else rng.standard_normal(shape) / np.sqrt(shape[1])).astype(np.float32)
            for name, shape in shapes.items()}


def _rms_norm(x, gain, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gain


def _angles(seq, hd, theta):
    return np.arange(seq)[:, None, None] * theta ** (-np.arange(0, hd, 2) / hd)[None, None, :]


def rope_halves(x, theta):
    """HF / NeoX: element j rotates with element j + hd/2.  x [S, heads, hd]."""
    hd = x.shape[-1]
    a = _angles(x.shape[0], hd, theta)
    first, second = x[..., : hd // 2], x[..., hd // 2:]
    return np.concatenate([first * np.cos(a) - second * np.sin(a), second * np.cos(a) + first * np.sin(a)], axis=-1)


def rope_pairs(x, theta):
    """llama.cpp's Llama (LLAMA_ROPE_TYPE_NORM): element 2j rotates with element 2j + 1."""
    a = _angles(x.shape[0], x.shape[-1], theta)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * np.cos(a) - odd * np.sin(a)
    out[..., 1::2] = even * np.sin(a) + odd * np.cos(a)
    return out


def reference_logits(tokens, t: dict, c: LlamaConfig, rope) -> np.ndarray:
    """Logits [S, vocab] (float64).  `t`: 'embed', 'norm', 'lm_head' and '{i}.{role}', weights [out, in]."""
    t = {k: np.asarray(v, np.float64) for k, v in t.items()}
    seq = len(tokens)
    x = t["embed"][tokens]
    causal = np.tril(np.ones((seq, seq), bool))
    group = c.heads // c.kv_heads
    for i in range(c.layers):
        w = lambda role, i=i: t[f"{i}.{role}"]  # noqa: E731
        n1 = _rms_norm(x, w("ln1"), c.eps)
        q = rope((n1 @ w("q").T).reshape(seq, c.heads, c.head_dim), c.rope_theta)
        k = rope((n1 @ w("k").T).reshape(seq, c.kv_heads, c.head_dim), c.rope_theta)
        v = (n1 @ w("v").T).reshape(seq, c.kv_heads, c.head_dim)
        heads = []
        for h in range(c.heads):
            scores = np.where(causal, q[:, h] @ k[:, h // group].T / np.sqrt(c.head_dim), -np.inf)
            probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
            heads.append(probs / probs.sum(axis=-1, keepdims=True) @ v[:, h // group])
        h_res = x + np.concatenate(heads, axis=-1) @ w("o").T
        n2 = _rms_norm(h_res, w("ln2"), c.eps)
        gate = n2 @ w("gate").T
        x = h_res + (gate / (1 + np.exp(-gate)) * (n2 @ w("up").T)) @ w("down").T
    return _rms_norm(x, t["norm"], c.eps) @ t["lm_head"].T


def reference_greedy(t, c, rope, steps=NEW_TOKENS):
    tokens = list(PROMPT)
    for _ in range(steps):
        tokens.append(int(np.argmax(reference_logits(np.array(tokens), t, c, rope)[-1])))
    return np.array(tokens[len(PROMPT):])


def assert_runs_like_reference(config, weights, t, rope):
    """The loaded model's prefill logits and greedy tokens against the float64 reference."""
    model = CachedLlama(config, weights, capacity=16)
    expected = reference_logits(PROMPT, t, config, rope)
    np.testing.assert_allclose(model.forward(PROMPT[None, :])[0], expected,
                               rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    np.testing.assert_array_equal(generate(model, PROMPT, NEW_TOKENS), reference_greedy(t, config, rope))


# ----------------------------------------------------------------------------- GGUF

_GGUF_ROLES = {"attn_norm": "ln1", "attn_q": "q", "attn_k": "k", "attn_v": "v", "attn_output": "o",
               "ffn_norm": "ln2", "ffn_gate": "gate", "ffn_up": "up", "ffn_down": "down"}
_HF_OF_GGUF = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
               "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
               "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
               "ffn_down": "mlp.down_proj"}


def llama_cpp_permute(w, heads):
    """convert_hf_to_gguf.py's LlamaModel.permute: HF rotate-half rows -> llama.cpp adjacent pairs."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_tensors(c: LlamaConfig, hf: dict, tied=False) -> dict[str, np.ndarray]:
    """HF tensors under GGUF names, q/k permuted as llama.cpp's converter does (float32, [out, in])."""
    out = {"token_embd.weight": hf["model.embed_tokens.weight"], "output_norm.weight": hf["model.norm.weight"]}
    if not tied:
        out["output.weight"] = hf["lm_head.weight"]
    for i in range(c.layers):
        for name, hf_name in _HF_OF_GGUF.items():
            w = hf[f"model.layers.{i}.{hf_name}.weight"]
            if name in ("attn_q", "attn_k"):
                w = llama_cpp_permute(w, c.heads if name == "attn_q" else c.kv_heads)
            out[f"blk.{i}.{name}.weight"] = w
    return out


def write_gguf(path, c: LlamaConfig, tensors: dict, types: dict | None = None, arch="llama", metadata=True,
               **writer_calls):
    """A GGUF file: llama metadata for `c`, each tensor as given (F32, F16) or, by `types[name]` (an rlx
    scheme or "bf16"), packed."""
    writer = gguf.GGUFWriter(str(path), arch)
    if metadata:  # GGUFWriter.add_<key>(value) calls; `writer_calls` replaces or adds some
        calls = dict(add_block_count=c.layers, add_context_length=256, add_embedding_length=c.hidden,
                     add_feed_forward_length=c.ffn, add_head_count=c.heads, add_head_count_kv=c.kv_heads,
                     add_rope_freq_base=c.rope_theta, add_layer_norm_rms_eps=c.eps,
                     add_rope_dimension_count=c.head_dim, add_vocab_size=c.vocab)
        for method, value in (calls | writer_calls).items():
            getattr(writer, method)(value)
    for name, w in tensors.items():
        scheme = (types or {}).get(name)
        if scheme is None:
            writer.add_tensor(name, w)
        elif scheme == "bf16":  # gguf's own bf16 encoder (bytes), as llama.cpp's converter writes it
            writer.add_tensor(name, gguf.quants.quantize(w, gguf.GGMLQuantizationType.BF16),
                              raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            writer.add_tensor(name, quant.quantize(w, scheme), raw_dtype=gguf.GGMLQuantizationType[scheme.upper()])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def tensors_as_stored(path) -> dict[str, np.ndarray]:
    """The file's tensors decoded by the gguf package itself ([out, in] float32)."""
    return {t.name: gguf.quants.dequantize(t.data, t.tensor_type).reshape(tuple(reversed(t.shape.tolist())))
            for t in gguf.GGUFReader(str(path)).tensors}


def by_role(stored: dict, c: LlamaConfig) -> dict[str, np.ndarray]:
    t = {"embed": stored["token_embd.weight"], "norm": stored["output_norm.weight"],
         "lm_head": stored.get("output.weight", stored["token_embd.weight"])}
    for i in range(c.layers):
        for name, role in _GGUF_ROLES.items():
            t[f"{i}.{role}"] = stored[f"blk.{i}.{name}.weight"]
    return t


def _mixed_types(c: LlamaConfig, layer_scheme: dict[str, str]) -> dict[str, str]:
    return {f"blk.{i}.{name}.weight": scheme for i in range(c.layers) for name, scheme in layer_scheme.items()}


GGUF_CASES = {
    "f32": (SMALL, {}),
    "q8_0": (SMALL, _mixed_types(SMALL, {n: "q8_0" for n in ("attn_q", "attn_k", "attn_v", "attn_output",
                                                          "ffn_gate", "ffn_up", "ffn_down")})
             | {"output.weight": "q8_0"}),
    "q4_k": (WIDE, _mixed_types(WIDE, {"attn_q": "q4_k", "attn_k": "q4_k", "attn_v": "q6_k", "attn_output": "q4_k",
                                       "ffn_gate": "q4_k", "ffn_up": "q4_k", "ffn_down": "q6_k"})
             | {"output.weight": "q8_0", "token_embd.weight": "q4_k"}),
}


@pytest.mark.parametrize("case", list(GGUF_CASES))
def test_gguf_llama_runs_like_llama_cpp_reference(tmp_path, case):
    config, types = GGUF_CASES[case]
    path = tmp_path / "model.gguf"
    write_gguf(path, config, gguf_tensors(config, hf_tensors(config, seed=1)), types)
    loaded_config, weights = load_gguf(path)
    assert loaded_config == config
    # Adjacent-pair RoPE on the permuted rows as stored: what llama.cpp computes.
    assert_runs_like_reference(loaded_config, weights, by_role(tensors_as_stored(path), config), rope_pairs)


def test_gguf_without_output_ties_the_lm_head_to_the_embedding_f16_bf16(tmp_path):
    path = tmp_path / "tied.gguf"
    tensors = gguf_tensors(SMALL, hf_tensors(SMALL, seed=2), tied=True)
    tensors["token_embd.weight"] = tensors["token_embd.weight"].astype(np.float16)
    write_gguf(path, SMALL, tensors, {"blk.1.attn_k.weight": "bf16", "blk.0.ffn_down.weight": "bf16"})
    assert {t.tensor_type.name for t in gguf.GGUFReader(str(path)).tensors} == {"F32", "F16", "BF16"}
    config, weights = load_gguf(path)
    np.testing.assert_array_equal(weights["lm_head"], weights["embed"].T)
    assert_runs_like_reference(config, weights, by_role(tensors_as_stored(path), SMALL), rope_pairs)


def test_read_gguf_keeps_quantised_rows_packed_in_hf_order(tmp_path):
    """Quantisation is per row, so un-permuting the packed rows gives the bytes of the HF weight quantised."""
    hf = hf_tensors(WIDE, seed=3)
    path = tmp_path / "q.gguf"
    write_gguf(path, WIDE, gguf_tensors(WIDE, hf), GGUF_CASES["q4_k"][1])
    checkpoint = read_gguf(path)
    q = checkpoint.tensors["layers.1.q"]
    assert isinstance(q, QuantizedWeight) and q.scheme == "q4_k" and q.shape == (256, 256)
    np.testing.assert_array_equal(q.data, quant.quantize(hf["model.layers.1.self_attn.q_proj.weight"], "q4_k"))
    k = checkpoint.tensors["layers.0.k"]
    np.testing.assert_array_equal(k.data, quant.quantize(hf["model.layers.0.self_attn.k_proj.weight"], "q4_k"))
    assert not checkpoint.tied_embeddings


def test_gguf_runtime_fields_are_chosen_at_load(tmp_path):
    path = tmp_path / "model.gguf"
    write_gguf(path, SMALL, gguf_tensors(SMALL, hf_tensors(SMALL, seed=4)))
    config, _ = load_gguf(path, batch=2, max_seq=64)
    assert (config.batch, config.max_seq, config.hidden) == (2, 64, 64)
    with pytest.raises(CheckpointError, match="heads comes from the checkpoint; only batch, seq, max_seq, policy"):
        load_gguf(path, heads=8)


def _bad_gguf(tmp_path, edit=None, **options):
    tensors = gguf_tensors(SMALL, hf_tensors(SMALL, seed=5))
    if edit:
        edit(tensors)
    path = tmp_path / "bad.gguf"
    write_gguf(path, SMALL, tensors, **options)
    return path


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: _bad_gguf(p, lambda t: t.pop("blk.1.ffn_up.weight")), r"missing tensor\(s\) for layers\.1\.up"),
        (lambda p: _bad_gguf(p, lambda t: t.update({"blk.0.attn_v.weight": np.zeros((16, 64), np.float32)})),
         r"tensor for 'layers\.0\.v' has shape \[16, 64\]; the config \(layers=2, hidden=64, .*\) needs \[32, 64\]"),
        (lambda p: _bad_gguf(p, lambda t: t.update({"blk.0.attn_q.weight": np.zeros((60, 64), np.float32)})),
         r"tensor for 'layers\.0\.q' has 60 rows; 4 heads of 16 need 64"),
        (lambda p: _bad_gguf(p, arch="qwen2"), r"unsupported architecture 'qwen2'; the GGUF loader reads 'llama'"),
        (lambda p: _bad_gguf(p, lambda t: t.update({"blk.0.attn_q.bias": np.zeros(64, np.float32)})),
         r"tensor 'blk\.0\.attn_q\.bias' is not part of the Llama architecture rlx builds"),
        (lambda p: _bad_gguf(p, lambda t: t.update({"blk.2.attn_norm.weight": np.ones(64, np.float32)})),
         r"tensor\(s\) for layers\.2\.ln1, which the config \(layers=2"),
        (lambda p: _bad_gguf(p, metadata=False), r"missing metadata 'llama\.attention\.head_count'"),
        (lambda p: _bad_gguf(p, add_rope_dimension_count=8),
         r"partial rotary embedding \(llama\.rope\.dimension_count = 8, head size 16\) is not supported"),
        (lambda p: _bad_gguf(p, add_rope_scaling_type=gguf.RopeScalingType.YARN),
         r"RoPE scaling 'yarn' \(llama\.rope\.scaling\.type\) is not supported"),
        (lambda p: _bad_gguf(p, add_vocab_size=100), r"llama\.vocab_size is 100 but token_embd has 97 rows"),
        (lambda p: _bad_gguf(p, add_head_count_kv=3), r"4 attention heads are not a multiple of 3 key/value heads"),
    ],
    ids=["missing-tensor", "wrong-shape", "odd-heads", "architecture", "bias", "extra-layer", "no-metadata",
         "partial-rotary", "rope-scaling", "vocab", "kv-heads"],
)
def test_bad_gguf_files_are_rejected_clearly(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(CheckpointError, match=message) as caught:
        load_gguf(path)
    assert str(path) in str(caught.value) and isinstance(caught.value, (ValueError, RlxError))


def test_unsupported_gguf_tensor_types_and_non_gguf_files_are_rejected(tmp_path):
    path = tmp_path / "q4_1.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("token_embd.weight", gguf.quants.quantize(np.ones((97, 64), np.float32),
                                                                gguf.GGMLQuantizationType.Q4_1),
                      raw_dtype=gguf.GGMLQuantizationType.Q4_1)
    writer.write_header_to_file(), writer.write_kv_data_to_file(), writer.write_tensors_to_file(), writer.close()
    with pytest.raises(CheckpointError, match=r"tensor 'token_embd\.weight' has type Q4_1; supported: F32, F16, BF16, "
                                              r"Q4_0, Q8_0, Q2_K"):
        load_gguf(path)
    text = tmp_path / "notes.gguf"
    text.write_text("not a model")
    with pytest.raises(CheckpointError, match=r"notes\.gguf: not a readable GGUF file"):
        load_gguf(text)
    with pytest.raises(CheckpointError, match=r"missing\.gguf: no such file"):
        load_gguf(tmp_path / "missing.gguf")


# ----------------------------------------------------------------------------- Hugging Face

def hf_config(c: LlamaConfig, **changes) -> dict:
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": c.hidden,
            "intermediate_size": c.ffn, "num_hidden_layers": c.layers, "num_attention_heads": c.heads,
            "num_key_value_heads": c.kv_heads, "head_dim": c.head_dim, "vocab_size": c.vocab,
            "rms_norm_eps": c.eps, "rope_theta": c.rope_theta, "hidden_act": "silu",
            "tie_word_embeddings": False, "max_position_embeddings": 256, **changes}


def write_hf(directory, c: LlamaConfig, tensors: dict, shards=1, **config_changes):
    directory.mkdir(exist_ok=True)
    (directory / "config.json").write_text(json.dumps(hf_config(c, **config_changes)))
    names = sorted(tensors)
    for s in range(shards):
        part = {n: tensors[n] for n in names[s::shards]}
        safetensors_numpy.save_file(part, str(directory / f"model-{s + 1:05d}-of-{shards:05d}.safetensors"),
                                    metadata={"format": "pt"})
    return directory


def hf_by_role(hf: dict, c: LlamaConfig, tied=False) -> dict[str, np.ndarray]:
    t = {"embed": hf["model.embed_tokens.weight"], "norm": hf["model.norm.weight"],
         "lm_head": hf["model.embed_tokens.weight"] if tied else hf["lm_head.weight"]}
    for i in range(c.layers):
        for gguf_name, role in _GGUF_ROLES.items():
            t[f"{i}.{role}"] = hf[f"model.layers.{i}.{_HF_OF_GGUF[gguf_name]}.weight"]
    return t


def test_hf_llama_runs_like_reference(tmp_path):
    hf = hf_tensors(SMALL, seed=6)
    path = write_hf(tmp_path / "llama", SMALL, hf, shards=2)
    config, weights = load_hf(path)
    assert config == SMALL
    np.testing.assert_array_equal(weights["layers.0.q"], hf["model.layers.0.self_attn.q_proj.weight"].T)
    assert_runs_like_reference(config, weights, hf_by_role(hf, SMALL), rope_halves)


def test_hf_tied_embeddings_and_f16_bf16_tensors(tmp_path):
    hf = hf_tensors(SMALL, seed=7)
    del hf["lm_head.weight"]
    hf["model.layers.0.mlp.up_proj.weight"] = hf["model.layers.0.mlp.up_proj.weight"].astype(np.float16)
    path = write_hf(tmp_path / "tied", SMALL, hf, tie_word_embeddings=True)
    # BF16 (numpy has none): rewrite one tensor by hand as the top 16 bits of its float32 values.
    bf16_name = "model.layers.1.self_attn.o_proj.weight"
    exact = (hf[bf16_name].view(np.uint32) & 0xFFFF0000).view(np.float32)
    _write_bf16(path / "extra.safetensors", bf16_name, exact)
    first = next(path.glob("model-*.safetensors"))
    safetensors_numpy.save_file({n: v for n, v in hf.items() if n != bf16_name}, str(first))
    config, weights = load_hf(path)
    np.testing.assert_array_equal(weights["lm_head"], hf["model.embed_tokens.weight"].T)
    np.testing.assert_array_equal(weights["layers.1.o"], exact.T)
    np.testing.assert_array_equal(weights["layers.0.up"], hf["model.layers.0.mlp.up_proj.weight"].astype(np.float32).T)


def test_hf_f8_e4m3_tensors_widen_exactly(tmp_path):
    """An F8_E4M3 tensor (OCP FP8 E4M3), as the safetensors package writes torch's float8_e4m3fn,
    loads as its exact float32 values (ml_dtypes' decoding); the model runs on them."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    hf = hf_tensors(SMALL, seed=8)
    name = "model.layers.0.mlp.down_proj.weight"
    f8 = hf[name].astype(ml_dtypes.float8_e4m3fn)  # round to nearest even
    path = write_hf(tmp_path / "fp8", SMALL, {n: v for n, v in hf.items() if n != name})
    safetensors_torch.save_file({name: torch.from_numpy(f8.view(np.uint8).copy()).view(torch.float8_e4m3fn)},
                                str(path / "fp8.safetensors"))
    config, weights = load_hf(path)
    exact = f8.astype(np.float32)
    assert np.abs(exact - hf[name]).max() > 0  # the values did change: not the f32 tensor read back
    np.testing.assert_array_equal(weights["layers.0.down"], exact.T)
    assert_runs_like_reference(config, weights, hf_by_role({**hf, name: exact}, SMALL), rope_halves)


def _write_bf16(file, name, values):
    import struct
    data = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    header = json.dumps({name: {"dtype": "BF16", "shape": list(values.shape), "data_offsets": [0, len(data)]}}).encode()
    file.write_bytes(struct.pack("<Q", len(header)) + header + data)


def test_hf_quantize_at_load_simulates_q8_0(tmp_path):
    hf = hf_tensors(SMALL, seed=8)
    path = write_hf(tmp_path / "llama", SMALL, hf)
    config, weights = load_hf(path, quantize="q8_0")
    q8 = gguf.GGMLQuantizationType.Q8_0
    t = {role: (gguf.quants.dequantize(gguf.quants.quantize(w, q8), q8) if w.ndim == 2 and role != "embed" else w)
         for role, w in hf_by_role(hf, SMALL).items()}
    assert not np.array_equal(t["0.q"], hf["model.layers.0.self_attn.q_proj.weight"])  # quantisation changed it
    np.testing.assert_array_equal(weights["layers.0.q"], t["0.q"].T)
    np.testing.assert_array_equal(weights["embed"], hf["model.embed_tokens.weight"])
    assert_runs_like_reference(config, weights, t, rope_halves)
    with pytest.raises(CheckpointError, match=r"llama: cannot quantise 'lm_head' \[97, 64\] to q4_k: .*"
                                              r"not a multiple of the block size 256"):
        load_hf(path, quantize="q4_k")  # 64 inputs: not a multiple of q4_k's 256-element blocks
    with pytest.raises(CheckpointError, match=r"quantize='int8': expected None or a GGUF scheme \(q4_0, q8_0"):
        load_hf(path, quantize="int8")


@pytest.mark.parametrize(
    "edit, changes, message",
    [
        (None, dict(model_type="qwen2"), r"model_type 'qwen2' has q/k/v projection biases, which rlx's Llama builder"),
        (None, dict(model_type="qwen3"), r"model_type 'qwen3' has per-head q/k RMSNorm \(q_norm, k_norm\)"),
        (None, dict(model_type="gpt2"), r"unsupported model_type 'gpt2'; supported: 'llama'"),
        (None, dict(attention_bias=True), r"attention_bias = true is not supported"),
        (None, dict(num_attention_heads=0), r"config\.json: heads must be a positive integer, got 0"),
        (None, dict(rms_norm_eps="small"), r"config\.json: eps must be a positive number, got 'small'"),
        (None, dict(rope_scaling={"rope_type": "llama3", "factor": 8.0}), r"rope_scaling .* is not supported"),
        (lambda t: t.pop("model.layers.1.mlp.down_proj.weight"), {}, r"missing tensor\(s\) for layers\.1\.down"),
        (lambda t: t.pop("lm_head.weight"), {}, r"missing tensor\(s\) for lm_head"),
        (lambda t: t.update({"model.layers.0.self_attn.q_proj.weight": np.zeros((64, 32), np.float32)}), {},
         r"tensor for 'layers\.0\.q' has shape \[64, 32\]; the config .* needs \[64, 64\]"),
        (lambda t: t.update({"model.layers.0.self_attn.q_norm.weight": np.ones(16, np.float32)}), {},
         r"tensor 'model\.layers\.0\.self_attn\.q_norm\.weight' is not part of the Llama architecture"),
        (lambda t: t.update({"model.layers.0.self_attn.q_proj.bias": np.ones(64, np.float32)}), {},
         r"tensor 'model\.layers\.0\.self_attn\.q_proj\.bias' is not part of the Llama architecture"),
        (lambda t: t.update({"model.embed_tokens.weight": np.zeros((97, 64), np.int32)}), {},
         r"tensor 'model\.embed_tokens\.weight' has dtype I32; supported: F32, F16, BF16"),
    ],
    ids=["qwen2", "qwen3", "gpt2", "bias-flag", "zero-heads", "text-eps", "rope-scaling", "missing", "untied-no-head", "wrong-shape",
         "q-norm", "bias-tensor", "int-dtype"],
)
def test_bad_hf_checkpoints_are_rejected_clearly(tmp_path, edit, changes, message):
    hf = hf_tensors(SMALL, seed=9)
    if edit:
        edit(hf)
    path = write_hf(tmp_path / "bad", SMALL, hf, **changes)
    with pytest.raises(CheckpointError, match=message):
        load_hf(path)


def test_hf_missing_files_are_rejected_clearly(tmp_path):
    with pytest.raises(CheckpointError, match=r"nowhere: not a directory"):
        load_hf(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match=r"empty: no config\.json"):
        load_hf(tmp_path / "empty")
    (tmp_path / "empty" / "config.json").write_text(json.dumps(hf_config(SMALL)))
    with pytest.raises(CheckpointError, match=r"empty: no \*\.safetensors files"):
        load_hf(tmp_path / "empty")
    (tmp_path / "empty" / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
    with pytest.raises(CheckpointError, match=r"model\.safetensors: not a readable safetensors file"):
        load_hf(tmp_path / "empty")


def readme_examples() -> list[str]:
    """The python blocks of the README's "Loading checkpoints" section, in order."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Loading checkpoints", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_readme_example_runs(tmp_path, monkeypatch):
    code = readme_examples()[0]
    monkeypatch.chdir(tmp_path)  # it writes tiny-llama/ in the working directory
    exec(compile(code, "README.md", "exec"), {})
    config, weights = load_hf(tmp_path / "tiny-llama")
    assert config.layers == 2 and weights["layers.1.down"].shape == (128, 64)


# ----------------------------------------------------------------------------- packed (keep_quantized)

# Q8_0 and Q4_K projections, a Q6_K LM head, one float projection (blk.1.attn_output stays F32) and a
# Q8_0 embedding (kept packed: rlx.dequant_gather decodes the rows it picks).
PACKED_TYPES = (_mixed_types(WIDE, {"attn_q": "q4_k", "attn_k": "q8_0", "attn_v": "q4_k", "ffn_gate": "q8_0",
                                    "ffn_up": "q4_k", "ffn_down": "q8_0"})
                | {"blk.0.attn_output.weight": "q4_k", "output.weight": "q6_k", "token_embd.weight": "q8_0"})


def assert_same_model(quantised: CachedLlama, dense: CachedLlama, prompt=PROMPT, new_tokens=6):
    """Prefill logits within 1e-4 (relative to their scale) and the same greedy tokens."""
    got, want = quantised.forward(prompt[None]), dense.forward(prompt[None])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    np.testing.assert_array_equal(generate(quantised, prompt, new_tokens), generate(dense, prompt, new_tokens))


def packed_params(model: CachedLlama, seq: int) -> dict[str, tuple]:
    """(dtype, shape) of each weight in the compiled signature of the step for `seq` new tokens."""
    return {spec.name: (spec.dtype, spec.shape) for spec in model.step(seq).signature.inputs if spec.is_param}


def test_gguf_keep_quantized_runs_like_the_dequantised_f32_model(tmp_path):
    path = tmp_path / "packed.gguf"
    write_gguf(path, WIDE, gguf_tensors(WIDE, hf_tensors(WIDE, seed=11)), PACKED_TYPES)
    config, weights = load_gguf(path, keep_quantized=True)
    expected = {f"layers.{i}.{role}": scheme for i in range(WIDE.layers)
                for role, scheme in (("q", "q4_k"), ("k", "q8_0"), ("v", "q4_k"), ("gate", "q8_0"), ("up", "q4_k"),
                                     ("down", "q8_0"))} | {"layers.0.o": "q4_k", "lm_head": "q6_k", "embed": "q8_0"}
    assert dict(config.quant) == expected
    dense_config, dense_weights = load_gguf(path)
    assert dataclasses.replace(config, quant=None) == dense_config == WIDE
    checkpoint = read_gguf(path)
    for name, scheme in expected.items():  # the file's bytes (rows un-permuted), no transpose
        np.testing.assert_array_equal(weights[name], checkpoint.tensors[name].data)
        rows, k = dense_weights[name].shape if name == "embed" else dense_weights[name].shape[::-1]
        assert weights[name].dtype == np.uint8 and weights[name].shape == (rows, quant.row_bytes(scheme, k))
    assert weights["layers.1.o"].dtype == np.float32

    model = CachedLlama(config, weights, capacity=32)
    assert_same_model(model, CachedLlama(dense_config, dense_weights, capacity=32))
    # The compiled steps take the bytes: no float32 copy of a quantised weight is an argument.
    for seq in (len(PROMPT), 1):
        params = packed_params(model, seq)
        for name in expected:
            assert params[name] == (np.dtype(np.uint8), weights[name].shape)
        assert params["layers.1.o"] == (np.dtype(np.float32), (256, 256))


def test_quantised_model_ir_decodes_inside_dequant_matmul():
    """Every quantised projection is an `rlx.dequant_matmul` on a `ui8` parameter; float ones stay matmuls."""
    config = dataclasses.replace(WIDE, layers=1, quant={"layers.0.q": "q4_k", "layers.0.down": "q8_0",
                                                        "lm_head": "q6_k"})
    mir = str(build_llama(config).lower().module)
    assert len(re.findall(r"rlx\.dequant_matmul", mir)) == 3
    assert 'tensor<256x144xui8> {rlx.name = "layers.0.q", rlx.param}' in mir
    assert 'tensor<256x272xui8> {rlx.name = "layers.0.down", rlx.param}' in mir
    assert 'tensor<97x210xui8> {rlx.name = "lm_head", rlx.param}' in mir
    assert 'tensor<256x128xf32> {rlx.name = "layers.0.k", rlx.param}' in mir
    assert len(re.findall(r"rlx\.matmul\b", mir)) == 5  # k, v, o, gate and up


def test_hf_quantize_keep_quantized_runs_packed(tmp_path):
    hf = hf_tensors(SMALL, seed=12)
    path = write_hf(tmp_path / "llama", SMALL, hf)
    config, weights = load_hf(path, quantize="q8_0", keep_quantized=True)
    assert config.quant == "q8_0"
    q8 = gguf.GGMLQuantizationType.Q8_0
    np.testing.assert_array_equal(weights["layers.1.down"],
                                  gguf.quants.quantize(hf["model.layers.1.mlp.down_proj.weight"], q8))
    np.testing.assert_array_equal(weights["lm_head"], gguf.quants.quantize(hf["lm_head.weight"], q8))
    np.testing.assert_array_equal(weights["embed"], hf["model.embed_tokens.weight"])
    simulated_config, simulated = load_hf(path, quantize="q8_0")  # the same numbers decoded at load
    model = CachedLlama(config, weights, capacity=16)
    assert_same_model(model, CachedLlama(simulated_config, simulated, capacity=16))
    assert packed_params(model, 1)["layers.0.gate"] == (np.dtype(np.uint8), (128, 68))
    # One step with a symbolic SEQ serves the prefill and the decode steps on the packed weights too.
    assert_same_model(CachedLlama(config, weights, capacity=16, dynamic=True),
                      CachedLlama(simulated_config, simulated, capacity=16))


def test_gguf_keep_quantized_tied_lm_head_stays_packed(tmp_path):
    """A Q8_0 embedding without `output`: the lookup and the LM head take the same bytes."""
    path = tmp_path / "tied.gguf"
    types = (_mixed_types(SMALL, {n: "q8_0" for n, role in _GGUF_ROLES.items() if role in PROJECTIONS})
             | {"token_embd.weight": "q8_0"})
    write_gguf(path, SMALL, gguf_tensors(SMALL, hf_tensors(SMALL, seed=14), tied=True), types)
    config, weights = load_gguf(path, keep_quantized=True)
    dense_config, dense = load_gguf(path)
    assert dict(config.quant) == dict.fromkeys(
        [f"layers.{i}.{role}" for i in range(SMALL.layers) for role in PROJECTIONS] + ["lm_head", "embed"], "q8_0")
    np.testing.assert_array_equal(weights["lm_head"], read_gguf(path).tensors["embed"].data)
    assert weights["embed"].dtype == np.uint8 and np.shares_memory(weights["embed"], weights["lm_head"])
    assert_same_model(CachedLlama(config, weights, capacity=16), CachedLlama(dense_config, dense, capacity=16))


def test_keep_quantized_options_are_checked(tmp_path):
    path = write_hf(tmp_path / "llama", SMALL, hf_tensors(SMALL, seed=13))
    with pytest.raises(CheckpointError, match=r"keep_quantized=True needs quantize= one of the schemes the model "
                                              r"runs packed \(q4_0, q8_0, .*\), got quantize=None"):
        load_hf(path, keep_quantized=True)
    with pytest.raises(CheckpointError, match=r"got quantize='q8_k'"):
        load_hf(path, quantize="q8_k", keep_quantized=True)
    with pytest.raises(CheckpointError, match=r"cannot quantise 'lm_head' \[97, 64\] to q4_k: .*"
                                              r"not a multiple of the block size 256"):
        load_hf(path, quantize="q4_k", keep_quantized=True)


@pytest.mark.parametrize("quant_spec, message", [
    ({"layers.0.ln1": "q8_0"}, r"quant names 'layers\.0\.ln1', which is not a projection or the embedding"),
    ({"norm": "q8_0"}, r"quant names 'norm', which is not a projection or the embedding"),
    ({"embed": "q4_k"}, r"quant: 'embed' has 64 inputs, not a multiple of the 256-weight blocks of q4_k"),
    ({"layers.0.q": "q8_k"}, r"quant: 'layers\.0\.q' has scheme 'q8_k'; rlx\.dequant_matmul decodes q4_0, q8_0"),
    ("q4_k", r"quant: 'layers\.0\.q' has 64 inputs, not a multiple of the 256-weight blocks of q4_k"),
    (3, r"quant must be None, a scheme name or a mapping of weight name to scheme, got 3"),
])
def test_bad_quant_configs_are_rejected_clearly(quant_spec, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(SMALL, quant=quant_spec)


def test_readme_keep_quantized_example_runs(tmp_path, monkeypatch, capsys):
    """The second block continues the first (it loads the tiny-llama/ directory the first writes)."""
    first, second = readme_examples()[:2]
    monkeypatch.chdir(tmp_path)
    exec(compile(first, "README.md", "exec"), {})
    namespace = {}
    exec(compile(second, "README.md", "exec"), namespace)
    assert capsys.readouterr().out.splitlines()[1] == "q8_0 uint8 (64, 68)"
    config, weights = namespace["config"], namespace["weights"]
    assert config.quant == "q4_k" and weights["layers.1.down"].shape == (256, 2 * 144)
    assert weights["layers.1.down"].dtype == np.uint8
