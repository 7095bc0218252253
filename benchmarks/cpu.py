"""CPU benchmark: rlx-mlir against numpy (and PyTorch eager, when installed), one table.

    python benchmarks/cpu.py            # everything, about 3 minutes on 2 cores
    python benchmarks/cpu.py --quick    # fewer repetitions, smaller model section

Every row is measured in the same run: numpy first, then rlx (then torch), with a
short pause between them so that one library's spinning worker threads do not eat
into the other's time. Times are the best and the median of `--repeat` calls after
one warm-up call; rlx writes into a caller-provided output (`out=`), as the numpy
baselines do. The "1 thread" rows run in a child process started with
OPENBLAS_NUM_THREADS=1 (numpy reads it at import) and compile rlx with threads=1;
the "all" rows use every core for both.

Sections (issue 6): f32 matmul; numpy's and rlx's 1024^3 matmul called alternately,
no pause between them (issue 19, item 7: idle BLAS workers beside rlx's OpenMP team);
bias + GELU(tanh) against numpy op by op, in place;
softmax and RMSNorm rows; the 12-layer Llama-style model (hidden 512, 8 heads,
SwiGLU 1408, vocab 1000) prefill at sequence 128 against a plain numpy forward,
PyTorch eager and ONNX Runtime (the same forward built as an ONNX graph with the
same weights, its logits checked), weights passed per call and bound once
(`exe.bind_params`, panels packed at bind time; the two measured interleaved); compile
time of that model, of a compile-cache hit and of binding.
The peers are optional (`pip install -e .[bench]`: torch, onnxruntime, onnx); a missing
one is a line under the table.

FMA peak (section `peak`, issue 19: the model prefill at >= 85% of it): measured, not a datasheet
number.  A function of 16 independent `vector.fma` chains on `vector<16xf32>` values that never
leave the registers (no loads or stores in the loop; 16 chains cover the FMA latency times the
FMA ports, so the ports never wait), JIT-compiled by MLIR's ExecutionEngine for this host's CPU
features (the engine rlx's own code is compiled with) and called on 1 or N threads at once: its
FLOPs over the best wall time is the peak; a GEMM's best GFLOP/s would only be a lower bound of it
(and would make every fraction look better).  The process CPU time gives a second peak, per CPU
second, which load does not lower.  Under the table, the model prefills' FLOPs (from the config:
projections, SwiGLU, causal attention's query-key pairs, LM head) over their best times as a
fraction of the peak: wall against the wall peak, and on one thread CPU time against the CPU-time
peak (the figure to trust on a loaded machine), with ONNX Runtime's wall fraction beside it.

Long prefills (`--long-prefill`, or `long` in `--sections`; not in the default set): the model at
512 and 2048 tokens, weights bound, against PyTorch eager, interleaved, wall and CPU time per
token and its growth from 512 to 2048 (issue 19: rlx's grows no faster than torch eager's), the
compile and bind time of each length in the same table; and one layer's causal attention alone
(`rlx.attention`, the part whose work grows with the square of the length) against torch's
`scaled_dot_product_attention`, interleaved, its time per token and growth in a table of its own.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time

import child_rows  # benchmarks/child_rows.py: the script's directory is on sys.path
from child_rows import emit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MATMULS = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (1000, 1000, 1000), (128, 768, 3072)]
ROWS = 4096


def timed(function, repeat: int) -> tuple[float, float]:
    """(best, median) seconds of `repeat` calls after one warm-up call."""
    function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[0], times[len(times) // 2]


def pause() -> None:
    time.sleep(0.3)  # let the other library's worker threads go to sleep


# --- sections, run inside a child process with a fixed thread setting -------------------------


def bench_matmul(threads: int, repeat: int) -> None:
    import numpy as np

    import rlx_mlir

    for m, k, n in MATMULS:
        rng = np.random.default_rng(m + k + n)
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        out = np.empty((m, n), np.float32)
        text = (
            f"func.func @mm(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{\n"
            f'  %c = "rlx.matmul"(%a, %b) : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>\n'
            f"  return %c : tensor<{m}x{n}xf32>\n}}"
        )
        exe = rlx_mlir.compile(text, "mm", threads=threads)
        exe(a, b, out=out)
        assert np.allclose(out, a @ b, rtol=1e-3, atol=1e-3 * math.sqrt(k)), "rlx matmul is wrong"
        numpy_time = timed(lambda a=a, b=b, out=out: np.matmul(a, b, out=out), repeat)
        pause()
        rlx_time = timed(lambda exe=exe, a=a, b=b, out=out: exe(a, b, out=out), repeat)
        pause()
        flops = 2.0 * m * n * k
        emit(section="matmul", case=f"{m}x{k}x{n}", threads=threads, unit="GFLOP/s",
             numpy=numpy_time, rlx=rlx_time, work=flops / 1e9)


FMA_ACCUMULATORS = 16  # independent vector.fma chains: more than FMA latency x ports, so the ports never wait
FMA_LANES = 16  # f32 lanes of one AVX-512 vector
FMA_ITERATIONS = 250_000  # per call: 0.13 GFLOP per thread, about 0.5 ms on one core: short enough that
FMA_CALLS = 60  # some of these calls run unpreempted on a loaded machine (the best wall time is the peak)


def fma_probe_module() -> str:
    """A function `fma_loop(n: i64, m: f32, c: f32) -> f32`: n iterations of FMA_ACCUMULATORS
    independent `acc = acc * m + c` chains on vector<FMA_LANES x f32> values held in registers (no
    memory traffic), the sum of the accumulators returned so that nothing is dead code.

    m and c are arguments, not constants: with constants (m = 0.999, c = 0.001) the chain that
    starts at 1.0 is a fixed point (fma(1, 0.999, 0.001) rounds to 1.0 in f32), LLVM folded it
    away, and the loop ran 15 FMAs per iteration while the FLOPs counted 16, a peak 16/15 too high
    (290 instead of 272 GFLOP/s on one core)."""
    vt = f"vector<{FMA_LANES}xf32>"
    count = FMA_ACCUMULATORS
    types = ", ".join([vt] * count)
    lines = [
        "func.func @fma_loop(%n: i64, %ms: f32, %cs: f32) -> f32 {",
        f"  %m = vector.broadcast %ms : f32 to {vt}",
        f"  %c = vector.broadcast %cs : f32 to {vt}",
        *(f"  %init{i} = arith.constant dense<{1.0 + i / 1024}> : {vt}" for i in range(count)),
        "  %zero = arith.constant 0 : i64",
        "  %one = arith.constant 1 : i64",
        f"  %acc:{count} = scf.for %i = %zero to %n step %one iter_args("
        + ", ".join(f"%a{i} = %init{i}" for i in range(count)) + f") -> ({types}) : i64 {{",
        *(f"    %f{i} = vector.fma %a{i}, %m, %c : {vt}" for i in range(count)),
        "    scf.yield " + ", ".join(f"%f{i}" for i in range(count)) + f" : {types}",
        "  }",
        f"  %s0 = arith.addf %acc#0, %acc#1 : {vt}",
        *(f"  %s{i} = arith.addf %s{i - 1}, %acc#{i + 1} : {vt}" for i in range(1, count - 1)),
        f"  %total = vector.reduction <add>, %s{count - 2} : {vt} into f32",
        "  return %total : f32",
        "}",
    ]
    return "\n".join(lines)


def fma_peak(threads: int, repeat: int) -> dict:
    """The FMA peak measured here: `fma_probe_module` JIT-compiled by MLIR's ExecutionEngine (the
    engine rlx compiles with, for this host's CPU features), called on `threads` Python threads at
    once (ctypes releases the GIL): FLOPs (2 per lane per FMA) over the best wall time of `repeat`
    calls, and over the best process CPU time (the figure that load does not lower, on one thread)."""
    import ctypes
    from concurrent.futures import ThreadPoolExecutor

    from mlir import ir, passmanager
    from mlir.execution_engine import ExecutionEngine

    with ir.Context():
        module = ir.Module.parse(fma_probe_module())
        passmanager.PassManager.parse(
            "builtin.module(convert-scf-to-cf,convert-vector-to-llvm,convert-arith-to-llvm,convert-func-to-llvm,"
            "convert-cf-to-llvm,reconcile-unrealized-casts)").run(module.operation)
        engine = ExecutionEngine(module, opt_level=3)
        # the packed entry point: void(void **arguments), one pointer per argument and result
        function = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p))(engine.raw_lookup("fma_loop"))

    def call(_=None):
        count, result = ctypes.c_int64(FMA_ITERATIONS), ctypes.c_float()
        m, c = ctypes.c_float(0.999), ctypes.c_float(0.001)
        function((ctypes.c_void_p * 4)(*map(ctypes.addressof, (count, m, c, result))))
        return result.value

    call()
    walls, cpus = [], []
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeat):
            start, cpu = time.perf_counter(), time.process_time()
            if threads == 1:
                call()
            else:
                list(pool.map(call, range(threads)))
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
    walls.sort()
    flops = 2.0 * FMA_ITERATIONS * FMA_ACCUMULATORS * FMA_LANES * threads
    return dict(wall=(walls[0], walls[len(walls) // 2]), gflop=flops / 1e9, cpu_gflops=flops / min(cpus) / 1e9)


def bench_peak(threads: int, repeat: int) -> None:
    peak = fma_peak(threads, FMA_CALLS)
    emit(section="peak", case=f"FMA peak: {FMA_ACCUMULATORS} register-resident vector.fma<{FMA_LANES}xf32> chains",
         threads=threads, unit="GFLOP/s", rlx=peak["wall"], work=peak["gflop"], cpu_gflops=peak["cpu_gflops"])


INTERLEAVED = 1024  # the matmul of the interleaved row: numpy's and rlx's alternately, no pause


def bench_interleaved(threads: int, repeat: int) -> None:
    """numpy's BLAS and rlx's GEMM called alternately (issue 19, item 7): neither library's idle
    worker threads get a pause to go to sleep before the other's call.  Compare with the matmul
    row of the same size, measured with pauses."""
    import numpy as np

    import rlx_mlir
    from rlx_mlir.runtime import blas_threads

    n = INTERLEAVED
    rng = np.random.default_rng(7)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    numpy_out, rlx_out = np.empty((n, n), np.float32), np.empty((n, n), np.float32)
    text = (
        f"func.func @mm(%a: tensor<{n}x{n}xf32>, %b: tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32> {{\n"
        f'  %c = "rlx.matmul"(%a, %b) : (tensor<{n}x{n}xf32>, tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32>\n'
        f"  return %c : tensor<{n}x{n}xf32>\n}}"
    )
    exe = rlx_mlir.compile(text, "mm", threads=threads)
    exe(a, b, out=rlx_out)
    np.matmul(a, b, out=numpy_out)
    assert np.allclose(rlx_out, numpy_out, rtol=1e-3, atol=1e-3 * math.sqrt(n)), "rlx matmul is wrong"
    numpy_times, rlx_times = [], []
    for _ in range(2 * repeat):
        for function, times in ((lambda: np.matmul(a, b, out=numpy_out), numpy_times),
                                (lambda: exe(a, b, out=rlx_out), rlx_times)):
            start = time.perf_counter()
            function()
            times.append(time.perf_counter() - start)
    numpy_times.sort()
    rlx_times.sort()
    shared = "OpenBLAS spin shortened" if blas_threads.share_cores_with_openblas() else "OpenBLAS left as is"
    emit(section="matmul", case=f"{n}x{n}x{n} numpy, rlx alternately ({shared})", threads=threads,
         unit="GFLOP/s", numpy=(numpy_times[0], numpy_times[len(numpy_times) // 2]),
         rlx=(rlx_times[0], rlx_times[len(rlx_times) // 2]), work=2.0 * n**3 / 1e9)


def bench_bias_gelu(threads: int, repeat: int) -> None:
    import numpy as np

    import rlx_mlir

    t = f"tensor<{ROWS}x{ROWS}xf32>"
    text = (
        f"func.func @f(%x: {t}, %b: tensor<{ROWS}xf32>) -> {t} {{\n"
        f'  %y = "rlx.add"(%x, %b) : ({t}, tensor<{ROWS}xf32>) -> {t}\n'
        f'  %z = "rlx.gelu_approx"(%y) : ({t}) -> {t}\n'
        f"  return %z : {t}\n}}"
    )
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS, ROWS)).astype(np.float32)
    bias = rng.standard_normal(ROWS).astype(np.float32)
    out, tmp = np.empty_like(x), np.empty_like(x)
    k = np.float32(math.sqrt(2.0 / math.pi))

    def numpy_gelu():  # op by op, in place: the fastest plain-numpy form
        np.add(x, bias, out=out)
        np.multiply(out, out, out=tmp)
        np.multiply(tmp, out, out=tmp)
        np.multiply(tmp, np.float32(0.044715), out=tmp)
        np.add(tmp, out, out=tmp)
        np.multiply(tmp, k, out=tmp)
        np.tanh(tmp, out=tmp)
        np.add(tmp, np.float32(1.0), out=tmp)
        np.multiply(tmp, out, out=tmp)
        np.multiply(tmp, np.float32(0.5), out=out)

    exe = rlx_mlir.compile(text, "f", threads=threads)
    numpy_time = timed(numpy_gelu, repeat)
    expected = out.copy()
    pause()
    rlx_time = timed(lambda: exe(x, bias, out=out), repeat)
    assert np.allclose(out, expected, rtol=1e-5, atol=1e-5), "rlx bias+gelu is wrong"
    pause()
    emit(section="bias+gelu", case=f"{ROWS}x{ROWS}", threads=threads, unit="GB/s",
         numpy=numpy_time, rlx=rlx_time, work=2 * x.nbytes / 1e9)


def bench_rows(threads: int, repeat: int) -> None:
    import numpy as np

    import rlx_mlir

    rng = np.random.default_rng(1)
    x = rng.standard_normal((ROWS, ROWS)).astype(np.float32)
    gain = rng.standard_normal(ROWS).astype(np.float32)
    shift = rng.standard_normal(ROWS).astype(np.float32)
    out = np.empty_like(x)
    row = np.empty((ROWS, 1), np.float32)

    def numpy_softmax():
        np.max(x, axis=-1, keepdims=True, out=row)
        np.subtract(x, row, out=out)
        np.exp(out, out=out)
        np.sum(out, axis=-1, keepdims=True, out=row)
        np.divide(out, row, out=out)

    def numpy_rms_norm():
        np.einsum("ij,ij->i", x, x, out=row[:, 0])
        np.multiply(row, np.float32(1.0 / ROWS), out=row)
        np.add(row, np.float32(1e-5), out=row)
        np.sqrt(row, out=row)
        np.divide(x, row, out=out)
        np.multiply(out, gain, out=out)
        np.add(out, shift, out=out)

    cases = {"softmax": (numpy_softmax, (x,)), "rms_norm": (numpy_rms_norm, (x, gain, shift))}
    for name, (numpy_version, args) in cases.items():
        exe = rlx_mlir.compile(_row_op_module(name), "f", threads=threads)
        numpy_time = timed(numpy_version, repeat)
        expected = out.copy()
        pause()
        rlx_time = timed(lambda exe=exe, args=args, out=out: exe(*args, out=out), repeat)
        assert np.allclose(out, expected, rtol=1e-4, atol=1e-5), f"rlx {name} is wrong"
        pause()
        emit(section=name, case=f"{ROWS}x{ROWS} rows", threads=threads, unit="GB/s",
             numpy=numpy_time, rlx=rlx_time, work=2 * x.nbytes / 1e9)


def _row_op_module(name: str) -> str:
    """`rlx.softmax` over rows, or `rlx.rms_norm` (gain and shift), on ROWS x ROWS f32."""
    from rlx_mlir import GraphModule
    from rlx_mlir.dialects import rlx

    g = GraphModule.mir("f")
    x = g.input("x", (ROWS, ROWS))
    if name == "softmax":
        g.set_outputs(g.op(rlx.SoftmaxOp, x, axis=-1))
    else:
        g.set_outputs(g.op(rlx.RmsNormOp, x, g.input("gamma", (ROWS,)), g.input("beta", (ROWS,)), eps=1e-5))
    return str(g)


def numpy_llama(tokens, w, c):
    """The Llama-style forward in plain float32 numpy (batched heads, no Python loop per head)."""
    import numpy as np

    def rms(x, gain):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(c.eps)) * gain

    seq = tokens.shape[1]
    half = c.head_dim // 2
    inverse = c.rope_theta ** (-np.arange(0, c.head_dim, 2, dtype=np.float64) / c.head_dim)
    angles = np.outer(np.arange(seq), inverse)
    cos, sin = np.cos(angles).astype(np.float32)[None], np.sin(angles).astype(np.float32)[None]
    mask = np.triu(np.full((seq, seq), -np.inf, np.float32), 1)
    scale = np.float32(1.0 / math.sqrt(c.head_dim))

    def rope(t):  # [heads, S, hd]
        first, second = t[..., :half], t[..., half:]
        return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)

    out = []
    for row in tokens:
        x = w["embed"][row]
        for i in range(c.layers):
            p = f"layers.{i}."
            n1 = rms(x, w[p + "ln1"])
            q = rope((n1 @ w[p + "q"]).reshape(seq, c.heads, c.head_dim).transpose(1, 0, 2))
            k = rope((n1 @ w[p + "k"]).reshape(seq, c.kv_heads, c.head_dim).transpose(1, 0, 2))
            v = (n1 @ w[p + "v"]).reshape(seq, c.kv_heads, c.head_dim).transpose(1, 0, 2)
            group = c.heads // c.kv_heads
            k, v = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)
            scores = q @ k.transpose(0, 2, 1) * scale + mask
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            attn = (scores @ v).transpose(1, 0, 2).reshape(seq, c.heads * c.head_dim)
            h = x + attn @ w[p + "o"]
            n2 = rms(h, w[p + "ln2"])
            gate = n2 @ w[p + "gate"]
            x = h + (gate / (1 + np.exp(-gate)) * (n2 @ w[p + "up"])) @ w[p + "down"]
        out.append(rms(x, w["norm"]) @ w["lm_head"])
    return np.stack(out)


def torch_llama(tokens, w, c):
    """The same forward in PyTorch eager (float32, no autograd), or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    tw = {name: torch.from_numpy(value) for name, value in w.items()}
    seq = tokens.shape[1]
    half = c.head_dim // 2
    inverse = c.rope_theta ** (-torch.arange(0, c.head_dim, 2, dtype=torch.float64) / c.head_dim)
    angles = torch.outer(torch.arange(seq, dtype=torch.float64), inverse)
    cos, sin = angles.cos().float()[None], angles.sin().float()[None]
    ids = torch.from_numpy(tokens)

    def rms(x, gain):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + c.eps) * gain

    def rope(t):
        first, second = t[..., :half], t[..., half:]
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)

    def forward():
        with torch.inference_mode():
            x = tw["embed"][ids[0]]
            for i in range(c.layers):
                p = f"layers.{i}."
                n1 = rms(x, tw[p + "ln1"])
                q = rope((n1 @ tw[p + "q"]).view(seq, c.heads, c.head_dim).transpose(0, 1))
                k = rope((n1 @ tw[p + "k"]).view(seq, c.kv_heads, c.head_dim).transpose(0, 1))
                v = (n1 @ tw[p + "v"]).view(seq, c.kv_heads, c.head_dim).transpose(0, 1)
                attn = torch.nn.functional.scaled_dot_product_attention(
                    q[None], k[None], v[None], is_causal=True, enable_gqa=c.heads != c.kv_heads
                )[0]
                h = x + attn.transpose(0, 1).reshape(seq, -1) @ tw[p + "o"]
                n2 = rms(h, tw[p + "ln2"])
                x = h + (torch.nn.functional.silu(n2 @ tw[p + "gate"]) * (n2 @ tw[p + "up"])) @ tw[p + "down"]
            return (rms(x, tw["norm"]) @ tw["lm_head"])[None]

    return forward


