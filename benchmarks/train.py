"""One training step (forward + backward + AdamW) of the benchmark Llama against its forward alone.

The model of benchmarks/memory.py (hidden 512, 8 heads of 64, SwiGLU 1408, vocab 1000) with
`--layers` layers (12 in the issue; the default is smaller because compiling the step takes
minutes per layer on this machine), batch 1, sequence `--seq`, cross-entropy on next-token
labels.  Each executable is compiled once; then `--rounds` interleaved rounds time the forward
(logits + loss) and the step, best and median, at 1 thread and at all cores.  The ratio
"step / forward" bounds the backward's cost (the issue's target: backward at most 2.5x the
forward, i.e. step / forward at most ~3.5 with the update).  PyTorch eager (`loss.backward()` +
`torch.optim.AdamW`) is the peer when torch is installed; a line says so otherwise.

    python benchmarks/train.py [--layers 2] [--seq 128] [--rounds 7]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time

import numpy as np

from rlx_mlir.models.llama import LlamaConfig, build_llama, random_weights
from rlx_mlir.train import AdamW, TrainStep, softmax_cross_entropy


def _with_loss(config: LlamaConfig):
    model = build_llama(config)
    (logits,) = model.reopen()
    labels = model.input("labels", (config.batch, config.seq), "i64")
    model.set_outputs(softmax_cross_entropy(model, logits, labels))
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    config = LlamaConfig(layers=args.layers, hidden=512, heads=8, kv_heads=8, head_dim=64, ffn=1408, vocab=1000,
                         seq=args.seq, batch=1)
    weights = random_weights(config, seed=0)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, config.vocab, (1, config.seq))
    labels = np.roll(tokens, -1, axis=1)
    cores = os.cpu_count() or 1
    rows = []
    for threads in sorted({1, cores}):
        started = time.perf_counter()
        forward = _with_loss(config).compile(threads=threads)
        step = TrainStep(_with_loss(config), weights, AdamW(lr=1e-4), threads=threads)
        compile_s = time.perf_counter() - started
        times = {"forward": [], "step": []}
        for _ in range(args.rounds):  # interleaved
            start = time.perf_counter()
            forward(tokens=tokens, labels=labels, **weights)
            times["forward"].append(time.perf_counter() - start)
            start = time.perf_counter()
            step(tokens=tokens, labels=labels)
            times["step"].append(time.perf_counter() - start)
        best = {k: min(v) for k, v in times.items()}
        for name in ("forward", "step"):
            rows.append((threads, f"rlx {name}", 1e3 * best[name], 1e3 * statistics.median(times[name]),
                         best[name] / best["forward"]))
        print(f"(threads {threads}: compiled both in {compile_s:.0f} s)")
    print(f"\nLlama {config.layers} layers, hidden {config.hidden}, seq {config.seq}, batch 1; "
          f"best and median of {args.rounds} interleaved rounds; machine shared and loaded\n")
    print("| threads | contender | ms (best) | ms (median) | vs rlx forward (best) |")
    print("|---|---|---|---|---|")
    for threads, name, best_ms, median_ms, ratio in rows:
        print(f"| {threads} | {name} | {best_ms:.1f} | {median_ms:.1f} | {ratio:.2f}x |")
    if importlib.util.find_spec("torch") is None:
        print("\nPyTorch is not installed: no PyTorch eager row (loss.backward() + torch.optim.AdamW).")


if __name__ == "__main__":
    main()
