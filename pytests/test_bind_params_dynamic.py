"""Parameters bound to a dynamic function: `SpecializingExecutable.bind_params`
(rlx_mlir/runtime/specialize.py).  Each specialisation binds the weights the first time it runs,
so a call passes the runtime inputs only, whatever their symbolic sizes."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir.frontend.builder import GraphModule


def _linear(name: str = "block") -> GraphModule:
    """y [SEQ, 96] = x [SEQ, 64] @ w [64, 96] + b [96]."""
    g = GraphModule.mir(name)
    x = g.input("x", ("SEQ", 64))
    w = g.param("w", (64, 96))
    b = g.param("b", (96,))
    g.set_outputs(x @ w + b)
    return g


def _weights(seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal(96).astype(np.float32)


@pytest.mark.parametrize("threads", [1, 2])
def test_bound_dynamic_function_runs_every_length_on_the_bound_weights(threads):
    exe = rlx_mlir.compile(_linear().text(), threads=threads, cache=False)
    w, b = _weights()
    bound = exe.bind_params(w=w, b=b)
    assert bound.input_names == ["x"] and bound.bound_names == ["w", "b"]
    rng = np.random.default_rng(1)
    for seq in (3, 130, 3, 1):
        x = rng.standard_normal((seq, 64)).astype(np.float32)
        y = bound(x)
        np.testing.assert_allclose(y, x.astype(np.float64) @ w + b, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(y, exe(x, w, b))  # the same kernels, the same sums
    assert exe.cache_info().misses == 3  # one specialisation per length, bound or not
    # The bound specialisation reads w as packed panels (bind_params' prepacked variant).
    assert [p.param for p in bound.specialize({"SEQ": 130}).executable.packed_params] == ["w"]


def test_bound_dynamic_function_survives_eviction():
    exe = rlx_mlir.compile(_linear("evicting").text(), max_variants=1, cache=False)
    w, b = _weights(2)
    bound = exe.bind_params(w=w, b=b)
    rng = np.random.default_rng(3)
    for seq in (5, 9, 5, 9):
        x = rng.standard_normal((seq, 64)).astype(np.float32)
        np.testing.assert_allclose(bound(x=x), x.astype(np.float64) @ w + b, rtol=1e-5, atol=1e-5)
    assert exe.cache_info().evictions == 3


def test_bound_dynamic_function_errors_name_the_input():
    exe = rlx_mlir.compile(_linear("checked").text(), cache=False)
    w, b = _weights()
    x = np.zeros((4, 64), np.float32)
    with pytest.raises(ValueError, match="@checked has no input named 'v' \\(inputs: x, w, b\\)"):
        exe.bind_params(v=w)
    with pytest.raises(ValueError, match="'x' is a runtime input of @checked, not a parameter"):
        exe.bind_params(x=x)(w=w, b=b)
    with pytest.raises(ValueError, match="argument 'w' of bind_params: @checked: expected tensor<64x96xf32>"):
        exe.bind_params(w=w[:3], b=b)(x)
    with pytest.raises(TypeError, match="@checked with 2 bound parameters takes 1 arguments, got 2"):
        exe.bind_params(w=w, b=b)(x, w)
    with pytest.raises(TypeError, match=r"symbolic dimensions \(SEQ\): pin a specialisation"):
        exe.pin(w=w)
    with pytest.raises(TypeError, match=r"specialize\(binding\).context\(\)"):
        exe.context()


def test_bound_weights_fix_the_symbols_of_their_own_shapes():
    """w [D, 96] with D symbolic: the bound weight fixes D.  A call reads it off the weight (an x of
    another width is an error naming both), and `specialize` takes a binding (or a ModelVariant)
    of the other symbols only (it raised "symbol 'D' of @wide is not bound")."""
    from rlx_mlir.dims.variants import ModelVariant

    g = GraphModule.mir("wide")
    x, w, b = g.input("x", ("SEQ", "D")), g.param("w", ("D", 96)), g.param("b", (96,))
    g.set_outputs(x @ w + b)
    exe = rlx_mlir.compile(g.text(), threads=2, cache=False)
    rng = np.random.default_rng(5)
    w_value, b_value = rng.standard_normal((40, 96)).astype(np.float32), rng.standard_normal(96).astype(np.float32)
    bound = exe.bind_params(w=w_value, b=b_value)
    for seq in (1, 7, 130):
        xv = rng.standard_normal((seq, 40)).astype(np.float32)
        y = bound(xv)
        np.testing.assert_allclose(y, xv.astype(np.float64) @ w_value + b_value, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(y, exe(xv, w_value, b_value))
        np.testing.assert_array_equal(bound.specialize({"SEQ": seq})(xv), y)
    xv = rng.standard_normal((5, 40)).astype(np.float32)
    np.testing.assert_array_equal(bound.specialize(ModelVariant.prefill(1, 5))(x=xv), exe(xv, w_value, b_value))
    with pytest.raises(ValueError, match=r"symbol D is 40 in argument 'w' \(dimension 0\), but 41 in argument 'x'"):
        bound(np.zeros((3, 41), np.float32))
    with pytest.raises(ValueError, match=r"argument 'w' of bind_params: @wide: expected tensor<41x96xf32>"):
        bound.specialize({"SEQ": 3, "D": 41})  # a size given for D is the binding's: the weight does not fit it
