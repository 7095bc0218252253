"""Mixture-of-experts MIR ops against float64 numpy written from `dialect/rlx.md`:
`rlx.scatter_add`, `rlx.grouped_matmul`, `rlx.dequant_grouped_matmul`, `rlx.dequant_moe_weights`.

The references are per-row loops: each row's expert looked up and multiplied on its own, each
update added into its row on its own; out-of-range indices (documented: a zero row for the
matmuls, nothing added for scatter_add) are part of the cases.  Quantised weights are decoded by
`gguf.quants.dequantize` (llama.cpp's Python decoder), independent of the lowering.
"""

from __future__ import annotations

import numpy as np
import pytest

from rlx_mlir import GraphModule
from rlx_mlir.frontend.builder import BuildError


def grouped_graph(m, k, n, e) -> GraphModule:
    """`rlx.grouped_matmul` of x [m, k], w [e, k, n] and idx i64 [m], not compiled."""
    g = GraphModule("grouped")
    x, w, idx = g.input("x", (m, k)), g.input("w", (e, k, n)), g.input("idx", (m,), "i64")
    g.set_outputs(g.grouped_matmul(x, w, idx))
    return g


def compile_grouped(m, k, n, e):
    return grouped_graph(m, k, n, e).compile()


def routed_with_gaps(k: int, n: int, counts, seed: int):
    """x [m, k] and w [5, k, n] (random) and idx [m]: `counts` rows for experts 0, 1, 3 and 4
    (expert 2 gets none), then one row for expert 5 and one for -1 (both out of range), shuffled."""
    rng = np.random.default_rng(seed)
    idx = np.concatenate([np.repeat([0, 1, 3, 4], counts), [5, -1]]).astype(np.int64)
    rng.shuffle(idx)
    x = rng.standard_normal((len(idx), k)).astype(np.float32)
    w = rng.standard_normal((5, k, n)).astype(np.float32)
    return x, w, idx


def grouped_reference(x, w, idx):
    rows, n = x.shape[0], w.shape[2]
    out = np.zeros((rows, n))
    for m in range(rows):
        e = idx[m]
        if 0 <= e < w.shape[0]:  # an out-of-range expert gives a zero row
            out[m] = x[m].astype(np.float64) @ w[e].astype(np.float64)
    return out


def check_close(got, want, k):
    assert got.shape == want.shape
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5 * np.sqrt(k)), np.abs(got - want).max()


GROUPED_CASES = {
    # name: (M, K, N, E, expert indices or a seed for random ones)
    "random": (37, 64, 96, 5, None),
    "an expert with no rows": (20, 32, 40, 4, [0, 2, 3] * 6 + [0, 3]),
    "out of range": (9, 16, 8, 3, [-1, 0, 3, 2, 9, -7, 1, 1, 2]),
    "one expert": (11, 24, 16, 1, [0] * 11),
    "one row": (1, 64, 300, 6, [4]),
    "more experts than rows": (3, 16, 8, 8, [7, 0, 7]),
    "every row one expert, several tiles": (40, 48, 520, 3, [1] * 40),
    "sorted runs crossing tiles": (64, 32, 64, 4, [0] * 9 + [1] * 17 + [2] * 1 + [3] * 37),
}


@pytest.mark.parametrize("case", list(GROUPED_CASES))
def test_grouped_matmul(case):
    m, k, n, e, idx = GROUPED_CASES[case]
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((e, k, n)).astype(np.float32)
    idx = rng.integers(0, e, m) if idx is None else np.array(idx)
    idx = idx.astype(np.int64)
    got = compile_grouped(m, k, n, e)(x=x, w=w, idx=idx)
    check_close(got, grouped_reference(x, w, idx), k)


def test_grouped_matmul_rows_of_an_out_of_range_expert_are_zero():
    x = np.ones((4, 8), np.float32)
    w = np.ones((2, 8, 3), np.float32)
    got = compile_grouped(4, 8, 3, 2)(x=x, w=w, idx=np.array([2, 0, -1, 1], np.int64))
    assert np.array_equal(got, np.array([[0] * 3, [8] * 3, [0] * 3, [8] * 3], np.float32))


def scatter_reference(updates, indices, out_rows, init=None):
    out = np.zeros((out_rows, *updates.shape[1:])) if init is None else init.astype(np.float64).copy()
    for u in range(updates.shape[0]):
        if 0 <= indices[u] < out_rows:  # out of range: the row is dropped
            out[indices[u]] += updates[u]
    return out


