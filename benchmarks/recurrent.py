"""Recurrent ops at sequence 1024: compiled rlx ops versus the same recurrence as a numpy loop.

Ops (f32):
- rlx.gated_delta_net, b=1, h=4, n=64 (state 4 x 64 x 64), no initial state;
- rlx.selective_scan, b=1, h=256, n=16 (state 256 x 16);
- rlx.depthwise_conv1d_causal, B=1, C=1024, K=4 (no recurrence; numpy: K shifted multiply-adds).

The numpy baselines are vectorised over batch and heads (channels) and loop
over time in Python, the way one would write the recurrence without a kernel.
Each timing is the wall time of one call; a few warm-up calls are not timed.
Prints a table: median and best of several runs, and numpy / rlx (> 1 means
the compiled op is faster).

    python benchmarks/recurrent.py [--runs N] [--seq S]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np

import rlx_mlir


def _type(shape, dtype="f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


# --- gated delta net ---------------------------------------------------------------------


def gdn_module(b: int, s: int, h: int, n: int) -> str:
    qkv, gb, st = _type((b, s, h, n)), _type((b, s, h)), _type((b, h, n, n))
    return (
        f"func.func @f(%q: {qkv}, %k: {qkv}, %v: {qkv}, %g: {gb}, %beta: {gb}) -> ({qkv}, {st}) {{\n"
        f'  %0:2 = "rlx.gated_delta_net"(%q, %k, %v, %g, %beta) {{state_size = {n}}} : '
        f"({qkv}, {qkv}, {qkv}, {gb}, {gb}) -> ({qkv}, {st})\n"
        f"  return %0#0, %0#1 : {qkv}, {st}\n}}\n"
    )


def gdn_numpy(q, k, v, g, beta):
    b, s, h, n = q.shape
    state = np.zeros((b, h, n, n), np.float32)  # [b, h, n_v, n_k]
    out = np.empty_like(q)
    alpha = np.exp(g)
    scale = np.float32(1.0 / np.sqrt(n))
    for t in range(s):
        state *= alpha[:, t, :, None, None]
        kv = np.einsum("bhij,bhj->bhi", state, k[:, t])
        u = beta[:, t, :, None] * (v[:, t] - kv)
        state += u[..., :, None] * k[:, t, :, None, :]
        out[:, t] = np.einsum("bhij,bhj->bhi", state, q[:, t] * scale)
    return out, state


def gdn_inputs(b, s, h, n, rng):
    q = rng.standard_normal((b, s, h, n)).astype(np.float32)
    k = rng.standard_normal((b, s, h, n)).astype(np.float32)
    k /= np.linalg.norm(k, axis=-1, keepdims=True)  # L2-normalised keys, as in the models
    v = rng.standard_normal((b, s, h, n)).astype(np.float32)
    g = -rng.uniform(0.0, 0.1, (b, s, h)).astype(np.float32)
    beta = rng.uniform(0.0, 1.0, (b, s, h)).astype(np.float32)
    return q, k, v, g, beta


# --- selective scan ----------------------------------------------------------------------


def ssm_module(b: int, s: int, h: int, n: int) -> str:
    xs, a_, bc, st = _type((b, s, h)), _type((h, n)), _type((b, s, n)), _type((b, h, n))
    segments = "operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>"  # no d, z or initial state
    return (
        f"func.func @f(%x: {xs}, %d: {xs}, %a: {a_}, %b: {bc}, %c: {bc}) -> {xs} {{\n"
        f'  %0:2 = "rlx.selective_scan"(%x, %d, %a, %b, %c) {{state_size = {n}, {segments}}} : '
        f"({xs}, {xs}, {a_}, {bc}, {bc}) -> ({xs}, {st})\n"
        f"  return %0#0 : {xs}\n}}\n"
    )


def ssm_numpy(x, delta, a, b_in, c):
    b, s, h = x.shape
    state = np.zeros((b, h, a.shape[1]), np.float32)
    y = np.empty_like(x)
    for t in range(s):
        d = delta[:, t, :, None]
        state = np.exp(d * a) * state + d * b_in[:, t, None, :] * x[:, t, :, None]
        y[:, t] = np.einsum("bj,bij->bi", c[:, t], state)
    return y


def ssm_inputs(b, s, h, n, rng):
    x = rng.standard_normal((b, s, h)).astype(np.float32)
    delta = rng.uniform(0.001, 0.1, (b, s, h)).astype(np.float32)
    a = -rng.uniform(0.5, 2.0, (h, n)).astype(np.float32)
    b_in = rng.standard_normal((b, s, n)).astype(np.float32)
    c = rng.standard_normal((b, s, n)).astype(np.float32)
    return x, delta, a, b_in, c


# --- causal depthwise conv ---------------------------------------------------------------


def conv_module(b: int, s: int, ch: int, kk: int) -> str:
    xs, w, p = _type((b, s, ch)), _type((ch, 1, 1, kk)), _type((b, kk - 1, ch))
    return (
        f"func.func @f(%x: {xs}, %w: {w}, %p: {p}) -> {xs} {{\n"
        f'  %0 = "rlx.depthwise_conv1d_causal"(%x, %w, %p) {{kernel_size = {kk}}} : ({xs}, {w}, {p}) -> {xs}\n'
        f"  return %0 : {xs}\n}}\n"
    )


def conv_numpy(x, w, pad):
    kk = w.shape[-1]
    xp = np.concatenate([pad, x], axis=1)
    s = x.shape[1]
    out = np.zeros_like(x)
    for k in range(kk):
        out += w[:, 0, 0, k] * xp[:, k : k + s]
    return out


def conv_inputs(b, s, ch, kk, rng):
    return (
        rng.standard_normal((b, s, ch)).astype(np.float32),
        rng.standard_normal((ch, 1, 1, kk)).astype(np.float32),
        rng.standard_normal((b, kk - 1, ch)).astype(np.float32),
    )


# --- timing -------------------------------------------------------------------------------


def timings(fn, args, runs: int, warmup: int = 2) -> list[float]:
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return times


def max_abs_diff(a, b) -> float:
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--seq", type=int, default=1024)
    options = parser.parse_args()
    s = options.seq
    rng = np.random.default_rng(0)
    cases = [
        ("gated_delta_net b=1 h=4 n=64", gdn_module(1, s, 4, 64), gdn_numpy, gdn_inputs(1, s, 4, 64, rng)),
        ("selective_scan b=1 h=256 n=16", ssm_module(1, s, 256, 16), ssm_numpy, ssm_inputs(1, s, 256, 16, rng)),
        ("depthwise_conv1d_causal b=1 c=1024 k=4", conv_module(1, s, 1024, 4), conv_numpy, conv_inputs(1, s, 1024, 4, rng)),
    ]
    print(f"sequence {s}, f32, {options.runs} runs each; {platform.processor() or platform.machine()}")
    header = ("op", "rlx median ms", "rlx best ms", "numpy median ms", "numpy best ms", "numpy/rlx (median)", "max |diff|")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for name, text, reference, args in cases:
        start = time.perf_counter()
        compiled = rlx_mlir.compile(text, entry="f")
        compile_s = time.perf_counter() - start
        diff = max_abs_diff(compiled(*args), reference(*args))
        ours = timings(compiled, args, options.runs)
        theirs = timings(reference, args, options.runs)
        m_ours, m_theirs = statistics.median(ours), statistics.median(theirs)
        print(
            f"{name} | {m_ours * 1e3:.2f} | {min(ours) * 1e3:.2f} | {m_theirs * 1e3:.2f} | "
            f"{min(theirs) * 1e3:.2f} | {m_theirs / m_ours:.2f}x | {diff:.2e}"
            f"  (compile {compile_s:.2f} s)"
        )


if __name__ == "__main__":
    main()
