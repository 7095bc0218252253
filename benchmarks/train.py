"""One training step (forward + backward + AdamW) of the benchmark Llama against its forward alone.

The model of benchmarks/memory.py (hidden 512, 8 heads of 64, SwiGLU 1408, vocab 1000) with
`--layers` layers (12 in the issue; the default is smaller because compiling the step takes
minutes per layer on this machine), batch 1, sequence `--seq`, cross-entropy on next-token
labels.  Each executable is compiled once; then `--rounds` interleaved rounds time the forward
(logits + loss) and the step, best and median, at 1 thread and at all cores.  The ratio
"step / forward" bounds the backward's cost (the issue's target: backward at most 2.5x the
forward, i.e. step / forward at most ~3.5 with the update).  PyTorch eager (`loss.backward()` +
`torch.optim.AdamW`) is the peer when torch is installed, on the same weights and tokens, its
forward and step timed in the same interleaved rounds (`torch.set_num_threads` as rlx's
threads); a line says so otherwise.

    python benchmarks/train.py [--layers 2] [--seq 128] [--rounds 7]
"""

from __future__ import annotations

import argparse
import functools
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
        for _ in range(args.rounds):  # interleaved
            for name, run in contenders.items():
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
        best = {k: min(v) for k, v in times.items()}
        for name in contenders:
            rows.append((threads, name, 1e3 * best[name], 1e3 * statistics.median(times[name]),
                         best[name] / best["rlx forward"]))
        print(f"(threads {threads}: compiled both in {compile_s:.0f} s)")
    print(f"\nLlama {config.layers} layers, hidden {config.hidden}, seq {config.seq}, batch 1; "
          f"best and median of {args.rounds} interleaved rounds; machine shared and loaded\n")
    print("| threads | contender | ms (best) | ms (median) | vs rlx forward (best) |")
    print("|---|---|---|---|---|")
    for threads, name, best_ms, median_ms, ratio in rows:
        print(f"| {threads} | {name} | {best_ms:.1f} | {median_ms:.1f} | {ratio:.2f}x |")
    if have_torch:
        for threads in sorted({1, cores}):
            by_name = {name: best_ms for t, name, best_ms, _, _ in rows if t == threads}
            print(f"\nthreads {threads}: rlx step / torch eager step {by_name['rlx step'] / by_name['torch eager step']:.2f}x, "
                  f"backward + update / forward: rlx {by_name['rlx step'] / by_name['rlx forward'] - 1:.2f}, "
                  f"torch {by_name['torch eager step'] / by_name['torch eager forward'] - 1:.2f}")
    else:
        print("\nPyTorch is not installed: no PyTorch eager row (loss.backward() + torch.optim.AdamW).")


if __name__ == "__main__":
    main()
