"""LoRA benchmark: `rlx.lora_matmul` (rank 16) against the base linear it adapts, one table.

    python benchmarks/lora.py            # about 2 minutes on 2 cores
    python benchmarks/lora.py --quick    # 3 timed rounds

Case (issue 16, "Performance"): a 4096 x 4096 linear, M = 128 rows, a rank-16 adapter
(`scale` = 2).  Contenders, on the same x, W, A, B:

- numpy base: `np.matmul(x, W, out=)` (OpenBLAS), the base linear alone;
- numpy lora: `x @ W + scale * (x @ A) @ B` in numpy (three GEMMs and an add);
- rlx base: `rlx.matmul(x, W)` compiled by `rlx_mlir.compile` (the packed, tiled f32 kernels);
- rlx lora: `rlx.lora_matmul(x, W, A, B)`, the same kernels: `x @ A` [M, 16], then
  `(scale * x @ A) @ B` as the accumulator that `x @ W` adds into.

(`rlx-merge-lora` turns a frozen adapter into the base matmul by a merged weight: that is the
"rlx base" row.)  Before any timing each result is checked against float64 numpy within the f32
rounding bound.  Timing: one warm-up call each, then `--repeat` interleaved rounds (every
contender once per round, a short pause between contenders); best and median per contender.
"vs rlx base" is the rlx base best time over the row's best (the issue's target: lora at least
1 / 1.1 = 0.91x, i.e. at most 1.1x the time); "vs numpy lora" likewise.  The "1 thread" rows run
in a child process with OPENBLAS_NUM_THREADS=1 and rlx compiled with threads=1; "all" uses every
core for both.  On a loaded machine the 1-thread rows' process CPU time (which leaves out the time
other processes hold the core) is the steadier measure: its columns and the 1-thread verdict use it.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import child_rows  # benchmarks/child_rows.py: the script's directory is on sys.path
from child_rows import emit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

M, K, N, RANK, SCALE = 128, 4096, 4096, 16, 2.0
CONTENDERS = ("numpy base", "numpy lora", "rlx base", "rlx lora")


def pause() -> None:
    # Let the previous contender's worker threads go to sleep: numpy's OpenBLAS workers spin for
    # 2**28 cycles (its default OPENBLAS_THREAD_TIMEOUT, ~0.1 s) after a call.  With 0.05 s the
    # "rlx base" row, which follows "numpy lora", ran on two threads beside a spinning worker:
    # 62 ms against 34 ms alone, and "rlx lora" (after rlx base) looked 0.56x of it.
    time.sleep(0.3)


def _tensor(*shape) -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + "xf32>"


def _module(lora: bool) -> str:
    x, w, y = _tensor(M, K), _tensor(K, N), _tensor(M, N)
    if not lora:
        return f'func.func @f(%x: {x}, %w: {w}) -> {y} {{\n  %y = "rlx.matmul"(%x, %w) : ({x}, {w}) -> {y}\n  return %y : {y}\n}}\n'
    a, b = _tensor(K, RANK), _tensor(RANK, N)
    op = f'"rlx.lora_matmul"(%x, %w, %a, %b) {{scale = {SCALE} : f32}} : ({x}, {w}, {a}, {b}) -> {y}'
    return f"func.func @f(%x: {x}, %w: {w}, %a: {a}, %b: {b}) -> {y} {{\n  %y = {op}\n  return %y : {y}\n}}\n"


def _check(name: str, out, x, w, a=None, b=None) -> None:
    """`out` against `x @ w (+ SCALE * (x @ a) @ b)` in float64, within the f32 rounding bound."""
    import numpy as np

    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    expected, magnitude = x64 @ w64, np.abs(x64) @ np.abs(w64)
    if a is not None:
        down = x64 @ a
        expected = expected + SCALE * down @ b
        magnitude = magnitude + SCALE * (np.abs(down) @ np.abs(b))
    bound = magnitude * ((K + RANK) * np.finfo(np.float32).eps) + 1e-30
    error = np.abs(out - expected)
    if not (error < bound).all():
        worst = np.unravel_index(np.argmax(error / bound), error.shape)
        raise SystemExit(f"{name} is wrong: at {worst} {out[worst]} vs {expected[worst]} (bound {bound[worst]:.3g})")


def bench(threads: int, repeat: int) -> None:
    import numpy as np

    import rlx_mlir

    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
    a = (rng.standard_normal((K, RANK)) / np.sqrt(K)).astype(np.float32)
    b = rng.standard_normal((RANK, N)).astype(np.float32)
    out = {name: np.empty((M, N), np.float32) for name in CONTENDERS}

    def numpy_lora(o=out["numpy lora"]):
        np.matmul(x, w, out=o)
        o += SCALE * ((x @ a) @ b)

    base = rlx_mlir.compile(_module(False), "f", threads=threads)
    lora = rlx_mlir.compile(_module(True), "f", threads=threads)
    contenders = {
        "numpy base": lambda: np.matmul(x, w, out=out["numpy base"]),
        "numpy lora": numpy_lora,
        "rlx base": lambda: base(x, w, out=out["rlx base"]),
        "rlx lora": lambda: lora(x, w, a, b, out=out["rlx lora"]),
    }
    for call in contenders.values():  # numerics first
        call()
    _check("numpy base", out["numpy base"], x, w)
    _check("numpy lora", out["numpy lora"], x, w, a, b)
    _check("rlx base", out["rlx base"], x, w)
    _check("rlx lora", out["rlx lora"], x, w, a, b)
    times = {name: [] for name in contenders}
    cpu = {name: [] for name in contenders}  # process CPU time: a 1-thread run's cost, preemption left out
    for _ in range(repeat):  # interleaved rounds
        for name, call in contenders.items():
            pause()
            start, start_cpu = time.perf_counter(), time.process_time()
            call()
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    for name in contenders:
        ordered, ordered_cpu = sorted(times[name]), sorted(cpu[name])
        emit(threads=threads, contender=name, best=ordered[0], median=ordered[len(ordered) // 2],
             cpu_best=ordered_cpu[0], cpu_median=ordered_cpu[len(ordered_cpu) // 2])


# --- the parent: one child per thread setting, one table ---------------------------------------


def run_child(threads: int, args) -> list[dict]:
    return child_rows.run_child(__file__, threads, ["--repeat", str(args.repeat)])


def table(rows: list[dict]) -> str:
    lines = [
        "| threads | contender | ms (best / median) | CPU ms, 1 thread (best / median) | vs rlx base (best) "
        "| vs numpy lora (best) | vs rlx base (CPU best, 1 thread) |",
        "|---|---|---|---|---|---|---|",
    ]
    best = {(r["threads"], r["contender"]): r["best"] for r in rows}
    cpu_best = {(r["threads"], r["contender"]): r["cpu_best"] for r in rows}
    for row in rows:
        single = row["threads"] == 1
        threads = "1" if single else f"all ({row['threads']})"
        rlx_base, numpy_lora = best[(row["threads"], "rlx base")], best[(row["threads"], "numpy lora")]
        # With threads the CPU time sums them: only the wall time is shown.
        cpu = f"{row['cpu_best'] * 1e3:.2f} / {row['cpu_median'] * 1e3:.2f}" if single else "-"
        cpu_ratio = f"{cpu_best[(1, 'rlx base')] / row['cpu_best']:.2f}x" if single else "-"
        lines.append(
            f"| {threads} | {row['contender']} | {row['best'] * 1e3:.2f} / {row['median'] * 1e3:.2f} | {cpu} "
            f"| {rlx_base / row['best']:.2f}x | {numpy_lora / row['best']:.2f}x | {cpu_ratio} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=9, help="timed rounds (default 9)")
    parser.add_argument("--quick", action="store_true", help="3 timed rounds")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.repeat = 3
    if args.child:
        bench(args.threads, args.repeat)
        return
    from rlx_mlir.targets.cpu import default_threads

    cores = default_threads()
    rows = run_child(1, args) + (run_child(cores, args) if cores > 1 else [])
    rows.sort(key=lambda r: (r["threads"], CONTENDERS.index(r["contender"])))
    import numpy

    print(f"# rlx-mlir LoRA benchmark: M={M}, K=N={K}, rank {RANK}; {platform.processor() or platform.machine()}, "
          f"{cores} cores, numpy {numpy.__version__}, Python {platform.python_version()}, {args.repeat} interleaved rounds")
    print(table(rows))
    measure = {1: "cpu_best"}  # 1 thread: process CPU time; all cores: wall time
    lora = {r["threads"]: r[measure.get(r["threads"], "best")] for r in rows if r["contender"] == "rlx lora"}
    base = {r["threads"]: r[measure.get(r["threads"], "best")] for r in rows if r["contender"] == "rlx base"}
    for threads in sorted(lora):
        ratio = lora[threads] / base[threads]
        verdict = "meets" if ratio <= 1.1 else "misses"
        what = "CPU time" if threads == 1 else "wall time"
        print(f"threads={threads}: rlx lora takes {ratio:.3f}x the base linear's {what} ({verdict} the <= 1.1x target)")


if __name__ == "__main__":
    main()
