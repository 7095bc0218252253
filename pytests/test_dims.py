"""Symbolic dimensions: expressions, the builder on symbolic shapes, binding, and
compile-once / specialise-at-run-time, with the 2-layer Llama-style model dynamic in
BATCH and SEQ checked against the plain numpy forward of test_llama."""

from __future__ import annotations

import numpy as np
import pytest
from test_llama import CONFIG, reference_forward

import rlx_mlir
from rlx_mlir import GraphModule
from rlx_mlir.dialects import rlx
from rlx_mlir.dims.expr import DimExprError, as_dim, parse_dim
from rlx_mlir.dims.variants import ModelVariant
from rlx_mlir.frontend.builder import BuildError
from rlx_mlir.models.llama import build_llama, random_weights
from rlx_mlir.runtime.specialize import SpecializingExecutable

# --- the expression language ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text, binding, value",
    [
        ("BATCH*SEQ", {"BATCH": 3, "SEQ": 7}, 21),
        ("PAST_SEQ + SEQ", {"PAST_SEQ": 64, "SEQ": 1}, 65),
        ("2 + 3 * SEQ", {"SEQ": 4}, 14),  # * binds tighter
        ("(2 + 3) * SEQ", {"SEQ": 4}, 20),
        ("SEQ - 1 - 1", {"SEQ": 5}, 3),  # left-associative
        ("SEQ // 2 * 2", {"SEQ": 7}, 6),
        ("ROWS // (BATCH)", {"ROWS": 12, "BATCH": 4}, 3),
    ],
)
def test_expressions_evaluate(text, binding, value):
    assert parse_dim(text).evaluate(binding) == value


def test_expressions_print_back_to_what_they_mean():
    for text in ["BATCH*SEQ", "SEQ - (PAST_SEQ - 1)", "(SEQ + 1)*2", "SEQ//2"]:
        expr = parse_dim(text)
        again = parse_dim(str(expr))
        for seq, past in [(5, 3), (17, 2)]:
            binding = {"BATCH": 2, "SEQ": seq, "PAST_SEQ": past}
            assert again.evaluate(binding) == expr.evaluate(binding)
    assert str(parse_dim("SEQ - (PAST_SEQ - 1)")) == "SEQ - (PAST_SEQ - 1)"


def test_substitution_leaves_what_is_unbound():
    expr = parse_dim("BATCH*SEQ + 1")
    assert expr.substitute({"BATCH": 2, "SEQ": 3}) == 7
    partial = expr.substitute({"BATCH": 2})
    assert partial.symbols == {"SEQ"} and partial.evaluate({"SEQ": 5}) == 11
    assert as_dim("12") == 12 and as_dim(4) == 4


@pytest.mark.parametrize(
    "text, message",
    [
        ("SEQ +", "ends early"),
        ("SEQ $ 2", "at column 5"),
        ("(SEQ", "missing '\\)'"),
        ("SEQ SEQ", "unexpected 'SEQ'"),
        ("", "empty"),
    ],
)
def test_bad_expressions_say_why(text, message):
    with pytest.raises(DimExprError, match=message):
        parse_dim(text)


def test_unbound_symbols_and_division_by_zero():
    with pytest.raises(DimExprError, match="symbol 'SEQ' is not bound"):
        parse_dim("SEQ + 1").evaluate({})
    with pytest.raises(DimExprError, match="division by zero"):
        parse_dim("SEQ // (BATCH - 1)").evaluate({"SEQ": 4, "BATCH": 1})


# --- the builder on symbolic shapes ------------------------------------------------------


def _narrow_block() -> GraphModule:
    """x [BATCH, SEQ, 8] @ w + the first SEQ rows of a 16-row table."""
    g = GraphModule.mir("block")
    x = g.input("x", ("BATCH", "SEQ", 8))
    w = g.param("w", (8, 4))
    table = g.param("table", (16, 4))
    rows = g.op(rlx.NarrowOp, table, axis=0, start=0, len="SEQ")
    g.set_outputs(x @ w + rows)
    return g


