"""Odd shapes: the time per element of a size with no divisor near a lowering's tile limit (a prime
N or K, a vocabulary of 50257) against the nearby size that divides, measured in the same run.

Pairs (each op compiled with threads=1 and cache=False, timed in interleaved rounds by process CPU
time, which leaves out the time other processes hold the core on a loaded machine):

- rlx.grouped_matmul x [256, 1024] w [8, 1024, N], N = 1024 / 1031, and K = 1024 / 1031
  (column chunks and weight blocks: full-size tiles plus a static tail);
- rlx.dequant_grouped_matmul q8_0, 64 rows, K = 1024, N = 1024 / 1031 (128-row slab blocks);
- rlx.dequant_matmul q8_0 / q4_k, M = 1 and 32, K = 4096, N = 4096 / 4099 (64-row panels; with
  one row tile the panels keep their old 1-row choice, which costs nothing there).

"per element" is the odd size's median time per multiply-add over the even size's (1.00: no cliff).
Usage: python benchmarks/odd_shapes.py [rounds]
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

import rlx_mlir
from rlx_mlir import quant


def _t(*shape, dtype="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def _module(op: str, operands: list[tuple], result: tuple, attrs: str = "") -> str:
    args = ", ".join(f"%a{i}: {_t(*s, dtype=d)}" for i, (s, d) in enumerate(operands))
    names = ", ".join(f"%a{i}" for i in range(len(operands)))
    types = ", ".join(_t(*s, dtype=d) for s, d in operands)
    return (f"func.func @f({args}) -> {_t(*result)} {{\n  %0 = \"{op}\"({names}){attrs} : ({types}) -> {_t(*result)}\n"
            f"  return %0 : {_t(*result)}\n}}\n")


def grouped(rng, m, k, n, e=8):
    text = _module("rlx.grouped_matmul", [((m, k), "f32"), ((e, k, n), "f32"), ((m,), "i64")], (m, n))
    args = (rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((e, k, n)).astype(np.float32),
            rng.integers(0, e, m).astype(np.int64))
    return text, args, m * k * n


def dequant_grouped(rng, m, k, n, scheme="q8_0", e=8):
    w = np.stack([quant.quantize(rng.standard_normal((n, k)).astype(np.float32), scheme) for _ in range(e)])
    text = _module("rlx.dequant_grouped_matmul", [((m, k), "f32"), (w.shape, "ui8"), ((m,), "i64")], (m, n),
                   f' {{scheme = "{scheme}"}}')
    return text, (rng.standard_normal((m, k)).astype(np.float32), w, rng.integers(0, e, m).astype(np.int64)), m * k * n


def dequant(rng, m, k, n, scheme):
    w = quant.quantize(rng.standard_normal((n, k)).astype(np.float32), scheme)
    text = _module("rlx.dequant_matmul", [((m, k), "f32"), (w.shape, "ui8")], (m, n), f' {{scheme = "{scheme}"}}')
    return text, (rng.standard_normal((m, k)).astype(np.float32), w), m * k * n


PAIRS = [
    ("grouped_matmul N", grouped, dict(m=256, k=1024), "n", (1024, 1031)),
    ("grouped_matmul K", grouped, dict(m=256, n=1024), "k", (1024, 1031)),
    ("dequant_grouped q8_0 N", dequant_grouped, dict(m=64, k=1024), "n", (1024, 1031)),
    ("dequant q8_0 M=1 N", dequant, dict(m=1, k=4096, scheme="q8_0"), "n", (4096, 4099)),
    ("dequant q4_k M=1 N", dequant, dict(m=1, k=4096, scheme="q4_k"), "n", (4096, 4099)),
    ("dequant q8_0 M=32 N", dequant, dict(m=32, k=4096, scheme="q8_0"), "n", (4096, 4099)),
    ("dequant q4_k M=32 N", dequant, dict(m=32, k=4096, scheme="q4_k"), "n", (4096, 4099)),
]


def main(rounds: int) -> None:
    rng = np.random.default_rng(0)
    print(f"{'case':26s} {'size':>6s} {'best ms':>9s} {'median ms':>10s} {'per element':>12s}")
    for name, make, fixed, axis, sizes in PAIRS:
        runs = []
        for size in sizes:
            text, args, work = make(rng, **fixed, **{axis: size})
            exe = rlx_mlir.compile(text, entry="f", threads=1, cache=False)
            exe(*args)
            runs.append((size, exe, args, work, []))
        for _ in range(rounds):
            for _, exe, args, _, times in runs:
                start = time.process_time()
                exe(*args)
                times.append(time.process_time() - start)
        base = statistics.median(runs[0][4]) / runs[0][3]
        for size, _, _, work, times in runs:
            per = statistics.median(times) / work / base
            print(f"{name:26s} {size:6d} {min(times) * 1e3:9.2f} {statistics.median(times) * 1e3:10.2f} {per:11.2f}x", flush=True)
    print("load:", os.getloadavg())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
