"""rlx-swiglu-of-products in the compile pipeline: the SwiGLU gating of two products.

`fused_swiglu(concat(up, gate))` computes `up * silu(gate)` (dialect/rlx.md); compiled, the
pass reads `up` and `gate` directly instead of materialising their concatenation.  The
results are checked against a float64 numpy reference, and bit for bit against the same
gating compiled from a materialised concatenation (a concat with a second use, which the
pass leaves alone).  The Llama model through this path: pytests/test_llama.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir


def _swiglu_reference(up: np.ndarray, gate: np.ndarray) -> np.ndarray:
    up, gate = up.astype(np.float64), gate.astype(np.float64)
    return up * gate / (1.0 + np.exp(-gate))


def _module(m: int, k: int, n: int, concat_returned: bool) -> str:
    t = lambda *s: "tensor<" + "x".join(map(str, s)) + "xf32>"  # noqa: E731
    results = f"{t(m, n)}, {t(m, 2 * n)}" if concat_returned else t(m, n)
    returned = "%s, %c" if concat_returned else "%s"
    return f"""
func.func @f(%x: {t(m, k)}, %wu: {t(k, n)}, %wg: {t(k, n)}) -> ({results}) {{
  %up = "rlx.matmul"(%x, %wu) : ({t(m, k)}, {t(k, n)}) -> {t(m, n)}
  %gate = "rlx.matmul"(%x, %wg) : ({t(m, k)}, {t(k, n)}) -> {t(m, n)}
  %c = "rlx.concat"(%up, %gate) {{axis = 1 : i64}} : ({t(m, n)}, {t(m, n)}) -> {t(m, 2 * n)}
  %s = "rlx.fused_swiglu"(%c) : ({t(m, 2 * n)}) -> {t(m, n)}
  return {returned} : {results}
}}
"""


@pytest.mark.parametrize("m,k,n", [(1, 64, 96), (7, 32, 40), (128, 64, 176)], ids=["gemv", "odd", "prefill"])
def test_gating_of_two_products_matches_reference_and_the_concatenated_form(m, k, n):
    rng = np.random.default_rng(m * 1000 + n)
    x = rng.standard_normal((m, k)).astype(np.float32)
    wu = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    wg = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32) * 4.0  # silu's curved part and tails
    direct = rlx_mlir.compile(_module(m, k, n, concat_returned=False), threads=1)(x, wu, wg)
    via_concat, concatenated = rlx_mlir.compile(_module(m, k, n, concat_returned=True), threads=1)(x, wu, wg)

    products = x.astype(np.float64) @ wu.astype(np.float64), x.astype(np.float64) @ wg.astype(np.float64)
    np.testing.assert_allclose(concatenated, np.concatenate(products, axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(direct, _swiglu_reference(*products), rtol=1e-4, atol=1e-5)
    assert np.array_equal(direct, via_concat)  # the same f32 expression on the same products

