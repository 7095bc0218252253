"""The CUDA target: MIR ops and the 2-layer Llama-style model run on the GPU
against plain-numpy references written here, weights kept on the device, and
the CUDA AOT round trip.  Tests marked `cuda` skip where no CUDA device is
found (CI); the error raised without one is tested everywhere else."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gpu_interpreter import Interpreter, numpy_dtype
from mlir import ir
from test_llama import CONFIG, reference_forward

import rlx_mlir
from rlx_mlir import aot
from rlx_mlir.models.llama import LlamaConfig, build_llama, random_weights, weight_shapes
from rlx_mlir.passmanager.pipeline import run_pipeline
from rlx_mlir.pipelines.lower_to_nvvm import ptxas_available

NO_DEVICE = aot.cuda_device_error()
needs_gpu = pytest.mark.skipif(NO_DEVICE is not None, reason=f"needs a CUDA GPU: {NO_DEVICE}")


def one_op(op: str, operands, result: str, attrs: str = "") -> str:
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(operands))
    args = ", ".join(f"%a{i}" for i in range(len(operands)))
    attr_text = f" {{{attrs}}}" if attrs else ""
    return (f"func.func @f({params}) -> {result} {{\n"
            f'  %0 = "rlx.{op}"({args}){attr_text} : ({", ".join(operands)}) -> {result}\n'
            f"  return %0 : {result}\n}}\n")


def rows_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


rng = np.random.default_rng(11)


def normal(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# (id, module text, inputs, numpy reference of the inputs in float64, rtol, atol)
CASES = [
    ("add-broadcast", one_op("add", ["tensor<24x100xf32>", "tensor<100xf32>"], "tensor<24x100xf32>"),
     [normal(24, 100), normal(100)], lambda x, b: x + b, 1e-6, 1e-6),
    ("gelu", one_op("gelu", ["tensor<1000xf32>"], "tensor<1000xf32>"),
     [normal(1000)], lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))), 1e-5, 1e-6),
    ("silu", one_op("silu", ["tensor<33x7xf32>"], "tensor<33x7xf32>"),
     [normal(33, 7)], lambda x: x / (1 + np.exp(-x)), 1e-5, 1e-6),
    ("matmul-f32-ragged", one_op("matmul", ["tensor<40x12xf32>", "tensor<12x36xf32>"], "tensor<40x36xf32>"),
     [normal(40, 12), normal(12, 36)], lambda a, b: a @ b, 1e-5, 1e-4),
    ("matmul-f16", one_op("matmul", ["tensor<32x48xf16>", "tensor<48x16xf16>"], "tensor<32x16xf16>"),
     [normal(32, 48, dtype=np.float16), normal(48, 16, dtype=np.float16)], lambda a, b: a @ b, 2e-3, 2e-2),
    ("softmax-rows", one_op("softmax", ["tensor<4x300xf32>"], "tensor<4x300xf32>", "axis = -1 : i64"),
     [normal(4, 300)], rows_softmax, 1e-5, 1e-7),
    ("rms-norm", one_op("rms_norm", ["tensor<6x96xf32>", "tensor<96xf32>", "tensor<96xf32>"], "tensor<6x96xf32>",
                        "axis = -1 : i64, eps = 1.0e-5 : f32"),
     [normal(6, 96), normal(96), normal(96)],
     lambda x, g, b: x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-5) * g + b, 1e-5, 1e-5),
    ("reduce-sum", one_op("reduce", ["tensor<4x5x300xf32>"], "tensor<4x300xf32>",
                          'kind = "sum", axes = array<i64: 1>, keep_dim = false'),
     [normal(4, 5, 300)], lambda x: x.sum(axis=1), 1e-5, 1e-5),
    ("transpose", one_op("transpose", ["tensor<3x4x5xf32>"], "tensor<5x3x4xf32>", "perm = array<i64: 2, 0, 1>"),
     [normal(3, 4, 5)], lambda x: x.transpose(2, 0, 1), 0, 0),
]


def attention_reference(q, k, v, heads, head_dim):
    b, s, _ = q.shape
    kv_heads = k.shape[2] // head_dim
    group = heads // kv_heads
    out = np.zeros_like(q)
    causal = np.tril(np.ones((s, s), bool))
    for h in range(heads):
        qh = q[:, :, h * head_dim:(h + 1) * head_dim]
        kh = k[:, :, (h // group) * head_dim:(h // group + 1) * head_dim]
        vh = v[:, :, (h // group) * head_dim:(h // group + 1) * head_dim]
        scores = np.where(causal, qh @ kh.transpose(0, 2, 1) / math.sqrt(head_dim), -np.inf)
        out[:, :, h * head_dim:(h + 1) * head_dim] = rows_softmax(scores) @ vh
    return out


CASES += [
    ("layer-norm", one_op("layer_norm", ["tensor<4x80xf32>", "tensor<80xf32>", "tensor<80xf32>"], "tensor<4x80xf32>",
                          "axis = 1 : i64, eps = 1.0e-5 : f32"),
     [normal(4, 80), normal(80), normal(80)],
     lambda x, g, b: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b, 1e-5, 1e-5),
    ("fused-swiglu", one_op("fused_swiglu", ["tensor<3x40xf32>"], "tensor<3x20xf32>"),
     [normal(3, 40)], lambda x: x[:, :20] * (x[:, 20:] / (1 + np.exp(-x[:, 20:]))), 1e-5, 1e-6),
    ("concat", one_op("concat", ["tensor<2x3xf32>", "tensor<1x3xf32>"], "tensor<3x3xf32>", "axis = -2 : i64"),
     [normal(2, 3), normal(1, 3)], lambda a, b: np.concatenate([a, b], axis=0), 0, 0),
    ("narrow", one_op("narrow", ["tensor<4x5xf32>"], "tensor<4x2xf32>", "axis = -1 : i64, start = 3 : i64, len = 2 : i64"),
     [normal(4, 5)], lambda x: x[:, 3:5], 0, 0),
    ("cumsum", one_op("cumsum", ["tensor<70x3xf32>"], "tensor<70x3xf32>", "axis = 0 : i64, exclusive = false"),
     [normal(70, 3)], lambda x: np.cumsum(x, axis=0), 1e-5, 1e-5),
    ("cast-f16", one_op("cast", ["tensor<300xf32>"], "tensor<300xf16>"),
     [normal(300)], lambda x: x.astype(np.float16).astype(np.float64), 0, 0),
]

CASES.append(
    ("attention-causal-gqa",
     one_op("attention", ["tensor<2x9x64xf32>", "tensor<2x9x32xf32>", "tensor<2x9x32xf32>"], "tensor<2x9x64xf32>",
            'head_dim = 16 : i64, mask_kind = "causal", num_heads = 4 : i64'),
     [normal(2, 9, 64), normal(2, 9, 32), normal(2, 9, 32)],
     lambda q, k, v: attention_reference(q, k, v, 4, 16), 1e-5, 1e-5))
# Scalars (rank-0: no loops) and unit dimensions (loops of one iteration) map to one-thread kernels rather
# than staying on the host (rlx-gpu-straight-line-kernels; found by fuzzed programs in the GPU interpreter).
CASES.append(
    ("scalar-ops",
     "func.func @f(%x: tensor<f32>) -> tensor<f32> {\n"
     '  %0 = "rlx.mul"(%x, %x) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n'
     '  %1 = "rlx.tanh"(%0) : (tensor<f32>) -> tensor<f32>\n'
     "  return %1 : tensor<f32>\n}\n",
     [np.array(0.7, np.float32)], lambda x: np.tanh(x * x), 1e-6, 1e-7))
CASES.append(
    ("unit-dims-reduce",
     one_op("reduce", ["tensor<1x1x5xf32>"], "tensor<1x1x1xf32>", 'kind = "max", axes = array<i64: 2>, keep_dim = true'),
     [normal(1, 1, 5)], lambda x: x.max(axis=2, keepdims=True), 0, 0))
CASES.append(
    ("unit-dims-cumsum", one_op("cumsum", ["tensor<1x1xf32>"], "tensor<1x1xf32>", "axis = 0 : i64, exclusive = false"),
     [normal(1, 1)], lambda x: x, 0, 0))
CASES.append(  # a host scf.forall over the batch around each entry's matmul kernels
    ("matmul-batched", one_op("matmul", ["tensor<3x8x1xf32>", "tensor<3x1x31xf32>"], "tensor<3x8x31xf32>"),
     [normal(3, 8, 1), normal(3, 1, 31)], lambda a, b: a @ b, 1e-6, 1e-6))
CASES.append(  # a 1 x 1 matmul result, then a cumsum over its unit axis in the arena
    ("unit-dims-matmul-cumsum",
     "func.func @f(%a: tensor<1x6xf32>, %b: tensor<6x1xf32>) -> tensor<1x1xf32> {\n"
     '  %0 = "rlx.matmul"(%a, %b) : (tensor<1x6xf32>, tensor<6x1xf32>) -> tensor<1x1xf32>\n'
     '  %1 = "rlx.cumsum"(%0) {axis = 0 : i64, exclusive = false} : (tensor<1x1xf32>) -> tensor<1x1xf32>\n'
     "  return %1 : tensor<1x1xf32>\n}\n",
     [normal(1, 6), normal(6, 1)], lambda a, b: a @ b, 1e-6, 1e-6))
CASES.append(  # a reshape of an arena view in straight-line code: both views move before the one-thread kernel
    ("unit-dims-cast-reshape",
     "func.func @f(%x: tensor<1xf32>) -> tensor<1x1xf16> {\n"
     '  %0 = "rlx.gelu_approx"(%x) : (tensor<1xf32>) -> tensor<1xf32>\n'
     '  %1 = "rlx.cast"(%0) : (tensor<1xf32>) -> tensor<1xf16>\n'
     '  %2 = "rlx.reshape"(%1) : (tensor<1xf16>) -> tensor<1x1xf16>\n'
     "  return %2 : tensor<1x1xf16>\n}\n",
     [normal(1)], lambda x: (0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))).astype(np.float16)
     .reshape(1, 1), 1e-3, 1e-3))
CASES.append(
    ("unit-dims-sigmoid", one_op("sigmoid", ["tensor<1xf32>"], "tensor<1xf32>"),
     [normal(1)], lambda x: 1 / (1 + np.exp(-x)), 1e-6, 1e-7))
# Q.K^T and P.V through rlx-gpu-tile-matmul's generic contractions: 34 queries and keys are two 32-wide
# register tiles (R = 2) plus a ragged edge, 2 query heads on 1 kv head, 2 batch entries.
CASES.append(
    ("attention-tiled-gqa-ragged",
     one_op("attention", ["tensor<2x34x64xf32>", "tensor<2x34x32xf32>", "tensor<2x34x32xf32>"], "tensor<2x34x64xf32>",
            'head_dim = 32 : i64, mask_kind = "causal", num_heads = 2 : i64'),
     [normal(2, 34, 64), normal(2, 34, 32), normal(2, 34, 32)],
     lambda q, k, v: attention_reference(q, k, v, 2, 32), 1e-5, 1e-5))

# f16 contractions on tensor cores (rlx-gpu-mma-matmul): ragged edges in every dimension (zero-filled staging,
# guarded epilogue), and attention's generic contractions with grouped-query heads.
CASES.append(
    ("matmul-f16-ragged", one_op("matmul", ["tensor<50x72xf16>", "tensor<72x40xf16>"], "tensor<50x40xf16>"),
     [normal(50, 72, dtype=np.float16), normal(72, 40, dtype=np.float16)], lambda a, b: a @ b, 2e-3, 2e-2))
CASES.append(
    ("attention-f16-gqa",
     one_op("attention", ["tensor<1x20x64xf16>", "tensor<1x20x32xf16>", "tensor<1x20x32xf16>"], "tensor<1x20x64xf16>",
            'head_dim = 16 : i64, mask_kind = "causal", num_heads = 4 : i64'),
     [normal(1, 20, 64, dtype=np.float16), normal(1, 20, 32, dtype=np.float16), normal(1, 20, 32, dtype=np.float16)],
     lambda q, k, v: attention_reference(q, k, v, 4, 16), 5e-3, 5e-3))
TENSOR_CORES = ("matmul-f16", "matmul-f16-ragged", "attention-f16-gqa")


@needs_gpu
@pytest.mark.cuda
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_op_on_gpu_matches_numpy(case):
    _, text, inputs, reference, rtol, atol = case
    exe = rlx_mlir.compile(text, target="cuda")
    out = exe(*inputs)
    expected = reference(*[x.astype(np.float64) for x in inputs])
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=rtol, atol=atol)


@needs_gpu
@pytest.mark.cuda
def test_two_layer_llama_on_gpu_matches_numpy():
    exe = rlx_mlir.compile(str(build_llama(CONFIG)), target="cuda")
    weights = random_weights(CONFIG, seed=0)
    tokens = np.random.default_rng(1).integers(0, CONFIG.vocab, (CONFIG.batch, CONFIG.seq)).astype(np.int64)
    expected = reference_forward(tokens, weights, CONFIG)
    for _ in range(2):  # the second call reuses the weights already on the device
        logits = exe(tokens=tokens, **weights)
        np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


MLP = """
func.func @mlp(%x: tensor<4x8xf32> {rlx.name = "x"},
               %w: tensor<8x16xf32> {rlx.name = "w", rlx.param}) -> tensor<4x16xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
