"""`rlx.grouped_matmul` and `rlx.dequant_grouped_matmul` compiled for 1, 2, 3 and 5 threads
(rlx-mir-to-linalg{threads} picks the column chunks by the count; a size with no divisor near the
chunk or block takes full chunks and a static tail): N prime or below 16, K tiny or prime or past
a weight block, experts with no rows and rows out of range.  Each is checked against a float64
per-row reference, and the four thread counts must give the same bits (every output column sums
over k in the same order whatever the chunk)."""

from __future__ import annotations

import numpy as np
import pytest

from rlx_mlir import GraphModule

THREADS = (1, 2, 3, 5)


def _reference(x, w_rows, idx):
    """Row r times its expert's weight (w_rows[e] is [K, N]); a zero row for an index out of range."""
    out = np.zeros((x.shape[0], w_rows.shape[2]))
    for row, expert in enumerate(idx):
        if 0 <= expert < len(w_rows):
            out[row] = x[row].astype(np.float64) @ w_rows[expert]
    return out


def _same_bits_on_every_thread_count(results):
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])


@pytest.mark.parametrize("m,k,n,e", [
    (45, 1000, 1031, 4),  # N prime above one chunk, K past a weight block
    (7, 5, 13, 3),  # N < 16, K not a multiple of 4
    (33, 17, 1, 4),  # one column
    (64, 1, 97, 3),  # K = 1
    (23, 1031, 2, 4),  # K prime
    (17, 1024, 97, 3),
    (64, 777, 5, 4),
])
def test_grouped_matmul_same_bits_on_1_2_3_5_threads(m, k, n, e):
    rng = np.random.default_rng(m + k + n)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((e, k, n)).astype(np.float32)
    idx = rng.choice([i for i in range(e) if i != 1] + [e, -3], m).astype(np.int64)  # expert 1 gets no rows
    g = GraphModule("grouped")
    xv, wv, iv = g.input("x", (m, k)), g.input("w", (e, k, n)), g.input("idx", (m,), "i64")
    g.set_outputs(g.grouped_matmul(xv, wv, iv))
    results = [g.compile(threads=t, cache=False)(x=x, w=w, idx=idx) for t in THREADS]
    np.testing.assert_allclose(results[0], _reference(x, w.astype(np.float64), idx), rtol=1e-5, atol=1e-5 * np.sqrt(k))
    _same_bits_on_every_thread_count(results)


def test_grouped_matmul_every_row_out_of_range_is_zeros():
    x = np.ones((12, 40), np.float32)
    w = np.ones((3, 40, 17), np.float32)
    idx = np.array([-1, 3, 99] * 4, np.int64)
    g = GraphModule("grouped")
    xv, wv, iv = g.input("x", (12, 40)), g.input("w", (3, 40, 17)), g.input("idx", (12,), "i64")
    g.set_outputs(g.grouped_matmul(xv, wv, iv))
    for t in THREADS:
        out = np.full((12, 17), np.nan, np.float32)
        g.compile(threads=t, cache=False)(x=x, w=w, idx=idx, out=out)
        assert not out.any()


@pytest.mark.parametrize("scheme,m,n,k,e", [("q8_0", 21, 131, 256, 4), ("q4_0", 13, 257, 512, 3), ("q4_k", 7, 7, 256, 2)])
def test_dequant_grouped_matmul_same_bits_on_1_2_3_5_threads(scheme, m, n, k, e):
    gguf = pytest.importorskip("gguf")
    from rlx_mlir import quant

    qtype = getattr(gguf.GGMLQuantizationType, scheme.upper())
    rng = np.random.default_rng(n)
    packed = np.stack([quant.quantize(rng.standard_normal((n, k)).astype(np.float32), scheme) for _ in range(e)])
    decoded = np.stack([gguf.quants.dequantize(slab, qtype) for slab in packed]).astype(np.float64)  # [E, N, K]
    x = rng.standard_normal((m, k)).astype(np.float32)
    idx = rng.choice([0, e - 1, e], m).astype(np.int64)
    g = GraphModule("q")
    xv, wv, iv = g.input("x", (m, k)), g.input("w", packed.shape, "u8"), g.input("idx", (m,), "i64")
    g.set_outputs(g.dequant_grouped_matmul(xv, wv, iv, scheme))
    results = [g.compile(threads=t, cache=False)(x=x, w=packed, idx=idx) for t in THREADS]
    np.testing.assert_allclose(results[0], _reference(x, decoded.transpose(0, 2, 1), idx), rtol=1e-4, atol=1e-4 * np.sqrt(k))
    _same_bits_on_every_thread_count(results)
