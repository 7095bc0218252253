"""KV-cache decoding on the 12-layer Llama-style model: time to first token and tokens per second.

The model of benchmarks/memory.py (12 layers, hidden 512, 8 heads of 64,
SwiGLU 1408, vocab 1000), caches of CAPACITY positions.  Two executables,
each compiled once: a prefill step of `--chunk` tokens at any position, and
the decode step (one token at any position).  For each past length P: P prompt
tokens prefilled in chunks (their wall time plus the first token's sampling is
the time to first token), then `--steps` greedy decode steps (tokens per second
= steps / their wall time).  A decode step attends to P + 1 keys:
rlx.cached_attention reads only the filled part of the cache.

The last rows, if the symbolic-dims API (`rlx_mlir.dims.variants`) is present, use
one step compiled with a symbolic `SEQ` (`CachedLlama(..., dynamic=True)`): the
first run at a new length is a variant cache miss (specialise, compile, run),
later runs at that length are hits; otherwise they say it is not available.

Then, per thread count (`--peer-threads`, default 1 and every core), decode tokens/s against
Hugging Face transformers' `LlamaForCausalLM.generate` (same config and weights, float32, sdpa
attention, greedy, its KV cache; its decode time is generate(steps + 1) less generate(1)), rounds
interleaved, and the greedy tokens compared; one line saying it is missing where transformers or
torch is not installed (`pip install -e .[bench]`).

    python benchmarks/decode.py [--steps 16] [--past 128 512] [--chunk 128] [--no-variants] [--quant q8_0]
                                [--peer-threads 1 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import time

import numpy as np

from rlx_mlir.models.generate import CachedLlama, sample
from rlx_mlir.models.llama import LlamaConfig, random_weights
from rlx_mlir.targets.cpu import default_threads

CONFIG = LlamaConfig(layers=12, hidden=512, heads=8, kv_heads=8, head_dim=64, ffn=1408, vocab=1000)
CAPACITY = 640


def _timed(run):
    start = time.perf_counter()
    value = run()
    return value, time.perf_counter() - start


def _cpu_timed(run):
    """(value, wall seconds, CPU seconds of this process: user + system, every thread)."""
    start = os.times()
    value, wall = _timed(run)
    end = os.times()
    return value, wall, (end.user - start.user) + (end.system - start.system)


def measure_past(model: CachedLlama, past: int, chunk: int, steps: int, rng: np.random.Generator) -> dict:
    """Prefill `past` tokens in chunks of `chunk` (the first token's latency), then `steps` decode steps."""
    prompt = rng.integers(0, CONFIG.vocab, (1, past))
    if past % chunk:
        model.step(past % chunk)  # the last, shorter chunk: compiled before timing

    def prefill():
        model.reset()
        for start in range(0, past, chunk):
            logits = model.forward(prompt[:, start:start + chunk])
        return sample(logits[:, -1], None)

    token, ttft = _timed(prefill)
    durations = []
    for _ in range(steps):
        token, seconds = _timed(lambda token=token: sample(model.forward(token[:, None])[:, -1], None))
        durations.append(seconds)
    return dict(past=past, chunks=-(-past // chunk), ttft=ttft, tokens_per_s=steps / sum(durations),
                step_ms=1e3 * float(np.median(durations)))


def hf_llama(weights: dict, threads: int):
    """Hugging Face transformers' LlamaForCausalLM with the same config and weights (float32, sdpa
    attention) on `threads` torch threads; or a line saying why there is none (not installed)."""
    try:
        import torch
        import transformers
        from transformers import LlamaConfig as HFLlamaConfig
        from transformers import LlamaForCausalLM
    except ImportError:
        return "Hugging Face transformers column: not measured (pip install transformers torch: the bench extra)"
    c = CONFIG
    torch.set_num_threads(threads)
    config = HFLlamaConfig(
        vocab_size=c.vocab, hidden_size=c.hidden, intermediate_size=c.ffn, num_hidden_layers=c.layers,
        num_attention_heads=c.heads, num_key_value_heads=c.kv_heads, head_dim=c.head_dim,
        max_position_embeddings=CAPACITY, rms_norm_eps=c.eps,
        rope_parameters={"rope_type": "default", "rope_theta": c.rope_theta},
        tie_word_embeddings=False, bos_token_id=None, eos_token_id=None, pad_token_id=0)
    config._attn_implementation = "sdpa"
    model = LlamaForCausalLM(config).float().eval()
    # rlx's projections are `x @ w` with w [in, out]; torch's Linear holds [out, in].
    state = {"model.embed_tokens.weight": weights["embed"], "model.norm.weight": weights["norm"],
             "lm_head.weight": weights["lm_head"].T}
    names = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
             "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}
    for i in range(c.layers):
        state[f"model.layers.{i}.input_layernorm.weight"] = weights[f"layers.{i}.ln1"]
        state[f"model.layers.{i}.post_attention_layernorm.weight"] = weights[f"layers.{i}.ln2"]
        for ours, theirs in names.items():
            state[f"model.layers.{i}.{theirs}.weight"] = weights[f"layers.{i}.{ours}"].T
    model.load_state_dict({name: torch.from_numpy(np.ascontiguousarray(value)) for name, value in state.items()},
                          strict=True)

    def generate(prompt: np.ndarray, new_tokens: int) -> np.ndarray:
        """Greedy `generate` with its KV cache: the new tokens [new_tokens]."""
        torch.set_num_threads(threads)
        with torch.inference_mode():
            ids = model.generate(torch.from_numpy(prompt), max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                 do_sample=False, use_cache=True, pad_token_id=0)
        return ids[0, prompt.shape[1]:].numpy()

    generate.version = f"transformers {transformers.__version__}, torch {torch.__version__}"
    return generate


def rlx_greedy(model: CachedLlama, prompt: np.ndarray, new_tokens: int) -> tuple[np.ndarray, float]:
    """Greedy decoding as `generate` does it: the new tokens, and the seconds of the decode steps
    (every new token after the first, whose time is the prefill's)."""
    model.reset()
    token = sample(model.forward(prompt)[:, -1], None)
    tokens = [int(token[0])]
    start = time.perf_counter()
    for _ in range(new_tokens - 1):
        token = sample(model.forward(token[:, None])[:, -1], None)
        tokens.append(int(token[0]))
    return np.array(tokens), time.perf_counter() - start


def peer_rows(weights: dict, past: int, steps: int, thread_counts: list[int], rounds: int = 3) -> list[str]:
    """Decode tokens/s of rlx and of Hugging Face `generate` (same weights, greedy, KV cache) per
    thread count, rounds interleaved; the greedy tokens compared."""
    prompt = np.random.default_rng(2).integers(0, CONFIG.vocab, (1, past))
    lines = []
    for threads in thread_counts:
        model = CachedLlama(CONFIG, weights, capacity=CAPACITY, threads=threads)
        model.step(past), model.step(1)  # compiled (or loaded from the compile caches) before timing
        rlx_greedy(model, prompt, 2)
        hf = hf_llama(weights, threads)
        if isinstance(hf, str):
            lines.append(hf)
            hf = None
        else:
            hf(prompt, 2)  # warm-up
        rlx_times, hf_times = [], []
        for _ in range(rounds):
            rlx_tokens, seconds = rlx_greedy(model, prompt, steps + 1)
            rlx_times.append(steps / seconds)
            if hf is not None:
                time.sleep(0.3)  # the other library's idle threads go to sleep
                # decode time: generate(steps + 1) less generate(1) (the prefill and first token)
                first = min(_timed(lambda hf=hf: hf(prompt, 1))[1] for _ in range(2))
                hf_tokens, total = _timed(lambda hf=hf: hf(prompt, steps + 1))
                hf_times.append(steps / max(total - first, 1e-9))
                time.sleep(0.3)
        rlx_rate = sorted(rlx_times)[::-1]
        line = (f"{threads} thread(s), past {past}, {steps} decode steps: rlx {rlx_rate[0]:.1f} / "
                f"{rlx_rate[len(rlx_rate) // 2]:.1f} tok/s (best / median)")
        if hf is not None:
            hf_rate = sorted(hf_times)[::-1]
            same = np.array_equal(rlx_tokens, hf_tokens)
            where = int(np.argmax(rlx_tokens != hf_tokens))
            first_difference = "" if same else f", first difference at new token {where}"
            line += (f"; HF generate {hf_rate[0]:.1f} / {hf_rate[len(hf_rate) // 2]:.1f} tok/s; "
                     f"rlx/HF {rlx_rate[0] / hf_rate[0]:.2f}x (best); greedy tokens "
                     f"{'identical' if same else 'differ'} ({len(rlx_tokens)} new{first_difference}) [{hf.version}]")
        lines.append(line)
    return lines


def variant_rows(weights: dict, chunk: int) -> list[tuple[str, str]]:
    """(label, value) rows for the dynamic step (part A's symbolic SEQ), or one row saying it is absent."""
    if importlib.util.find_spec("rlx_mlir.dims.variants") is None:
        return [("variant cache miss / hit", "n/a: rlx_mlir.dims.variants not present")]
    model = CachedLlama(CONFIG, weights, capacity=CAPACITY, dynamic=True)
    _, compile_s = _timed(lambda: model.step(1))
    prompt = np.random.default_rng(1).integers(0, CONFIG.vocab, (1, chunk))
    token = np.zeros((1, 1), np.int64)
    model.reset()
    _, prefill_miss = _timed(lambda: model.forward(prompt))
    _, decode_miss = _timed(lambda: model.forward(token))
    model.reset()
    _, prefill_hit = _timed(lambda: model.forward(prompt))
    decode_hit = min(_timed(lambda: model.forward(token))[1] for _ in range(4))
    rows = [
        ("dynamic step (tokens [1, SEQ]): compile", f"{compile_s:.2f} s"),
        (f"prefill {chunk}: variant cache miss", f"{prefill_miss:.2f} s (specialise SEQ={chunk}, compile, run)"),
        (f"prefill {chunk}: variant cache hit", f"{prefill_hit:.3f} s (run)"),
        ("decode: variant cache miss", f"{decode_miss:.2f} s (specialise SEQ=1, compile, run)"),
        ("decode: variant cache hit", f"{1e3 * decode_hit:.1f} ms (run)"),
    ]
    executable = model.step(1)
    if hasattr(executable, "cache_info"):
        rows.append(("cache_info()", str(executable.cache_info())))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16, help="decode steps timed per past length")
    parser.add_argument("--past", type=int, nargs="+", default=[128, 512], help="past lengths (prompt tokens)")
    parser.add_argument("--chunk", type=int, default=128, help="prefill chunk: one compiled prefill of this length")
    parser.add_argument("--no-variants", action="store_true", help="skip the dynamic-compile rows")
    parser.add_argument("--quant", default=None, help="GGUF scheme of every projection (q8_0, q4_k, ...; default f32)")
    parser.add_argument("--peer-threads", type=int, nargs="*", default=None,
                        help="thread counts of the Hugging Face comparison (default: 1 and every core; none: skip)")
    args = parser.parse_args()
    global CONFIG
    CONFIG = dataclasses.replace(CONFIG, quant=args.quant)

    weights = random_weights(CONFIG, seed=0)
    model = CachedLlama(CONFIG, weights, capacity=CAPACITY)
    _, compile_prefill, cpu_prefill = _cpu_timed(lambda: model.step(args.chunk))
    _, compile_decode, cpu_decode = _cpu_timed(lambda: model.step(1))
    # One untimed run of each (first-call costs: page faults on the arena, thread pool start).
    model.reset()
    model.forward(np.zeros((1, args.chunk), np.int64))
    model.forward(np.zeros((1, 1), np.int64))
    rng = np.random.default_rng(0)
    rows = [measure_past(model, past, args.chunk, args.steps, rng) for past in args.past]

    c = CONFIG
    print(f"{c.layers}-layer Llama-style model (hidden {c.hidden}, {c.heads} heads, SwiGLU {c.ffn}, vocab {c.vocab}"
          f"{', projections ' + c.quant if c.quant else ''}), "
          f"batch {c.batch}, "
          f"KV cache capacity {CAPACITY}, {args.steps} greedy decode steps per row")
    print(f"compile once: prefill step of {args.chunk} tokens {compile_prefill:.1f} s ({cpu_prefill:.1f} CPU s), "
          f"decode step (1 token, any position) {compile_decode:.1f} s ({cpu_decode:.1f} CPU s)")
    header = f"{'past':>5} | {'prefill chunks':>14} | {'time to 1st token':>17} | {'decode tok/s':>12} | {'ms / step':>9}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['past']:>5} | {r['chunks']:>14} | {r['ttft']:>15.3f} s | {r['tokens_per_s']:>12.2f} | "
              f"{r['step_ms']:>9.1f}")
    peer_threads = args.peer_threads if args.peer_threads is not None else sorted({1, default_threads()})
    if peer_threads and CONFIG.quant is None:
        print()
        for line in peer_rows(weights, args.past[0], args.steps, peer_threads):
            print(line)
    if not args.no_variants:
        print()
        for label, value in variant_rows(weights, args.chunk):
            print(f"{label:<44} {value}")


if __name__ == "__main__":
    main()
