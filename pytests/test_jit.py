"""The JIT API: compile once, call many times, numpy in and out, clear errors."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import func

import rlx_mlir
from rlx_mlir.dialects import rlx

MLP = """
func.func @mlp(%x: tensor<4x8xf32> {rlx.name = "x"}, %w: tensor<8x16xf32> {rlx.name = "w"},
               %b: tensor<16xf32> {rlx.name = "b"}) -> tensor<4x16xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "rlx.relu"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}
"""


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((4, 8)).astype(np.float32),
        rng.standard_normal((8, 16)).astype(np.float32),
        rng.standard_normal(16).astype(np.float32),
    )


def _reference(x, w, b):
    return np.maximum(x.astype(np.float64) @ w + b, 0.0)


@pytest.fixture(scope="module")
def mlp():
    return rlx_mlir.compile(MLP, entry="mlp", target="cpu")


def test_positional_and_named_arguments(mlp):
    x, w, b = _inputs()
    np.testing.assert_allclose(mlp(x, w, b), _reference(x, w, b), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mlp(x, b=b, w=w), _reference(x, w, b), rtol=1e-5, atol=1e-6)
    assert mlp.input_names == ["x", "w", "b"]


def test_many_calls_with_new_data_each_time(mlp):
    for seed in range(20):
        x, w, b = _inputs(seed)
        np.testing.assert_allclose(mlp(x, w, b), _reference(x, w, b), rtol=1e-5, atol=1e-6)


def test_results_are_fresh_arrays(mlp):
    x, w, b = _inputs()
    first = mlp(x, w, b)
    second = mlp(x * 2, w, b)
    assert not np.shares_memory(first, second)
    np.testing.assert_allclose(first, _reference(x, w, b), rtol=1e-5, atol=1e-6)


def test_non_contiguous_input_is_accepted(mlp):
    x, w, b = _inputs()
    wide = np.zeros((4, 16), np.float32)
    wide[:, ::2] = x
    view = wide[:, ::2]
    assert not view.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(mlp(view, w, b), _reference(x, w, b), rtol=1e-5, atol=1e-6)


def test_wrong_shape_names_argument_expected_and_got(mlp):
    x, w, b = _inputs()
    with pytest.raises(ValueError) as error:
        mlp(x[:3], w, b)
    message = str(error.value)
    assert "argument 'x'" in message
    assert "expected tensor<4x8xf32>" in message
    assert "got numpy float32 [3, 8]" in message


def test_wrong_dtype_is_not_silently_cast(mlp):
    x, w, b = _inputs()
    with pytest.raises(ValueError, match=r"argument 'w' of @mlp: expected tensor<8x16xf32> .* got numpy float64 \[8, 16\]"):
        mlp(x, w.astype(np.float64), b)


def test_argument_count_and_names_are_checked(mlp):
    x, w, b = _inputs()
    with pytest.raises(TypeError, match="missing arguments: b"):
        mlp(x, w)
    with pytest.raises(TypeError, match="takes 3 arguments, got 4"):
        mlp(x, w, b, b)
    with pytest.raises(TypeError, match="no argument named 'bias'"):
        mlp(x, w, bias=b)


def test_several_results_come_back_as_a_tuple():
    text = """
    func.func @two(%a: tensor<3xf32>) -> (tensor<3xf32>, tensor<1x3xf32>) {
      %0 = "rlx.neg"(%a) : (tensor<3xf32>) -> tensor<3xf32>
      %1 = "rlx.reshape"(%a) : (tensor<3xf32>) -> tensor<1x3xf32>
      return %0, %1 : tensor<3xf32>, tensor<1x3xf32>
    }
    """
    exe = rlx_mlir.compile(text)  # the only public function is the entry
    a = np.array([1.0, -2.0, 3.0], np.float32)
    negated, reshaped = exe(a)
    np.testing.assert_array_equal(negated, -a)
    np.testing.assert_array_equal(reshaped, a.reshape(1, 3))


def test_returning_an_argument_copies_it():
    exe = rlx_mlir.compile("func.func @id(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }")
    a = np.array([1.0, 2.0], np.float32)
    out = exe(a)
    np.testing.assert_array_equal(out, a)
    assert not np.shares_memory(out, a)


def test_compile_an_ir_module_built_with_the_op_classes():
    context = rlx_mlir.make_context()
    with context, ir.Location.unknown():
        module = ir.Module.create()
        f32 = ir.F32Type.get()
        x_type = ir.RankedTensorType.get([2, 3], f32)
        w_type = ir.RankedTensorType.get([3, 4], f32)
        with ir.InsertionPoint(module.body):

            @func.FuncOp.from_py_func(x_type, w_type)
            def linear(x, w):
                return rlx.TanhOp(rlx.MatmulOp(x, w)).result

        before = str(module)
    exe = rlx_mlir.compile(module, entry="linear")
    assert str(module) == before  # the caller's module is not lowered in place
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    w = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(exe(x, w), np.tanh(x.astype(np.float64) @ w), rtol=1e-5, atol=1e-6)


def test_invalid_module_raises_compile_error_with_location():
    text = (
        "func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {\n"
        '  %0 = "rlx.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>\n'
        "  return %0 : tensor<2x5xf32>\n"
        "}\n"
    )
    with pytest.raises(rlx_mlir.CompileError) as error:
        rlx_mlir.compile(text, filename="model.mlir")
    assert "model.mlir:2:8: error: 'rlx.matmul' op contracting dimensions differ" in str(error.value)
    assert error.value.diagnostics[0].position.line == 2


def test_syntax_error_raises_compile_error():
    with pytest.raises(rlx_mlir.CompileError, match=r"<string>:1:\d+: error: "):
        rlx_mlir.compile("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> { return %b : tensor<2xf32> }")


def test_unknown_target_and_entry():
    with pytest.raises(ValueError, match="unknown target 'tpu'; available: cpu"):
        rlx_mlir.compile(MLP, entry="mlp", target="tpu")
    with pytest.raises(ValueError, match=r"no function '@nope' in the module \(functions: mlp\)"):
        rlx_mlir.compile(MLP, entry="nope")


def _rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc to read the RSS")
def test_no_leak_across_ten_thousand_calls():
    # 64x64 intermediates: a leaked temporary or result would be 16 KiB a call,
    # 160 MB over the loop; the bound below allows 1 KiB a call of noise.
    text = """
    func.func @g(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
      %0 = "rlx.matmul"(%x, %w) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
      %1 = "rlx.sigmoid"(%0) : (tensor<64x64xf32>) -> tensor<64x64xf32>
      %2 = "rlx.mul"(%1, %x) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
      return %2 : tensor<64x64xf32>
    }
    """
    exe = rlx_mlir.compile(text)
    x = np.ones((64, 64), np.float32) * 0.01
    w = np.ones((64, 64), np.float32)
    for _ in range(200):  # warm up allocator pools
        exe(x, w)
    gc.collect()
    before = _rss_bytes()
    for _ in range(10_000):
        exe(x, w)
    gc.collect()
    growth = _rss_bytes() - before
    assert growth < 10_000 * 1024, f"RSS grew by {growth / 1e6:.1f} MB over 10,000 calls"


def test_loops_over_slices_with_loop_dependent_offsets():
    # Subviews at loop-dependent offsets need expand-strided-metadata before
    # lower-affine; in the other order an affine.apply reached the JIT.
    text = """
    func.func @copy_rows(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %init = tensor.empty() : tensor<4x8xf32>
      %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %init) -> tensor<4x8xf32> {
        %row = tensor.extract_slice %x[%i, 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<1x8xf32>
        %out = tensor.insert_slice %row into %acc[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<4x8xf32>
        scf.yield %out : tensor<4x8xf32>
      }
      return %r : tensor<4x8xf32>
    }
    """
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(rlx_mlir.compile(text)(x), x)


def test_an_op_left_unlowered_is_named_not_a_jit_failure():
    # The CPU pipeline has no complex-to-LLVM conversion: the error names the op
    # and its location instead of the ExecutionEngine's bare "Failure while creating".
    text = (
        "#id = affine_map<(d0) -> (d0)>\n"
        "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %init = tensor.empty() : tensor<4xf32>\n"
        '  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}\n'
        "      ins(%x : tensor<4xf32>) outs(%init : tensor<4xf32>) {\n"
        "  ^bb0(%in: f32, %out: f32):\n"
        "    %c = complex.create %in, %in : complex<f32>\n"
        "    %a = complex.abs %c : complex<f32>\n"
        "    linalg.yield %a : f32\n"
        "  } -> tensor<4xf32>\n"
        "  return %0 : tensor<4xf32>\n"
        "}\n"
    )
    with pytest.raises(rlx_mlir.CompileError) as error:
        rlx_mlir.compile(text, filename="cx.mlir")
    assert "cx.mlir:7:10: error: 'complex.create' was not lowered to the LLVM dialect" in str(error.value)


@pytest.mark.parametrize("plan", [True, False], ids=["lir", "direct"])
def test_a_value_returned_twice_gets_two_buffers(plan):
    # LLVM 22's buffer-results-to-out-params crashed the process on this
    # (llvm/llvm-project#219492); rlx-distinct-results copies the repeat.
    text = """
    func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>, tensor<4xf32>) {
      %0 = "rlx.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
      %1 = "rlx.reshape"(%0) : (tensor<4xf32>) -> tensor<2x2xf32>
      return %0, %0, %1, %x : tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>, tensor<4xf32>
    }
    """
    x = np.arange(4, dtype=np.float32)
    first, second, square, same = rlx_mlir.compile(text, plan=plan)(x)
    np.testing.assert_array_equal(first, -x)
    np.testing.assert_array_equal(second, -x)
    np.testing.assert_array_equal(square, (-x).reshape(2, 2))
    np.testing.assert_array_equal(same, x)
    assert not np.shares_memory(first, second)
