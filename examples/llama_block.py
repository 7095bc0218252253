"""Build a Llama-style decoder with the GraphModule builder, inspect it at every stage
(HIR, MIR, LIR), then compile and run it.

    python examples/llama_block.py [--policy direct|fusable] [--layers N] [--seq S]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rlx_mlir.models.llama import LlamaConfig, build_llama, random_weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", default="direct", choices=["direct", "fusable"],
                        help="how HIR blocks lower to MIR: fused MIR ops (direct, default) or primitive chains (fusable)")
    parser.add_argument("--layers", type=int, default=2, help="decoder layers (default 2)")
    parser.add_argument("--seq", type=int, default=7, help="tokens in the sequence (default 7)")
    args = parser.parse_args()

    config = LlamaConfig(layers=args.layers, seq=args.seq, policy=args.policy)
    weights = random_weights(config, seed=0)
    tokens = np.random.default_rng(1).integers(0, config.vocab, (config.batch, config.seq)).astype(np.int64)

    model = build_llama(config)
    print("== HIR (as built) ==", model.inspect(), sep="\n", end="\n\n")

    started = time.perf_counter()
    executable = model.compile()  # compiles a copy: the module below keeps its stage
    compile_seconds = time.perf_counter() - started

    model.lower()  # rlx-hir-to-mir, in place
    print("== MIR (rlx-hir-to-mir) ==", model.inspect(), sep="\n", end="\n\n")
    model.plan()   # rlx-mir-to-lir: schedule, arena slots, views, phases
    print("== LIR (rlx-mir-to-lir) ==", model.inspect(), sep="\n", end="\n\n")

    logits = executable(tokens=tokens, **weights)
    started = time.perf_counter()
    runs = 20
    for _ in range(runs):
        executable(tokens=tokens, **weights)
    run_ms = (time.perf_counter() - started) / runs * 1e3

    print(f"compiled in {compile_seconds:.2f} s; one forward pass {run_ms:.2f} ms")
    print(f"logits {logits.shape}, next tokens {logits[0].argmax(axis=-1).tolist()}")


if __name__ == "__main__":
    main()