"""


@needs_gpu
@pytest.mark.cuda
def test_weights_stay_on_device_until_another_array_is_passed():
    exe = rlx_mlir.compile(MLP, target="cuda")
    x, w = normal(4, 8), normal(8, 16)
    np.testing.assert_allclose(exe(x=x, w=w), x.astype(np.float64) @ w, rtol=1e-5, atol=1e-5)
    x2 = normal(4, 8)
    np.testing.assert_allclose(exe(x=x2, w=w), x2.astype(np.float64) @ w, rtol=1e-5, atol=1e-5)
    w2 = normal(8, 16)
    np.testing.assert_allclose(exe(x=x2, w=w2), x2.astype(np.float64) @ w2, rtol=1e-5, atol=1e-5)


@needs_gpu
@pytest.mark.cuda
def test_cuda_aot_round_trip(tmp_path):
    aot.export(MLP, str(tmp_path / "mlp.so"), target="cuda")
    model = aot.load(str(tmp_path / "mlp.so"))
    x, w = normal(4, 8), normal(8, 16)
    np.testing.assert_allclose(model(x=x, w=w), x.astype(np.float64) @ w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_op_compiles_to_a_cuda_shared_object(case, tmp_path):
    # Everywhere, GPU or not: the whole CUDA chain (kernels mapped, PTX embedded, host code linked).
    manifest = aot.export(case[1], str(tmp_path / "op.so"), target="cuda")
    assert manifest["runtime_libraries"] == ["libmlir_cuda_runtime.so"]
    assert b".visible .entry f_kernel" in (tmp_path / "op.so").read_bytes()


def lower_to_gpu(text: str, options: str = ""):
    """The module after rlx-lower-to-gpu (host code launching gpu.launch kernels), in its Context."""
    context = rlx_mlir.make_context()
    with context, ir.Location.unknown():
        module = ir.Module.parse(text)
        run_pipeline(module.operation, f"builtin.module(rlx-lower-to-gpu{{{options}}})")
    return context, module


# min-blocks=0: matmuls with the largest register tile that fits (R > 1 here), which the default's
# at-least-132-blocks rule never picks for shapes this small.
REGISTER_TILED = [c for c in CASES if c[0] in ("matmul-f32-ragged", "attention-tiled-gqa-ragged")]


# tensor-cores=false: the f16 contractions through rlx-gpu-tile-matmul's f16 multiply-adds instead.
SIMT_F16 = [c for c in CASES if c[0] in TENSOR_CORES]


@pytest.mark.parametrize("case,options", [(c, "") for c in CASES] + [(c, "min-blocks=0") for c in REGISTER_TILED]
                         + [(c, "tensor-cores=false") for c in SIMT_F16],
                         ids=[c[0] for c in CASES] + [f"{c[0]}-min-blocks-0" for c in REGISTER_TILED]
                         + [f"{c[0]}-tensor-cores-false" for c in SIMT_F16])
def test_op_kernels_match_numpy_in_the_gpu_interpreter(case, options):
    # Everywhere: the kernels, barriers and shared memory executed by pytests/gpu_interpreter.py.
    _, text, inputs, reference, rtol, atol = case
    context, module = lower_to_gpu(text, options)
    with context:
        machine = Interpreter(module)
        result = ir.MemRefType(machine.functions["f"].regions[0].blocks[0].arguments[len(inputs)].type)
        dtype = numpy_dtype(result.element_type)
        out = np.full(result.shape, np.nan if dtype.kind == "f" else -12345, dtype=dtype)  # unwritten: wrong
        machine.call("f", *[x.copy() for x in inputs], out)
    assert machine.launches >= 1
    expected = reference(*[x.astype(np.float64) for x in inputs])
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=rtol, atol=atol)


def test_small_llama_matches_numpy_in_the_gpu_interpreter():
    config = LlamaConfig(layers=1, hidden=32, heads=2, kv_heads=1, head_dim=16, ffn=48, vocab=23, seq=4)
    weights = random_weights(config, seed=2)
    tokens = np.random.default_rng(3).integers(0, config.vocab, (config.batch, config.seq)).astype(np.int64)
    context, module = lower_to_gpu(str(build_llama(config)))
    out = np.full((config.batch, config.seq, config.vocab), np.nan, np.float32)
    with context:
        machine = Interpreter(module)
        machine.call("llama", tokens, *[weights[name] for name in weight_shapes(config)], out)
    expected = reference_forward(tokens, weights, config)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


@pytest.mark.skipif(not ptxas_available(), reason="needs the CUDA toolkit's ptxas")
def test_kernels_assemble_with_ptxas_for_sm90(tmp_path):
    # format=bin runs ptxas on every kernel: the PTX we emit is valid sm_90 code.
    cases = {c[0]: c[1] for c in CASES}
    for name in ("matmul-f32-ragged", "softmax-rows", "attention-causal-gqa"):
        manifest = aot.export(cases[name], str(tmp_path / f"{name}.so"), target="cuda", format="bin")
        assert manifest["gpu"]["format"] == "bin"
        binary = (tmp_path / f"{name}.so").read_bytes()
        assert b"\x7fELF" in binary[64:] and b".visible .entry" not in binary  # cubins, not PTX text


@pytest.mark.skipif(NO_DEVICE is None, reason="a CUDA device is present")
def test_cuda_target_without_a_device_is_a_clear_error():
    from rlx_mlir.runtime.cuda import CudaUnavailableError

    with pytest.raises(CudaUnavailableError, match="target 'cuda' needs a CUDA GPU: no CUDA"):
        rlx_mlir.compile(MLP, target="cuda")


def test_cuda_target_refuses_results_tied_to_an_argument(monkeypatch):
    """The NVVM pipeline would hand back a copy of a tied result, leaving the caller's cache unchanged."""
    import rlx_mlir.runtime.cuda as cuda

    monkeypatch.setattr(cuda, "cuda_device_error", lambda: None)  # refused before any device is touched
    text = """
func.func @bump(%cache: tensor<4xf32> {rlx.name = "cache"}) -> (tensor<4xf32> {rlx.tied = 0 : i64}) {
  %0 = "rlx.neg"(%cache) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}"""
    with pytest.raises(rlx_mlir.CompileError, match=r"@bump: target 'cuda' does not update results tied to an "
                                                     r"argument \(rlx.tied: result0\) in place yet"):
        cuda.compile_cuda(text, chip="sm_90", features="+ptx80")


