"""Where the routed MoE FFN's time goes: benchmarks/moe.py's block (E = 8, top-2, hidden 1024,
expert FFN 2816, 128 tokens) cut into separately compiled pieces, 1 thread (process CPU time) or
`--threads N` (wall time).

- router: `x @ router`, softmax, top-2 (`rlx.topk`);
- each `rlx.grouped_matmul` of the block (gate / up: `[256, 1024] x [8, 1024, 2816]`; down:
  `[256, 2816] x [8, 2816, 1024]`) with the benchmark's routing, and with every row sent to
  expert 0 (the same FLOPs and kernels, one expert's weights: in cache after the first call), and
  the dense `[256, K] x [K, N]` GEMM of the same FLOPs;
- each grouped matmul with 8 rows per expert (one 8-row tile each, the other rows routed nowhere):
  the weights streamed from memory with the least arithmetic on them, the bandwidth of the first
  tile's pass over each block (the tiles after it find the block in L2);
- `silu(gate) * up`, `rlx.scatter_add` of the 256 rows into 128 tokens;
- the whole block (`rlx_hir.moe_ffn`, direct) and a 256 MiB numpy copy (the streaming bandwidth).

The difference between a routed grouped matmul and its all-to-expert-0 twin is the cost of
reading the E experts' weights from memory; the bytes over that difference is the bandwidth the
kernels get from them, to set against the copy's.

    python benchmarks/moe_breakdown.py [--repeat 9] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

TOKENS, HIDDEN, FFN, EXPERTS, TOP_K = 128, 1024, 2816, 8, 2
ROWS = TOKENS * TOP_K


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=9, help="timed rounds (default 9)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads the pieces are compiled for (default 1; above 1 the table shows wall time)")
    args = parser.parse_args()

    from rlx_mlir import GraphModule
    from rlx_mlir.dialects import rlx

    rng = np.random.default_rng(0)

    def normal(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    x, router = normal(TOKENS, HIDDEN), normal(HIDDEN, EXPERTS, scale=HIDDEN**-0.5)
    gate, up = normal(EXPERTS, HIDDEN, FFN, scale=HIDDEN**-0.5), normal(EXPERTS, HIDDEN, FFN, scale=HIDDEN**-0.5)
    down = normal(EXPERTS, FFN, HIDDEN, scale=FFN**-0.5)
    chosen = np.argsort(-(x @ router), axis=1, kind="stable")[:, :TOP_K].reshape(-1).astype(np.int64)
    to_first = np.zeros(ROWS, np.int64)
    one_tile = np.full(ROWS, EXPERTS, np.int64)  # out of range: no slot
    one_tile[:8 * EXPERTS] = np.arange(8 * EXPERTS) // 8
    rows, hidden = np.repeat(x, TOP_K, axis=0), normal(ROWS, FFN)

    def compiled(name, build):
        g = GraphModule(name)
        g.set_outputs(build(g))
        return g.compile(threads=args.threads)

    def grouped(k, n):
        return compiled(f"grouped_{k}", lambda g: g.grouped_matmul(
            g.input("x", (ROWS, k)), g.param("w", (EXPERTS, k, n)), g.input("i", (ROWS,), "i64")))

    def dense(k, n):
        return compiled(f"dense_{k}", lambda g: g.input("x", (ROWS, k)) @ g.param("w", (k, n)))

    route = compiled("router", lambda g: g.op(rlx.TopkOp, g.op(
        rlx.SoftmaxOp, g.input("x", (TOKENS, HIDDEN)) @ g.param("r", (HIDDEN, EXPERTS)), axis=-1), k=TOP_K))
    gate_mm, down_mm, gate_dense, down_dense = grouped(HIDDEN, FFN), grouped(FFN, HIDDEN), dense(HIDDEN, FFN), dense(FFN, HIDDEN)
    swiglu = compiled("swiglu", lambda g: g.op(rlx.MulOp, g.op(rlx.SiluOp, g.input("g", (ROWS, FFN))), g.input("u", (ROWS, FFN))))
    scatter = compiled("scatter", lambda g: g.scatter_add(g.input("u", (ROWS, HIDDEN)), g.input("i", (ROWS,), "i64"),
                                                          out_dim=TOKENS))
    block = GraphModule.hir("moe", policy="direct")
    block.set_outputs(block.moe_ffn(block.input("x", (TOKENS, HIDDEN)), block.param("router", (HIDDEN, EXPERTS)),
                                    block.param("gate", (EXPERTS, HIDDEN, FFN)), block.param("up", (EXPERTS, HIDDEN, FFN)),
                                    block.param("down", (EXPERTS, FFN, HIDDEN)), top_k=TOP_K, normalize=True))
    moe = block.compile(threads=args.threads)
    token_of_row = (np.arange(ROWS) // TOP_K).astype(np.int64)
    updates = normal(ROWS, HIDDEN)
    source = np.ones(64 * 2**20, np.float32)
    copy = np.empty_like(source)

    want = np.einsum("rk,rkn->rn", rows.astype(np.float64), gate[chosen].astype(np.float64))
    if not np.allclose(gate_mm(x=rows, w=gate, i=chosen), want, rtol=1e-4, atol=1e-3):
        raise SystemExit("grouped_matmul disagrees with numpy")

    pieces = {
        "router: matmul, softmax, top-2": lambda: route(x=x, r=router),
        "grouped gate (or up), routed": lambda: gate_mm(x=rows, w=gate, i=chosen),
        "grouped gate, every row to expert 0": lambda: gate_mm(x=rows, w=gate, i=to_first),
        "grouped gate, 8 rows per expert": lambda: gate_mm(x=rows, w=gate, i=one_tile),
        "dense GEMM [256, 1024] x [1024, 2816]": lambda: gate_dense(x=rows, w=gate[0]),
        "grouped down, routed": lambda: down_mm(x=hidden, w=down, i=chosen),
        "grouped down, every row to expert 0": lambda: down_mm(x=hidden, w=down, i=to_first),
        "grouped down, 8 rows per expert": lambda: down_mm(x=hidden, w=down, i=one_tile),
        "dense GEMM [256, 2816] x [2816, 1024]": lambda: down_dense(x=hidden, w=down[0]),
        "silu(gate) * up": lambda: swiglu(g=hidden, u=hidden),
        "scatter_add 256 rows -> 128 tokens": lambda: scatter(u=updates, i=token_of_row),
        "whole routed block (moe_ffn, direct)": lambda: moe(x=x, router=router, gate=gate, up=up, down=down),
        "numpy copy of 256 MiB": lambda: np.copyto(copy, source),
    }
    for call in pieces.values():
        call()
    cpu = {name: [] for name in pieces}
    wall = {name: [] for name in pieces}
    for _ in range(args.repeat):  # interleaved rounds
        for name, call in pieces.items():
            time.sleep(0.02)
            start, start_cpu = time.perf_counter(), time.process_time()
            call()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    # One thread: process CPU time (preemption by other processes left out); more: wall time.
    timed = cpu if args.threads == 1 else wall
    measure = "process CPU ms" if args.threads == 1 else "wall ms"
    best = {name: min(samples) for name, samples in timed.items()}
    bandwidth = 2 * source.nbytes / min(wall["numpy copy of 256 MiB"])
    print(f"# routed MoE FFN cut into pieces: {args.threads} thread(s), {measure}, best / median of {args.repeat} "
          f"interleaved rounds; load average {os.getloadavg()[0]:.1f}")
    print(f"| piece | {measure} (best / median) | CPU ms (best) |")
    print("|---|---|---|")
    for name, samples in timed.items():
        print(f"| {name} | {best[name] * 1e3:.2f} / {sorted(samples)[len(samples) // 2] * 1e3:.2f} "
              f"| {min(cpu[name]) * 1e3:.2f} |")
    parts = (best["router: matmul, softmax, top-2"] + 2 * best["grouped gate (or up), routed"]
             + best["grouped down, routed"] + best["silu(gate) * up"] + best["scatter_add 256 rows -> 128 tokens"])
    print(f"\nsum of the pieces (router, 2 x gate, down, silu * up, scatter_add): {parts * 1e3:.1f} ms; "
          f"the whole block {best['whole routed block (moe_ffn, direct)'] * 1e3:.1f} ms")
    matrix = HIDDEN * FFN * 4 * EXPERTS
    print(f"streaming bandwidth (numpy copy, read + write): {bandwidth / 1e9:.1f} GB/s")
    for what in ("gate", "down"):
        routed = best[f"grouped {what}{' (or up)' if what == 'gate' else ''}, routed"]
        cached = best[f"grouped {what}, every row to expert 0"]
        extra = routed - cached
        print(f"{what}: the 8 experts' {matrix / 1e6:.1f} MB cost {extra * 1e3:.1f} ms over one cached expert's "
              f"({matrix / extra / 1e9 if extra > 0 else float('inf'):.1f} GB/s; the copy's bandwidth would take "
              f"{matrix / bandwidth * 1e3:.1f} ms)")
        streamed = best[f"grouped {what}, 8 rows per expert"]
        print(f"{what}, 8 rows per expert: the weights at {matrix / streamed / 1e9:.1f} GB/s "
              f"(their {2 * 8 * EXPERTS * HIDDEN * FFN / streamed / 1e9:.0f} GFLOP/s), "
              f"against {2 * ROWS * HIDDEN * FFN / cached / 1e9:.0f} GFLOP/s with one cached expert")


if __name__ == "__main__":
    main()
