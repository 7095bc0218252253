"""One training step (forward + backward + AdamW) of the benchmark Llama against its forward alone.

The model of benchmarks/memory.py (hidden 512, 8 heads of 64, SwiGLU 1408, vocab 1000) with
`--layers` layers (12 in the issue; the default is smaller because compiling the step takes
minutes per layer on this machine), batch 1, sequence `--seq`, cross-entropy on next-token
labels.  Each executable is compiled once; then `--rounds` interleaved rounds time the forward
(logits + loss) and the step, best and median of the wall time, and the best process CPU time
(`time.process_time`: on one thread, the time the work itself took on a loaded machine), at 1
thread and at all cores.  The ratio "step / forward" bounds the backward's cost (the issue's target: backward at most 2.5x the
forward, i.e. step / forward at most ~3.5 with the update).  PyTorch eager (`loss.backward()` +
`torch.optim.AdamW`) is the peer when torch is installed, on the same weights and tokens, its
forward and step timed in the same interleaved rounds (`torch.set_num_threads` as rlx's
threads); a line says so otherwise.

Peak memory: each step (rlx's and PyTorch's) also runs in a child process of its own
(`--child`), which sets up the model, its optimiser state and the compiled step, runs one
warm-up step, resets the kernel's peak-RSS mark (`/proc/self/clear_refs`), runs three steps
and reports the peak RSS (`VmHWM`) and how far it rose above the RSS before those steps
(the step's own transient memory: activations kept for backward, gradients, temporaries).

    python benchmarks/train.py [--layers 2] [--seq 128] [--rounds 7]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import statistics
import sys
import time

import numpy as np

from rlx_mlir.models.llama import LlamaConfig, build_llama, random_weights
from rlx_mlir.train import AdamW, TrainStep, softmax_cross_entropy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from child_rows import emit, run_child  # noqa: E402


def _with_loss(config: LlamaConfig):
    model = build_llama(config)
    (logits,) = model.reopen()
    labels = model.input("labels", (config.batch, config.seq), "i64")
    model.set_outputs(softmax_cross_entropy(model, logits, labels))
    return model


def torch_llama(weights: dict, config: LlamaConfig):
    """PyTorch eager peer: `(forward(), step())` on float32 copies of `weights`: the loss, and
    forward + `loss.backward()` + `torch.optim.AdamW` (the Llama of rlx_mlir.models.llama with
    torch's own ops: F.rms_norm, scaled-dot-product attention, F.silu, F.cross_entropy)."""
    import torch

    F = torch.nn.functional
    c = config
    params = {k: torch.tensor(v, requires_grad=True) for k, v in weights.items()}
    optimizer = torch.optim.AdamW(params.values(), lr=1e-4)
    inverse = c.rope_theta ** (-torch.arange(0, c.head_dim, 2, dtype=torch.float64) / c.head_dim)
    angles = torch.outer(torch.arange(c.seq, dtype=torch.float64), inverse)
    cos, sin = torch.cos(angles).float(), torch.sin(angles).float()
    half = c.head_dim // 2

    def loss_of(tokens, labels):
        w = params
        b, s = tokens.shape
        x = w["embed"][tokens]

        def heads(t, n):
            return t.view(b, s, n, c.head_dim).transpose(1, 2)

        def rope(t):
            return torch.cat([t[..., :half] * cos - t[..., half:] * sin, t[..., half:] * cos + t[..., :half] * sin], -1)

        for i in range(c.layers):
            p = f"layers.{i}."
            n1 = F.rms_norm(x, (c.hidden,), w[p + "ln1"], eps=c.eps)
            q, k = rope(heads(n1 @ w[p + "q"], c.heads)), rope(heads(n1 @ w[p + "k"], c.kv_heads))
            v = heads(n1 @ w[p + "v"], c.kv_heads)
            group = c.heads // c.kv_heads
            if group > 1:
                k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + attn.transpose(1, 2).reshape(b, s, -1) @ w[p + "o"]
            n2 = F.rms_norm(x, (c.hidden,), w[p + "ln2"], eps=c.eps)
            x = x + (F.silu(n2 @ w[p + "gate"]) * (n2 @ w[p + "up"])) @ w[p + "down"]
        logits = F.rms_norm(x, (c.hidden,), w["norm"], eps=c.eps) @ w["lm_head"]
        return F.cross_entropy(logits.reshape(b * s, -1), labels.reshape(-1))

    def forward(tokens, labels):
        with torch.no_grad():
            return loss_of(tokens, labels).item()

    def step(tokens, labels):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(tokens, labels)
        loss.backward()
        optimizer.step()
        return loss.item()

    return forward, step


def _status_mb(field: str) -> float:
    """A `VmRSS` / `VmHWM` line of /proc/self/status, in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def _memory_child(config: LlamaConfig, threads: int, tokens, labels) -> None:
    """Peak RSS of three steps of rlx and of PyTorch, each set up and warmed up first (one ROW each)."""
    weights = random_weights(config, seed=0)
    if os.environ.get("RLX_TRAIN_MEMORY") == "torch":
        import torch

        torch.set_num_threads(threads)
        _, run = torch_llama(weights, config)
        step = functools.partial(run, torch.tensor(tokens), torch.tensor(labels))
    else:
        train = TrainStep(_with_loss(config), weights, AdamW(lr=1e-4), threads=threads)
        step = functools.partial(train, tokens=tokens, labels=labels)
    del weights
    step()  # warm-up: PyTorch creates AdamW's state here
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # peak RSS := current RSS
    before = _status_mb("VmRSS")
    for _ in range(3):
        step()
    peak = _status_mb("VmHWM")
    emit(peak_mb=peak, step_mb=peak - before)


def _peak_memory(script_args: list, threads: int, who: str):
    """(peak RSS MB, rise during the steps MB) of `who`'s step, or None where it cannot be measured."""
    if not os.path.exists("/proc/self/clear_refs"):
        return None
    os.environ["RLX_TRAIN_MEMORY"] = who
    try:
        (row,) = run_child(os.path.abspath(__file__), threads, script_args)
    finally:
        del os.environ["RLX_TRAIN_MEMORY"]
    return row["peak_mb"], row["step_mb"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # the peak-memory child
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    config = LlamaConfig(layers=args.layers, hidden=512, heads=8, kv_heads=8, head_dim=64, ffn=1408, vocab=1000,
                         seq=args.seq, batch=1)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, config.vocab, (1, config.seq))
    labels = np.roll(tokens, -1, axis=1)
    if args.child:
        _memory_child(config, args.threads, tokens, labels)
        return
    weights = random_weights(config, seed=0)
    script_args = ["--layers", str(args.layers), "--seq", str(args.seq)]
    cores = os.cpu_count() or 1
    have_torch = importlib.util.find_spec("torch") is not None
    if have_torch:
        import torch

        torch_tokens, torch_labels = torch.tensor(tokens), torch.tensor(labels)
    rows = []
    for threads in sorted({1, cores}):
        started = time.perf_counter()
        forward = _with_loss(config).compile(threads=threads)
        step = TrainStep(_with_loss(config), weights, AdamW(lr=1e-4), threads=threads)
        compile_s = time.perf_counter() - started
        contenders = {"rlx forward": functools.partial(forward, tokens=tokens, labels=labels, **weights),
                      "rlx step": functools.partial(step, tokens=tokens, labels=labels)}
        if have_torch:
            torch.set_num_threads(threads)
            torch_forward, torch_step = torch_llama(weights, config)
            contenders["torch eager forward"] = functools.partial(torch_forward, torch_tokens, torch_labels)
            contenders["torch eager step"] = functools.partial(torch_step, torch_tokens, torch_labels)
            # warm-up (AdamW's state); the same model: the first losses agree
            print(f"(threads {threads}: first-step loss rlx {step(tokens=tokens, labels=labels):.5f}, "
                  f"torch {torch_step(torch_tokens, torch_labels):.5f})")
        times = {name: [] for name in contenders}
        cpu_times = {name: [] for name in contenders}
        for _ in range(args.rounds):  # interleaved
            for name, run in contenders.items():
                start, cpu_start = time.perf_counter(), time.process_time()
                run()
                times[name].append(time.perf_counter() - start)
                cpu_times[name].append(time.process_time() - cpu_start)
        best = {k: min(v) for k, v in times.items()}
        best_cpu = {k: min(v) for k, v in cpu_times.items()}
        memory = {"rlx step": _peak_memory(script_args, threads, "rlx")}
        if have_torch:
            memory["torch eager step"] = _peak_memory(script_args, threads, "torch")
        for name in contenders:
            rows.append((threads, name, 1e3 * best[name], 1e3 * statistics.median(times[name]),
                         best[name] / best["rlx forward"], 1e3 * best_cpu[name], memory.get(name)))
        print(f"(threads {threads}: compiled both in {compile_s:.0f} s)")
    print(f"\nLlama {config.layers} layers, hidden {config.hidden}, seq {config.seq}, batch 1; "
          f"best and median of {args.rounds} interleaved rounds; machine shared and loaded\n")
    print("| threads | contender | ms (best) | ms (median) | vs rlx forward (best) | CPU ms (best) | peak RSS MB (rise in the step) |")
    print("|---|---|---|---|---|---|---|")
    for threads, name, best_ms, median_ms, ratio, cpu_ms, memory in rows:
        peak = f"{memory[0]:.0f} ({memory[1]:.0f})" if memory else ""
        print(f"| {threads} | {name} | {best_ms:.1f} | {median_ms:.1f} | {ratio:.2f}x | {cpu_ms:.1f} | {peak} |")
    for threads in sorted({1, cores}):
        cpu = {name: cpu_ms for t, name, _, _, _, cpu_ms, _ in rows if t == threads}
        line = f"\nthreads {threads}: backward + update / forward in CPU time: rlx {cpu['rlx step'] / cpu['rlx forward'] - 1:.2f}"
        if have_torch:
            wall = {name: best_ms for t, name, best_ms, _, _, _, _ in rows if t == threads}
            line += (f", torch {cpu['torch eager step'] / cpu['torch eager forward'] - 1:.2f}; "
                     f"rlx step / torch eager step {wall['rlx step'] / wall['torch eager step']:.2f}x (wall), "
                     f"{cpu['rlx step'] / cpu['torch eager step']:.2f}x (CPU)")
        print(line)
    if not have_torch:
        print("\nPyTorch is not installed: no PyTorch eager row (loss.backward() + torch.optim.AdamW).")


if __name__ == "__main__":
    main()