@pytest.mark.parametrize("with_init", [False, True])
def test_scatter_add_duplicates_and_out_of_range(with_init):
    rng = np.random.default_rng(3)
    updates = rng.standard_normal((13, 2, 5)).astype(np.float32)
    indices = np.array([0, 3, 3, 3, -1, 6, 2, 0, 5, -6, 100, 3, 1], np.int64)
    init = rng.standard_normal((6, 2, 5)).astype(np.float32)
    g = GraphModule("scatter")
    u, i = g.input("u", updates.shape), g.input("i", (13,), "i64")
    if with_init:
        out = g.scatter_add(u, i, g.input("init", init.shape))
    else:
        out = g.scatter_add(u, i, out_dim=6)
    g.set_outputs(out)
    args = {"u": updates, "i": indices, **({"init": init} if with_init else {})}
    got = g.compile()(**args)
    want = scatter_reference(updates, indices, 6, init if with_init else None)
    assert np.allclose(got, want, rtol=1e-6, atol=1e-6)


def test_scatter_add_every_index_out_of_range_gives_the_init():
    g = GraphModule("scatter")
    u, i = g.input("u", (3, 4)), g.input("i", (3,), "i64")
    g.set_outputs(g.scatter_add(u, i, g.input("init", (2, 4))))
    init = np.arange(8, dtype=np.float32).reshape(2, 4)
    got = g.compile()(u=np.ones((3, 4), np.float32), i=np.array([2, -1, 7], np.int64), init=init)
    assert np.array_equal(got, init)


def test_builder_errors_name_the_shapes():
    g = GraphModule("bad")
    x, w, idx = g.input("x", (4, 8)), g.input("w", (2, 6, 3)), g.input("idx", (4,), "i64")
    with pytest.raises(BuildError, match=r"x \[4, 8\] has K = 8, weight \[2, 6, 3\] has K = 6"):
        g.grouped_matmul(x, w, idx)
    with pytest.raises(BuildError, match="exactly one of an init operand and an out_dim attribute"):
        g.scatter_add(x, idx)
    with pytest.raises(BuildError, match=r"expert_idx \[3\] must have one expert per row of x \[4, 8\]"):
        g.grouped_matmul(x, g.input("w2", (2, 8, 3)), g.input("i3", (3,), "i64"))


# --- quantised experts ------------------------------------------------------------------------

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as QT  # noqa: E402

GGUF_TYPES = {"q4_0": QT.Q4_0, "q8_0": QT.Q8_0, "q2_k": QT.Q2_K, "q3_k": QT.Q3_K, "q4_k": QT.Q4_K, "q5_k": QT.Q5_K, "q6_k": QT.Q6_K}


def packed_experts(scheme, e, n, k, rng):
    """`u8 [E, N, row bytes]` of E quantised random weights `[N, K]` and their f64 decode `[E, N, K]`."""
    from rlx_mlir import quant

    packed = np.stack([quant.quantize(rng.standard_normal((n, k)).astype(np.float32), scheme) for _ in range(e)])
    decoded = np.stack([gguf.quants.dequantize(slab, GGUF_TYPES[scheme]) for slab in packed]).astype(np.float64)
    return packed, decoded


