"""Quantised decoding against llama.cpp: one GGUF file, loaded by both, greedy tokens and speed.

    python benchmarks/gguf_decode.py                       # 12 layers, q8_0 and q4_k, 1 and 2 threads
    python benchmarks/gguf_decode.py --layers 2 --steps 8  # a quick look

The benchmark writes a 12-layer Llama-style model (hidden 512, 8 heads of 64, SwiGLU 1536, vocab
1000; 1536 rather than the 1408 of benchmarks/decode.py because Q4_K blocks span 256 inputs) with
random fan-in-scaled weights as a GGUF file per scheme: every projection and the output head in the
scheme, the embeddings and norms in f32, q/k rows permuted as llama.cpp's converter does, and a
minimal SentencePiece vocabulary (special and byte tokens) so that llama.cpp loads it.  Then, each
contender in a child process of its own (no two thread pools in one process):

- rlx: `load_gguf(path, keep_quantized=True)` -> `CachedLlama` -> greedy decoding; the projections
  run as `rlx.dequant_matmul` on the file's bytes.  Compiling the prefill and decode steps is timed
  and reported apart (it happens once per process; issue 19 is about it).
- rlx q8 (Q4_K files only): the same with `load_gguf(..., quant_activations="q8")`: the Q4_K
  projections round their activations to 8 bits per block of 256 and multiply bytes, as llama.cpp
  does (`rlx.dequant_matmul {activations = "q8"}`, opt-in; the default keeps them f32).
- llama.cpp: `llama_cpp.Llama(path)` (the `llama-cpp-python` package, an optional peer: without it
  the benchmark prints one line and runs rlx alone), `eval` of the prompt, then one token at a time.

Both run the same random prompt of `--prompt` token ids and `--steps` greedy steps, `--runs` times
(best and median): the contenders' children are prepared one after another, then their generations
interleave (one each per round, the order reversed every other round), so that a busy moment on the
shared machine falls on all of them.  Time to first token = the prompt's prefill plus choosing the
first token; tokens/s = decode steps / their time, in wall-clock time and per second of the child's
CPU time (what other jobs on a loaded machine take away shows in the first only).  "same tokens"
compares the greedy sequences: llama.cpp quantises the activations to 8 bits for its dot products
(rlx keeps them f32 unless asked for q8), so on a random model with flat logits a sequence may part
at a near-tie; the column gives the first position where they differ, and the last column the
largest gap between the two logit vectors after the prompt, over their range (a wrong model shows
tens of percent; llama.cpp's 8-bit activations alone about 1%).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from rlx_mlir import quant  # noqa: E402
from rlx_mlir.models.llama import LlamaConfig, weight_shapes  # noqa: E402

GGUF_NAMES = {"ln1": "attn_norm", "q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output",
              "ln2": "ffn_norm", "gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down"}


def config_for(layers: int) -> LlamaConfig:
    return LlamaConfig(layers=layers, hidden=512, heads=8, kv_heads=8, head_dim=64, ffn=1536, vocab=1000)


def _permute(rows: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter: HF's rotate-half rows of q / k -> adjacent (even, odd) pairs."""
    return rows.reshape(heads, 2, rows.shape[0] // heads // 2, rows.shape[1]).swapaxes(1, 2).reshape(rows.shape)


def write_gguf(path: str, c: LlamaConfig, scheme: str, seed: int = 0) -> None:
    import gguf

    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_block_count(c.layers)
    writer.add_context_length(2048)
    writer.add_embedding_length(c.hidden)
    writer.add_feed_forward_length(c.ffn)
    writer.add_head_count(c.heads)
    writer.add_head_count_kv(c.kv_heads)
    writer.add_rope_freq_base(c.rope_theta)
    writer.add_layer_norm_rms_eps(c.eps)
    writer.add_rope_dimension_count(c.head_dim)
    writer.add_vocab_size(c.vocab)
    # A SentencePiece vocabulary llama.cpp accepts: <unk> <s> </s>, the 256 byte tokens, then plain ones.
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [f"tok{i}" for i in range(c.vocab - len(tokens))]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    types += [gguf.TokenType.NORMAL] * (c.vocab - len(types))
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * c.vocab)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)

    def packed(name: str, rows: np.ndarray) -> None:
        writer.add_tensor(name, quant.quantize(rows, scheme), raw_dtype=gguf.GGMLQuantizationType[scheme.upper()])

    shapes = weight_shapes(c)
    writer.add_tensor("token_embd.weight", (rng.standard_normal(shapes["embed"]) * 0.5).astype(np.float32))
    for i in range(c.layers):
        for role, gguf_name in GGUF_NAMES.items():
            shape = shapes[f"layers.{i}.{role}"]
            name = f"blk.{i}.{gguf_name}.weight"
            if len(shape) == 1:
                writer.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32))
                continue
            rows = (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32).T.copy()  # [out, in]
            if role in ("q", "k"):
                rows = _permute(rows, c.heads if role == "q" else c.kv_heads)
            packed(name, rows)
    writer.add_tensor("output_norm.weight", np.ones(c.hidden, np.float32))
    packed("output.weight", (rng.standard_normal((c.vocab, c.hidden)) * 2.0 / np.sqrt(c.hidden)).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# --- the contenders, each a child process that stays up while the runs alternate -------------


def _timed(run):
    start = time.perf_counter()
    value = run()
    return value, time.perf_counter() - start


def _generation(first, step, steps: int) -> dict:
    """One greedy generation: `first()` -> the first token (timed: TTFT), then `steps` calls of
    `step(token)`, timed in wall and in this process's CPU time."""
    token, ttft = _timed(first)
    tokens, start, cpu = [token], time.perf_counter(), time.process_time()
    for _ in range(steps):
        token = step(token)
        tokens.append(token)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return dict(ttft=ttft, tps=steps / wall, cpu_tps=steps / max(cpu, 1e-9), tokens=tokens)


def prepare_rlx(path: str, threads: int, prompt: list[int], steps: int, activations: str = "f32"):
    from rlx_mlir.models.checkpoints import load_gguf
    from rlx_mlir.models.generate import CachedLlama

    config, weights = load_gguf(path, keep_quantized=True, quant_activations=activations)
    model = CachedLlama(config, weights, capacity=len(prompt) + steps + 1, threads=threads)
    _, compile_s = _timed(lambda: (model.step(len(prompt)), model.step(1)))
    ids = np.array([prompt], np.int64)
    model.reset()
    first_logits = model.forward(ids)[0, -1]

    def generate() -> dict:
        model.reset()
        return _generation(lambda: int(np.argmax(model.forward(ids)[0, -1])),
                           lambda token: int(np.argmax(model.forward(np.array([[token]], np.int64))[0, -1])), steps)

    return compile_s, first_logits, generate


def _last_logits(llm) -> np.ndarray:
    """The logits of the last token `llm.eval` ran. llama-cpp-python fills `llm.scores` only with
    `logits_all=True` (which computes every position's); the context holds the last one."""
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))


