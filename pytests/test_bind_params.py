"""Parameters bound once: `Executable.bind_params` (rlx_mlir/runtime/bound_params.py) and the
companion packing functions of `compile(..., prepack_params=True)` (rlx-hoist-param-packing).

A bound executable is called with the runtime inputs only; the weights the GEMM kernels read as
B are packed into the kernels' column panels at bind time.  Its outputs are bit-identical to the
unbound executable's: the panels hold the same values, and each kernel sums the same products in
the same order, whether it reads B packed or in place.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir.models.generate import CachedLlama, generate
from rlx_mlir.models.llama import LlamaConfig, build_llama, random_weights
from rlx_mlir.runtime import abi, disk_cache, executable, jit

NR = 32  # the kernels' panel width (rlx-pack-matmul)


def matmul_module(m: int, k: int, n: int) -> str:
    return f"""
func.func @mm(%x: tensor<{m}x{k}xf32> {{rlx.name = "x"}}, %w: tensor<{k}x{n}xf32> {{rlx.name = "w", rlx.param}})
    -> tensor<{m}x{n}xf32> {{
  %y = "rlx.matmul"(%x, %w) : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %y : tensor<{m}x{n}xf32>
}}
"""


MLP = """
func.func @mlp(%x: tensor<300x40xf32> {rlx.name = "x"}, %w1: tensor<40x96xf32> {rlx.name = "w1", rlx.param},
               %b1: tensor<96xf32> {rlx.name = "b1", rlx.param},
               %w2: tensor<96x50xf32> {rlx.name = "w2", rlx.param}) -> tensor<300x50xf32> {
  %0 = "rlx.matmul"(%x, %w1) : (tensor<300x40xf32>, tensor<40x96xf32>) -> tensor<300x96xf32>
  %1 = "rlx.add"(%0, %b1) : (tensor<300x96xf32>, tensor<96xf32>) -> tensor<300x96xf32>
  %2 = "rlx.relu"(%1) : (tensor<300x96xf32>) -> tensor<300x96xf32>
  %3 = "rlx.matmul"(%2, %w2) : (tensor<300x96xf32>, tensor<96x50xf32>) -> tensor<300x50xf32>
  return %3 : tensor<300x50xf32>
}
"""


def arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]


def panels(w: np.ndarray) -> np.ndarray:
    """The kernels' layout, from its definition: panel p holds columns p*NR .. p*NR+NR-1 of B, row
    by row over K (K zero-padded to a multiple of 4, N to a multiple of NR)."""
    k, n = w.shape
    kp, np_ = -(-k // 4) * 4, -(-n // NR) * NR
    padded = np.zeros((kp, np_), w.dtype)
    padded[:k, :n] = w
    out = np.empty((np_ // NR, kp, NR), w.dtype)
    for p in range(np_ // NR):
        for row in range(kp):
            out[p, row] = padded[row, p * NR:(p + 1) * NR]
    return out


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(16, 60, 70), (64, 64, 128), (300, 64, 96)])
def test_bound_matmul_equals_unbound_bit_for_bit(shape, threads):
    m, k, n = shape
    exe = rlx_mlir.compile(matmul_module(m, k, n), threads=threads)
    x, w = arrays((m, k), (k, n))
    bound = exe.bind_params(w=w)
    assert bound.input_names == ["x"] and bound.bound_names == ["w"]
    np.testing.assert_array_equal(bound(x), exe(x, w))
    np.testing.assert_allclose(bound(x=x), x.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)
    # The panels the companion function packs, against the layout's definition.
    prepacked = bound.executable
    assert [p.param for p in prepacked.packed_params] == ["w"]
    np.testing.assert_array_equal(prepacked.pack_param(0, w), panels(w))


@pytest.mark.parametrize("threads", [1, 2])
def test_bound_mlp_equals_unbound_and_calls_pack_nothing(monkeypatch, threads):
    exe = rlx_mlir.compile(MLP, threads=threads)
    x, w1, b1, w2 = arrays((300, 40), (40, 96), (96,), (96, 50), seed=1)
    expected = exe(x, w1, b1, w2)
    bound = exe.bind_params(w1=w1, b1=b1, w2=w2)
    assert [p.param for p in bound.executable.packed_params] == ["w1", "w2"]
    packs = []
    real = executable._Packer.__call__
    monkeypatch.setattr(executable._Packer, "__call__", lambda self, a: packs.append(a) or real(self, a))
    out = np.empty_like(expected)
    assert bound(x, out=out) is out
    np.testing.assert_array_equal(out, expected)
    assert packs == []  # every panel was packed at bind time
    np.testing.assert_allclose(out, np.maximum(x.astype(np.float64) @ w1 + b1, 0) @ w2, rtol=1e-4, atol=1e-4)
    # A context of its own (its own arena) gives the same.
    np.testing.assert_array_equal(bound.context()(x=x), expected)


def test_bound_call_checks_only_its_own_inputs_and_threads_share_it(monkeypatch):
    """The bound arrays and panels are checked and bound once (pinned at the first call): a later
    call checks its runtime input alone.  Calls from several threads at once (one in the pinned
    context, the others in idle contexts of their own) each get their own input's result."""
    exe = rlx_mlir.compile(MLP, threads=1)
    xs = arrays(*[(300, 40)] * 4, seed=5)
    w1, b1, w2 = arrays((40, 96), (96,), (96, 50), seed=6)
    bound = exe.bind_params(w1=w1, b1=b1, w2=w2)
    expected = [exe(x, w1, b1, w2) for x in xs]
    np.testing.assert_array_equal(bound(xs[0]), expected[0])
    checked = []
    real = abi.Interface.check_argument
    monkeypatch.setattr(abi.Interface, "check_argument", lambda self, i, v: checked.append(i) or real(self, i, v))
    np.testing.assert_array_equal(bound(xs[1]), expected[1])
    assert checked == [0]  # x alone: not w1, b1, w2 nor the panels of w1 and w2
    monkeypatch.undo()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: [bound(xs[i]) for _ in range(5)], range(4)))
    for i, calls in enumerate(results):
        for result in calls:
            np.testing.assert_array_equal(result, expected[i])


