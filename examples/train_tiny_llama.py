"""Train a 2-layer Llama-style decoder on a synthetic next-token task: each sequence counts
up by a random stride modulo the vocabulary, so the next token is predictable from the two
before it.  Forward, backward and the AdamW update run as one compiled function
(`rlx_mlir.train.TrainStep`); the loss curve is printed (and saved as a PNG when matplotlib
is installed).

    python examples/train_tiny_llama.py [--steps N] [--lr LR] [--plot loss.png]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rlx_mlir.models.llama import LlamaConfig, build_llama, random_weights
from rlx_mlir.train import AdamW, TrainStep, softmax_cross_entropy


def batches(config: LlamaConfig, rng: np.random.Generator):
    """(tokens, labels): rows `start + stride * i (mod vocab)`, labels the next token of each."""
    while True:
        start = rng.integers(0, config.vocab, (config.batch, 1))
        stride = rng.integers(1, 4, (config.batch, 1))
        row = (start + stride * np.arange(config.seq + 1)) % config.vocab
        yield row[:, :-1].astype(np.int64), row[:, 1:].astype(np.int64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--plot", default="train_tiny_llama.png", help="where to save the loss curve (needs matplotlib)")
    args = parser.parse_args()

    config = LlamaConfig(layers=2, hidden=32, heads=4, kv_heads=2, head_dim=8, ffn=64, vocab=16, seq=8, batch=8)
    model = build_llama(config)
    (logits,) = model.reopen()  # put the loss on the model's logits
    labels = model.input("labels", (config.batch, config.seq), "i64")
    model.set_outputs(softmax_cross_entropy(model, logits, labels))

    started = time.perf_counter()
    step = TrainStep(model, random_weights(config, seed=0), AdamW(lr=args.lr, weight_decay=0.0))
    print(f"compiled the training step ({len(step.trained)} weights) in {time.perf_counter() - started:.1f} s")

    data = batches(config, np.random.default_rng(0))
    losses = []
    started = time.perf_counter()
    for i in range(args.steps):
        tokens, targets = next(data)
        losses.append(step(tokens=tokens, labels=targets))
        if i % 20 == 0 or i == args.steps - 1:
            print(f"step {i:4d}  loss {losses[-1]:.4f}")
    elapsed = time.perf_counter() - started
    print(f"{args.steps} steps in {elapsed:.2f} s ({1e3 * elapsed / args.steps:.2f} ms per step); "
          f"loss {np.mean(losses[:10]):.3f} -> {np.mean(losses[-10:]):.3f} (uniform guess: {np.log(config.vocab):.3f})")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    plt.plot(losses)
    plt.xlabel("step")
    plt.ylabel("cross-entropy")
    plt.title("tiny Llama, next-token task")
    plt.savefig(args.plot)
    print(f"saved {args.plot}")


if __name__ == "__main__":
    main()
