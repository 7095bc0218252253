"""Mixture-of-experts FFN: the routed lowering against running every expert on every token, and
against dense work of the same FLOPs.  E = 8 experts, top-2, hidden 1024, expert FFN 2816, 128
tokens (softmax router, normalised top-2: Mixtral's block at a small width).

Contenders, all compiled by rlx-mlir in the same process and timed in interleaved rounds:

- routed: `rlx_hir.moe_ffn` under the `direct` policy: the rows of each expert bucketed by a
  counting sort, three `rlx.grouped_matmul`s (each expert's GEMM on its own rows), `rlx.scatter_add`;
- dense-masked: the same block under `fusable`: every expert on every token, weighted by a dense
  router matrix that is zero off the chosen experts (4x the expert FLOPs of top-2 of 8);
- dense FFN, same FLOPs: one SwiGLU FFN (three GEMMs) on 256 = tokens x top-k rows, no routing;
- one GEMM, same FLOPs: `[256, 1024] x [1024, 3 * 2816]`;
- numpy GEMM, same FLOPs (OpenBLAS), a peer for the kernels;
- decode: the routed block on 1 token with E = 8 and with E = 2 experts (same top-2, same
  expert size): equal times mean a decode step reads only the chosen experts' weights; the same
  with the experts packed in q8_0 (`rlx.dequant_grouped_matmul`, blocks decoded in the product).

Numerics are checked first: routed and dense-masked agree with each other and with a float64
per-token reference on a few tokens.  The "1 thread" rows run in a child process compiled with
threads=1 (and OPENBLAS_NUM_THREADS=1); the "all" rows use every core.  Best and median of the
rounds; "vs routed" is the contender's best time over routed's best (above 1: routed is faster).
On a loaded machine the 1-thread rows' process CPU time (which leaves out the time other processes
hold the core) is the steadier measure; its ratios are in the last column.

The bandwidth-bound floor: the weight bytes each contender must read from memory (the routed block
and dense-masked read all E experts' three matrices, 277 MB in f32; the same-FLOPs dense forms one
expert's, 35 MB; a decode step its two chosen experts') over this machine's streaming bandwidth,
measured in the same rounds as a 256 MiB numpy copy (bytes read + written over its best time).  The
routed block cannot beat the larger of that floor and its FLOPs' time (the dense FFN row).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import child_rows  # benchmarks/child_rows.py: the script's directory is on sys.path
import numpy as np
from child_rows import emit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

TOKENS, HIDDEN, FFN, EXPERTS, TOP_K = 128, 1024, 2816, 8, 2
QUANT = "q8_0"  # the packed experts of the quantised decode rows
STREAM = "stream: numpy copy of 256 MiB"  # the bandwidth the floors are measured against


def weight_bytes(experts: int, scheme: str | None = None) -> int:
    """The bytes of `experts` experts' gate, up and down matrices (f32, or packed in `scheme`)."""
    elements = experts * 3 * HIDDEN * FFN
    if scheme is None:
        return 4 * elements
    from rlx_mlir.dialects.rlx.quant import GGUF_SCHEMES

    return elements // HIDDEN * GGUF_SCHEMES[scheme].row_bytes(HIDDEN)