def interleaved(functions, repeat: int) -> list[tuple[float, float]]:
    """(best, median) seconds of each function, called in turn `repeat` times after one warm-up round."""
    return interleaved_with_cpu(functions, repeat)[0]


def interleaved_with_cpu(functions, repeat: int) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """`interleaved`'s (best, median) wall seconds of each function, and the same of its process CPU
    seconds (every thread's: on one thread, the time it ran, which load does not stretch)."""
    walls, cpus = [[] for _ in functions], [[] for _ in functions]
    for round_ in range(repeat + 1):
        for function, wall, cpu in zip(functions, walls, cpus):
            start, cpu_start = time.perf_counter(), time.process_time()
            function()
            if round_:
                wall.append(time.perf_counter() - start)
                cpu.append(time.process_time() - cpu_start)

    def best_median(times):
        return [(sorted(t)[0], sorted(t)[len(t) // 2]) for t in times]

    return best_median(walls), best_median(cpus)


def prefill_flops(c, seq: int) -> float:
    """Multiply-adds x 2 of the model's prefill of `seq` tokens, from the config: the projections
    (q, k, v at kv_heads, o), the SwiGLU's three, causal attention (Q K^T and P V over the
    seq (seq + 1) / 2 query-key pairs a causal mask keeps) and the LM head; norms, RoPE and
    softmax (a few FLOPs per element) left out."""
    q_width, kv_width = c.heads * c.head_dim, c.kv_heads * c.head_dim
    projections = 2 * seq * c.hidden * (2 * q_width + 2 * kv_width) + 2 * seq * 3 * c.hidden * c.ffn
    attention = 2 * 2 * c.heads * c.head_dim * seq * (seq + 1) / 2
    return c.layers * (projections + attention) + 2 * seq * c.hidden * c.vocab


def onnx_llama(w, c, seq: int):
    """The same forward as an ONNX graph (opset 18, standard ops only, the weights as initializers),
    built with the `onnx` package: the model ONNX Runtime runs in the model row."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    if c.kv_heads != c.heads:
        raise ValueError("onnx_llama: grouped-query attention is not built here (kv_heads != heads)")
    nodes, inits = [], []
    counter = iter(range(1 << 30))

    def const(value, name=None):
        name = name or f"c{next(counter)}"
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(kind, *inputs, out=None, **attributes):
        out = out or f"t{next(counter)}"
        nodes.append(helper.make_node(kind, list(inputs), [out], **attributes))
        return out

    for name, value in w.items():
        const(value, name)
    half = c.head_dim // 2
    inverse = c.rope_theta ** (-np.arange(0, c.head_dim, 2, dtype=np.float64) / c.head_dim)
    angles = np.outer(np.arange(seq), inverse)
    cos, sin = const(np.cos(angles).astype(np.float32)[None]), const(np.sin(angles).astype(np.float32)[None])
    mask = const(np.triu(np.full((seq, seq), -np.inf, np.float32), 1))
    scale = const(np.float32(1.0 / math.sqrt(c.head_dim)))
    eps, one = const(np.float32(c.eps)), const(np.float32(1.0))
    axes_last = const(np.array([-1], np.int64))
    heads_shape = const(np.array([seq, c.heads, c.head_dim], np.int64))
    flat_shape = const(np.array([seq, c.heads * c.head_dim], np.int64))
    halves = const(np.array([half, half], np.int64))

    def rms(x, gain):
        mean = op("ReduceMean", op("Mul", x, x), axes_last, keepdims=1)
        return op("Mul", op("Div", x, op("Sqrt", op("Add", mean, eps))), gain)

    def heads(x):  # [S, H*hd] -> [H, S, hd]
        return op("Transpose", op("Reshape", x, heads_shape), perm=[1, 0, 2])

    def rope(t):
        first, second = f"t{next(counter)}", f"t{next(counter)}"
        nodes.append(helper.make_node("Split", [t, halves], [first, second], axis=-1))
        return op("Concat", op("Sub", op("Mul", first, cos), op("Mul", second, sin)),
                  op("Add", op("Mul", second, cos), op("Mul", first, sin)), axis=-1)

    x = op("Gather", "embed", op("Squeeze", "tokens", const(np.array([0], np.int64))), axis=0)
    for i in range(c.layers):
        p = f"layers.{i}."
        n1 = rms(x, p + "ln1")
        q, k = rope(heads(op("MatMul", n1, p + "q"))), rope(heads(op("MatMul", n1, p + "k")))
        v = heads(op("MatMul", n1, p + "v"))
        scores = op("Add", op("Mul", op("MatMul", q, op("Transpose", k, perm=[0, 2, 1])), scale), mask)
        attn = op("MatMul", op("Softmax", scores, axis=-1), v)
        h = op("Add", x, op("MatMul", op("Reshape", op("Transpose", attn, perm=[1, 0, 2]), flat_shape), p + "o"))
        n2 = rms(h, p + "ln2")
        gate = op("MatMul", n2, p + "gate")
        silu = op("Div", gate, op("Add", one, op("Exp", op("Neg", gate))))
        x = op("Add", h, op("MatMul", op("Mul", silu, op("MatMul", n2, p + "up")), p + "down"))
    op("Unsqueeze", op("MatMul", rms(x, "norm"), "lm_head"), const(np.array([0], np.int64)), out="logits")
    graph = helper.make_graph(
        nodes, "llama",
        [helper.make_tensor_value_info("tokens", TensorProto.INT64, [1, seq])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, seq, c.vocab])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def onnxruntime_llama(tokens, w, c, threads: int):
    """An ONNX Runtime session of `onnx_llama` on `threads` intra-op threads, as a function of no
    arguments returning the logits; or a line saying why there is none (not installed)."""
    try:
        import onnx  # noqa: F401
        import onnxruntime as ort
    except ImportError:
        return "ONNX Runtime column: not measured (pip install onnxruntime onnx: the bench extra)"
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(onnx_llama(w, c, tokens.shape[1]).SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return lambda: session.run(["logits"], {"tokens": tokens})[0]


def onnxruntime_columns(tokens, w, c, threads: int, repeat: int, expected) -> dict:
    """The model row's ONNX Runtime entries (time, version), its logits checked against `expected`;
    a note (printed under the table) when ONNX Runtime is not installed."""
    import numpy as np

    run = onnxruntime_llama(tokens, w, c, threads)
    if isinstance(run, str):
        return {"note": run}
    pause()
    assert np.allclose(run(), expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max()), "ONNX Runtime model is wrong"
    import onnxruntime

    return {"ort": timed(run, repeat), "ort_version": onnxruntime.__version__}


def bench_model(threads: int, repeat: int, layers: int) -> None:
    import numpy as np

    import rlx_mlir
    from rlx_mlir.models.llama import LlamaConfig, build_llama, random_weights

    c = LlamaConfig(layers=layers, hidden=512, heads=8, kv_heads=8, head_dim=64, ffn=1408, vocab=1000, seq=128)
    weights = random_weights(c, seed=0)
    tokens = np.random.default_rng(1).integers(0, c.vocab, (1, c.seq)).astype(np.int64)

    rlx_mlir.clear_compile_cache()
    start = time.perf_counter()
    model = build_llama(c)
    exe = model.compile(threads=threads)
    logits = exe(tokens=tokens, **weights)
    first_result = time.perf_counter() - start
    start = time.perf_counter()
    again = build_llama(c).compile(threads=threads)
    cache_hit = time.perf_counter() - start
    assert again is exe, "the second compile of the same model missed the cache"

    expected = numpy_llama(tokens, weights, c)
    assert np.allclose(logits, expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max()), "rlx model is wrong"
    start = time.perf_counter()
    bound = exe.bind_params(**weights)  # compiles the prepacked variant, packs the weights' panels
    bind_time = time.perf_counter() - start
    assert np.array_equal(bound(tokens), logits), "bound and unbound logits differ"
    out = np.empty_like(logits)
    numpy_time = timed(lambda: numpy_llama(tokens, weights, c), repeat)
    pause()
    (rlx_time, bound_time), (rlx_cpu, bound_cpu) = interleaved_with_cpu(
        [lambda: exe(tokens=tokens, **weights, out=out), lambda: bound(tokens, out=out)], repeat)
    pause()
    row = dict(section="model", case=f"llama {layers} layers, prefill 128", threads=threads, unit="tok/s",
               numpy=numpy_time, rlx=rlx_time, work=float(c.seq), gflop=prefill_flops(c, c.seq) / 1e9,
               rlx_cpu=rlx_cpu)
    forward = torch_llama(tokens, weights, c)
    if forward is not None:
        import torch

        torch.set_num_threads(threads)
        assert np.allclose(forward().numpy(), expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max())
        row["torch"] = timed(forward, repeat)
        row["torch_version"] = torch.__version__
    row.update(onnxruntime_columns(tokens, weights, c, threads, repeat, expected))
    emit(**row)
    emit(**{**row, "case": f"llama {layers} layers, prefill 128, params bound", "rlx": bound_time, "rlx_cpu": bound_cpu})
    emit(section="compile", case=f"llama {layers} layers: builder to first result", threads=threads,
         unit="s", rlx=(first_result, first_result))
    emit(section="compile", case=f"llama {layers} layers: compile-cache hit (build + compile)", threads=threads,
         unit="s", rlx=(cache_hit, cache_hit))
    emit(section="compile", case=f"llama {layers} layers: bind_params (compile prepacked, pack)", threads=threads,
         unit="s", rlx=(bind_time, bind_time))


LONG_PREFILLS = (512, 2048)


def bench_long(threads: int, repeat: int, layers: int) -> None:
    """Prefill of LONG_PREFILLS tokens (issue 19: time per token grows no faster than torch eager's):
    each length's model compiled (timed) and its weights bound, then rlx and torch eager interleaved
    (wall and process CPU time), logits checked against torch's."""
    import dataclasses

    import numpy as np

    from rlx_mlir.models.llama import LlamaConfig, build_llama, random_weights

    base = LlamaConfig(layers=layers, hidden=512, heads=8, kv_heads=8, head_dim=64, ffn=1408, vocab=1000, seq=128)
    weights = random_weights(base, seed=0)
    for seq in LONG_PREFILLS:
        c = dataclasses.replace(base, seq=seq)
        tokens = np.random.default_rng(seq).integers(0, c.vocab, (1, seq)).astype(np.int64)
        start = time.perf_counter()
        exe = build_llama(c).compile(threads=threads)
        compile_time = time.perf_counter() - start
        start = time.perf_counter()
        bound = exe.bind_params(**weights)
        bind_time = time.perf_counter() - start
        logits = bound(tokens)
        out = np.empty_like(logits)
        row = dict(section="prefill-long", case=f"llama {layers} layers, prefill {seq}, params bound",
                   threads=threads, unit="tok/s", work=float(seq), gflop=prefill_flops(c, seq) / 1e9, seq=seq,
                   compile_s=compile_time, bind_s=bind_time)
        forward = torch_llama(tokens, weights, c)
        functions = [lambda bound=bound, tokens=tokens, out=out: bound(tokens, out=out)]
        if forward is not None:
            import torch

            torch.set_num_threads(threads)
            expected = forward().numpy()
            assert np.allclose(logits, expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max()), "rlx model is wrong"
            row["torch_version"] = torch.__version__
            functions.append(forward)
        else:
            row["note"] = "torch eager column of the long prefills: not measured (pip install torch: the bench extra)"
        emit_rlx_and_torch(row, functions, repeat)
        bench_long_attention(c, seq, threads, repeat)
        emit(section="compile", case=f"llama {layers} layers, prefill {seq}: compile (build + compile)",
             threads=threads, unit="s", rlx=(compile_time, compile_time))
        emit(section="compile", case=f"llama {layers} layers, prefill {seq}: bind_params (compile prepacked, pack)",
             threads=threads, unit="s", rlx=(bind_time, bind_time))


def bench_long_attention(c, seq: int, threads: int, repeat: int) -> None:
    """One layer's causal attention of the long prefill alone (`rlx.attention`, the tiled loop nest)
    against torch's `scaled_dot_product_attention(is_causal=True)`, interleaved: the part of the
    prefill whose work grows with the square of the length, its time per token and GFLOP/s."""
    import numpy as np

    import rlx_mlir

    width = c.heads * c.head_dim
    t = f"tensor<1x{seq}x{width}xf32>"
    text = (f"func.func @f(%q: {t}, %k: {t}, %v: {t}) -> {t} {{\n"
            f'  %0 = "rlx.attention"(%q, %k, %v) {{num_heads = {c.heads} : i64, head_dim = {c.head_dim} : i64, '
            f'mask_kind = "causal"}} : ({t}, {t}, {t}) -> {t}\n  return %0 : {t}\n}}\n')
    exe = rlx_mlir.compile(text, "f", threads=threads)
    q, k, v = (np.random.default_rng(seq + i).standard_normal((1, seq, width)).astype(np.float32) for i in range(3))
    out = np.empty_like(q)
    functions = [lambda: exe(q, k, v, out=out)]
    row = dict(section="attention-long", case=f"causal attention, {c.heads} heads of {c.head_dim}, {seq} tokens",
               threads=threads, unit="tok/s", work=float(seq), seq=seq,
               gflop=2 * 2 * c.heads * c.head_dim * seq * (seq + 1) / 2 / 1e9)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(threads)
        qt, kt, vt = (torch.from_numpy(a[0]).view(seq, c.heads, c.head_dim).transpose(0, 1) for a in (q, k, v))

        def sdpa():
            with torch.inference_mode():
                return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True)

        expected = sdpa().transpose(0, 1).reshape(1, seq, width).numpy()
        exe(q, k, v, out=out)
        assert np.allclose(out, expected, rtol=1e-4, atol=1e-4), "rlx attention is wrong"
        functions.append(sdpa)
        row["torch_version"] = torch.__version__
    emit_rlx_and_torch(row, functions, repeat)


def emit_rlx_and_torch(row: dict, functions: list, repeat: int) -> None:
    """Times rlx (functions[0]) and, when present, torch (functions[1]) interleaved, wall and CPU
    time, after a pause, and emits `row` with both."""
    pause()
    walls, cpus = interleaved_with_cpu(functions, repeat)
    row.update(rlx=walls[0], rlx_cpu=cpus[0])
    if len(functions) > 1:
        row.update(torch=walls[1], torch_cpu=cpus[1])
    emit(**row)


def child(args) -> None:
    threads = args.threads
    repeat = 3 if args.quick else args.repeat
    sections = args.sections.split(",")
    if "peak" in sections:
        bench_peak(threads, repeat)
    if "matmul" in sections:
        bench_matmul(threads, repeat)
    if "interleaved" in sections:
        bench_interleaved(threads, repeat)
    if "gelu" in sections:
        bench_bias_gelu(threads, repeat)
    if "rows" in sections:
        bench_rows(threads, repeat)
    if "model" in sections:
        bench_model(threads, max(3, repeat // 2), 4 if args.quick else 12)
    if "long" in sections:
        bench_long(threads, 3, 4 if args.quick else 12)


# --- the parent: one child per thread setting, one table ---------------------------------------


def run_child(threads: int, args) -> list[dict]:
    return child_rows.run_child(__file__, threads, ["--repeat", str(args.repeat), "--sections", args.sections]
                                + (["--quick"] if args.quick else []))


def rate(row: dict, which: str) -> tuple[str, str]:
    """('best ms / median ms', 'throughput at best') for one library."""
    best, median = row[which]
    if row["unit"] == "s":
        return f"{best:.2f} s", ""
    text = f"{best * 1e3:.2f} / {median * 1e3:.2f}"
    return text, f"{row['work'] / best:.1f} {row['unit']}"


def table(rows: list[dict]) -> str:
    lines = [
        "| section | case | threads | numpy ms (best / median) | numpy rate | rlx ms (best / median) | rlx rate "
        "| numpy/rlx (best) | torch ms (best / median) | torch/rlx (best) | ORT ms (best / median) | ORT/rlx (best) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        rlx_text, rlx_rate = rate(row, "rlx")
        numpy_text, numpy_rate, ratio = "", "", ""
        if "numpy" in row:
            numpy_text, numpy_rate = rate(row, "numpy")
            ratio = f"{row['numpy'][0] / row['rlx'][0]:.2f}x"
        torch_text, torch_ratio = "", ""
        if "torch" in row:
            torch_text = f"{row['torch'][0] * 1e3:.2f} / {row['torch'][1] * 1e3:.2f}"
            torch_ratio = f"{row['torch'][0] / row['rlx'][0]:.2f}x"
        ort_text, ort_ratio = "", ""
        if "ort" in row:
            ort_text = f"{row['ort'][0] * 1e3:.2f} / {row['ort'][1] * 1e3:.2f}"
            ort_ratio = f"{row['ort'][0] / row['rlx'][0]:.2f}x"
        threads = "1" if row["threads"] == 1 else f"all ({row['threads']})"
        lines.append(
            f"| {row['section']} | {row['case']} | {threads} | {numpy_text} | {numpy_rate} | {rlx_text} | {rlx_rate} "
            f"| {ratio} | {torch_text} | {torch_ratio} | {ort_text} | {ort_ratio} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=9, help="timed calls per measurement (default 9)")
    parser.add_argument("--quick", action="store_true", help="3 calls per measurement and a 4-layer model")
    parser.add_argument("--sections", default="peak,matmul,interleaved,gelu,rows,model",
                        help="comma-separated subset of peak,matmul,interleaved,gelu,rows,model,long "
                             "(long: prefill 512 and 2048 against torch eager, not in the default set)")
    parser.add_argument("--long-prefill", action="store_true",
                        help="add the long section (prefill 512 and 2048 tokens, a few minutes more)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.long_prefill and "long" not in args.sections.split(","):
        args.sections += ",long"
    if args.child:
        child(args)
        return
    from rlx_mlir.targets.cpu import default_threads

    cores = default_threads()
    rows = run_child(1, args) + (run_child(cores, args) if cores > 1 else [])
    order = ["peak", "matmul", "bias+gelu", "softmax", "rms_norm", "model", "prefill-long", "attention-long",
             "compile"]
    rows.sort(key=lambda r: (order.index(r["section"]), r["case"], r["threads"]))
    import numpy

    print(f"# rlx-mlir CPU benchmark: {platform.processor() or platform.machine()}, {cores} cores, "
          f"numpy {numpy.__version__}, Python {platform.python_version()}")
    print(table(rows))
    peers = sorted({f"{name} {row[name + '_version']}" for row in rows for name in ("torch", "ort")
                    if name + "_version" in row})
    if peers:
        print("peers: " + ", ".join(peers))
    for note in sorted({row["note"] for row in rows if "note" in row}):
        print(note)
    for lines in (peak_table(rows), long_table(rows)):
        if lines:
            print()
            print("\n".join(lines))


def peak_table(rows: list[dict]) -> list[str]:
    """The model prefills' FLOP rates as fractions of the FMA peak measured in the same child: at the
    best wall times, and on one thread also at the best process CPU times (peak per CPU second)."""
    peaks = {r["threads"]: r for r in rows if r["section"] == "peak"}
    models = sorted((r for r in rows if "gflop" in r and r["threads"] in peaks),
                    key=lambda r: (r["section"] != "model", r.get("seq", 0), r["case"], r["threads"]))
    if not models:
        return []
    lines = ["| case | threads | model GFLOP | FMA peak GFLOP/s (wall best; per CPU s) | rlx GFLOP/s (wall best) "
             "| of peak (wall) | rlx GFLOP/s per CPU s (1 thread) | of peak (CPU time) | ORT of peak (wall) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in models:
        peak = peaks[r["threads"]]
        peak_wall = peak["work"] / peak["rlx"][0]
        rate = r["gflop"] / r["rlx"][0]
        cpu_rate, cpu_fraction = "", ""
        if r["threads"] == 1 and "rlx_cpu" in r:
            cpu_rate = f"{r['gflop'] / r['rlx_cpu'][0]:.1f}"
            cpu_fraction = f"{100 * r['gflop'] / r['rlx_cpu'][0] / peak['cpu_gflops']:.0f}%"
        ort = f"{100 * r['gflop'] / r['ort'][0] / peak_wall:.0f}%" if "ort" in r else ""
        threads = "1" if r["threads"] == 1 else f"all ({r['threads']})"
        lines.append(f"| {r['case']} | {threads} | {r['gflop']:.2f} | {peak_wall:.1f}; {peak['cpu_gflops']:.1f} "
                     f"| {rate:.1f} | {100 * rate / peak_wall:.0f}% | {cpu_rate} | {cpu_fraction} | {ort} |")
    return lines


def long_table(rows: list[dict]) -> list[str]:
    """Time per token of the long prefills, rlx and torch eager, and its growth from the shortest to
    the longest (wall best; CPU time best on one thread); then the same of one layer's attention."""
    lines = []
    for section, what in (("prefill-long", "prefill"), ("attention-long", "one layer's causal attention")):
        part = [r for r in rows if r["section"] == section]
        if part:
            lines += ([""] if lines else []) + _growth_table(part, what)
    return lines


def _growth_table(long: list[dict], what: str) -> list[str]:
    lines = [f"| threads | tokens ({what}) | rlx ms/token (wall best; CPU best) | torch ms/token (wall best; CPU best) "
             "| rlx compile s (bind s) |", "|---|---|---|---|---|"]

    def per_token(r, name):
        if name not in r:
            return None, None
        return r[name][0] / r["seq"], r[name + "_cpu"][0] / r["seq"]

    for threads in sorted({r["threads"] for r in long}):
        mine = sorted((r for r in long if r["threads"] == threads), key=lambda r: r["seq"])
        for r in mine:
            cells = []
            for name in ("rlx", "torch"):
                wall, cpu = per_token(r, name)
                cells.append("" if wall is None else f"{1e3 * wall:.3f}; {1e3 * cpu:.3f}")
            compiled = f"{r['compile_s']:.1f} ({r['bind_s']:.1f})" if "compile_s" in r else ""
            lines.append(f"| {threads} | {r['seq']} | {cells[0]} | {cells[1]} | {compiled} |")
        first, last = mine[0], mine[-1]
        growth = []
        for name in ("rlx", "torch"):
            a, b = per_token(first, name), per_token(last, name)
            if a[0] is not None:
                growth.append(f"{name} x{b[0] / a[0]:.2f} (CPU x{b[1] / a[1]:.2f})")
        lines.append(f"| {threads} | growth {first['seq']} -> {last['seq']} per token | {' | '.join(growth)} | |")
    return lines


if __name__ == "__main__":
    main()
