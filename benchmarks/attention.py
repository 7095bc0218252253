"""Attention benchmark: rlx-mlir's tiled attention against PyTorch's scaled_dot_product_attention
and a plain numpy softmax(Q K^T) V, one table.

The attention of the benchmark model of `decode.py` / `cpu.py` (8 heads of 64, causal):

- prefill: `rlx.attention` over S = 512 and 2048 tokens (one layer, batch 1), and the time per
  token (time / S) so that growth with S is visible: the causal key blocks above the diagonal are
  skipped, so the work is S^2 / 2 per head and no [S, S] score matrix is written;
- decode: `rlx.cached_attention` of 1 new token over a 4096-position cache filled to 512 and to
  2048 positions (the work follows the filled length, not the capacity).

Contenders, timed in interleaved rounds in the same process (one child process per thread
setting): rlx (compiled once per shape), torch eager SDPA (`is_causal`, its flash / memory-efficient
CPU kernel; optional: `pip install torch==2.13.0`, the `bench` extra), and numpy (float32 scores,
a masked softmax and two matmuls per head batch: what a numpy user writes).  Numerics are checked
against a float64 reference first.  Best and median of the rounds; "vs rlx" is the contender's best
time over rlx's (above 1: rlx is faster).
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

HEADS, HEAD_DIM = 8, 64
PREFILL = (512, 2048)
DECODE_FILLED = (512, 2048)
CAPACITY = 4096
CONTENDERS = ("rlx", "torch", "numpy")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _tensor(*shape) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def prefill_module(seq: int) -> str:
    t = _tensor(1, seq, HEADS * HEAD_DIM)
    return (f"func.func @f(%q: {t}, %k: {t}, %v: {t}) -> {t} {{\n"
            f'  %0 = "rlx.attention"(%q, %k, %v) {{num_heads = {HEADS} : i64, head_dim = {HEAD_DIM} : i64, '
            f'mask_kind = "causal"}} : ({t}, {t}, {t}) -> {t}\n  return %0 : {t}\n}}\n')


def decode_module() -> str:
    q, c = _tensor(1, 1, HEADS * HEAD_DIM), _tensor(1, CAPACITY, HEADS * HEAD_DIM)
    return (f"func.func @f(%q: {q}, %k: {c}, %v: {c}, %pos: tensor<i64>) -> {q} {{\n"
            f'  %0 = "rlx.cached_attention"(%q, %k, %v, %pos) {{num_heads = {HEADS} : i64, head_dim = {HEAD_DIM} : i64}}'
            f" : ({q}, {c}, {c}, tensor<i64>) -> {q}\n  return %0 : {q}\n}}\n")


def reference(q, k, v, first_query: int) -> np.ndarray:
    """float64 causal attention: query i at key position first_query + i sees keys j <= that."""
    sq, sk = q.shape[1], k.shape[1]
    heads = lambda a, s: a[0].astype(np.float64).reshape(s, HEADS, HEAD_DIM).transpose(1, 0, 2)  # noqa: E731
    qh, kh, vh = heads(q, sq), heads(k, sk), heads(v, sk)
    scores = qh @ kh.transpose(0, 2, 1) / np.sqrt(HEAD_DIM)
    visible = np.arange(sk)[None, :] <= first_query + np.arange(sq)[:, None]
    scores = np.where(visible, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return (weights @ vh).transpose(1, 0, 2).reshape(1, sq, HEADS * HEAD_DIM)


def numpy_attention(q, k, v, first_query: int) -> np.ndarray:
    """float32 numpy as a user writes it: per-head batched matmuls and a masked softmax."""
    sq, sk = q.shape[1], k.shape[1]
    qh = q[0].reshape(sq, HEADS, HEAD_DIM).transpose(1, 0, 2)
    kh = k[0].reshape(sk, HEADS, HEAD_DIM).transpose(1, 2, 0)
    vh = v[0].reshape(sk, HEADS, HEAD_DIM).transpose(1, 0, 2)
    scores = (qh @ kh) * np.float32(HEAD_DIM**-0.5)
    hidden = np.arange(sk)[None, :] > first_query + np.arange(sq)[:, None]
    scores[:, hidden] = -np.inf
    scores -= scores.max(-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(-1, keepdims=True)
    return (scores @ vh).transpose(1, 0, 2).reshape(1, sq, HEADS * HEAD_DIM)


def torch_attention(threads: int):
    """`f(q, k, v, first_query)` with torch SDPA (GQA-free, causal aligned to the end), or None."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)

    def attend(q, k, v, first_query):
        sq, sk = q.shape[1], k.shape[1]
        qt, kt, vt = (torch.from_numpy(a[0]).view(a.shape[1], HEADS, HEAD_DIM).transpose(0, 1) for a in (q, k, v))
        with torch.inference_mode():
            if first_query == 0 and sq == sk:
                out = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
            else:  # decode: one query sees every key given (the filled part of the cache)
                out = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt)
        return out.transpose(0, 1).reshape(1, sq, HEADS * HEAD_DIM).numpy()

    return attend