def test_partial_binding_takes_the_rest_per_call_and_rebinding_replaces():
    exe = rlx_mlir.compile(MLP, threads=1)
    x, w1, b1, w2, other = arrays((300, 40), (40, 96), (96,), (96, 50), (96, 50), seed=2)
    partly = exe.bind_params(w1=w1)
    assert partly.input_names == ["x", "b1", "w2"]
    np.testing.assert_array_equal(partly(x, b1, w2), exe(x, w1, b1, w2))
    full = partly.bind_params(b1=b1, w2=w2)
    np.testing.assert_array_equal(full(x), exe(x, w1, b1, w2))
    replaced = full.bind_params(w2=other)
    np.testing.assert_array_equal(replaced(x), exe(x, w1, b1, other))
    np.testing.assert_array_equal(full(x), exe(x, w1, b1, w2))  # binding returned a new one
    # The executable compile() returned stays unbound (its compile cache may hand it to others).
    np.testing.assert_array_equal(exe(x, w1, b1, w2), full(x))
    # The prepacked variant called unbound packs per call, with the same results.
    np.testing.assert_array_equal(full.executable(x, w1, b1, w2), exe(x, w1, b1, w2))


def test_bad_bindings_and_calls_are_clear_errors():
    exe = rlx_mlir.compile(MLP, threads=1)
    x, w1, b1, w2 = arrays((300, 40), (40, 96), (96,), (96, 50))
    with pytest.raises(ValueError, match=r"bind_params: @mlp has no parameter named 'w3' \(parameters: w1, b1, w2\)"):
        exe.bind_params(w3=w1)
    with pytest.raises(ValueError, match=r"bind_params: 'x' is a runtime input of @mlp, not a parameter"):
        exe.bind_params(x=x)
    with pytest.raises(ValueError, match=r"argument 'w1' of bind_params: @mlp: expected tensor<40x96xf32> "
                                         r"\(numpy float32 \[40, 96\]\), got numpy float32 \[96, 50\]"):
        exe.bind_params(w1=w2)
    with pytest.raises(ValueError, match=r"argument 'w1' .*expected tensor<40x96xf32>.*got numpy float64"):
        exe.bind_params(w1=w1.astype(np.float64))
    bound = exe.bind_params(w1=w1, b1=b1)
    with pytest.raises(TypeError, match=r"@mlp with 2 bound parameters is missing arguments: w2"):
        bound(x)
    with pytest.raises(TypeError, match=r"@mlp with 2 bound parameters has no argument named 'w1'"):
        bound(x, w2=w2, w1=w1)


def test_llama_bound_equals_unbound_bit_for_bit():
    config = LlamaConfig(layers=2, hidden=64, heads=2, kv_heads=2, head_dim=32, ffn=96, vocab=100, seq=24)
    weights = random_weights(config, seed=0)
    tokens = np.random.default_rng(1).integers(0, config.vocab, (1, config.seq)).astype(np.int64)
    exe = build_llama(config).compile(threads=1)
    bound = exe.bind_params(**weights)
    assert bound.input_names == ["tokens"]
    # Every projection (2 layers x q, k, v, o, gate, up, down) and the LM head read bound panels.
    assert len(bound.executable.packed_params) == 2 * 7 + 1
    np.testing.assert_array_equal(bound(tokens), exe(tokens=tokens, **weights))


def test_cached_llama_binds_its_weights_once():
    config = LlamaConfig(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=97)
    weights = random_weights(config, seed=3)
    prompt = np.random.default_rng(4).integers(0, config.vocab, 20)
    bound = CachedLlama(config, weights, capacity=40, bind_params=True)
    plain = CachedLlama(config, weights, capacity=40, bind_params=False)
    assert bound.binds_params and not plain.binds_params
    np.testing.assert_array_equal(bound.forward(prompt[None, :]), plain.forward(prompt[None, :]))
    prefill = bound.step(20)
    assert prefill.input_names == ["tokens", "pos"] + [f"layers.{i}.{c}_cache" for i in range(2) for c in "kv"]
    assert len(prefill.executable.packed_params) == 2 * 7 + 1  # the prefill's GEMMs read bound panels
    bound.reset()
    plain.reset()
    np.testing.assert_array_equal(generate(bound, prompt, 8), generate(plain, prompt, 8))


