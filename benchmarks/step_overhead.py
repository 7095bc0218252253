"""The cost of calling a KV-cache decode step, outside its compiled code: CPU time per call.

    python benchmarks/step_overhead.py                 # 12 layers, hidden 32: the compiled code is tiny
    python benchmarks/step_overhead.py --layers 2

A tiny 12-layer Llama-style model (hidden 32, 2 heads of 16, SwiGLU 64, vocab 64: 24 caches and 110
weights, the argument count of the 12-layer benchmark models) is compiled once; its decode step is
then called `--calls` times per round in three ways, interleaved over `--rounds` rounds:

- plain: `step(tokens=..., pos=..., **caches, **weights)`: every argument checked and bound per call;
- pinned: `step.pin(**caches, **weights)(tokens=..., pos=...)` (what `CachedLlama.forward` runs);
- compiled only: the compiled function called again on the buffers the pinned call last bound
  (no argument handling at all): the floor.

Per call: best and median CPU microseconds of the rounds (process time; the machine is shared), and
the time above the floor.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rlx_mlir.models.generate import CachedLlama  # noqa: E402
from rlx_mlir.models.llama import LlamaConfig, random_weights  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    config = LlamaConfig(layers=args.layers, hidden=32, heads=2, kv_heads=2, head_dim=16, ffn=64, vocab=64)
    weights = random_weights(config, seed=0)
    model = CachedLlama(config, weights, capacity=args.calls + 8, threads=1)
    step = model.step(1)
    pinned = step.pin(**model.caches, **weights)
    token, pos = np.array([[3]], np.int64), np.array(4, np.int64)
    pinned(tokens=token, pos=pos)
    context = pinned._call._context  # the pinned call's own descriptors, bound by the call above

    ways = {
        "plain": lambda: step(tokens=token, pos=pos, **model.caches, **weights),
        "pinned": lambda: pinned(tokens=token, pos=pos),
        "compiled only": context.call,
    }
    times: dict = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, call in ways.items():
            start = time.process_time()
            for _ in range(args.calls):
                call()
            times[name].append((time.process_time() - start) / args.calls * 1e6)
    floor = min(times["compiled only"])
    print(f"decode step of a {args.layers}-layer tiny model ({len(step.signature.inputs)} arguments), "
          f"{args.calls} calls x {args.rounds} rounds, CPU us per call; shared machine")
    print("| call | best us | median us | above the compiled code, us |")
    print("|---|---|---|---|")
    for name, values in times.items():
        print(f"| {name} | {min(values):.1f} | {statistics.median(values):.1f} | {min(values) - floor:.1f} |")


if __name__ == "__main__":
    main()