def bench(threads: int, repeat: int) -> None:
    import rlx_mlir

    rng = np.random.default_rng(0)
    torch_attend = torch_attention(threads)
    if torch_attend is None:
        log("torch is not installed: no PyTorch column (pip install torch==2.13.0, the bench extra)")
    cases = []
    for seq in PREFILL:
        q, k, v = (rng.standard_normal((1, seq, HEADS * HEAD_DIM)).astype(np.float32) for _ in range(3))
        exe = rlx_mlir.compile(prefill_module(seq), "f", threads=threads)
        cases.append((f"prefill {seq}", seq, q, k, v, 0, lambda exe=exe, q=q, k=k, v=v: exe(q, k, v)))
    decode = rlx_mlir.compile(decode_module(), "f", threads=threads)
    for filled in DECODE_FILLED:
        q = rng.standard_normal((1, 1, HEADS * HEAD_DIM)).astype(np.float32)
        k, v = (rng.standard_normal((1, CAPACITY, HEADS * HEAD_DIM)).astype(np.float32) for _ in range(2))
        pos = np.array(filled - 1)
        cases.append((f"decode over {filled}", 1, q, k[:, :filled], v[:, :filled], filled - 1,
                      lambda q=q, k=k, v=v, pos=pos: decode(q, k, v, pos)))
    for name, tokens, q, k, v, first, run in cases:
        contenders = {"rlx": run, "numpy": lambda q=q, k=k, v=v, first=first: numpy_attention(q, k, v, first)}
        if torch_attend is not None:
            contenders["torch"] = lambda q=q, k=k, v=v, first=first: torch_attend(q, k, v, first)
        want = reference(q, k, v, first)
        for contender, call in contenders.items():  # numerics first
            error = float(np.abs(call() - want).max())
            if error > 1e-4:
                raise SystemExit(f"{name}: {contender} is off by {error:.3g}")
        times = {contender: [] for contender in contenders}
        for _ in range(repeat):
            for contender, call in contenders.items():
                start = time.perf_counter()
                call()
                times[contender].append(time.perf_counter() - start)
        for contender in contenders:
            ordered = sorted(times[contender])
            emit(threads=threads, case=name, tokens=tokens, contender=contender, best=ordered[0],
                 median=ordered[len(ordered) // 2])


def table(rows: list[dict]) -> str:
    lines = ["| threads | case | contender | ms (best / median) | us per token (best) | vs rlx (best) |",
             "|---|---|---|---|---|---|"]
    best = {(r["threads"], r["case"], r["contender"]): r["best"] for r in rows}
    for row in rows:
        threads = "1" if row["threads"] == 1 else f"all ({row['threads']})"
        rlx = best[(row["threads"], row["case"], "rlx")]
        lines.append(f"| {threads} | {row['case']} | {row['contender']} | {row['best'] * 1e3:.2f} / "
                     f"{row['median'] * 1e3:.2f} | {row['best'] / row['tokens'] * 1e6:.1f} | {row['best'] / rlx:.2f}x |")
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
    rows = child_rows.run_child(__file__, 1, ["--repeat", str(args.repeat)])
    if cores > 1:
        rows += child_rows.run_child(__file__, cores, ["--repeat", str(args.repeat)])
    order = {c: i for i, c in enumerate(CONTENDERS)}
    cases = list(dict.fromkeys(r["case"] for r in rows))
    rows.sort(key=lambda r: (r["threads"], cases.index(r["case"]), order[r["contender"]]))
    print(f"# rlx-mlir attention benchmark: {HEADS} heads of {HEAD_DIM}, causal, batch 1; "
          f"{platform.processor() or platform.machine()}, {cores} cores, numpy {np.__version__}, "
          f"{args.repeat} interleaved rounds")
    print(table(rows))


if __name__ == "__main__":
    main()