def test_symbolic_shapes_propagate_through_the_builder():
    g = GraphModule.mir("f")
    x = g.input("x", ("BATCH", "SEQ", 8))
    w = g.param("w", (8, 4))
    y = x @ w
    assert y.shape == (parse_dim("BATCH"), parse_dim("SEQ"), 4)
    assert repr(y) == "Tensor([BATCH, SEQ, 4], f32)"
    pair = g.op(rlx.ConcatOp, y, y, axis=1)
    assert [str(d) for d in pair.shape] == ["BATCH", "SEQ + SEQ", "4"]
    g.set_outputs(pair)
    text = str(g)
    assert 'rlx.dims = ["BATCH", "SEQ", 8]' in text and "tensor<?x?x8xf32>" in text
    assert g.symbols == ["BATCH", "SEQ"]


def test_conflicting_symbols_fail_at_the_call_that_mixes_them():
    g = GraphModule.mir("f")
    a = g.input("a", ("BATCH", "SEQ"))
    b = g.input("b", ("SEQ", "BATCH"))
    with pytest.raises(BuildError, match=r"operand shapes \[BATCH, SEQ\] and \[SEQ, BATCH\] do not broadcast"):
        a + b


def test_out_shape_is_checked_symbolically():
    g = GraphModule.mir("f")
    x = g.input("x", ("SEQ", 8))
    with pytest.raises(BuildError, match=r"gives shape \[SEQ, 8\], but out_shape is \[BATCH, 8\]"):
        g.op(rlx.ReluOp, x, out_shape=("BATCH", 8))
    assert g.op(rlx.ReluOp, x, out_shape=("SEQ", 8)).shape[0] == parse_dim("SEQ")
    pair = g.op(rlx.ConcatOp, x, x, axis=0, out_shape=("2*SEQ", 8))  # equal sizes, spelled differently
    assert str(pair.shape[0]) == "SEQ + SEQ"


def test_bad_symbolic_argument_shapes():
    g = GraphModule.mir("f")
    with pytest.raises(BuildError, match="argument 'x': shape .*cannot parse dimension 'SEQ \\+'"):
        g.input("x", ("SEQ +", 8))


def test_a_dynamic_module_must_be_bound_before_planning():
    g = _narrow_block()
    with pytest.raises(BuildError, match=r"symbolic dimensions \(BATCH, SEQ\): call bind_dims\(\) before plan\(\)"):
        g.plan()


# --- binding ----------------------------------------------------------------------------------


def test_bind_dims_makes_the_module_static():
    g = _narrow_block().bind_dims({"BATCH": 2, "SEQ": 5})
    assert g.symbols == []
    text = str(g)
    assert "?" not in text and "rlx.sym" not in text and "rlx.dims" not in text
    assert "len = 5 : i64" in text and "-> tensor<2x5x4xf32>" in text
    exe = g.compile()
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)
    table = np.random.default_rng(2).standard_normal((16, 4)).astype(np.float32)
    np.testing.assert_allclose(exe(x=x, w=w, table=table), x @ w + table[:5], rtol=1e-5, atol=1e-5)


def test_bind_dims_accepts_a_model_variant():
    g = _narrow_block().bind_dims(ModelVariant.prefill(3, 4))
    assert "tensor<3x4x8xf32>" in str(g)


@pytest.mark.parametrize(
    "binding, message",
    [
        ({"BATCH": 1, "SEQ": 4, "HEADS": 2}, r"the module has no symbol 'HEADS' \(its symbols: BATCH, SEQ\)"),
        ({"BATCH": 1}, "symbol 'SEQ' of @block is not bound"),
        ({"BATCH": 0, "SEQ": 4}, "symbol 'BATCH' must be bound to a positive integer, got 0"),
        ({"BATCH": 1, "SEQ": "4"}, "symbol 'SEQ' must be bound to a positive integer, got '4'"),
        ({"BATCH": 1, "SEQ": 17}, r"'rlx.narrow' op is invalid for BATCH=1, SEQ=17: start 0 \+ len 17 exceeds dimension 16"),
    ],
)
def test_bad_bindings_name_the_symbol(binding, message):
    g = _narrow_block()
    before = str(g)
    with pytest.raises(BuildError, match=message):
        g.bind_dims(binding)
    assert str(g) == before  # a failed binding changes nothing


# --- compile once, specialise at run time -----------------------------------------------------------


