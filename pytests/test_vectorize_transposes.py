"""rlx-vectorize-transposes (16x16 register transposes of the last two dimensions) moves every
element where numpy's transpose puts it: blocked shapes (multiples of 16, 2-D and batched),
the shapes it leaves alone (a dimension no multiple of 16, other permutations), serial and with
the transpose split across threads first; and the GEMM packing it blocks (a transposed B)."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir


def _transpose(shape, perm) -> str:
    out = [shape[p] for p in perm]
    t = "x".join(map(str, shape)) + "xf32"
    o = "x".join(map(str, out)) + "xf32"
    return f"""
func.func @t(%x: tensor<{t}>) -> tensor<{o}> {{
  %y = "rlx.transpose"(%x) {{perm = array<i64: {", ".join(map(str, perm))}>}} : (tensor<{t}>) -> tensor<{o}>
  return %y : tensor<{o}>
}}"""


CASES = [
    ((128, 512), (1, 0)),  # blocked: a transformer's activations
    ((48, 1408), (1, 0)),
    ((3, 32, 80), (0, 2, 1)),  # blocked per leading index (a GEMM panel's packing)
    ((2, 4, 64, 32), (0, 1, 3, 2)),
    ((20, 32), (1, 0)),  # left to the loop nest: 20 is no multiple of 16
    ((4, 32, 16), (1, 0, 2)),  # left alone: the last two dimensions are not exchanged
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,perm", CASES)
def test_transpose_matches_numpy_exactly(shape, perm, threads):
    x = np.random.default_rng(len(shape) + shape[-1]).standard_normal(shape).astype(np.float32)
    exe = rlx_mlir.compile(_transpose(shape, perm), "t", threads=threads)
    y = exe(x)
    np.testing.assert_array_equal(y, np.transpose(x, perm))


def test_pipeline_option_turns_the_pass_off():
    from rlx_mlir.pipelines.lower_to_llvm import LowerToLLVM
    from rlx_mlir.transforms.linalg.vectorize_transposes import VectorizeTransposes

    assert any(isinstance(step, VectorizeTransposes) for step in LowerToLLVM(threads=1).elements())
    assert not any(isinstance(step, VectorizeTransposes)
                   for step in LowerToLLVM(threads=1, vectorize_transposes=False).elements())


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(32, 32), (2, 16, 48)])
def test_transpose_into_a_tied_input_stays_a_loop_nest_and_is_right(shape, threads):
    """A blockable transpose whose result is an output tied to an input (`tie_outputs`: written in
    that input's buffer) is left to the plain loop nest: blocked, its loops took the argument as
    their init and bufferization failed ("'scf.for' op not bufferizable under the given
    constraints: cannot avoid RaW conflict").  Tied to another input, and to its own operand's
    source (x * x transposed into x)."""
    from rlx_mlir import GraphModule
    from rlx_mlir.dialects import rlx

    perm = [*range(len(shape) - 2), len(shape) - 1, len(shape) - 2]
    out_shape = tuple(shape[p] for p in perm)
    rng = np.random.default_rng(len(shape) + threads)
    x = rng.standard_normal(shape).astype(np.float32)
    for tie, build, expected in [
        ("z", lambda g, xv: g.op(rlx.TransposeOp, xv, perm=perm), np.transpose(x, perm)),
        ("x", lambda g, xv: g.op(rlx.TransposeOp, xv * xv, perm=perm), np.transpose(x * x, perm)),
    ]:
        if tie == "x" and out_shape != shape:
            continue  # a tied output has its input's type
        g = GraphModule.mir("tied")
        xv = g.input("x", shape)
        g.input("z", out_shape)
        g.set_outputs(build(g, xv))
        g.tie_outputs({0: tie})
        buffers = {"x": x.copy(), "z": np.zeros(out_shape, np.float32)}
        y = g.compile(threads=threads, cache=False)(**buffers)
        np.testing.assert_array_equal(y, expected)
        assert np.shares_memory(y, buffers[tie])


def _typed_transpose(shape, perm, dtype: str) -> str:
    return _transpose(shape, perm).replace("xf32>", f"x{dtype}>")


@pytest.mark.parametrize("dtype", ["f32", "f16", "i32"])
@pytest.mark.parametrize("shape,perm", [
    ((16, 16), (1, 0)), ((16, 32), (1, 0)), ((32, 16), (1, 0)),  # the smallest blocked shapes
    ((15, 16), (1, 0)), ((16, 17), (1, 0)), ((1, 16), (1, 0)), ((16, 1), (1, 0)),  # one off: loop nest
    ((5, 16, 16), (0, 2, 1)), ((2, 3, 16, 48), (0, 1, 3, 2)),  # batched blocks
    ((16, 16, 16), (2, 1, 0)), ((16, 16, 16), (1, 2, 0)), ((2, 16, 32), (2, 1, 0)),  # not the last two only
])
def test_transpose_edges_and_other_element_types_on_1_2_3_threads(shape, perm, dtype):
    """At the multiple-of-16 boundary, batched, other permutations of 16-multiples, and f16 / i32
    (which the pass leaves to the loop nest): exactly numpy's transpose on 1, 2 and 3 threads."""
    numpy_type = {"f32": np.float32, "f16": np.float16, "i32": np.int32}[dtype]
    x = (np.random.default_rng(sum(shape)).standard_normal(shape) * 100).astype(numpy_type)
    for threads in (1, 2, 3):
        y = rlx_mlir.compile(_typed_transpose(shape, perm, dtype), "t", threads=threads, cache=False)(x)
        assert y.dtype == numpy_type
        np.testing.assert_array_equal(y, np.transpose(x, perm))


@pytest.mark.parametrize("shape", [(16, 16), (48, 16), (2, 16, 32), (17, 16)])
def test_transposes_feeding_elementwise_ops(shape):
    """A transposed intermediate (x * x, dead after the transpose) added to an input, transposed
    back, a value subtracted and transposed again: the planner's slots and the blocked transposes
    together, against float64 numpy."""
    perm = [*range(len(shape) - 2), len(shape) - 1, len(shape) - 2]
    out = [shape[p] for p in perm]
    t, o = "x".join(map(str, shape)) + "xf32", "x".join(map(str, out)) + "xf32"
    p = ", ".join(map(str, perm))
    text = f"""
func.func @t(%x: tensor<{t}>, %z: tensor<{o}>) -> tensor<{o}> {{
  %a = "rlx.mul"(%x, %x) : (tensor<{t}>, tensor<{t}>) -> tensor<{t}>
  %y = "rlx.transpose"(%a) {{perm = array<i64: {p}>}} : (tensor<{t}>) -> tensor<{o}>
  %b = "rlx.add"(%y, %z) : (tensor<{o}>, tensor<{o}>) -> tensor<{o}>
  %c = "rlx.transpose"(%b) {{perm = array<i64: {p}>}} : (tensor<{o}>) -> tensor<{t}>
  %d = "rlx.sub"(%c, %a) : (tensor<{t}>, tensor<{t}>) -> tensor<{t}>
  %e = "rlx.transpose"(%d) {{perm = array<i64: {p}>}} : (tensor<{t}>) -> tensor<{o}>
  return %e : tensor<{o}>
}}"""
    rng = np.random.default_rng(len(shape))
    x, z = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(out).astype(np.float32)
    a = x.astype(np.float64) ** 2
    expected = np.transpose(np.transpose(np.transpose(a, perm) + z, perm) - a, perm)
    for threads in (1, 2):
        got = rlx_mlir.compile(text, "t", threads=threads, cache=False)(x, z)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-5)
