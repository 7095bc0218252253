"""Quantised-weight benchmark: `rlx.dequant_matmul` (GGUF Q4_K, Q8_0) against the f32 matmul, one table.

    python benchmarks/quant.py            # about 2 minutes on 2 cores
    python benchmarks/quant.py --quick    # 3 timed calls per contender

Cases (issue 15, "Performance"): the GEMV of a decode step, M = 1, K = N = 4096, a decode step
of 8 tokens (M = 8: still a GEMV for rlx, `rlx-tile-gemv`), and the GEMM of a prefill, M = 128,
same weight shape.  Contenders, on the same x and the same weight:

- numpy f32: `np.matmul(x, W.T, out=)` (OpenBLAS; W.T made contiguous once, outside the timing);
- rlx f32: `rlx.matmul` compiled by `rlx_mlir.compile` (the packed, tiled f32 kernels);
- rlx q4_k, rlx q8_0: `rlx.dequant_matmul` on `quant.quantize(W, scheme)`'s bytes;
- rlx q4_k q8: the same Q4_K bytes with `activations = "q8"` (opt-in: x rounded to 8 bits per
  block of 256, integer dot products, as llama.cpp's Q4_K x q8_K; checked against that rounding);
- rlx int8/32, int8_asym/32, int4/32, nvfp4: `rlx.dequant_matmul` on the codes and side tensors
  `quant.quantize(W, scheme)` returns (weight MB counts the scales and zero points too).

Before any timing every rlx result is checked against numpy: the f32 rows against `x @ W.T`, the
quantised rows against `x @ quant.dequantize(w_q).T` in float64, within the f32 rounding bound
`|x| @ |W|.T * K * eps`.  Timing: one warm-up call each, then `--repeat` rounds; a round calls
every contender once, in turn, with a short pause between contenders (so one library's spinning
worker threads do not eat into the next one's time) followed by a 64 MB read (so no contender
finds its weight in the cache, as in a model, whose layers each read their weights once per
token, and the core is running when the timed call starts) and one call of a tiny compiled
function (which brings the interpreter's and the runtime's call path, but no contender's data,
back into the cache: `pause`), so slow drifts of a shared machine hit all contenders alike.
Best and median per contender; the ratios are the rlx f32 (and numpy) best time over the
contender's best time: above 1 means faster than f32.  The "1 thread" rows run in
a child process started with OPENBLAS_NUM_THREADS=1 and compile rlx with threads=1; the "all"
rows use every core for both.

Memory bandwidth: each child first times a large copy (from one numpy array of `COPY_BYTES` into
another, an eighth at a time, split across the child's threads; the best eighth of 20 passes) and
reports it as STREAM does, bytes read plus bytes written per second.  A GEMV reads its weight once and little else, so its "weight
GB/s" (weight bytes / time) over that copy bandwidth says how close it runs to the memory
system's streaming speed ("of copy" column; the weight's bytes only, x and y are small).

llama.cpp multiplies inside whole models only: benchmarks/gguf_decode.py compares the two on one
GGUF file (decode tokens/s, time to first token, logits).
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

K = N = 4096
ROWS = (1, 8, 128)  # M: the GEMV of a decode step (1 token, 8 tokens), the GEMM of a prefill
COPY_BYTES = 64 << 20  # the bandwidth probe: the f32 weight's size, twice the last-level cache (32 MiB here)
SCHEMES = ("q4_k", "q8_0")
# Codes [K, N] with side tensors (scale [K/B, N], zp; nvfp4: E4M3 scales and a global scale).
AFFINE_SCHEMES = ("int8/32", "int8_asym/32", "int4/32", "nvfp4")


_EVICT = []
_WARM = []


def pause() -> None:
    """Between two timed calls: let the previous contender's worker threads go to sleep, then read
    COPY_BYTES (twice the last-level cache) so that the next call finds no weight in the cache and its
    core awake (right after a sleep, a guest's vCPU takes 0.2-0.4 ms to get back up to speed, which
    a sub-millisecond GEMV would be charged for), then make one call of a tiny compiled function
    (`_warm_call`): the read evicts the interpreter's and the runtime's own code and data too, and
    the argument handling of a call that finds them cold takes 0.1-0.2 ms instead of 15 us (a
    64-row Q4_K GEMV, 1 thread: 15 us warm, 85-115 us after the read, 150-240 us after the sleep
    and the read), a time that is not the GEMV's and that a model pays once per step, not per
    matmul.  The tiny call reads none of the contenders' arrays or code."""
    import numpy as np

    time.sleep(0.05)
    if not _EVICT:
        _EVICT.append(np.ones(COPY_BYTES // 4, np.float32))
    float(_EVICT[0].sum())
    _warm_call()


def _warm_call() -> None:
    """One call of a 1 x 64 x 64 f32 matmul compiled by rlx (compiled on first use)."""
    import numpy as np

    if not _WARM:
        import rlx_mlir

        text = ('func.func @f(%x: tensor<1x64xf32>, %w: tensor<64x64xf32>) -> tensor<1x64xf32> {\n'
                '  %y = "rlx.matmul"(%x, %w) : (tensor<1x64xf32>, tensor<64x64xf32>) -> tensor<1x64xf32>\n'
                '  return %y : tensor<1x64xf32>\n}\n')
        exe = rlx_mlir.compile(text, "f", threads=1)
        _WARM.extend([exe, np.ones((1, 64), np.float32), np.ones((64, 64), np.float32), np.empty((1, 64), np.float32)])
    exe, x, w, out = _WARM
    exe(x, w, out=out)


def _module(m: int, scheme: str, row_bytes: int = 0, activations: str = "") -> str:
    """`@f(x, w)`: `rlx.matmul` with w f32 [K, N], or `rlx.dequant_matmul` with w ui8 [N, row_bytes]."""
    x, y = f"tensor<{m}x{K}xf32>", f"tensor<{m}x{N}xf32>"
    if scheme == "f32":
        w = f"tensor<{K}x{N}xf32>"
        op = f'"rlx.matmul"(%x, %w) : ({x}, {w}) -> {y}'
    else:
        w = f"tensor<{N}x{row_bytes}xui8>"
        extra = f', activations = "{activations}"' if activations else ""
        op = f'"rlx.dequant_matmul"(%x, %w) {{scheme = "{scheme}"{extra}}} : ({x}, {w}) -> {y}'
    return f"func.func @f(%x: {x}, %w: {w}) -> {y} {{\n  %y = {op}\n  return %y : {y}\n}}\n"


def _affine_module(m: int, scheme: str, arrays, global_scale) -> str:
    """`@f(x, w, side...)`: `rlx.dequant_matmul` with the codes and side tensors of a side-tensor scheme."""
    x, y = f"tensor<{m}x{K}xf32>", f"tensor<{m}x{N}xf32>"
    names = ["w", *(f"s{i}" for i in range(len(arrays) - 1))]
    element = {"int8": "i8", "uint8": "ui8", "float32": "f32"}
    types = ["tensor<" + "x".join(map(str, a.shape)) + f"x{element[a.dtype.name]}>" for a in arrays]
    params = ", ".join(f"%{n}: {t}" for n, t in zip(names, types))
    attrs = f'scheme = "{scheme}"' + (f", global_scale = {global_scale!r} : f32" if global_scale is not None else "")
    op = f'"rlx.dequant_matmul"(%x, {", ".join("%" + n for n in names)}) {{{attrs}}} : ({x}, {", ".join(types)}) -> {y}'
    return f"func.func @f(%x: {x}, {params}) -> {y} {{\n  %y = {op}\n  return %y : {y}\n}}\n"


def _affine_arrays(stored, scheme: str):
    """(the stored arrays the op takes, C-contiguous as a model stores them, the nvfp4 global
    scale or None)."""
    import numpy as np

    if scheme == "nvfp4":
        arrays, global_scale = [stored.codes, stored.scales], float(stored.global_scale[0])
    elif scheme.startswith("int8/"):
        arrays, global_scale = [stored.w_q, stored.scale], None  # symmetric: no zero point
    else:
        arrays, global_scale = list(stored), None
    return [np.ascontiguousarray(a) for a in arrays], global_scale


def _check(name: str, out, x, w_float) -> None:
    """`out` against `x @ w_float.T` in float64, within the f32 rounding bound."""
    import numpy as np

    x64, w64 = x.astype(np.float64), w_float.astype(np.float64)
    expected = x64 @ w64.T
    bound = (np.abs(x64) @ np.abs(w64).T) * (K * np.finfo(np.float32).eps) + 1e-30
    error = np.abs(out - expected)
    if not (error < bound).all():
        worst = np.unravel_index(np.argmax(error / bound), error.shape)
        raise SystemExit(f"{name} is wrong: at {worst} {out[worst]} vs {expected[worst]} (bound {bound[worst]:.3g})")


def _q8_x(x):
    """x as `activations = "q8"` rounds it: per row and block of 256, `roundeven(x * 127 / amax)`
    standing for `q * amax / 127` (float64)."""
    import numpy as np

    blocks = x.reshape(x.shape[0], -1, 256)
    amax = np.abs(blocks).max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        inverse = np.where(amax > 0, np.float32(127) / amax, np.float32(0)).astype(np.float32)
    q = np.clip(np.rint(blocks * inverse), -127, 127)
    return (q * (amax.astype(np.float64) / 127)).reshape(x.shape)


def _check_q8(name: str, out, x, w_float, w_mins) -> None:
    """`out` against the q8-activation product: the rounded x times the codes' part of the weight
    (`w_float - w_mins`), the exact x times the mins' part `w_mins`, within the f32 rounding bound."""
    import numpy as np

    x64, w64, mins = x.astype(np.float64), w_float.astype(np.float64), w_mins.astype(np.float64)
    expected = _q8_x(x) @ (w64 - mins).T + x64 @ mins.T
    bound = (np.abs(x64) @ np.abs(w64).T) * (K * np.finfo(np.float32).eps) + 1e-30
    error = np.abs(out - expected)
    if not (error < bound).all():
        worst = np.unravel_index(np.argmax(error / bound), error.shape)
        raise SystemExit(f"{name} is wrong: at {worst} {out[worst]} vs {expected[worst]} (bound {bound[worst]:.3g})")


def copy_bandwidth(threads: int) -> float:
    """Bytes read + written per second copying between two COPY_BYTES arrays: the best time of one
    eighth (8 MiB) among 20 passes over all eighths, each eighth split across `threads` threads.
    The arrays (twice the last-level cache) stream from memory; one eighth takes about a
    millisecond, like a GEMV, so on a loaded machine some copies run without being preempted."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    source = np.ones(COPY_BYTES // 4, np.float32)
    target = np.zeros_like(source)
    piece = len(source) // 8
    best = float("inf")
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(20):
            for start in range(0, len(source), piece):
                parts = [slice(start + i * piece // threads, start + (i + 1) * piece // threads) for i in range(threads)]
                begin = time.perf_counter()
                list(pool.map(lambda part: np.copyto(target[part], source[part]), parts))
                best = min(best, time.perf_counter() - begin)
    return 2 * 4 * piece / best


def bench(threads: int, repeat: int) -> None:
    import numpy as np

    emit(case="copy", m=0, threads=threads, contender="copy", bandwidth=copy_bandwidth(threads))

    import rlx_mlir
    from rlx_mlir import quant

    rng = np.random.default_rng(0)
    w = rng.standard_normal((N, K)).astype(np.float32)
    w_t = np.ascontiguousarray(w.T)  # [K, N]: numpy's and rlx.matmul's B
    packed = {scheme: quant.quantize(w, scheme) for scheme in (*SCHEMES, *AFFINE_SCHEMES)}
    decoded = {scheme: quant.dequantize(packed[scheme], scheme, (N, K)) for scheme in (*SCHEMES, *AFFINE_SCHEMES)}
    no_codes = packed["q4_k"].reshape(N, -1, 144).copy()
    no_codes[:, :, 16:] = 0  # every nibble 0: each weight's -dmin * m, the mins' part
    q4_k_mins = quant.dequantize(no_codes.reshape(N, -1), "q4_k", (N, K))
    for m in ROWS:
        x = rng.standard_normal((m, K)).astype(np.float32)
        contenders = {}  # name -> (call, weight bytes)
        out = {name: np.empty((m, N), np.float32) for name in ("numpy f32", "rlx f32", *SCHEMES, *AFFINE_SCHEMES)}
        contenders["numpy f32"] = (lambda x=x, o=out["numpy f32"]: np.matmul(x, w_t, out=o), w_t.nbytes)
        exe = rlx_mlir.compile(_module(m, "f32"), "f", threads=threads)
        contenders["rlx f32"] = (lambda x=x, exe=exe, o=out["rlx f32"]: exe(x, w_t, out=o), w_t.nbytes)
        for scheme in SCHEMES:
            w_q = packed[scheme]
            exe = rlx_mlir.compile(_module(m, scheme, w_q.shape[1]), "f", threads=threads)
            contenders[f"rlx {scheme}"] = (lambda x=x, exe=exe, w_q=w_q, o=out[scheme]: exe(x, w_q, out=o), w_q.nbytes)
        w_q = packed["q4_k"]
        exe = rlx_mlir.compile(_module(m, "q4_k", w_q.shape[1], "q8"), "f", threads=threads)
        out["q4_k q8"] = np.empty((m, N), np.float32)
        contenders["rlx q4_k q8"] = (lambda x=x, exe=exe, w_q=w_q, o=out["q4_k q8"]: exe(x, w_q, out=o), w_q.nbytes)
        for scheme in AFFINE_SCHEMES:
            arrays, global_scale = _affine_arrays(packed[scheme], scheme)
            exe = rlx_mlir.compile(_affine_module(m, scheme, arrays, global_scale), "f", threads=threads)
            contenders[f"rlx {scheme}"] = (lambda x=x, exe=exe, a=arrays, o=out[scheme]: exe(x, *a, out=o),
                                           sum(a.nbytes for a in arrays))
        # Numerics first: every contender once, then each against its own reference.
        for call, _ in contenders.values():
            call()
        _check("numpy f32", out["numpy f32"], x, w)
        _check("rlx f32", out["rlx f32"], x, w)
        for scheme in (*SCHEMES, *AFFINE_SCHEMES):
            _check(f"rlx {scheme}", out[scheme], x, decoded[scheme])
        _check_q8("rlx q4_k q8", out["q4_k q8"], x, decoded["q4_k"], q4_k_mins)
        times = {name: [] for name in contenders}
        for _ in range(repeat):  # interleaved rounds
            for name, (call, _) in contenders.items():
                pause()
                start = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - start)
        for name, (_, weight_bytes) in contenders.items():
            ordered = sorted(times[name])
            emit(case=f"{'GEMV' if m <= 8 else 'GEMM'} M={m}, K=N={K}", m=m, threads=threads, contender=name,
                 best=ordered[0], median=ordered[len(ordered) // 2], weight_bytes=weight_bytes)


# --- the parent: one child per thread setting, one table ---------------------------------------


def run_child(threads: int, args) -> list[dict]:
    return child_rows.run_child(__file__, threads, ["--repeat", str(args.repeat)])


def table(rows: list[dict]) -> str:
    lines = [
        "| case | threads | contender | weight MB | ms (best / median) | weight GB/s (best) | of copy "
        "| speed-up vs rlx f32 (best) | vs numpy f32 (best) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    copies = {r["threads"]: r["bandwidth"] for r in rows if r["contender"] == "copy"}
    reference = {(r["m"], r["threads"], r["contender"]): r["best"] for r in rows if r["contender"] != "copy"}
    for row in rows:
        threads = "1" if row["threads"] == 1 else f"all ({row['threads']})"
        if row["contender"] == "copy":
            lines.append(f"| streaming copy, {COPY_BYTES >> 20} MiB (read + written) | {threads} | numpy copyto "
                         f"| | | {row['bandwidth'] / 1e9:.1f} | 100% | | |")
            continue
        key = (row["m"], row["threads"])
        rlx_f32, numpy_f32 = reference[(*key, "rlx f32")], reference[(*key, "numpy f32")]
        rate = row["weight_bytes"] / row["best"]
        lines.append(
            f"| {row['case']} | {threads} | {row['contender']} | {row['weight_bytes'] / 1e6:.1f} "
            f"| {row['best'] * 1e3:.2f} / {row['median'] * 1e3:.2f} | {rate / 1e9:.1f} | {rate / copies[row['threads']]:.0%} "
            f"| {rlx_f32 / row['best']:.2f}x | {numpy_f32 / row['best']:.2f}x |"
        )
    return "\n".join(lines)


def llama_cpp_line() -> str:
    # llama.cpp runs whole GGUF models, not one matmul: the side-by-side is model-level.
    return "llama.cpp: compared model to model, on one GGUF file, by benchmarks/gguf_decode.py"


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
    order = ["copy", "numpy f32", "rlx f32", *(f"rlx {s}" for s in SCHEMES), "rlx q4_k q8", *(f"rlx {s}" for s in AFFINE_SCHEMES)]
    rows.sort(key=lambda r: (r["m"], r["threads"], order.index(r["contender"])))
    import numpy

    print(f"# rlx-mlir quantised-weight benchmark: {platform.processor() or platform.machine()}, {cores} cores, "
          f"numpy {numpy.__version__}, Python {platform.python_version()}, {args.repeat} interleaved rounds, "
          f"load average {os.getloadavg()[0]:.1f} at the end")
    print(table(rows))
    print(llama_cpp_line())


if __name__ == "__main__":
    main()