def test_compile_of_text_with_symbols_specialises_per_shape():
    exe = rlx_mlir.compile(str(_narrow_block()))
    assert isinstance(exe, SpecializingExecutable) and exe.symbols == ("BATCH", "SEQ")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    table = rng.standard_normal((16, 4)).astype(np.float32)
    for batch, seq in [(1, 3), (2, 9), (1, 3)]:
        x = rng.standard_normal((batch, seq, 8)).astype(np.float32)
        np.testing.assert_allclose(exe(x, w, table), x @ w + table[:seq], rtol=1e-5, atol=1e-5)
    info = exe.cache_info()
    assert (info.misses, info.hits) == (2, 1)
    assert info.variants == ((("BATCH", 1), ("SEQ", 3)), (("BATCH", 2), ("SEQ", 9)))
    assert exe.fingerprint.startswith("sha256:")


def test_static_modules_still_compile_to_a_plain_executable():
    g = GraphModule.mir("f")
    g.set_outputs(g.input("x", (2, 3)) + g.input("y", (2, 3)))
    assert isinstance(g.compile(), rlx_mlir.Executable)


def test_inputs_that_disagree_about_a_symbol():
    g = GraphModule.mir("f")
    x = g.input("x", ("BATCH", "SEQ", 4))
    bias = g.input("bias", ("SEQ", 4))
    g.set_outputs(x + bias)
    exe = g.compile()
    x_value = np.zeros((2, 7, 4), np.float32)
    with pytest.raises(ValueError, match=r"symbol SEQ is 5 in argument 'bias' \(dimension 0\), but 7 in argument 'x'"):
        exe(x=x_value, bias=np.zeros((5, 4), np.float32))
    with pytest.raises(ValueError, match=r"argument 'bias' of @f: dimension 1 must be 4 \(\[SEQ, 4\]\), got shape \[7, 3\]"):
        exe(x=x_value, bias=np.zeros((7, 3), np.float32))
    with pytest.raises(ValueError, match=r"argument 'x' of @f: expected rank 3 \[BATCH, SEQ, 4\], got shape \[7, 4\]"):
        exe(x=np.zeros((7, 4), np.float32), bias=np.zeros((7, 4), np.float32))
    assert exe.cache_info().misses == 0  # nothing was compiled for bad inputs


def test_a_size_that_makes_an_op_invalid_is_reported_at_call_time():
    exe = _narrow_block().compile()
    with pytest.raises(ValueError, match=r"'rlx.narrow' op is invalid for BATCH=1, SEQ=20"):
        exe(np.zeros((1, 20, 8), np.float32), np.zeros((8, 4), np.float32), np.zeros((16, 4), np.float32))


def test_symbols_the_inputs_do_not_determine():
    g = GraphModule.mir("f")
    table = g.input("table", (16, 4))
    g.set_outputs(g.op(rlx.NarrowOp, table, axis=0, start=0, len="SEQ"))
    exe = g.compile()
    with pytest.raises(ValueError, match="the inputs of @f do not determine SEQ: call specialize"):
        exe(np.zeros((16, 4), np.float32))
    table_value = np.arange(64, dtype=np.float32).reshape(16, 4)
    np.testing.assert_array_equal(exe.specialize({"SEQ": 3})(table_value), table_value[:3])


@pytest.fixture(scope="module")
def dynamic_llama():
    return build_llama(CONFIG, dynamic=True)


@pytest.fixture(scope="module")
def llama_weights():
    return random_weights(CONFIG, seed=0)


@pytest.mark.parametrize("plan", [True, False], ids=["planned", "direct"])
def test_dynamic_llama_runs_every_length_from_one_compile(dynamic_llama, llama_weights, plan):
    exe = dynamic_llama.compile(plan=plan)
    rng = np.random.default_rng(3)
    shapes = [(1, 7), (1, 3), (2, 11), (1, 7), (1, 3)]
    for batch, seq in shapes:
        tokens = rng.integers(0, CONFIG.vocab, (batch, seq)).astype(np.int64)
        logits = exe(tokens=tokens, **llama_weights)
        assert logits.shape == (batch, seq, CONFIG.vocab)
        np.testing.assert_allclose(logits, reference_forward(tokens, llama_weights, CONFIG), rtol=2e-3, atol=2e-3)
    info = exe.cache_info()
    assert info.misses == 3  # one compile per new shape
    assert info.hits == 2  # none for the repeats
    assert [dict(v) for v in info.variants] == [{"BATCH": 1, "SEQ": 7}, {"BATCH": 1, "SEQ": 3}, {"BATCH": 2, "SEQ": 11}]


