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
    times = [[] for _ in functions]
    for round_ in range(repeat + 1):
        for function, spent in zip(functions, times):
            start = time.perf_counter()
            function()
            if round_:
                spent.append(time.perf_counter() - start)
    return [(sorted(t)[0], sorted(t)[len(t) // 2]) for t in times]


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
    rlx_time, bound_time = interleaved([lambda: exe(tokens=tokens, **weights, out=out),
                                        lambda: bound(tokens, out=out)], repeat)
    pause()
    row = dict(section="model", case=f"llama {layers} layers, prefill 128", threads=threads, unit="tok/s",
               numpy=numpy_time, rlx=rlx_time, work=float(c.seq))
    forward = torch_llama(tokens, weights, c)
    if forward is not None:
        import torch

        torch.set_num_threads(threads)
        assert np.allclose(forward().numpy(), expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max())
        row["torch"] = timed(forward, repeat)
        row["torch_version"] = torch.__version__
    row.update(onnxruntime_columns(tokens, weights, c, threads, repeat, expected))
    emit(**row)
    emit(**{**row, "case": f"llama {layers} layers, prefill 128, params bound", "rlx": bound_time})
    emit(section="compile", case=f"llama {layers} layers: builder to first result", threads=threads,
         unit="s", rlx=(first_result, first_result))
    emit(section="compile", case=f"llama {layers} layers: compile-cache hit (build + compile)", threads=threads,
         unit="s", rlx=(cache_hit, cache_hit))
    emit(section="compile", case=f"llama {layers} layers: bind_params (compile prepacked, pack)", threads=threads,
         unit="s", rlx=(bind_time, bind_time))


def child(args) -> None:
    threads = args.threads
    repeat = 3 if args.quick else args.repeat
    sections = args.sections.split(",")
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
    parser.add_argument("--sections", default="matmul,interleaved,gelu,rows,model",
                        help="comma-separated subset of matmul,interleaved,gelu,rows,model")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    from rlx_mlir.targets.cpu import default_threads

    cores = default_threads()
    rows = run_child(1, args) + (run_child(cores, args) if cores > 1 else [])
    order = ["matmul", "bias+gelu", "softmax", "rms_norm", "model", "compile"]
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


if __name__ == "__main__":
    main()