def prepare_llama_cpp(path: str, threads: int, prompt: list[int], steps: int):
    import llama_cpp

    llm, load_s = _timed(lambda: llama_cpp.Llama(model_path=path, n_ctx=len(prompt) + steps + 8, n_batch=512,
                                                 n_threads=threads, n_threads_batch=threads, verbose=False))
    llm.eval(prompt)
    first_logits = _last_logits(llm).copy()

    def first() -> int:
        llm.eval(prompt)
        return int(np.argmax(_last_logits(llm)))

    def step(token: int) -> int:
        llm.eval([token])
        return int(np.argmax(_last_logits(llm)))

    def generate() -> dict:
        llm.reset()
        return _generation(first, step, steps)

    return load_s, first_logits, generate


def child(args) -> None:
    """Prepare (load, compile), print READY, then one generation per `run` line read from stdin."""
    prepare = {"rlx": prepare_rlx, "rlx_q8": lambda *a: prepare_rlx(*a, activations="q8"),
               "llama_cpp": prepare_llama_cpp}[args.child]
    prepare_s, first_logits, generate = prepare(args.path, args.threads, json.loads(args.prompt_ids), args.steps)
    print("READY " + json.dumps(dict(prepare_s=prepare_s, first_logits=[float(v) for v in first_logits])), flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        print("RUN " + json.dumps(generate()), flush=True)


class Contender:
    """A child process of one contender (its own thread pool), driven one generation at a time."""

    def __init__(self, tool: str, path: str, threads: int, prompt: list[int], args):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
        command = [sys.executable, __file__, "--child", tool, "--path", path, "--threads", str(threads),
                   "--prompt-ids", json.dumps(prompt), "--steps", str(args.steps)]
        self.tool, self.runs = tool, []
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=env)
        self.ready = self._read("READY ")

    def _read(self, tag: str) -> dict | None:
        for line in self.process.stdout:
            if line.startswith(tag):
                return json.loads(line[len(tag):])
        self.process.wait()
        tail = self.process.stderr.read().strip().splitlines()[-3:]
        print(f"  ({self.tool} failed: {' | '.join(tail)})")
        return None

    def run(self) -> None:
        if self.ready is None or self.process.poll() is not None:
            return
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        result = self._read("RUN ")
        if result is not None:
            self.runs.append(result)

    def close(self) -> dict | None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait()
        if self.ready is None or not self.runs:
            return None
        summary = dict(self.ready, tokens=self.runs[0]["tokens"])
        for key in ("ttft", "tps", "cpu_tps"):
            values = [r[key] for r in self.runs]
            summary[f"{key}_best"] = min(values) if key == "ttft" else max(values)
            summary[f"{key}_median"] = statistics.median(values)
        return summary