def test_dynamic_llama_ir_keeps_the_symbols(dynamic_llama):
    text = str(dynamic_llama)
    assert 'rlx.dims = ["BATCH", "SEQ"], rlx.name = "tokens"' in text
    assert 'rlx.sym = {len = "SEQ"}' in text  # RoPE rows narrowed to SEQ
    assert "-> tensor<?x?x97xf32>" in text
    assert dynamic_llama.symbols == ["BATCH", "SEQ"]
    summary = dynamic_llama.inspect()
    assert "symbols: BATCH, SEQ" in summary and "-> [BATCH, SEQ, 64] f32  @ embed" in summary
    # The text is what rlx-opt reads: it parses and verifies on its own.
    assert isinstance(rlx_mlir.compile(text), SpecializingExecutable)


def test_dynamic_llama_rejects_a_prompt_longer_than_its_rope_table(dynamic_llama, llama_weights):
    exe = dynamic_llama.compile()
    tokens = np.zeros((1, CONFIG.max_seq + 1), np.int64)
    with pytest.raises(ValueError, match=rf"SEQ={CONFIG.max_seq + 1}: start 0 \+ len {CONFIG.max_seq + 1} exceeds"):
        exe(tokens=tokens, **llama_weights)


def test_bind_dims_api_on_parsed_text():
    from mlir import ir

    from rlx_mlir.dims.dynamic import DimError, bind_dims

    text = str(_narrow_block())
    with rlx_mlir.make_context():
        module = ir.Module.parse(text)
        with pytest.raises(DimError, match="symbol 'BATCH' must be bound to a positive integer, got -1"):
            bind_dims(module, {"BATCH": -1, "SEQ": 2})
        assert str(module) == str(ir.Module.parse(text))  # unchanged by the failure
        bind_dims(module, ModelVariant.decode(batch=3, past_seq=10, new_tokens=2))
        assert "tensor<3x2x8xf32>" in str(module) and "len = 2 : i64" in str(module)


def test_reshape_and_expand_take_symbolic_shapes():
    g = GraphModule.mir("rows")
    x = g.input("x", ("BATCH", "SEQ", 8))
    bias = g.input("bias", (1, 8))
    rows = g.op(rlx.ReshapeOp, x, out_shape=("BATCH*SEQ", 8))
    spread = g.op(rlx.ExpandOp, bias, shape=("BATCH * SEQ", 8))
    out = g.op(rlx.TransposeOp, rows + spread, perm=[1, 0])
    assert [str(d) for d in out.shape] == ["8", "BATCH*SEQ"]
    with pytest.raises(BuildError, match=r"'rlx.reshape' op cannot reshape \[BATCH, SEQ, 8\] .* to \[SEQ, 8\]"):
        g.op(rlx.ReshapeOp, x, out_shape=("SEQ", 8))
    g.set_outputs(out)
    exe = g.compile()
    for batch, seq in [(2, 3), (1, 5)]:
        x_value = np.random.default_rng(seq).standard_normal((batch, seq, 8)).astype(np.float32)
        bias_value = np.random.default_rng(0).standard_normal((1, 8)).astype(np.float32)
        np.testing.assert_allclose(exe(x_value, bias_value), (x_value.reshape(-1, 8) + bias_value).T, rtol=1e-6)


def test_an_expression_dimension_is_checked_against_the_symbols_it_uses():
    g = GraphModule.mir("shifted")
    x = g.input("x", ("SEQ", 4))
    padded = g.input("padded", ("SEQ + 1", 4))
    g.set_outputs(x + g.op(rlx.NarrowOp, padded, axis=0, start=1, len="SEQ"))
    exe = g.compile()
    x_value = np.ones((3, 4), np.float32)
    padded_value = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_array_equal(exe(x_value, padded_value), x_value + padded_value[1:])
    with pytest.raises(ValueError, match=r"argument 'padded' of @shifted: dimension 0 is SEQ \+ 1 = 4, got 5"):
        exe(x_value, np.zeros((5, 4), np.float32))
