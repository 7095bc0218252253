"""Forward mode (transforms/autodiff/forward.py, GraphModule.jvp, rlx-jvp): every op's tangent
against central finite differences, along the tangent, of the float64 numpy references of
test_autodiff (written from dialect/rlx.md); the ops with bodies; the errors.

Each case builds `y = op(inputs)` and its tangent `J t` for random tangents `t` of the inputs
at the differentiated positions, compiles both, and compares `J t` with
`(f(x + h t) - f(x - h t)) / 2h`, elementwise.  Shapes are drawn by hypothesis (the strategies
of the VJP tests), a few per op.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_autodiff import _BODIES, _LOOP_BODIES, CASES, _type, _values

import rlx_mlir
from rlx_mlir import GraphModule
from rlx_mlir.dialects import rlx
from rlx_mlir.driver import Compilation
from rlx_mlir.frontend.builder import BuildError


def check_tangents(build, reference, specs, wrt, seed=0, tol=2e-3):
    rng = np.random.default_rng(seed)
    arrays = [_values(rng, s) for s in specs]
    directions = {i: rng.standard_normal(arrays[i].shape) for i in wrt}

    g = GraphModule.mir("f")
    args = [g.input(f"a{i}", shape, "i64" if kind.startswith("idx") else "f32") for i, (shape, kind) in enumerate(specs)]
    seeds = [g.input(f"t{i}", specs[i][0]) for i in wrt]
    out = build(g, *args)
    (tangent,) = g.jvp([out], [args[i] for i in wrt], seeds)
    g.set_outputs([out, tangent])
    feed = {f"a{i}": a.astype(np.int64 if s[1].startswith("idx") else np.float32) for i, (s, a) in enumerate(zip(specs, arrays))}
    feed.update({f"t{i}": d.astype(np.float32) for i, d in directions.items()})
    value, got = g.compile()(**feed)

    np.testing.assert_allclose(value, reference(*arrays), rtol=1e-3, atol=1e-3)
    h = 1e-6
    plus = [a + h * directions[i] if i in directions else a for i, a in enumerate(arrays)]
    minus = [a - h * directions[i] if i in directions else a for i, a in enumerate(arrays)]
    fd = (np.asarray(reference(*plus)) - np.asarray(reference(*minus))) / (2 * h)
    scale = max(1.0, float(np.max(np.abs(fd))) if fd.size else 1.0)
    np.testing.assert_allclose(got, fd, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("case", sorted(CASES))
def test_jvp_matches_finite_differences(case):
    strategy, make = CASES[case]

    @settings(max_examples=5, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(strategy, st.integers(0, 2**16))
    def run(params, seed):
        specs, build, reference, wrt = make(params)
        check_tangents(build, reference, specs, wrt, seed)

    run()


def test_tangent_of_a_subset_and_of_a_value_not_depending_on_it():
    """x alone moves: w's term is absent; an output that does not depend on x gets zeros."""
    g = GraphModule.mir("f")
    x, w, tx = g.input("x", (2, 3)), g.input("w", (3, 4)), g.input("tx", (2, 3))
    y, z = g.op(rlx.TanhOp, x @ w), g.op(rlx.ExpOp, w)
    ty, tz = g.jvp([y, z], [x], [tx])
    g.set_outputs([ty, tz])
    rng = np.random.default_rng(1)
    xv, wv, tv = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3), (3, 4), (2, 3)))
    got_y, got_z = g.compile()(x=xv, w=wv, tx=tv)
    np.testing.assert_allclose(got_y, (1 - np.tanh(xv @ wv) ** 2) * (tv @ wv), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(got_z, np.zeros((3, 4), np.float32))


def test_rlx_jvp_pass_matches_the_closed_form():
    text = """
    func.func @f(%x: tensor<3x4xf32> {rlx.name = "x"}, %w: tensor<4x2xf32> {rlx.name = "w"}) -> tensor<3x2xf32> {
      %0 = "rlx.matmul"(%x, %w) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
      %1 = "rlx.mul"(%0, %0) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
      return %1 : tensor<3x2xf32>
    }"""
    with Compilation() as job:
        module = job.parse(text)
        job.run(module, "builtin.module(rlx-jvp{wrt=x,w})", "rlx-jvp failed")
    exe = rlx_mlir.compile(module, entry="f_jvp")
    rng = np.random.default_rng(3)
    x, w, tx, tw = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (4, 2), (3, 4), (4, 2)))
    y, ty = exe(x=x, w=w, tangent_x=tx, tangent_w=tw)
    h = x.astype(np.float64) @ w
    np.testing.assert_allclose(y, h * h, rtol=1e-5)
    np.testing.assert_allclose(ty, 2 * h * (tx @ w + x @ tw), rtol=1e-4, atol=1e-5)


# --- ops with bodies ----------------------------------------------------------------------------


def _jvp_of(bodies: str, body: str, arguments: str, result_type: str, wrt: str):
    text = bodies + f"""
    func.func @f({arguments}) -> {result_type} {{
      {body}
      return %r : {result_type}
    }}"""
    with Compilation() as job:
        module = job.parse(text)
        job.run(module, f"builtin.module(rlx-jvp{{wrt={wrt} func=f}})", "rlx-jvp failed")
    return rlx_mlir.compile(module, entry="f_jvp")