# The weights each contender reads from memory (a decode step: its TOP_K chosen experts').
WEIGHT_BYTES = {
    "routed (direct)": weight_bytes(EXPERTS),
    "dense-masked (fusable)": weight_bytes(EXPERTS),
    "dense FFN, same FLOPs": weight_bytes(1),
    "one GEMM, same FLOPs": weight_bytes(1),
    "numpy GEMM, same FLOPs": weight_bytes(1),
    "decode: 1 token, E = 8 (routed)": weight_bytes(TOP_K),
    "decode: 1 token, E = 2 (routed)": weight_bytes(TOP_K),
    f"decode: 1 token, E = 8, {QUANT} experts": weight_bytes(TOP_K, QUANT),
    f"decode: 1 token, E = 2, {QUANT} experts": weight_bytes(TOP_K, QUANT),
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def weights(rng) -> dict:
    def normal(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    return {
        "x": normal(TOKENS, HIDDEN, scale=1.0),
        "router": normal(HIDDEN, EXPERTS, scale=HIDDEN**-0.5),
        "gate": normal(EXPERTS, HIDDEN, FFN, scale=HIDDEN**-0.5),
        "up": normal(EXPERTS, HIDDEN, FFN, scale=HIDDEN**-0.5),
        "down": normal(EXPERTS, FFN, HIDDEN, scale=FFN**-0.5),
    }


def build_moe(policy: str, threads: int, tokens: int = TOKENS, experts: int = EXPERTS, scheme: str | None = None):
    """The MoE FFN; with `scheme`, its expert stacks packed (`u8 [E, out, row bytes]`)."""
    from rlx_mlir import GraphModule
    from rlx_mlir.dialects.rlx.quant import GGUF_SCHEMES

    g = GraphModule.hir("moe", policy=policy)
    x = g.input("x", (tokens, HIDDEN))
    if scheme is None:
        stacks = [g.param(n, (experts, k, n_out)) for n, k, n_out in
                  (("gate", HIDDEN, FFN), ("up", HIDDEN, FFN), ("down", FFN, HIDDEN))]
    else:
        row_bytes = GGUF_SCHEMES[scheme].row_bytes
        stacks = [g.param(n, (experts, n_out, row_bytes(k)), "u8") for n, k, n_out in
                  (("gate", HIDDEN, FFN), ("up", HIDDEN, FFN), ("down", FFN, HIDDEN))]
    schemes = dict(gate_scheme=scheme, up_scheme=scheme, down_scheme=scheme)
    g.set_outputs(g.moe_ffn(x, g.param("router", (HIDDEN, experts)), *stacks, top_k=TOP_K, normalize=True, **schemes))
    return g.compile(threads=threads)


def packed(stack: np.ndarray, scheme: str) -> np.ndarray:
    """`[E, in, out]` f32 experts as GGUF rows `u8 [E, out, row bytes]`."""
    from rlx_mlir import quant

    return np.stack([quant.quantize(np.ascontiguousarray(w.T), scheme) for w in stack])


def build_dense_ffn(threads: int):
    from rlx_mlir import GraphModule

    g = GraphModule.hir("ffn")
    rows = TOKENS * TOP_K
    x = g.input("x", (rows, HIDDEN))
    g.set_outputs(g.swiglu_ffn(x, g.param("up", (HIDDEN, FFN)), g.param("gate", (HIDDEN, FFN)), g.param("down", (FFN, HIDDEN))))
    return g.compile(threads=threads)


def build_gemm(threads: int):
    from rlx_mlir import GraphModule

    g = GraphModule("gemm")
    x = g.input("x", (TOKENS * TOP_K, HIDDEN))
    g.set_outputs(x @ g.param("w", (HIDDEN, 3 * FFN)))
    return g.compile(threads=threads)


def reference_rows(p: dict, rows) -> np.ndarray:
    """float64 per-token loop (softmax, top-2 normalised, SwiGLU experts) for some tokens."""
    out = []
    for t in rows:
        x = p["x"][t].astype(np.float64)
        logits = x @ p["router"]
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        chosen = sorted(range(EXPERTS), key=lambda e: (-probs[e], e))[:TOP_K]
        w = np.array([probs[e] for e in chosen])
        w /= w.sum()
        y = np.zeros(HIDDEN)
        for e, we in zip(chosen, w):
            g, u = x @ p["gate"][e], x @ p["up"][e]
            y += we * ((g / (1 + np.exp(-g)) * u) @ p["down"][e])
        out.append(y)
    return np.array(out)


def bench(threads: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    p = weights(rng)
    started = time.perf_counter()
    routed, masked = build_moe("direct", threads), build_moe("fusable", threads)
    ffn, gemm = build_dense_ffn(threads), build_gemm(threads)
    decode8, decode2 = build_moe("direct", threads, tokens=1), build_moe("direct", threads, tokens=1, experts=2)
    quant8, quant2 = (build_moe("direct", threads, tokens=1, experts=e, scheme=QUANT) for e in (EXPERTS, 2))
    log(f"compiled in {time.perf_counter() - started:.0f} s")
    moe_args = dict(x=p["x"], router=p["router"], gate=p["gate"], up=p["up"], down=p["down"])
    rows_x = rng.standard_normal((TOKENS * TOP_K, HIDDEN)).astype(np.float32)
    ffn_args = dict(x=rows_x, up=p["up"][0], gate=p["gate"][0], down=p["down"][0])
    wide = rng.standard_normal((HIDDEN, 3 * FFN)).astype(np.float32)
    one = p["x"][:1]
    decode2_args = dict(x=one, router=p["router"][:, :2], gate=p["gate"][:2], up=p["up"][:2], down=p["down"][:2])
    quant_args = dict(x=one, router=p["router"], **{n: packed(p[n], QUANT) for n in ("gate", "up", "down")})
    quant2_args = dict(quant_args, router=p["router"][:, :2], **{n: quant_args[n][:2] for n in ("gate", "up", "down")})
    source = np.ones(64 * 2**20, np.float32)  # 256 MiB: far past the caches
    copy = np.empty_like(source)

    a, b = routed(**moe_args), masked(**moe_args)
    check = [0, 1, 77, TOKENS - 1]
    want = reference_rows(p, check)
    for name, got in (("routed", a), ("dense-masked", b)):
        if not np.allclose(got[check], want, rtol=1e-3, atol=1e-3):
            raise SystemExit(f"{name} disagrees with the float64 reference: {np.abs(got[check] - want).max()}")

    contenders = {
        "routed (direct)": lambda: routed(**moe_args),
        "dense-masked (fusable)": lambda: masked(**moe_args),
        "dense FFN, same FLOPs": lambda: ffn(**ffn_args),
        "one GEMM, same FLOPs": lambda: gemm(x=rows_x, w=wide),
        "numpy GEMM, same FLOPs": lambda: rows_x @ wide,
        "decode: 1 token, E = 8 (routed)": lambda: decode8(**dict(moe_args, x=one)),
        "decode: 1 token, E = 2 (routed)": lambda: decode2(**decode2_args),
        f"decode: 1 token, E = 8, {QUANT} experts": lambda: quant8(**quant_args),
        f"decode: 1 token, E = 2, {QUANT} experts": lambda: quant2(**quant2_args),
        STREAM: lambda: np.copyto(copy, source),
    }
    times = {name: [] for name in contenders}
    cpu = {name: [] for name in contenders}  # process CPU time: what a 1-thread run costs, preemption left out
    for fn in contenders.values():  # warm-up
        fn()
    log("checked and warmed up")
    for _ in range(repeat):  # interleaved rounds
        for name, fn in contenders.items():
            time.sleep(0.02)  # let the previous contender's worker threads go to sleep
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    for name, samples in times.items():
        ordered, ordered_cpu = sorted(samples), sorted(cpu[name])
        emit(threads=threads, contender=name, best=ordered[0], median=ordered[len(ordered) // 2],
             cpu_best=ordered_cpu[0], cpu_median=ordered_cpu[len(ordered_cpu) // 2])
    emit(threads=threads, contender="bandwidth", bytes_per_s=2 * source.nbytes / min(times[STREAM]))


def run_child(threads: int, args) -> list[dict]:
    return child_rows.run_child(__file__, threads, ["--repeat", str(args.repeat)])


def table(rows: list[dict]) -> str:
    flops = 2 * TOKENS * TOP_K * HIDDEN * FFN * 3
    bandwidth = {r["threads"]: r["bytes_per_s"] for r in rows if r["contender"] == "bandwidth"}
    rows = [r for r in rows if r["contender"] != "bandwidth"]
    lines = ["| threads | contender | ms (best / median) | CPU ms, 1 thread (best / median) "
             "| weights read, MB: bandwidth floor, ms | GFLOP/s of the routed work (best) | vs routed (best) "
             "| vs routed (CPU best, 1 thread) |",
             "|---|---|---|---|---|---|---|---|"]
    best = {(r["threads"], r["contender"]): r["best"] for r in rows}
    cpu_best = {(r["threads"], r["contender"]): r["cpu_best"] for r in rows}
    for row in rows:
        single = row["threads"] == 1
        threads = "1" if single else f"all ({row['threads']})"
        times = f"{row['best'] * 1e3:.1f} / {row['median'] * 1e3:.1f}"
        if row["contender"] == STREAM:
            lines.append(f"| {threads} | {STREAM} (read + write) | {times} | - "
                         f"| {bandwidth[row['threads']] / 1e9:.1f} GB/s | - | - | - |")
            continue
        moved = WEIGHT_BYTES[row["contender"]]
        floor = f"{moved / 1e6:.1f}: {moved / bandwidth[row['threads']] * 1e3:.1f}"
        # A 1-thread run's CPU time leaves out preemption by other processes (a loaded machine);
        # with threads it sums them, so only the wall time is shown.
        cpu = f"{row['cpu_best'] * 1e3:.1f} / {row['cpu_median'] * 1e3:.1f}" if single else "-"
        peer = "routed (direct)"
        if row["contender"].startswith("decode"):
            peer = f"decode: 1 token, E = 2, {QUANT} experts" if QUANT in row["contender"] else "decode: 1 token, E = 2 (routed)"
        ratio = row["best"] / best[(row["threads"], peer)]
        cpu_ratio = f"{row['cpu_best'] / cpu_best[(1, peer)]:.2f}x" if single else "-"
        if peer != "routed (direct)":  # compared with the E = 2 model: the weights read
            lines.append(f"| {threads} | {row['contender']} | {times} | {cpu} | {floor} | - | {ratio:.2f}x of E = 2 "
                         f"| {cpu_ratio} of E = 2 |")
            continue
        lines.append(f"| {threads} | {row['contender']} | {times} | {cpu} | {floor} | {flops / row['best'] / 1e9:.0f} "
                     f"| {ratio:.2f}x | {cpu_ratio} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7, help="timed rounds (default 7)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        bench(args.threads, args.repeat)
        return
    from rlx_mlir.targets.cpu import default_threads

    cores = default_threads()
    rows = run_child(1, args) + (run_child(cores, args) if cores > 1 else [])
    print(f"# rlx-mlir MoE FFN benchmark: E={EXPERTS}, top-{TOP_K}, hidden {HIDDEN}, expert FFN {FFN}, {TOKENS} tokens; "
          f"{platform.processor() or platform.machine()}, {cores} cores, numpy {np.__version__}, "
          f"{args.repeat} interleaved rounds")
    print(table(rows))


if __name__ == "__main__":
    main()
