"""`rlx.dequant_matmul {activations = "q8"}` (q4_k): 8-bit activations, integer dot products.

The reference follows the op's documented semantics (dialect/rlx.md), in numpy float64, from
`gguf.quants.dequantize` (llama.cpp's own decoder): x rounded per row and block of 256 to
`q = roundeven(x * 127 / amax)`, standing for `q * amax / 127`; the codes' part of the weight
(`W - W0`, where `W0` decodes the same blocks with every nibble 0, i.e. `-dmin * m`) meets that
rounded x, the mins' part `W0` the exact x.  Both kernels are checked: AVX-512 VNNI's `vpdpbusd`
(where this CPU has it) and the portable vector code.
"""

from __future__ import annotations

import numpy as np
import pytest

from rlx_mlir import GraphModule, quant
from rlx_mlir.ir.diagnostics import CompileError
from rlx_mlir.transforms.linalg import x86_byte_dot

gguf = pytest.importorskip("gguf")
Q4_K = gguf.GGMLQuantizationType.Q4_K


def q8_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    m, k = x.shape
    blocks = x.reshape(m, k // 256, 256)
    amax = np.abs(blocks).max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        inverse = np.where(amax > 0, np.float32(127) / amax, np.float32(0)).astype(np.float32)
    q = np.clip(np.rint(blocks * inverse), -127, 127)
    x_q = (q * (amax.astype(np.float64) / 127)).reshape(m, k)
    weight = gguf.quants.dequantize(w, Q4_K).astype(np.float64)
    no_codes = w.reshape(w.shape[0], -1, 144).copy()
    no_codes[:, :, 16:] = 0
    mins = gguf.quants.dequantize(no_codes.reshape(w.shape), Q4_K).astype(np.float64)
    return x_q @ (weight - mins).T + x.astype(np.float64) @ mins.T


def _weight(n: int, k: int, rng) -> np.ndarray:
    return quant.quantize(rng.standard_normal((n, k)).astype(np.float32), "q4_k")


def _compile(m: int, k: int, n: int, activations, hir: bool = False):
    g = GraphModule.hir("q8") if hir else GraphModule.mir("q8")
    x, w = g.input("x", (m, k)), g.param("w", (n, k // 256 * 144), "u8")
    if hir:
        g.set_outputs(g.dequant_linear(x, w, "q4_k", activations=activations))
    else:
        g.set_outputs(g.dequant_matmul(x, w, "q4_k", activations=activations))
    return g.compile(cache=False)


KERNELS = ["vnni", "portable"]


@pytest.fixture(params=KERNELS)
def kernel(request, monkeypatch):
    if request.param == "vnni":
        if not x86_byte_dot.host_has_vnni():
            pytest.skip("this CPU has no AVX-512 VNNI")
    else:
        monkeypatch.setattr(x86_byte_dot, "host_has_vnni", lambda: False)
    return request.param


# (3, 512, 67): a prime N with 3 rows of x, whole 64-row panels and a panel of the 3 rows left.
@pytest.mark.parametrize("m, k, n", [(1, 256, 7), (1, 1024, 72), (3, 512, 13), (8, 1024, 72), (3, 512, 67)])
def test_q8_activations_match_the_documented_rounding(kernel, m, k, n):
    rng = np.random.default_rng([m, k, n])
    w = _weight(n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32) * np.float32(3)
    if k > 256:
        x[0, :256] = 0.0  # an all-zero block: q = 0, its scale 0
        x[-1, -256:] *= np.float32(1e-3)  # a block of small values keeps its own scale
    out = _compile(m, k, n, "q8")(x=x, w=w)
    expected = q8_reference(x, w)
    # f32 rounding of the scales and sums; the rounding of x itself is in the reference
    bound = (np.abs(x).astype(np.float64) @ np.abs(gguf.quants.dequantize(w, Q4_K)).T) * (k * np.finfo(np.float32).eps) + 1e-30
    np.testing.assert_array_less(np.abs(out - expected), bound, err_msg=f"{kernel} M={m} K={k} N={n}")
    # and it is not the exact product: the activations were rounded
    exact = x.astype(np.float64) @ gguf.quants.dequantize(w, Q4_K).astype(np.float64).T
    assert np.abs(out - exact).max() > 1e-4 * np.abs(exact).max()


def test_hir_dequant_linear_passes_activations_on():
    rng = np.random.default_rng(5)
    w = _weight(9, 512, rng)
    x = rng.standard_normal((2, 512)).astype(np.float32)
    out = _compile(2, 512, 9, "q8", hir=True)(x=x, w=w)
    np.testing.assert_allclose(out, q8_reference(x, w), rtol=1e-4, atol=1e-4)
    exact = _compile(2, 512, 9, None, hir=True)(x=x, w=w)
    np.testing.assert_allclose(exact, x.astype(np.float64) @ gguf.quants.dequantize(w, Q4_K).T, rtol=1e-4, atol=1e-4)


def test_f32_activations_are_the_default():
    rng = np.random.default_rng(6)
    w = _weight(5, 256, rng)
    x = rng.standard_normal((1, 256)).astype(np.float32)
    explicit, default = _compile(1, 256, 5, "f32")(x=x, w=w), _compile(1, 256, 5, None)(x=x, w=w)
    np.testing.assert_array_equal(explicit, default)


def test_q8_activations_only_for_q4_k():
    g = GraphModule.mir("bad")
    x, w = g.input("x", (1, 64)), g.param("w", (5, 68), "u8")
    with pytest.raises((CompileError, ValueError), match="activations = \"q8\" .* scheme 'q4_k' only, got scheme 'q8_0'"):
        g.set_outputs(g.dequant_matmul(x, w, "q8_0", activations="q8"))
        g.compile()


# ----------------------------------------------------------------------------- in the Llama model

def test_llama_quant_activations_reach_the_q4_k_projections_only():
    import dataclasses
    import re

    from rlx_mlir.models.llama import LlamaConfig, build_llama

    config = LlamaConfig(layers=1, hidden=256, heads=4, kv_heads=2, head_dim=64, ffn=256, vocab=97,
                         quant={"layers.0.q": "q4_k", "layers.0.down": "q8_0", "lm_head": "q4_k"}, quant_activations="q8")
    mir = str(build_llama(config).lower().module)
    assert len(re.findall(r"rlx\.dequant_matmul", mir)) == 3
    assert len(re.findall(r'activations = "q8"', mir)) == 2  # q and the LM head; q8_0 has no such kernel
    default = str(build_llama(dataclasses.replace(config, quant_activations="f32")).lower().module)
    assert "activations" not in default
    with pytest.raises(ValueError, match="quant_activations must be one of 'f32', 'q8', got 'int8'"):
        dataclasses.replace(config, quant_activations="int8")


def test_llama_with_q8_activations_stays_near_the_exact_model():
    """The whole model on 8-bit activations: logits within a few percent of the f32 model with the
    dequantised weights (llama.cpp's own gap is about 1%), and not equal to them."""
    from rlx_mlir.models.llama import LlamaConfig, build_llama, dequantize_weights, random_weights

    config = LlamaConfig(layers=1, hidden=256, heads=4, kv_heads=2, head_dim=64, ffn=256, vocab=97, seq=5,
                         quant="q4_k", quant_activations="q8")
    weights = random_weights(config, seed=3)
    tokens = np.array([[1, 5, 9, 2, 7]], np.int64)
    got = build_llama(config).compile()(tokens=tokens, **weights)
    dense = LlamaConfig(layers=1, hidden=256, heads=4, kv_heads=2, head_dim=64, ffn=256, vocab=97, seq=5)
    want = build_llama(dense).compile()(tokens=tokens, **dequantize_weights(config, weights))
    gap = np.abs(got - want).max() / np.ptp(want)
    assert 0 < gap < 0.05, gap


@pytest.mark.parametrize("cpu, expect_vnni", [(None, False), ("native", True)])
def test_ahead_of_time_code_uses_vnni_only_when_built_for_this_cpu(tmp_path, cpu, expect_vnni):
    """A library for a generic x86-64 must not carry this machine's AVX-512 VNNI instructions (LLVM
    cannot select them there); one built for `-mcpu=native` may."""
    from rlx_mlir import aot

    if expect_vnni and not x86_byte_dot.host_has_vnni():
        pytest.skip("this CPU has no AVX-512 VNNI")
    g = GraphModule.mir("q8")
    x, w = g.input("x", (1, 256)), g.param("w", (8, 144), "u8")
    g.set_outputs(g.dequant_matmul(x, w, "q4_k", activations="q8"))
    path = tmp_path / "q8.mlir"
    aot.export(g.module, path, emit="mlir-llvm", cpu=cpu)
    assert (x86_byte_dot.VPDPBUSD in path.read_text()) == expect_vnni