_X = '%x: tensor<2x3xf32> {rlx.name = "x"}'


def test_custom_fn_uses_its_jvp():
    exe = _jvp_of(_BODIES, '%r = "rlx.custom_fn"(%x) {fwd = @square, jvp = @three_times} : (tensor<2x3xf32>) -> tensor<2x3xf32>',
                  _X, "tensor<2x3xf32>", "x")
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    y, ty = exe(x=x, tangent_x=t)
    np.testing.assert_allclose(y, x * x, rtol=1e-6)
    np.testing.assert_allclose(ty, 3 * t, rtol=1e-6)  # the custom tangent, not 2 x t


@pytest.mark.parametrize("attrs, factor", [("fwd = @square", "2x"), ("fwd = @square, vjp = @three_times", "3")])
def test_custom_fn_without_jvp(attrs, factor):
    """No jvp: the forward body differentiated, or with a vjp that rule transposed (3 t)."""
    exe = _jvp_of(_BODIES, f'%r = "rlx.custom_fn"(%x) {{{attrs}}} : (tensor<2x3xf32>) -> tensor<2x3xf32>',
                  _X, "tensor<2x3xf32>", "x")
    rng = np.random.default_rng(1)
    x, t = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    _, ty = exe(x=x, tangent_x=t)
    np.testing.assert_allclose(ty, 2 * x * t if factor == "2x" else 3 * t, rtol=1e-5)


@pytest.mark.parametrize("taken", [True, False])
def test_if_takes_the_taken_branch(taken):
    exe = _jvp_of(_BODIES, '%r = "rlx.if"(%p, %x) {then_branch = @square, else_branch = @exp, operandSegmentSizes = array<i32: 1, 1>}'
                  ' : (tensor<i1>, tensor<2x3xf32>) -> tensor<2x3xf32>',
                  '%p: tensor<i1> {rlx.name = "p"}, ' + _X, "tensor<2x3xf32>", "x")
    rng = np.random.default_rng(2)
    x, t = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    _, ty = exe(p=np.array(taken), x=x, tangent_x=t)
    np.testing.assert_allclose(ty, 2 * x * t if taken else np.exp(x) * t, rtol=1e-5)


@pytest.mark.parametrize("checkpoints", [0, 2])
def test_scan_tangent_matches_finite_differences(checkpoints):
    exe = _jvp_of(_LOOP_BODIES,
                  '%r = "rlx.scan"(%c, %b, %xs) {body = @step, length = 4 : i64, save_trajectory = true, num_checkpoints = '
                  + str(checkpoints) + ' : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3xf32>, tensor<3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>',
                  '%c: tensor<3xf32> {rlx.name = "c"}, %b: tensor<3xf32> {rlx.name = "b"}, %xs: tensor<4x3xf32> {rlx.name = "xs"}',
                  "tensor<4x3xf32>", "c,b,xs")
    rng = np.random.default_rng(4)
    args = [rng.standard_normal(s) for s in ((3,), (3,), (4, 3))]
    dirs = [rng.standard_normal(a.shape) for a in args]

    def f(c, b, xs):
        carries = []
        for t in range(4):
            c = np.tanh(c * b) + xs[t]
            carries.append(c)
        return np.stack(carries)

    _, ty = exe(*(a.astype(np.float32) for a in (*args, *dirs)))
    fd = (f(*(a + 1e-6 * d for a, d in zip(args, dirs))) - f(*(a - 1e-6 * d for a, d in zip(args, dirs)))) / 2e-6
    np.testing.assert_allclose(ty, fd, rtol=1e-4, atol=1e-5)


# --- errors -------------------------------------------------------------------------------------


def test_error_op_without_derivative():
    g = GraphModule.mir("f")
    x, t = g.input("x", (4, 8)), g.input("t", (4, 8))
    i = g.named("pick", lambda: g.op(rlx.ArgmaxOp, x, axis=1))
    y = g.op(rlx.CastOp, i, result_type=_type(g, [4], "f32"))
    with pytest.raises(BuildError, match=r"loc\(\"pick\"\): 'rlx.argmax' has no derivative \(no JVP or VJP rule\) "
                                         r"and lies on a path from 'x' to an output"):
        g.jvp([y], [x], [t])


def test_error_tangent_shape_and_argument():
    g = GraphModule.mir("f")
    x, t = g.input("x", (4,)), g.input("t", (3,))
    y = g.op(rlx.TanhOp, x)
    with pytest.raises(BuildError, match=r"jvp: the tangent of 'x' must be Tensor\(\[4\], f32\), got Tensor\(\[3\], f32\)"):
        g.jvp([y], [x], [t])
    with pytest.raises(BuildError, match=r"jvp: wrt #0 \(Tensor\(\[4\], f32\)\) is not an argument of 'f'"):
        g.jvp([y], [y], [x])
    with pytest.raises(BuildError, match=r"jvp: 1 wrt arguments but 2 tangents"):
        g.jvp([y], [x], [x, x])