@pytest.mark.parametrize("scheme", list(GGUF_TYPES))
def test_dequant_grouped_matmul_and_moe_weights(scheme):
    rng = np.random.default_rng(sorted(GGUF_TYPES).index(scheme))
    e, n, k, m = 3, 12, 256, 11
    packed, decoded = packed_experts(scheme, e, n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    idx = np.array([2, 0, 2, -1, 2, 0, 3, 2, 0, 0, 2], np.int64)  # expert 1 gets no rows; -1 and 3 are out of range
    g = GraphModule("q")
    xv, wv, iv = g.input("x", (m, k)), g.input("w", packed.shape, "u8"), g.input("idx", (m,), "i64")
    g.set_outputs([g.dequant_grouped_matmul(xv, wv, iv, scheme), g.dequant_moe_weights(wv, scheme)])
    got, weights = g.compile()(x=x, w=packed, idx=idx)
    want = np.zeros((m, n))
    for row in range(m):
        if 0 <= idx[row] < e:
            want[row] = decoded[idx[row]] @ x[row].astype(np.float64)  # W_e [N, K] times the row
    check_close(got, want, k)
    assert weights.shape == (e, k, n)
    for expert in range(e):
        assert np.array_equal(weights[expert], decoded[expert].T.astype(np.float32))


def test_dequant_grouped_matmul_byte_count_error():
    g = GraphModule("q")
    x, w, idx = g.input("x", (2, 64)), g.input("w", (2, 4, 35), "u8"), g.input("idx", (2,), "i64")
    with pytest.raises(BuildError, match=r"scheme 'q4_0' needs 36 bytes per weight row for K = 64 \(2 blocks of 18 bytes\), but w has 35"):
        g.dequant_grouped_matmul(x, w, idx, "q4_0")


def _grouped_over_three_of_four_experts(m: int, k: int, n: int, seed: int):
    """A `rlx.grouped_matmul` graph of x [m, k] and w [4, k, n], and random arrays for it: rows
    routed to experts 0, 1 and 3 (expert 2 gets none)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((4, k, n)).astype(np.float32)
    idx = rng.choice([0, 1, 3], m).astype(np.int64)
    g = GraphModule("grouped")
    xv, wv, iv = g.input("x", (m, k)), g.input("w", (4, k, n)), g.input("idx", (m,), "i64")
    g.set_outputs(g.grouped_matmul(xv, wv, iv))
    return g, x, w, idx


@pytest.mark.parametrize("threads", [1, 2])
def test_grouped_matmul_column_blocks_on_any_thread_count(threads):
    """N = 768 is one column chunk per thread (the scf.forall the threads share, a plain loop with
    one thread: rlx-mir-to-linalg without a thread count makes four of 192); 30 rows over 4
    experts, one expert empty."""
    g, x, w, idx = _grouped_over_three_of_four_experts(30, 40, 768, seed=threads)
    check_close(g.compile(threads=threads)(x=x, w=w, idx=idx), grouped_reference(x, w, idx), 40)


@pytest.mark.parametrize("threads", [1, 2])
def test_grouped_matmul_weight_blocks_add_into_the_partial_sums(threads):
    """K = 1000, N = 512: one column chunk per thread (512 or 256 columns), each expert's weight in
    blocks of 125 or 250 rows (256 KiB at most, read in place), every tile adding its second block's product into the first's;
    45 rows over 4 experts (expert 2 empty, several tiles for the others, two rows out of range)."""
    rng = np.random.default_rng(20 + threads)
    m, k, n, e = 45, 1000, 512, 4
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((e, k, n)).astype(np.float32)
    idx = rng.choice([0, 1, 3], m).astype(np.int64)
    idx[[5, 30]] = [4, -2]
    g = GraphModule("grouped")
    xv, wv, iv = g.input("x", (m, k)), g.input("w", (e, k, n)), g.input("idx", (m,), "i64")
    g.set_outputs(g.grouped_matmul(xv, wv, iv))
    got = g.compile(threads=threads)(x=x, w=w, idx=idx)
    assert not got[[5, 30]].any()
    check_close(got, grouped_reference(x, w, idx), k)


@pytest.mark.parametrize("threads", [1, 2])
def test_grouped_matmul_staggered_blocks_give_the_same_sums(threads):
    """K = 1000, N = 512: the chunks of columns 256.. (the second half, the second thread's) cut K
    half a block later than the first half's (2 threads: one chunk of 256 each, blocks of 250
    rows: rows 0-125, 125-375, ..., 875-1000 against 0-250, ...; 1 thread: one chunk, not shifted).
    Each sum still runs over k in order: a column computed in a staggered chunk is bit for bit the
    same column computed in an aligned one (the weight's columns 256-383 are a copy of 0-127)."""
    rng = np.random.default_rng(40 + threads)
    m, k, n, e = 45, 1000, 512, 4
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((e, k, n)).astype(np.float32)
    w[:, :, 256:384] = w[:, :, 0:128]
    idx = rng.choice([0, 1, 3], m).astype(np.int64)
    g = GraphModule("grouped")
    xv, wv, iv = g.input("x", (m, k)), g.input("w", (e, k, n)), g.input("idx", (m,), "i64")
    g.set_outputs(g.grouped_matmul(xv, wv, iv))
    got = g.compile(threads=threads)(x=x, w=w, idx=idx)
    assert np.array_equal(got[:, 256:384], got[:, 0:128])
    check_close(got, grouped_reference(x, w, idx), k)


def test_grouped_matmul_same_bits_on_any_column_chunks():
    """K = 1000, N = 1024 compiled for 1, 2 and 3 threads: one chunk of 1024 columns, two of 512
    (one per thread), four of 256 (3 does not divide 1024); every output column sums over k in
    order whatever the chunk, so the three results are bit for bit equal (and match the reference)."""
    g, x, w, idx = _grouped_over_three_of_four_experts(45, 1000, 1024, seed=80)
    one, two, three = (g.compile(threads=t, cache=False)(x=x, w=w, idx=idx) for t in (1, 2, 3))
    check_close(one, grouped_reference(x, w, idx), 1000)
    assert np.array_equal(two, one)
    assert np.array_equal(three, one)


# Expert indices over 8 experts for test_grouped_matmul_experts_shared_out_between_threads: which
# experts have rows decides where the threads' ranges of experts are cut (and whether one is empty).
SHARED_ROUTINGS = {
    "spread": lambda rng, m: rng.integers(0, 8, m),
    "skewed": lambda rng, m: rng.choice(8, m, p=[0.02, 0.6, 0.02, 0.02, 0.3, 0.02, 0.01, 0.01]),
    "last expert only": lambda rng, m: np.full(m, 7),
    "first expert only": lambda rng, m: np.zeros(m, np.int64),
    "none in range": lambda rng, m: np.full(m, 8),
}


@pytest.mark.parametrize("routing", SHARED_ROUTINGS)
@pytest.mark.parametrize("n", [512, 8192])
def test_grouped_matmul_experts_shared_out_between_threads(routing, n):
    """On 2 and 3 threads with 8-row tiles, the threads share out the experts (contiguous ranges,
    balanced by tiles and weights read; an empty range where the rows leave a thread none), N = 8192
    in chunks of 4096 columns per expert.  Against the per-row reference, two rows out of range;
    and bit for bit the chunks of columns of one thread: every sum still runs over k in order (K = 256:
    both cut K in blocks of a multiple of 8 rows, the kernel's rows per pass)."""
    rng = np.random.default_rng(90 + n)
    m, k, e = 70, 256, 8
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((e, k, n)).astype(np.float32)
    idx = SHARED_ROUTINGS[routing](rng, m).astype(np.int64)
    idx[[3, 40]] = [8, -1]
    g = GraphModule("grouped")
    xv, wv, iv = g.input("x", (m, k)), g.input("w", (e, k, n)), g.input("idx", (m,), "i64")
    g.set_outputs(g.grouped_matmul(xv, wv, iv))
    one, two, three = (g.compile(threads=t, cache=False)(x=x, w=w, idx=idx) for t in (1, 2, 3))
    check_close(two, grouped_reference(x, w, idx), k)
    assert not two[[3, 40]].any()
    assert np.array_equal(two, one)
    assert np.array_equal(three, one)


@pytest.mark.parametrize("k,n", [(1024, 1040), (200, 1024), (40, 64), (64, 1072)])
def test_grouped_matmul_one_thread_pieces(k, n):
    """One thread (the count known): the experts path with its loops reordered (`_expert_pieces`):
    per block of whole weight rows, per piece of at most 512 columns, every tile of the expert; the
    rows of xs and ys 16 floats longer than K and N, the padding never read.  K = 1024 (xs rows
    4 KiB apart before the padding) with N = 1040 (five pieces of 208), K = 200 (blocks of 32 rows
    and a tail block of 8) with N = 1024 (two pieces of 512), a small K = 40 with N = 64 (one block
    of all 40 rows, one piece), and N = 1072 (67 vectors: pieces of 512 and 560 columns).
    53 rows over 5 experts: expert 2 empty, last tiles of 4 and 8 rows, two rows out
    of range.  Against the per-row reference, and bit for bit the 2- and 3-thread results (each sum
    over k in order, 8 weight rows per kernel pass)."""
    x, w, idx = routed_with_gaps(k, n, [9, 14, 19, 9], seed=k + n)
    e = w.shape[0]
    g = grouped_graph(len(idx), k, n, e)
    one, two, three = (g.compile(threads=t, cache=False)(x=x, w=w, idx=idx) for t in (1, 2, 3))
    check_close(one, grouped_reference(x, w, idx), k)
    assert not one[(idx < 0) | (idx >= e)].any()
    assert np.array_equal(two, one)
    assert np.array_equal(three, one)


@pytest.mark.parametrize("plan", [True, False])
def test_lower_to_llvm_gives_the_lowering_its_thread_count(plan):
    """rlx-lower-to-llvm{threads} passes the count to the MIR lowering (rlx-lir-to-linalg, or
    rlx-mir-to-linalg with plan=false), which picks rlx.grouped_matmul's chunks by it."""
    from rlx_mlir.conversion.lir_to_linalg import LirToLinalg
    from rlx_mlir.conversion.mir_to_linalg.mir_to_linalg import MirToLinalg
    from rlx_mlir.pipelines.lower_to_llvm import LowerToLLVM

    for threads in (1, 2, 5):
        steps = LowerToLLVM(threads=threads, plan=plan).elements()
        (lowering,) = [s for s in steps if isinstance(s, (LirToLinalg, MirToLinalg))]
        assert isinstance(lowering, LirToLinalg if plan else MirToLinalg)
        assert lowering.threads == threads


@pytest.mark.parametrize("threads", [1, 2])
def test_grouped_matmul_last_tiles_of_fewer_rows(threads):
    """K = 256, N = 512: an expert's last tile holding 1 to 4 rows multiplies 4 slots, one holding 5
    to 7 all 8 (experts of 1, 4, 5, 8, 9, 12, 13 and 19 rows, shuffled; two rows out of range).
    Against the per-row reference; and the rows of a 4-row last tile are bit for bit the rows
    computed in a full tile (expert 1's first 4 rows again with 4 more rows after them)."""
    rng = np.random.default_rng(60 + threads)
    k, n, e = 256, 512, 8
    idx = np.repeat(np.arange(e), [1, 4, 5, 8, 9, 12, 13, 19])
    idx = np.concatenate([idx, [8, -1]])
    rng.shuffle(idx)
    m = len(idx)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((e, k, n)).astype(np.float32)
    g = GraphModule("grouped")
    xv, wv, iv = g.input("x", (m, k)), g.input("w", (e, k, n)), g.input("idx", (m,), "i64")
    g.set_outputs(g.grouped_matmul(xv, wv, iv))
    run = g.compile(threads=threads)
    got = run(x=x, w=w, idx=idx)
    check_close(got, grouped_reference(x, w, idx), k)
    ones = np.flatnonzero(idx == 1)  # expert 1's 4 rows: a last tile of 4
    others = np.flatnonzero((idx != 1) & (idx >= 2) & (idx < 8))[:4]
    full = idx.copy()
    full[others] = 1  # now 8 rows: one full tile of 8
    assert np.array_equal(run(x=x, w=w, idx=full)[ones], got[ones])


@pytest.mark.parametrize("threads", [1, 2])
def test_dequant_grouped_matmul_column_blocks_on_any_thread_count(threads):
    """N = 384 is three blocks of 128 slab rows (output columns) shared by the threads; 21 rows over
    4 experts (one empty, one row out of range), and one row alone (a decode step)."""
    rng = np.random.default_rng(10 + threads)
    e, n, k = 4, 384, 64
    packed, decoded = packed_experts("q8_0", e, n, k, rng)
    for m in (21, 1):
        x = rng.standard_normal((m, k)).astype(np.float32)
        idx = rng.choice([0, 2, 3], m).astype(np.int64)
        idx[m // 2] = -1 if m > 1 else idx[0]
        check_close(*_dequant_grouped_and_reference(packed, decoded, x, idx, "q8_0", threads), k)


def _dequant_grouped_and_reference(packed, decoded, x, idx, scheme: str, threads: int):
    """`rlx.dequant_grouped_matmul` of x over the packed expert slabs, compiled for `threads`, and
    its float64 reference from the decoded weights: a row's expert's weight times the row, zeros
    for an index out of range."""
    m, k = x.shape
    g = GraphModule("q")
    xv, wv, iv = g.input("x", (m, k)), g.input("w", packed.shape, "u8"), g.input("idx", (m,), "i64")
    g.set_outputs(g.dequant_grouped_matmul(xv, wv, iv, scheme))
    got = g.compile(threads=threads)(x=x, w=packed, idx=idx)
    want = np.zeros((m, decoded.shape[1]))
    for row in range(m):
        if 0 <= idx[row] < len(decoded):
            want[row] = decoded[idx[row]] @ x[row].astype(np.float64)
    return got, want


@pytest.mark.parametrize("threads", [1, 2])
def test_grouped_matmul_prime_n_and_k_take_full_tiles_and_a_tail(threads):
    """N = 331 and K = 1031 (primes, no divisor near the tile limits): 4 column chunks of 80 and a
    tail chunk of 11 after the forall, weight blocks of 816 rows and a tail block of 215
    (lit_tests/linalg/odd-shape-tails.mlir; it was 1-column chunks and 1-row blocks).  45 rows over
    4 experts: expert 2 empty, last tiles of 4 and 8 rows, two rows out of range."""
    rng = np.random.default_rng(80 + threads)
    m, k, n, e = 45, 1031, 331, 4
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((e, k, n)).astype(np.float32)
    idx = np.repeat([0, 1, 3], [11, 14, 18]).astype(np.int64)
    idx = np.concatenate([idx, [4, -1]])
    rng.shuffle(idx)
    g = GraphModule("grouped")
    xv, wv, iv = g.input("x", (m, k)), g.input("w", (e, k, n)), g.input("idx", (m,), "i64")
    g.set_outputs(g.grouped_matmul(xv, wv, iv))
    got = g.compile(threads=threads)(x=x, w=w, idx=idx)
    assert not got[(idx < 0) | (idx >= e)].any()
    check_close(got, grouped_reference(x, w, idx), k)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("scheme", ["q8_0", "q4_k"])
def test_dequant_grouped_matmul_prime_n_takes_full_blocks_and_a_tail(scheme, threads):
    """N = 131 (prime): one block of 128 slab rows in the forall and a tail block of 3 after it (it
    was 131 blocks of 1 row); 21 rows over 4 experts (one empty, one row out of range) and one row."""
    rng = np.random.default_rng([threads, *scheme.encode()])
    e, n, k = 4, 131, 256
    packed, decoded = packed_experts(scheme, e, n, k, rng)
    for m in (21, 1):
        x = rng.standard_normal((m, k)).astype(np.float32)
        idx = rng.choice([0, 1, 3], m).astype(np.int64)
        idx[m // 2] = 7 if m > 1 else idx[0]
        check_close(*_dequant_grouped_and_reference(packed, decoded, x, idx, scheme, threads), k)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("k,n", [(200, 1024), (64, 1040), (1000, 1072), (203, 48)])
def test_grouped_matmul_register_tiles_same_bits_as_the_gemv_kernel(monkeypatch, threads, k, n):
    """With the thread count known, 8-row tiles multiply with `register_tile.accumulate` (C's tile
    in registers down the whole block of weight rows, the next block prefetched) instead of
    rlx-tile-gemv's kernel on a `linalg.matmul` (C loaded and stored every 8 rows).  Both sum each
    output over k in order with one fma per k into the partial sum, so the results are bit for bit
    equal: K = 200 (blocks of 32 rows and a tail of 8), K = 1000 on 2 and 3 threads (blocks of 25
    rows: k steps not unrolled), N = 1040 and 1072 (pieces of 208, of 512 and 560 columns); last
    tiles of 4 and 8 rows, an expert without rows, two rows out of range.  K = 203 with N = 48
    (3 vectors: groups of 1 vector, tail blocks of 11 or 27 rows) only against the reference: its
    blocks are below rlx-tile-gemv's 32^3 multiply-adds, so the old path gave them to
    rlx-pack-matmul's kernel, whose sums round differently.  All against the float64 per-row
    reference."""
    from rlx_mlir.conversion.mir_to_linalg import routing

    x, w, idx = routed_with_gaps(k, n, [12, 4, 17, 10], seed=7 * k + n + threads)
    e = w.shape[0]
    g = grouped_graph(len(idx), k, n, e)
    registers = g.compile(threads=threads, cache=False)(x=x, w=w, idx=idx)
    monkeypatch.setattr(routing, "REGISTER_TILE", False)
    gemv = g.compile(threads=threads, cache=False)(x=x, w=w, idx=idx)
    check_close(registers, grouped_reference(x, w, idx), k)
    assert not registers[(idx < 0) | (idx >= e)].any()
    if (k, n) == (203, 48):
        check_close(gemv, grouped_reference(x, w, idx), k)
    else:
        assert np.array_equal(registers, gemv)
