"""Peak RSS of a Llama run on packed Q4_K / Q8_0 weights versus the same model in float32.

One GGUF file (a mid-size random Llama, every projection and the LM head quantised) is written
first; then each variant runs in a fresh process: `load_gguf(path, keep_quantized=True)` (the
projections stay packed, `rlx.dequant_matmul`) or `load_gguf(path)` (decoded to float32), a
prefill and a few greedy decode steps, and reports the process's peak RSS (ru_maxrss; it
includes the Python interpreter, MLIR and the JIT-compiled code, which both variants share).

    python benchmarks/quantized_memory.py [q4_k|q8_0 ...]
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

LAYERS, HIDDEN, HEADS, KV_HEADS, FFN, VOCAB = 4, 1024, 16, 4, 2816, 4096


def write_model(path: str, scheme: str) -> None:
    import gguf

    from rlx_mlir import quant
    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(path, "llama")
    for method, value in dict(add_block_count=LAYERS, add_context_length=256, add_embedding_length=HIDDEN,
                              add_feed_forward_length=FFN, add_head_count=HEADS, add_head_count_kv=KV_HEADS,
                              add_rope_freq_base=10000.0, add_layer_norm_rms_eps=1e-5).items():
        getattr(writer, method)(value)
    head_dim = HIDDEN // HEADS

    def packed(name, out, inp):
        w = (rng.standard_normal((out, inp)) / np.sqrt(inp)).astype(np.float32)
        writer.add_tensor(name, quant.quantize(w, scheme), raw_dtype=gguf.GGMLQuantizationType[scheme.upper()])

    writer.add_tensor("token_embd.weight", rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32))
    for i in range(LAYERS):
        for norm in ("attn_norm", "ffn_norm"):
            writer.add_tensor(f"blk.{i}.{norm}.weight", np.ones(HIDDEN, np.float32))
        for name, out, inp in (("attn_q", HIDDEN, HIDDEN), ("attn_k", KV_HEADS * head_dim, HIDDEN),
                               ("attn_v", KV_HEADS * head_dim, HIDDEN), ("attn_output", HIDDEN, HIDDEN),
                               ("ffn_gate", FFN, HIDDEN), ("ffn_up", FFN, HIDDEN), ("ffn_down", HIDDEN, FFN)):
            packed(f"blk.{i}.{name}.weight", out, inp)
    writer.add_tensor("output_norm.weight", np.ones(HIDDEN, np.float32))
    packed("output.weight", VOCAB, HIDDEN)
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


def main(schemes) -> None:
    print(f"llama {LAYERS} layers, hidden {HIDDEN}, ffn {FFN}, vocab {VOCAB}: prefill 4 tokens + 3 decode steps")
    print(f"{'weights':<14} {'weight MiB':>10} {'peak RSS MiB':>13} {'ratio':>6} {'s':>6}  tokens")
    with tempfile.TemporaryDirectory() as tmp:
        for scheme in schemes:
            path = os.path.join(tmp, f"{scheme}.gguf")
            write_model(path, scheme)
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
        main(sys.argv[1:] or ["q4_k", "q8_0"])
