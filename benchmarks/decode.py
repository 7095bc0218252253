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
attention, greedy, its KV cache; its decode time runs from the first new token's arrival at a
`streamer` to the last's: generate(steps + 1) less generate(1) went negative under load), rounds
interleaved, and the greedy tokens compared; one line saying it is missing where transformers or
torch is not installed (`pip install -e .[bench]`).

Decode against the memory system (issue 19: decode bytes/s >= 70% of the streaming bandwidth): per
thread count the same run first probes the machine's streaming bandwidth on `STREAM_BYTES` (256 MiB)
arrays split across that many Python threads (numpy releases the GIL), in pieces of 8 MiB, best
piece of `STREAM_PASSES` passes (the CPU-time figure: the best whole pass):
a copy (`np.copyto`, bytes read + written / time, the STREAM convention) and a read-only pass
(`np.maximum.reduce`: one vectorised read of every byte, no BLAS, nothing written; `np.sum`'s
pairwise summation is compute-bound here and would understate it).  A decode step is almost only
reads (the weights and the cache; it writes one cache row and a few KiB of activations), so the
fraction is taken against the larger of the two probes: the stricter reference.  Bytes per token
are derived from the config and the arrays, not hard-coded: every weight array's bytes except the
embedding table (a token reads one row of it), plus the K and V caches' filled rows at the mean
position of the timed steps (each step reads positions 0 .. pos of every layer's two caches).
The wall-clock fraction compares best against best of short runs (the probe's best piece, about a
millisecond, and decode's best single step, about 6 ms: on a loaded machine the ones that ran
unpreempted); on one thread the row also gives the process CPU time per token and the probe's
CPU-time bandwidth (bytes / CPU seconds), whose ratio is the less load-sensitive figure.

    python benchmarks/decode.py [--steps 16] [--past 128 512] [--chunk 128] [--no-variants] [--quant q8_0]
                                [--peer-threads 1 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import time

import numpy as np

from rlx_mlir.models.generate import CachedLlama, sample
from rlx_mlir.models.llama import LlamaConfig, random_weights
from rlx_mlir.targets.cpu import default_threads

CONFIG = LlamaConfig(layers=12, hidden=512, heads=8, kv_heads=8, head_dim=64, ffn=1408, vocab=1000)
CAPACITY = 640
STREAM_BYTES = 256 << 20  # the bandwidth probe's arrays: far beyond any last-level cache
STREAM_PASSES = 4
STREAM_PIECE = 8 << 20  # bytes per timed piece of a pass


def _timed(run):
    start = time.perf_counter()
    value = run()
    return value, time.perf_counter() - start


def _cpu_timed(run):
    """(value, wall seconds, CPU seconds of this process: user + system, every thread; `process_time`
    has nanosecond resolution, `os.times` only clock ticks)."""
    start = time.process_time()
    value, wall = _timed(run)
    return value, wall, time.process_time() - start


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

    class Clock:
        """A `generate` streamer that only notes when each put arrives: the prompt's, then one per new token."""

        def __init__(self):
            self.times = []

        def put(self, value):
            self.times.append(time.perf_counter())

        def end(self):
            pass

    def generate(prompt: np.ndarray, new_tokens: int, clock=None) -> np.ndarray:
        """Greedy `generate` with its KV cache: the new tokens [new_tokens]; with a `Clock`, the
        arrival time of each token noted in it."""
        torch.set_num_threads(threads)
        with torch.inference_mode():
            ids = model.generate(torch.from_numpy(prompt), max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                 do_sample=False, use_cache=True, pad_token_id=0, streamer=clock)
        return ids[0, prompt.shape[1]:].numpy()

    generate.clock = Clock

    generate.version = f"transformers {transformers.__version__}, torch {torch.__version__}"
    return generate


def rlx_greedy(model: CachedLlama, prompt: np.ndarray, new_tokens: int) -> tuple[np.ndarray, float, float, float]:
    """Greedy decoding as `generate` does it: the new tokens, the wall and process CPU seconds of the
    decode steps (every new token after the first, whose time is the prefill's), and the best wall
    time of one step."""
    model.reset()
    token = sample(model.forward(prompt)[:, -1], None)
    tokens, steps = [int(token[0])], []

    def decode():
        nonlocal token
        for _ in range(new_tokens - 1):
            start = time.perf_counter()
            token = sample(model.forward(token[:, None])[:, -1], None)
            steps.append(time.perf_counter() - start)
            tokens.append(int(token[0]))

    _, wall, cpu = _cpu_timed(decode)
    return np.array(tokens), wall, cpu, min(steps)


def streaming_bandwidth(threads: int) -> dict:
    """Bytes per second of the copy and the read-only probe (see the module doc) on `threads` threads.
    Each of STREAM_PASSES passes walks the STREAM_BYTES arrays in STREAM_PIECE pieces (each split
    across the threads; the arrays, far beyond the last-level cache, still stream from memory):
    the best piece's wall time (a piece takes about a millisecond, like a decode step's GEMVs, so
    on a loaded machine some run unpreempted) and the best pass's process CPU time."""
    from concurrent.futures import ThreadPoolExecutor

    source = np.ones(STREAM_BYTES // 4, np.float32)
    target = np.zeros_like(source)
    piece = STREAM_PIECE // 4
    pieces = [[slice(start + i * piece // threads, start + (i + 1) * piece // threads) for i in range(threads)]
              for start in range(0, source.size, piece)]
    probes = {"copy": (lambda part: np.copyto(target[part], source[part]), 2),
              "read": (lambda part: np.maximum.reduce(source[part]), 1)}
    result = {}
    with ThreadPoolExecutor(threads) as pool:
        for name, (work, times) in probes.items():
            walls, cpus = [], []
            for _ in range(STREAM_PASSES):
                cpu = time.process_time()
                for parts in pieces:
                    walls.append(_timed(lambda work=work, parts=parts: list(pool.map(work, parts)))[1])
                cpus.append(time.process_time() - cpu)
            result[name] = times * STREAM_PIECE / min(walls)
            result[name + "_cpu"] = times * source.nbytes / min(cpus)
    return result


def decode_bytes(weights: dict, caches: dict, keys: float) -> tuple[int, float]:
    """(weight bytes, cache bytes) one decode step reads when it attends to `keys` cached positions:
    every weight array but the embedding table, of which one row; the filled rows of each cache."""
    embed = weights["embed"]
    weight_bytes = sum(a.nbytes for name, a in weights.items() if name != "embed") + embed.nbytes // embed.shape[0]
    cache_bytes = sum(c.itemsize * c.shape[0] * keys * int(np.prod(c.shape[2:])) for c in caches.values())
    return weight_bytes, cache_bytes


def peer_rows(weights: dict, past: int, steps: int, thread_counts: list[int], rounds: int = 3,
              with_hf: bool = True) -> list[str]:
    """Per thread count: decode tokens/s of rlx and of Hugging Face `generate` (same weights, greedy,
    KV cache), rounds interleaved, the greedy tokens compared; the streaming probes and decode's
    bytes/s as a fraction of them.  A table, then notes."""
    prompt = np.random.default_rng(2).integers(0, CONFIG.vocab, (1, past))
    header = ("| threads | rlx tok/s (best / median) | rlx CPU ms/token (best / median) | HF tok/s (best / median) "
              "| rlx/HF (best / median) | MB read/token (weights + cache) | stream copy / read GB/s | rlx decode GB/s (best step) "
              "| of stream (wall) | stream copy / read GB/s per CPU s (1 thread) | rlx decode per CPU s, of stream (CPU time) |")
    table = [header, "|" + "---|" * (header.count("|") - 1)]
    notes = []
    for threads in thread_counts:
        model = CachedLlama(CONFIG, weights, capacity=CAPACITY, threads=threads)
        model.step(past), model.step(1)  # compiled (or loaded from the compile caches) before timing
        rlx_greedy(model, prompt, 2)
        hf = hf_llama(weights, threads) if with_hf else "Hugging Face column: not measured (quantised projections)"
        if isinstance(hf, str):
            notes.append(hf)
            hf = None
        else:
            hf(prompt, 2)  # warm-up
        stream = streaming_bandwidth(threads)
        time.sleep(0.3)
        rlx_rates, rlx_cpu, rlx_step, hf_times = [], [], [], []
        for _ in range(rounds):
            rlx_tokens, seconds, cpu, best_step = rlx_greedy(model, prompt, steps + 1)
            rlx_rates.append(steps / seconds)
            rlx_cpu.append(cpu / steps)
            rlx_step.append(best_step)
            if hf is not None:
                time.sleep(0.3)  # the other library's idle threads go to sleep
                # decode time: from the first new token's arrival (after the prefill) to the last's
                clock = hf.clock()
                hf_tokens = hf(prompt, steps + 1, clock)
                hf_times.append(steps / (clock.times[-1] - clock.times[1]))
                time.sleep(0.3)
        rlx_rate = sorted(rlx_rates)[::-1]
        cpu_per_token = sorted(rlx_cpu)
        # decode steps feed positions past .. past + steps - 1: they attend to past + 1 .. past + steps keys
        weight_bytes, cache_bytes = decode_bytes(weights, model.caches, past + (steps + 1) / 2)
        per_token = weight_bytes + cache_bytes
        reference = max(stream["copy"], stream["read"])
        # the best single step (a few ms, like a probe piece): on a loaded machine the best of short
        # runs is the one that ran unpreempted, for the probe and for decode alike
        decode_rate = per_token / min(rlx_step)
        cpu_cells = ["", ""]
        if threads == 1:  # one thread: CPU seconds are the seconds it ran; the probe likewise
            cpu_reference = max(stream["copy_cpu"], stream["read_cpu"])
            cpu_rate = per_token / cpu_per_token[0]
            cpu_cells = [f"{stream['copy_cpu'] / 1e9:.1f} / {stream['read_cpu'] / 1e9:.1f}",
                         f"{cpu_rate / 1e9:.1f} GB/s = {100 * cpu_rate / cpu_reference:.0f}%"]
        hf_cells = ["", ""]
        if hf is not None:
            hf_rate = sorted(hf_times)[::-1]
            middle = len(hf_rate) // 2
            hf_cells = [f"{hf_rate[0]:.1f} / {hf_rate[middle]:.1f}",
                        f"{rlx_rate[0] / hf_rate[0]:.2f}x / {rlx_rate[len(rlx_rate) // 2] / hf_rate[middle]:.2f}x"]
            same = np.array_equal(rlx_tokens, hf_tokens)
            where = int(np.argmax(rlx_tokens != hf_tokens))
            first_difference = "" if same else f", first difference at new token {where}"
            notes.append(f"{threads} thread(s): greedy tokens {'identical' if same else 'differ'} "
                         f"({len(rlx_tokens)} new{first_difference}) [{hf.version}]")
        cells = [str(threads), f"{rlx_rate[0]:.1f} / {rlx_rate[len(rlx_rate) // 2]:.1f}",
                 f"{1e3 * cpu_per_token[0]:.2f} / {1e3 * cpu_per_token[len(cpu_per_token) // 2]:.2f}", *hf_cells,
                 f"{weight_bytes / 1e6:.1f} + {cache_bytes / 1e6:.1f}",
                 f"{stream['copy'] / 1e9:.1f} / {stream['read'] / 1e9:.1f}", f"{decode_rate / 1e9:.1f}",
                 f"{100 * decode_rate / reference:.0f}%", *cpu_cells]
        table.append("| " + " | ".join(cells) + " |")
    title = (f"Decode, past {past}, {steps} steps, {rounds} rounds interleaved; streaming probe {STREAM_BYTES >> 20} MiB, "
             f"best {STREAM_PIECE >> 20} MiB piece of {STREAM_PASSES} passes (fraction against the larger of copy and read)")
    return [title, *table, *notes]


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
    if peer_threads:
        print()
        for line in peer_rows(weights, args.past[0], args.steps, peer_threads, with_hf=CONFIG.quant is None):
            print(line)
    if not args.no_variants:
        print()
        for label, value in variant_rows(weights, args.chunk):
            print(f"{label:<44} {value}")


if __name__ == "__main__":
    main()
