"""Peak RSS of a Llama run on packed Q4_K / Q8_0 weights versus the same model in float32.

One GGUF file (a mid-size random Llama, every projection, the LM head and the embedding quantised) is written
first; then each variant runs in a fresh process: `load_gguf(path, keep_quantized=True)` (the
projections stay packed, `rlx.dequant_matmul`) or `load_gguf(path)` (decoded to float32), a
prefill and a few greedy decode steps, and reports the process's peak RSS (ru_maxrss; it
includes the Python interpreter, MLIR and the JIT-compiled code, which both variants share).

    python benchmarks/quantized_memory.py [--large] [q4_k|q8_0 ...]

`--large` runs an 8-layer, 2048-wide model (1.6 GiB of float32 weights) instead of the 4-layer,
1024-wide one, so that the fixed cost of the process (interpreter, MLIR, the JIT) weighs less.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

# layers, hidden, heads, kv heads, ffn, vocab
SIZES = {"mid": (4, 1024, 16, 4, 2816, 4096), "large": (8, 2048, 16, 4, 5632, 8192)}


def write_model(path: str, scheme: str, size: str) -> None:
    import gguf

    from rlx_mlir import quant
    layers, hidden, heads, kv_heads, ffn, vocab = SIZES[size]
    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(path, "llama")
    for method, value in dict(add_block_count=layers, add_context_length=256, add_embedding_length=hidden,
                              add_feed_forward_length=ffn, add_head_count=heads, add_head_count_kv=kv_heads,
                              add_rope_freq_base=10000.0, add_layer_norm_rms_eps=1e-5).items():
        getattr(writer, method)(value)
    head_dim = hidden // heads

    def packed(name, out, inp):
        w = (rng.standard_normal((out, inp)) / np.sqrt(inp)).astype(np.float32)
        writer.add_tensor(name, quant.quantize(w, scheme), raw_dtype=gguf.GGMLQuantizationType[scheme.upper()])

    packed("token_embd.weight", vocab, hidden)  # as GGUF files store it: looked up packed (rlx.dequant_gather)
    for i in range(layers):
        for norm in ("attn_norm", "ffn_norm"):
            writer.add_tensor(f"blk.{i}.{norm}.weight", np.ones(hidden, np.float32))
        for name, out, inp in (("attn_q", hidden, hidden), ("attn_k", kv_heads * head_dim, hidden),
                               ("attn_v", kv_heads * head_dim, hidden), ("attn_output", hidden, hidden),
                               ("ffn_gate", ffn, hidden), ("ffn_up", ffn, hidden), ("ffn_down", hidden, ffn)):
            packed(f"blk.{i}.{name}.weight", out, inp)
    writer.add_tensor("output_norm.weight", np.ones(hidden, np.float32))
    packed("output.weight", vocab, hidden)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def run(path: str, keep_quantized: bool) -> None:
    from rlx_mlir.models.checkpoints import load_gguf
    from rlx_mlir.models.generate import CachedLlama, generate
    start = time.perf_counter()
    config, weights = load_gguf(path, keep_quantized=keep_quantized)
    weight_bytes = sum(w.nbytes for w in weights.values())
    tokens = generate(CachedLlama(config, weights, capacity=64), [5, 17, 42, 3], max_new_tokens=4)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{weight_bytes / 2**20:.1f} {peak:.1f} {time.perf_counter() - start:.1f} {' '.join(map(str, tokens))}")


def main(schemes, size: str) -> None:
    layers, hidden, _, _, ffn, vocab = SIZES[size]
    print(f"llama {layers} layers, hidden {hidden}, ffn {ffn}, vocab {vocab}: prefill 4 tokens + 3 decode steps")
    print(f"{'weights':<14} {'weight MiB':>10} {'peak RSS MiB':>13} {'ratio':>6} {'s':>6}  tokens")
    with tempfile.TemporaryDirectory() as tmp:
        for scheme in schemes:
            path = os.path.join(tmp, f"{scheme}.gguf")
            write_model(path, scheme, size)
            rows = {}
            for label, keep in ((f"{scheme} packed", "1"), ("float32", "")):
                out = subprocess.run([sys.executable, __file__, "--run", path, keep], check=True,
                                     capture_output=True, text=True).stdout.split()
                rows[label] = (float(out[0]), float(out[1]), float(out[2]), out[3:])
            f32_peak = rows["float32"][1]
            for label, (mib, peak, seconds, tokens) in rows.items():
                print(f"{label:<14} {mib:>10.1f} {peak:>13.1f} {peak / f32_peak:>6.2f} {seconds:>6.1f}  "
                      f"{' '.join(tokens)}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:
        run(sys.argv[2], bool(sys.argv[3]) if len(sys.argv) > 3 else False)
    else:
        size = "large" if "--large" in sys.argv else "mid"
        main([a for a in sys.argv[1:] if a != "--large"] or ["q4_k", "q8_0"], size)