def test_unknown_target_lists_cuda():
    with pytest.raises(ValueError, match="unknown target 'rocm'; available: cpu, cuda"):
        rlx_mlir.compile(MLP, target="rocm")


@pytest.mark.skipif(NO_DEVICE is None, reason="a CUDA device is present")
def test_gpu_benchmark_skips_cleanly_without_a_device():
    import os
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "gpu.py")
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "benchmarks/gpu.py: skipped, no CUDA GPU here (no CUDA" in done.stdout


FAKE_DRIVER_SCRIPT = r'''
import ctypes, sys
import numpy as np
import rlx_mlir
from rlx_mlir import aot

MLP = sys.argv[1]
driver = ctypes.CDLL("libcuda.so.1")
cells = (ctypes.c_longlong * 6)()


def counts():
    driver.fake_cuda_counts(cells)
    return dict(zip(("allocs", "frees", "copies", "bytes", "launches", "modules"), cells))


def delta(before, after):
    return {k: after[k] - before[k] for k in before}


exe = rlx_mlir.compile(MLP, target="cuda")
assert exe.chip == "sm_90", exe.chip  # compute capability 9.0 from the fake driver
start = counts()
assert start["modules"] >= 1, start  # global constructors ran: the kernel modules are loaded
print("kernels", {"n": start["modules"]})
x, w = np.ones((4, 8), np.float32), np.ones((8, 16), np.float32)
exe(x=x, w=w)
first = counts()
exe(x=x, w=w)
second = counts()
exe(x=x, w=w.copy())
third = counts()
print("first", delta(start, first))
print("second", delta(first, second))
print("third", delta(second, third))
aot.export(MLP, sys.argv[2], target="cuda")
model = aot.load(sys.argv[2])
loaded = counts()
print("aot-load", delta(third, loaded))
model(x=x, w=w)
print("aot-call", delta(loaded, counts()))
'''


