"""Batching (transforms/autodiff/batching.py, GraphModule.vmap, rlx-vmap): `vmap(f)(X)` equals
stacking `f(X[i])` computed separately, for every op with a batching rule (the op cases and
shapes of test_autodiff, drawn by hypothesis, with a drawn subset of the inputs batched); the
pass; a Llama forward batched over its tokens; the errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_autodiff import CASES, _values

import rlx_mlir
from rlx_mlir import GraphModule
from rlx_mlir.dialects import rlx
from rlx_mlir.driver import Compilation
from rlx_mlir.frontend.builder import BuildError

# the inputs each case may batch (default: all); the others are shared by the batch
SHARED_ONLY = {
    "norm": [0],
    "fused_residual_norm": [0, 1],
    "fused_matmul_bias_act": [0],
    "rope": [0],
    "rope_at": [0],
    "depthwise_conv1d_causal": [0, 2],
    "dequant_matmul": [0],
    "selective_scan": [0, 1, 3, 4],
    "selective_scan_options": [0, 1, 3, 4, 6, 7],
}


def _module(build, specs):
    g = GraphModule.mir("f")
    args = [g.input(f"a{i}", shape, "i64" if kind.startswith("idx") else "f32") for i, (shape, kind) in enumerate(specs)]
    g.set_outputs(build(g, *args))
    return g


def _only(out):
    """The one output of an executable (returned bare, or as a one-element sequence)."""
    return out[0] if isinstance(out, (list, tuple)) else out


def check_vmap(build, specs, batched, size, seed=0):
    rng = np.random.default_rng(seed)
    arrays = []
    for i, spec in enumerate(specs):
        if i in batched:
            arrays.append(np.stack([_values(rng, spec) for _ in range(size)]))
        else:
            arrays.append(_values(rng, spec))
    feed = [a.astype(np.int64 if s[1].startswith("idx") else np.float32) for s, a in zip(specs, arrays)]
    single = _module(build, specs).compile()
    expected = np.stack([_only(single(*(a[b] if i in batched else a for i, a in enumerate(feed)))) for b in range(size)])
    g = _module(build, specs).vmap([f"a{i}" for i in batched], size)
    got = _only(g.compile()(*feed))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", sorted(CASES))
def test_vmap_equals_stacked_calls(case):
    strategy, make = CASES[case]

    @settings(max_examples=6, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(strategy, st.integers(1, 3), st.data())
    def run(params, size, data):
        specs, build, _, _ = make(params)
        allowed = SHARED_ONLY.get(case, list(range(len(specs))))
        if case == "gather":  # the table or the indices, not both
            allowed = [data.draw(st.sampled_from([0, 1]))]
        batched = data.draw(st.lists(st.sampled_from(allowed), min_size=1, unique=True))
        check_vmap(build, specs, sorted(batched), size, data.draw(st.integers(0, 2**16)))

    run()


@pytest.mark.parametrize("a, b, batched", [
    ((2, 3), (), [0]),            # a batched matrix, a shared scalar
    ((), (2, 3), [0]),            # a batched scalar against a shared matrix: [B] -> [B, 1, 1]
    ((3,), (2, 3), [0]),          # a batched vector broadcast over shared rows
    ((2, 1, 3), (4, 1), [1]),     # the lower-rank operand batched
    ((2, 1, 3), (4, 1), [0, 1]),
])
def test_broadcasting_operands_keep_their_alignment(a, b, batched):
    check_vmap(lambda g, x, y: x * y + y, [(list(a), "f"), (list(b), "f")], batched, 3)


@pytest.mark.parametrize("lhs, rhs, batched", [
    ((3, 4), (4, 2), [0]), ((3, 4), (4, 2), [1]), ((2, 3, 4), (4, 5), [1]), ((3, 4), (2, 4, 5), [0]),
])
def test_matmul_batches(lhs, rhs, batched):
    check_vmap(lambda g, x, y: x @ y, [(list(lhs), "f"), (list(rhs), "f")], batched, 2)


def test_rlx_vmap_pass():
    """@f_vmap batches the non-param argument by default: x [B, 3, 4], w shared."""
    text = """
    func.func @f(%x: tensor<3x4xf32> {rlx.name = "x"}, %w: tensor<4x2xf32> {rlx.name = "w", rlx.param}) -> tensor<2xf32> {
      %0 = "rlx.matmul"(%x, %w) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
      %1 = "rlx.softmax"(%0) {axis = 0 : i64} : (tensor<3x2xf32>) -> tensor<3x2xf32>
      %2 = "rlx.reduce"(%1) {axes = array<i64: 0>, keep_dim = false, kind = "max"} : (tensor<3x2xf32>) -> tensor<2xf32>
      return %2 : tensor<2xf32>
    }"""
    with Compilation() as job:
        module = job.parse(text)
        job.run(module, "builtin.module(rlx-vmap{size=5})", "rlx-vmap failed")
    exe = rlx_mlir.compile(module, entry="f_vmap")
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((5, 3, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    got = _only(exe(x, w))
    z = x.astype(np.float64) @ w
    e = np.exp(z - z.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, (e / e.sum(axis=1, keepdims=True)).max(axis=1), rtol=1e-5)


def test_llama_forward_batched_over_tokens():
    """The 2-layer Llama (gather, RMS norms, RoPE, attention, SwiGLU) batched over 3 token batches."""
    from rlx_mlir.models.llama import LlamaConfig, build_llama, random_weights

    config = LlamaConfig(layers=2, hidden=32, heads=4, kv_heads=2, head_dim=8, ffn=64, vocab=16, seq=4, batch=2)
    weights = random_weights(config, seed=0)
    tokens = np.random.default_rng(1).integers(0, config.vocab, (3, config.batch, config.seq)).astype(np.int64)
    single = build_llama(config).compile()
    expected = np.stack([_only(single(tokens=t, **weights)) for t in tokens])
    got = _only(build_llama(config).vmap(["tokens"], 3).compile()(tokens=tokens, **weights))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


# --- errors -------------------------------------------------------------------------------------


def test_error_op_without_rule():
    g = GraphModule.mir("f")
    x = g.input("x", (8,))
    y = g.named("pick", lambda: g.op(rlx.TopkOp, x, k=2))
    g.set_outputs([y])
    with pytest.raises(BuildError, match=r"loc\(\"pick\"\): 'rlx.topk' has no batching rule and reads a batched value "
                                         r"\(argument 'x'\)"):
        g.vmap(["x"], 2)
    assert _only(g.compile()(x=np.arange(8, dtype=np.float32))).shape == (2,)  # unchanged after the error


def test_error_batched_gamma_and_unknown_argument():
    g = GraphModule.mir("f")
    x, gamma = g.input("x", (2, 4)), g.input("gamma", (4,))
    g.set_outputs(g.op(rlx.RmsNormOp, x, gamma, g.constant(np.zeros(4, np.float32))))
    with pytest.raises(BuildError, match=r"'rlx.rms_norm' has no batching rule for a batched gamma / beta"):
        g.vmap(["gamma"], 2)
    with pytest.raises(BuildError, match=r"vmap: 'y' is not an argument of 'f' \(arguments: x, gamma\)"):
        g.vmap(["y"], 2)