def same_tokens(a: list[int], b: list[int]) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"first {i} of {len(a)}"
    return f"all {len(a)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schemes", nargs="+", default=["q8_0", "q4_k"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--prompt", type=int, default=32, help="prompt length (tokens)")
    parser.add_argument("--steps", type=int, default=32, help="greedy decode steps")
    parser.add_argument("--runs", type=int, default=3, help="generations per contender (best and median)")
    parser.add_argument("--child", choices=["rlx", "rlx_q8", "llama_cpp"], help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--prompt-ids", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.threads = args.threads[0]
        return child(args)

    try:
        import llama_cpp  # noqa: F401

        tools = ["rlx", "llama_cpp"]
    except ImportError:
        print("llama-cpp-python is not installed (pip install -e '.[bench]' builds it): "
              "the llama.cpp column is skipped")
        tools = ["rlx"]
    c = config_for(args.layers)
    prompt = np.random.default_rng(1).integers(259, c.vocab, args.prompt).tolist()  # plain tokens only
    print(f"{c.layers}-layer Llama-style model (hidden {c.hidden}, {c.heads} heads, SwiGLU {c.ffn}, vocab {c.vocab}); "
          f"prompt {args.prompt} tokens, {args.steps} greedy steps, {args.runs} runs per contender; "
          f"{os.cpu_count()} cores, shared machine")
    rows = []
    with tempfile.TemporaryDirectory(prefix="rlx-llama-cpp-") as scratch:
        for scheme in args.schemes:
            path = os.path.join(scratch, f"model-{scheme}.gguf")
            write_gguf(path, c, scheme)
            size_mb = os.path.getsize(path) / 2**20
            contenders = [*tools, "rlx_q8"] if scheme == "q4_k" else tools
            for threads in args.threads:
                # prepared one after another, then their generations interleaved round by round
                running = [Contender(tool, path, threads, prompt, args) for tool in contenders]
                for round_ in range(args.runs):
                    for contender in running if round_ % 2 == 0 else running[::-1]:
                        contender.run()
                rows.append((scheme, size_mb, threads, {c.tool: c.close() for c in running}))

    print()
    print("Wall-clock tok/s and tok per CPU second (this process's CPU time over the decode steps: "
          "what a loaded machine takes away shows in wall time only).")
    print("| scheme | file | threads | contender | load/compile s | TTFT ms best / median | decode tok/s best / median "
          "| decode tok/CPU-s best / median | rlx / llama.cpp wall (CPU) | same greedy tokens | max logit gap / range |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for scheme, size_mb, threads, found in rows:
        rlx, cpp = found.get("rlx"), found.get("llama_cpp")
        for tool in sorted(found, key=["rlx", "rlx_q8", "llama_cpp"].index):
            r = found[tool]
            if r is None:
                continue
            ratio = same = gap = ""
            if tool != "llama_cpp" and cpp is not None:
                ratio = f"{r['tps_best'] / cpp['tps_best']:.2f}x ({r['cpu_tps_best'] / cpp['cpu_tps_best']:.2f}x)"
                same = same_tokens(r["tokens"], cpp["tokens"])
                ours, theirs = np.array(r["first_logits"]), np.array(cpp["first_logits"])
                gap = f"{np.max(np.abs(ours - theirs)) / (np.ptp(theirs) or 1.0):.2%}"
            name = {"rlx": "rlx", "rlx_q8": "rlx q8", "llama_cpp": "llama.cpp"}[tool]
            print(f"| {scheme} | {size_mb:.0f} MB | {threads} | {name} | {r['prepare_s']:.1f} "
                  f"| {1e3 * r['ttft_best']:.1f} / {1e3 * r['ttft_median']:.1f} "
                  f"| {r['tps_best']:.1f} / {r['tps_median']:.1f} | {r['cpu_tps_best']:.1f} / {r['cpu_tps_median']:.1f} "
                  f"| {ratio} | {same} | {gap} |")
        if rlx is None and cpp is None:
            print(f"| {scheme} | {size_mb:.0f} MB | {threads} | (both failed) | | | | | | |")


if __name__ == "__main__":
    main()
