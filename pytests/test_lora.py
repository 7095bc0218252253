"""LoRA adapters: `rlx.lora_matmul`, `rlx_hir.lora_linear`, `GraphModule.attach_lora` / `freeze`
and the pass `rlx-merge-lora`.

The reference is the op's documented meaning written plainly in float64 numpy:
`x @ w + scale * (x @ a) @ b`, which equals `x @ (w + scale * a @ b)`.
"""

from __future__ import annotations

import numpy as np
import pytest

from rlx_mlir import GraphModule
from rlx_mlir.dialects import rlx, rlx_hir
from rlx_mlir.driver import Compilation
from rlx_mlir.frontend.builder import BuildError
from rlx_mlir.ir.walk import collect_ops
from rlx_mlir.passmanager.registry import PASSES
from rlx_mlir.transforms.mir import fusion_report


def _random(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def reference(x, w, a, b, scale):
    """`x @ w + scale * (x @ a) @ b` in float64, and a bound on f32 rounding of its sums."""
    x, w, a, b = (t.astype(np.float64) for t in (x, w, a, b))
    k = x.shape[-1]
    value = x @ w + scale * ((x @ a) @ b)
    bound = (np.abs(x) @ np.abs(w) + abs(scale) * (np.abs(x) @ np.abs(a)) @ np.abs(b)) * (k + a.shape[1]) * 2**-23
    return value, bound + 1e-30


def _mir_lora(x_shape, k, n, r, scale, dtype="f32"):
    g = GraphModule.mir("lora")
    x = g.input("x", x_shape, dtype)
    w, a, b = g.param("w", (k, n), dtype), g.param("a", (k, r), dtype), g.param("b", (r, n), dtype)
    g.set_outputs(g.lora_matmul(x, w, a, b, scale))
    return g


# Shapes around the GEMM kernel's blocking (MR = 8 rows, NR = 32 columns, KR = 4): packed and
# unpacked B, padding of every dimension, rank 1, batch dims folded into M, the benchmark's M.
SHAPES = [
    ((3, 5), 5, 7, 1),
    ((2, 3, 64), 64, 32, 4),
    ((2, 1, 3, 40), 40, 33, 3),
    ((128, 256), 256, 96, 16),
    ((9, 130), 130, 70, 8),
]


@pytest.mark.parametrize("x_shape, k, n, r", SHAPES)
def test_lora_matmul_numerics(x_shape, k, n, r):
    rng = np.random.default_rng(len(x_shape) * 1000 + k)
    x, w, a, b = _random(rng, *x_shape), _random(rng, k, n), _random(rng, k, r), _random(rng, r, n)
    scale = 0.75
    got = _mir_lora(x_shape, k, n, r, scale).compile()(x=x, w=w, a=a, b=b)
    want, bound = reference(x, w, a, b, scale)
    assert got.shape == want.shape
    assert (np.abs(got - want) <= bound).all(), np.abs(got - want).max()
    # the adapter matters: the base product alone is far off
    assert np.abs(x.astype(np.float64) @ w - want).max() > 1.0


@pytest.mark.parametrize("options", [{"plan": False}, {"matmul_kernels": False}, {"threads": 1}, {"threads": 2}])
def test_lora_matmul_under_every_pipeline_setting(options):
    """The lowering's accumulator chain survives the direct path, the scalar loops (no GEMM
    kernels) and threads; the product feeds an elementwise op that may fuse with it."""
    rng = np.random.default_rng(21)
    m, k, n, r = 72, 96, 80, 5
    g = GraphModule.mir("lora")
    x, w, a, b = g.input("x", (m, k)), g.param("w", (k, n)), g.param("a", (k, r)), g.param("b", (r, n))
    g.set_outputs(g.op(rlx.ReluOp, g.lora_matmul(x, w, a, b, -1.5)))
    arrays = {"x": _random(rng, m, k), "w": _random(rng, k, n), "a": _random(rng, k, r), "b": _random(rng, r, n)}
    got = g.compile(**options)(**arrays)
    want, bound = reference(arrays["x"], arrays["w"], arrays["a"], arrays["b"], -1.5)
    assert (np.abs(got - np.maximum(want, 0)) <= bound).all()


@pytest.mark.parametrize("m, k, n, r", [(3, 8, 4, 0), (3, 0, 4, 2), (0, 8, 4, 2)])
def test_lora_matmul_zero_sizes(m, k, n, r):
    """Rank 0 is the base product, K = 0 gives zeros, M = 0 an empty result."""
    rng = np.random.default_rng(4)
    x, w, a, b = _random(rng, m, k), _random(rng, k, n), _random(rng, k, r), _random(rng, r, n)
    got = _mir_lora((m, k), k, n, r, 0.5).compile()(x=x, w=w, a=a, b=b)
    want, bound = reference(x, w, a, b, 0.5)
    assert got.shape == (m, n) and (np.abs(got - want) <= bound).all()


def test_lora_matmul_scale_zero_is_the_base_product_and_negative_scale_subtracts():
    rng = np.random.default_rng(7)
    x, w, a, b = _random(rng, 4, 16), _random(rng, 16, 8), _random(rng, 16, 2), _random(rng, 2, 8)
    for scale in (0.0, -2.0):
        got = _mir_lora((4, 16), 16, 8, 2, scale).compile()(x=x, w=w, a=a, b=b)
        want, bound = reference(x, w, a, b, scale)
        assert (np.abs(got - want) <= bound).all()


def test_lora_matmul_f16_accumulates_in_f32_and_rounds_once():
    rng = np.random.default_rng(3)
    x, w, a, b = (_random(rng, *s, dtype=np.float16) for s in ((6, 48), (48, 40), (48, 4), (4, 40)))
    got = _mir_lora((6, 48), 48, 40, 4, 0.5, "f16").compile()(x=x, w=w, a=a, b=b)
    assert got.dtype == np.float16
    want, bound = reference(x, w, a, b, 0.5)
    # one rounding to f16 (half an ulp of f16) on top of the f32 sums
    assert (np.abs(got.astype(np.float64) - want) <= bound + np.abs(want) * 2**-11 + 2**-24).all()


def test_lora_matmul_builder_errors_name_the_dimension():
    g = GraphModule.mir("bad")
    x, w = g.input("x", (3, 16)), g.param("w", (16, 8))
    with pytest.raises(BuildError, match=r"adapter ranks differ: a \[16, 4\] has r = 4, b \[2, 8\] has r = 2"):
        g.lora_matmul(x, w, g.param("a", (16, 4)), g.param("b", (2, 8)), 1.0)
    with pytest.raises(BuildError, match=r"contracting dimensions differ: x \[3, 16\] has K = 16, a \[15, 2\] has K = 15"):
        g.lora_matmul(x, w, g.param("a2", (15, 2)), g.param("b2", (2, 8)), 1.0)
    with pytest.raises(BuildError, match=r"output dimensions differ: w \[16, 8\] has N = 8, b \[2, 9\] has N = 9"):
        g.lora_matmul(x, w, g.param("a3", (16, 2)), g.param("b3", (2, 9)), 1.0)


@pytest.mark.parametrize("policy", ["direct", "fusable"])
def test_lora_linear_equals_linear_with_the_merged_weight(policy):
    """`lora_linear(x, w, a, b) == x @ (w + scale * a @ b) + bias`, activation applied, rank-1 x too."""
    rng = np.random.default_rng(11)
    k, n, r, scale = 24, 20, 3, 0.4
    g = GraphModule.hir("lin", policy=policy)
    x, v = g.input("x", (2, 5, k)), g.input("v", (k,))
    w, a, b, bias = g.param("w", (k, n)), g.param("a", (k, r)), g.param("b", (r, n)), g.param("bias", (n,))
    g.set_outputs([g.lora_linear(x, w, a, b, scale, bias=bias, activation="relu"), g.lora_linear(v, w, a, b, scale)])
    arrays = {"x": _random(rng, 2, 5, k), "v": _random(rng, k), "w": _random(rng, k, n), "a": _random(rng, k, r),
              "b": _random(rng, r, n), "bias": _random(rng, n)}
    got, got_v = g.compile()(**arrays)
    merged = arrays["w"].astype(np.float64) + scale * arrays["a"].astype(np.float64) @ arrays["b"]
    np.testing.assert_allclose(got, np.maximum(arrays["x"] @ merged + arrays["bias"], 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_v, arrays["v"] @ merged, rtol=1e-5, atol=1e-5)


def _linear_model():
    g = GraphModule.hir("mlp")
    x = g.input("x", (4, 32))
    w1, b1, w2 = g.param("w1", (32, 48)), g.param("b1", (48,)), g.param("w2", (48, 16))
    g.set_outputs(g.linear(g.linear(x, w1, b1, activation="silu"), w2))
    return g


def test_attach_lora_adds_an_adapter_to_an_existing_linear():
    rng = np.random.default_rng(5)
    g = _linear_model()
    a, b = g.attach_lora("w1", rank=4, scale=2.0)
    assert (a.shape, b.shape) == ((32, 4), (4, 48))
    loras = collect_ops(g.module.operation, rlx_hir.LoraLinearOp)
    assert len(loras) == 1 and loras[0].activation == "silu" and loras[0].bias is not None
    assert len(collect_ops(g.module.operation, rlx_hir.LinearOp)) == 1  # w2's linear is unchanged
    arrays = {"x": _random(rng, 4, 32), "w1": _random(rng, 32, 48), "b1": _random(rng, 48), "w2": _random(rng, 48, 16),
              "w1.lora_a": _random(rng, 32, 4), "w1.lora_b": _random(rng, 4, 48)}
    got = g.compile()(**arrays)
    w1 = arrays["w1"].astype(np.float64) + 2.0 * arrays["w1.lora_a"].astype(np.float64) @ arrays["w1.lora_b"]
    h = arrays["x"] @ w1 + arrays["b1"]
    want = (h / (1 + np.exp(-h))) @ arrays["w2"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_attach_lora_errors():
    g = _linear_model()
    with pytest.raises(BuildError, match="no argument named 'w3'"):
        g.attach_lora("w3", rank=4)
    with pytest.raises(BuildError, match="rank must be a positive integer, got 0"):
        g.attach_lora("w1", rank=0)
    with pytest.raises(BuildError, match=r"weight 'x' is used by no rlx_hir.linear \(it is used by rlx_hir.linear\)"):
        g.attach_lora("x", rank=2)
    open_module = GraphModule.hir("open")
    open_module.linear(open_module.input("x", (2, 4)), open_module.param("w", (4, 4)))
    with pytest.raises(BuildError, match="call set_outputs before attach_lora"):
        open_module.attach_lora("w", rank=2)
    g.lower()
    with pytest.raises(BuildError, match="this module is at stage 'mir'"):
        g.attach_lora("w1", rank=2)


def test_attach_lora_to_a_model_built_without_adapters():
    """The Llama builder knows nothing of adapters; its LM head gets one afterwards."""
    from rlx_mlir.models.llama import LlamaConfig, build_llama, random_weights

    config = LlamaConfig(layers=1, hidden=32, heads=2, kv_heads=1, head_dim=16, ffn=64, vocab=40, seq=5)
    weights = random_weights(config, seed=1)
    rng = np.random.default_rng(2)
    a, b = _random(rng, 32, 4), _random(rng, 4, 40)
    tokens = rng.integers(0, config.vocab, size=(1, 5))
    g = build_llama(config)
    g.attach_lora("lm_head", rank=4, scale=0.5)
    adapted = g.compile()(tokens=tokens, **weights, **{"lm_head.lora_a": a, "lm_head.lora_b": b})
    merged = dict(weights, lm_head=(weights["lm_head"] + 0.5 * a.astype(np.float64) @ b).astype(np.float32))
    plain = build_llama(config).compile()(tokens=tokens, **merged)
    np.testing.assert_allclose(adapted, plain, rtol=1e-4, atol=1e-4)
    assert np.abs(adapted - build_llama(config).compile()(tokens=tokens, **weights)).max() > 1e-2


def _merge(g: GraphModule):
    with Compilation(g.context) as job, fusion_report.collect() as report:
        job.run(g.module, PASSES["rlx-merge-lora"](), "rlx-merge-lora failed")
    return report


def test_merge_lora_of_frozen_parameters_is_numerically_equal():
    rng = np.random.default_rng(9)
    k, n, r, scale = 64, 48, 8, 0.25
    arrays = {"w": _random(rng, k, n), "a": _random(rng, k, r), "b": _random(rng, r, n)}
    x = _random(rng, 2, 6, k)
    unmerged = _mir_lora((2, 6, k), k, n, r, scale).compile()(x=x, **arrays)
    g = _mir_lora((2, 6, k), k, n, r, scale).freeze(arrays)
    report = _merge(g)
    assert [f.result for f in report.fused] == ["rlx.matmul"]
    assert not collect_ops(g.module.operation, rlx.LoraMatmulOp)
    assert len(collect_ops(g.module.operation, rlx.MatmulOp)) == 1
    assert len(collect_ops(g.module.operation, rlx.ConstantOp)) == 1  # w, a and b are gone
    merged = g.compile()(x=x)
    want, bound = reference(x, arrays["w"], arrays["a"], arrays["b"], scale)
    assert (np.abs(merged - want) <= bound).all()
    assert (np.abs(merged - unmerged) <= 2 * bound).all()


def test_merge_lora_leaves_an_adapter_in_parameters_and_says_why():
    g = _mir_lora((3, 16), 16, 8, 2, 1.0)
    g.freeze({"w": np.ones((16, 8), np.float32), "a": np.ones((16, 2), np.float32)})
    report = _merge(g)
    assert len(collect_ops(g.module.operation, rlx.LoraMatmulOp)) == 1
    assert [m.reason for m in report.missed] == ["b is not a constant (the adapter is not frozen)"]


def test_freeze_errors():
    g = _mir_lora((3, 16), 16, 8, 2, 1.0)
    with pytest.raises(BuildError, match="'x' is an input, not a parameter"):
        g.freeze({"x": np.ones((3, 16))})
    with pytest.raises(BuildError, match=r"parameter 'w' has shape \[16, 8\], the array \[8, 16\]"):
        g.freeze({"w": np.ones((8, 16))})
    with pytest.raises(BuildError, match="no argument named 'q'"):
        g.freeze({"q": np.ones(3)})