def test_the_prepacked_executable_comes_back_from_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path / "cache"))
    rlx_mlir.clear_compile_cache()
    x, w1, b1, w2 = arrays((300, 40), (40, 96), (96,), (96, 50))
    compiled = rlx_mlir.compile(MLP, threads=1, prepack_params=True)
    expected = compiled.bind_params(w1=w1, b1=b1, w2=w2)(x)
    rlx_mlir.clear_compile_cache()
    compiles = []
    real = jit.compile_text
    monkeypatch.setattr(jit, "compile_text", lambda *a, **k: compiles.append(a) or real(*a, **k))
    loaded = rlx_mlir.compile(MLP, threads=1, prepack_params=True)
    assert compiles == [] and loaded is not compiled
    assert loaded.packed_params == compiled.packed_params
    np.testing.assert_array_equal(loaded.bind_params(w1=w1, b1=b1, w2=w2)(x), expected)
    np.testing.assert_array_equal(loaded(x, w1, b1, w2), expected)
    rlx_mlir.clear_compile_cache()


def test_cached_llama_binds_only_steps_with_enough_tokens():
    """By default a step binds from BIND_MIN_TOKENS new tokens on (where an unbound step packs per
    call); `bind_params=N` moves the threshold; the other steps take the weights per call."""
    from rlx_mlir.models.generate import BIND_MIN_TOKENS

    config = LlamaConfig(layers=1, hidden=32, heads=2, kv_heads=2, head_dim=16, ffn=64, vocab=50)
    weights = random_weights(config, seed=5)
    prompt = np.random.default_rng(6).integers(0, config.vocab, 6)
    default = CachedLlama(config, weights, capacity=16)
    assert default.bind_min_tokens == BIND_MIN_TOKENS == 256
    from_six = CachedLlama(config, weights, capacity=16, bind_params=6)
    np.testing.assert_array_equal(generate(default, prompt, 3), generate(from_six, prompt, 3))
    assert "layers.0.q" in default.step(6).input_names  # unbound: weights per call
    assert from_six.step(6).input_names[:2] == ["tokens", "pos"] and "layers.0.q" not in from_six.step(6).input_names
    assert "layers.0.q" in from_six.step(1).input_names  # the decode step stays unbound
    with pytest.raises(ValueError, match="bind_params must be True, False or a positive number of tokens, got 0"):
        CachedLlama(config, weights, capacity=16, bind_params=0)


PAGE_FAULTS = """
import resource
import numpy as np
import rlx_mlir
t = "tensor<1x1024x512xf32>"
exe = rlx_mlir.compile(f'''
func.func @f(%x: {t} {{rlx.name = "x"}}, %w: tensor<512x512xf32> {{rlx.name = "w", rlx.param}}) -> {t} {{
  %q = "rlx.matmul"(%x, %w) : ({t}, tensor<512x512xf32>) -> {t}
  %0 = "rlx.attention"(%q, %x, %x) {{num_heads = 8 : i64, head_dim = 64 : i64, mask_kind = "causal"}} : ({t}, {t}, {t}) -> {t}
  return %0 : {t}
}}''', threads=1)
rng = np.random.default_rng(0)
x, w = rng.standard_normal((1, 1024, 512)).astype(np.float32), rng.standard_normal((512, 512)).astype(np.float32)
bound = exe.bind_params(w=w)
for _ in range(3):
    bound(x)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    bound(x)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc and ru_minflt")
def test_a_bound_executable_reuses_its_temporaries_without_page_faults():
    # The tiled attention packs K and V per call (2 x 2 MiB): glibc by default maps such blocks
    # afresh or trims them off its heap, and each call faulted ~2,000 pages in (8 MiB); binding
    # asks malloc to keep freed memory.  A fresh process, so nothing else has asked it before.
    result = subprocess.run([sys.executable, "-c", PAGE_FAULTS], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert float(result.stdout.split()[-1]) < 100  # page faults per call, after 3 calls


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("shape", [(64, 2047, 40), (64, 2048, 64), (9, 2049, 33), (128, 2052, 70), (300, 2056, 64),
                                   (64, 4099, 32), (64, 1, 64), (257, 5, 31)])
def test_bound_panels_around_the_2048_k_block(shape, threads):
    """Bound panels take K blocks up to 2048 (and a prefetch of the next panel): K just below, at and
    above 2048, a K that no block divides (2052 = 4 * 513, 4099 prime), tiny K, and M above one
    cache block of rows (300, where KC stays 1024).  Bound equals unbound bit for bit, and float64 numpy."""
    m, k, n = shape
    exe = rlx_mlir.compile(matmul_module(m, k, n), threads=threads, cache=False)
    x, w = arrays((m, k), (k, n), seed=k)
    unbound = exe(x, w)
    np.testing.assert_allclose(unbound, x.astype(np.float64) @ w, rtol=0, atol=1e-5 * k)
    np.testing.assert_array_equal(exe.bind_params(w=w)(x), unbound)
