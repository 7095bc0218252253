"""The GraphModule builder: construction, errors at the call, named blocks, stages, text, compile."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir import GraphModule
from rlx_mlir.dialects import rlx
from rlx_mlir.frontend.builder import BuildError


def _mlp(g: GraphModule):
    x = g.input("x", (4, 8))
    w = g.param("w", (8, 16))
    b = g.param("b", (16,))
    return g.named("ffn", lambda: g.linear(x, w, b, activation="relu"))


def test_define_builds_compiles_and_runs():
    g = GraphModule.define("mlp", _mlp)
    assert g.stage == "hir" and g.fusion_policy == "direct"
    exe = g.compile()
    assert isinstance(exe, rlx_mlir.Executable)
    assert [(s.name, s.is_param) for s in exe.signature.inputs] == [("x", False), ("w", True), ("b", True)]
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (8, 16), (16,)))
    np.testing.assert_allclose(exe(x=x, w=w, b=b), np.maximum(x.astype(np.float64) @ w + b, 0), rtol=1e-5, atol=1e-6)


def test_text_is_accepted_by_rlx_opt_and_compile():
    g = GraphModule.define("mlp", _mlp)
    text = str(g)
    assert '"rlx_hir.linear"' in text and 'rlx.name = "x"' in text and "rlx.param" in text
    done = subprocess.run(
        [sys.executable, "-m", "rlx_mlir.tools.opt", "-", "--rlx-hir-to-mir"], input=text, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert '"rlx.fused_matmul_bias_act"' in done.stdout
    assert rlx_mlir.compile(text, entry="mlp").input_names == ["x", "w", "b"]


def test_shape_errors_raise_at_the_call_naming_block_and_shapes():
    g = GraphModule.hir("bad")
    x = g.input("x", (4, 8))
    w = g.param("w", (9, 16))
    with pytest.raises(BuildError, match=r"block 'layers.0/ffn': .*\[4, 8\].*\[9, 16\]"):
        g.named("layers.0", lambda: g.named("ffn", lambda: g.linear(x, w)))


def test_dtype_errors_raise_at_the_call():
    g = GraphModule.hir("bad")
    x = g.input("x", (4, 8), "f16")
    w = g.param("w", (8, 16))
    with pytest.raises(BuildError, match="one element type, got f16, f32"):
        g.linear(x, w)


def test_out_shape_is_checked_when_given():
    g = GraphModule.hir("m")
    x = g.input("x", (4, 8))
    w = g.param("w", (8, 16))
    assert g.linear(x, w, out_shape=(4, 16)).shape == (4, 16)
    with pytest.raises(BuildError, match=r"gives shape \[4, 16\], but out_shape is \[4, 15\]"):
        g.linear(x, w, out_shape=(4, 15))


def test_named_blocks_reach_mir_ops_and_inspect():
    g = GraphModule.define("mlp", _mlp)
    assert "rlx_hir.linear" in g.inspect() and "@ ffn" in g.inspect()
    g.lower()
    assert g.stage == "mir"
    summary = g.inspect()
    assert "rlx.fused_matmul_bias_act" in summary and "@ ffn" in summary
    assert 'loc("ffn")' in g.text(locations=True)


def test_fusable_policy_emits_primitive_chains():
    g = GraphModule.define("mlp", _mlp, policy="fusable").lower()
    ops = g.inspect()
    assert "rlx.matmul" in ops and "rlx.add" in ops and "rlx.relu" in ops
    assert "fused" not in ops.split("op counts")[1].split("fused ops")[0]


def test_escape_hatch_and_tensor_operators():
    g = GraphModule.hir("mix")
    x = g.input("x", (2, 3))
    y = g.op(rlx.SoftmaxOp, x * x - x, axis=-1)
    g.set_outputs([y, -x])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    soft, neg = g.compile()(a)
    z = a * a - a
    np.testing.assert_allclose(soft, np.exp(z - z.max(-1, keepdims=True)) / np.exp(z - z.max(-1, keepdims=True)).sum(-1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(neg, -a)


@pytest.mark.parametrize(
    "name, shape, message",
    [
        ("x", (True, 4), r"argument 'x': shape \[True, 4\] has the bool True as a dimension"),
        ("x", ("BATCH", False), r"argument 'x': shape \['BATCH', False\] has the bool False as a dimension"),
        ("", (2, 4), r"an argument name must be a non-empty string, got ''"),
        (" ", (2, 4), r"an argument name must be a non-empty string, got ' '"),
        (None, (2, 4), r"an argument name must be a non-empty string, got None"),
        ("x", 4, r"argument 'x': the shape must be a sequence of dimensions, got 4"),
        ("x", ("(" * 500 + "BATCH" + ")" * 500,), r"argument 'x': .* is too deep: it nests more than 100"),
        ("x", ("BATCH // 0",), r"argument 'x': .*division by zero in 'BATCH // 0'"),
    ],
)
def test_bad_arguments_are_refused_with_the_reason(name, shape, message):
    g = GraphModule.hir("f")
    with pytest.raises(BuildError, match=message):
        g.input(name, shape)
    assert g._names == []  # nothing was added


@pytest.mark.parametrize("stage", ["hir", "mir"])
@pytest.mark.parametrize("step", ["plan", "optimize"])
def test_steps_before_set_outputs_say_to_call_it(stage, step):
    """Not MLIR's "block with no terminator": the module has no outputs yet."""
    g = getattr(GraphModule, stage)("f")
    x = g.input("x", (2, 4))
    _ = x + x
    with pytest.raises(BuildError, match=rf"GraphModule 'f' has no outputs yet: call set_outputs before {step}\(\)"):
        getattr(g, step)()


def test_shared_linear_pair_returns_two_tensors():
    g = GraphModule.hir("pair")
    x = g.input("x", (3, 8))
    first, second = g.shared_linear_pair(x, g.param("a", (8, 4)), g.param("b", (8, 5)))
    assert first.shape == (3, 4) and second.shape == (3, 5)


def test_misuse_is_reported_clearly():
    g = GraphModule.mir("m")
    x = g.input("x", (2,))
    with pytest.raises(BuildError, match="already exists"):
        g.input("x", (2,))
    with pytest.raises(BuildError, match="is an HIR block; this module is at stage 'mir'"):
        g.rms_norm(x, x, x)
    other = GraphModule.mir("other").input("y", (2,))
    with pytest.raises(BuildError, match="belongs to another GraphModule"):
        g.op(rlx.AddOp, x, other)
    with pytest.raises(BuildError, match="call set_outputs before compile"):
        g.compile()
    g.set_outputs(x)
    with pytest.raises(BuildError, match="is finished"):
        g.input("z", (2,))
    with pytest.raises(ValueError, match="unknown fusion policy 'eager'"):
        GraphModule.hir("p", policy="eager")


def test_constants_are_copied_into_the_module():
    g = GraphModule.mir("c")
    x = g.input("x", (3,))
    table = np.array([1.5, -2.0, 4.0], np.float32)
    g.set_outputs(x + g.constant(table))
    table[:] = 0  # the module holds its own copy
    np.testing.assert_array_equal(g.compile()(np.ones(3, np.float32)), [2.5, -1.0, 5.0])