@pytest.mark.skipif(__import__("shutil").which("cc") is None, reason="needs a C compiler for the fake driver")
def test_cuda_runtime_plumbing_against_a_fake_driver(tmp_path):
    # A fake libcuda.so.1 (host memory, kernels not run) counts what the runtime asks of the driver:
    # weights are uploaded once and kept, inputs and results copied per call, kernels loaded at start.
    import os
    import subprocess
    import sys

    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_cuda", "fake_libcuda.c")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libcuda.so.1"), source,
                    "-Wl,-soname,libcuda.so.1"], check=True)
    env = {**os.environ, "LD_LIBRARY_PATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", FAKE_DRIVER_SCRIPT, MLP, str(tmp_path / "mlp.so")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    report = {line.split(" ", 1)[0]: eval(line.split(" ", 1)[1]) for line in done.stdout.splitlines()}
    x_bytes, w_bytes, out_bytes = 4 * 8 * 4, 8 * 16 * 4, 4 * 16 * 4
    assert report["first"]["copies"] == 3 and report["first"]["bytes"] == x_bytes + w_bytes + out_bytes
    kernels = report["kernels"]["n"]  # each kernel module is launched once per call
    assert report["first"]["launches"] == kernels
    # the same weight array: only x in and the result out
    assert report["second"]["copies"] == 2 and report["second"]["bytes"] == x_bytes + out_bytes
    assert report["second"]["allocs"] == report["second"]["frees"]
    # another weight array: uploaded again, the old device copy freed
    assert report["third"]["bytes"] == x_bytes + w_bytes + out_bytes
    assert report["third"]["frees"] == report["third"]["allocs"]
    assert report["aot-load"]["modules"] == kernels
    assert report["aot-call"]["launches"] == kernels and report["aot-call"]["bytes"] == x_bytes + w_bytes + out_bytes


TIME_ON_DEVICE_SCRIPT = r'''
import ctypes, sys
import numpy as np
import rlx_mlir
from rlx_mlir import aot

driver = ctypes.CDLL("libcuda.so.1")
cells = (ctypes.c_longlong * 6)()


def counts():
    driver.fake_cuda_counts(cells)
    return dict(zip(("allocs", "frees", "copies", "bytes", "launches", "modules"), cells))


x, w = np.ones((4, 8), np.float32), np.ones((8, 16), np.float32)
aot.export(sys.argv[1], sys.argv[2], target="cuda")
exe, model = rlx_mlir.compile(sys.argv[1], target="cuda"), aot.load(sys.argv[2])  # kept alive: they own the code
for name, function in (("jit", exe._function), ("aot", model.mlp)):
    function(x=x, w=w)  # w is now kept on the device
    before = counts()
    times = function.time_on_device(x=x, w=w, repeat=3)
    timed = counts()
    function(x=x, w=w)
    after = counts()
    print(name, ({"times": len(times), **{k: timed[k] - before[k] for k in before}},
                 {k: after[k] - timed[k] for k in before}))
'''


@pytest.mark.skipif(__import__("shutil").which("cc") is None, reason="needs a C compiler for the fake driver")
def test_time_on_device_against_a_fake_driver(tmp_path):
    import os
    import subprocess
    import sys

    # time_on_device (benchmarks/gpu.py, the bundle's check.py --bench), JIT and AOT: every argument
    # uploaded once, one warm-up call and `repeat` timed calls, every buffer freed, the kept weight
    # dropped (so the next call uploads it again).
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_cuda", "fake_libcuda.c")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libcuda.so.1"), source,
                    "-Wl,-soname,libcuda.so.1"], check=True)
    env = {**os.environ, "LD_LIBRARY_PATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", TIME_ON_DEVICE_SCRIPT, MLP, str(tmp_path / "mlp.so")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    x_bytes, w_bytes, out_bytes = 4 * 8 * 4, 8 * 16 * 4, 4 * 16 * 4
    for line in done.stdout.splitlines():
        name, rest = line.split(" ", 1)
        timed, after = eval(rest)
        kernels = timed["launches"] // 4
        assert timed["times"] == 3 and timed["launches"] == 4 * kernels and kernels >= 1, (name, timed)
        assert timed["copies"] == 2 and timed["bytes"] == x_bytes + w_bytes, (name, timed)
        assert timed["frees"] == timed["allocs"] + 1, (name, timed)  # its buffers, and the kept weight
        assert after["bytes"] == x_bytes + w_bytes + out_bytes, (name, after)  # w uploaded again
    assert [line.split()[0] for line in done.stdout.splitlines()] == ["jit", "aot"]
