"""Numerical checks of `rlx.topk` and `rlx.sample` against plain numpy.

Each case builds a one-op module as text and runs it through
`rlx_mlir.compile` (one test builds it with the op classes instead); no
lowering code is imported.  Results are
integer indices, so every comparison is exact; the sampling tests compare
empirical frequencies with the intended distribution by a chi-square test, and
one test recomputes the documented counter-based RNG to check individual draws.
"""

from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import func

import rlx_mlir
from rlx_mlir import compile as rlx_compile
from rlx_mlir.dialects import rlx

DTYPES = {"f32": np.float32, "f16": np.float16}


# --- helpers ------------------------------------------------------------------------------


def tensor_type(shape, dtype: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + f"{dtype}>"


@functools.lru_cache(maxsize=None)
def compiled_op(op: str, in_shape: tuple, dtype: str, out_shape: tuple, attrs: str):
    """A compiled function `f(x)` whose body is `"rlx.<op>"(x) {attrs}`."""
    t_in, t_out = tensor_type(in_shape, dtype), tensor_type(out_shape, "i64")
    text = (
        f"func.func @f(%x: {t_in}) -> {t_out} {{\n"
        f'  %0 = "rlx.{op}"(%x) {{{attrs}}} : ({t_in}) -> {t_out}\n'
        f"  return %0 : {t_out}\n"
        f"}}\n"
    )
    return rlx_compile(text, entry="f")


def run_topk(x: np.ndarray, k: int) -> np.ndarray:
    dtype = {np.float32: "f32", np.float16: "f16"}[x.dtype.type]
    exe = compiled_op("topk", x.shape, dtype, (*x.shape[:-1], k), f"k = {k} : i64")
    return exe(x)


def run_sample(logits: np.ndarray, *, top_k=0, top_p=1.0, temperature=1.0, seed=0) -> np.ndarray:
    dtype = {np.float32: "f32", np.float16: "f16"}[logits.dtype.type]
    attrs = (
        f"top_k = {top_k} : i64, top_p = {float(top_p)!r} : f32, "
        f"temperature = {float(temperature)!r} : f32, seed = {seed} : i64"
    )
    exe = compiled_op("sample", logits.shape, dtype, (logits.shape[0],), attrs)
    out = exe(logits)
    assert out.dtype == np.int64 and out.shape == (logits.shape[0],)
    return out


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


# --- topk ------------------------------------------------------------------------------------


def topk_reference(x: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest along the last axis; ties to the lower index, NaN largest.

    np.lexsort sorts by its last key first: NaNs first (~isnan is False), then
    by descending value (ascending -value; -0.0 and 0.0 compare equal), then by
    ascending index.  Computed in float64 (f16 and f32 widen exactly).
    """
    x64 = x.astype(np.float64)
    nan = np.isnan(x64)
    value = np.where(nan, 0.0, x64)
    index = np.broadcast_to(np.arange(x.shape[-1]), x.shape)
    flat_v = value.reshape(-1, x.shape[-1])
    flat_n = nan.reshape(-1, x.shape[-1])
    flat_i = index.reshape(-1, x.shape[-1])
    rows = [np.lexsort((i, -v, ~n))[:k] for v, n, i in zip(flat_v, flat_n, flat_i)]
    return np.array(rows, np.int64).reshape(*x.shape[:-1], k)


TOPK_SHAPES = [
    pytest.param((8,), 3, id="8-k3"),
    pytest.param((3, 17), 5, id="3x17-k5"),
    pytest.param((2, 3, 10), 10, id="2x3x10-k10"),  # k = N: a full descending argsort
    pytest.param((4, 1), 1, id="4x1-k1"),  # size-1 last axis
]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape, k", TOPK_SHAPES)
def test_topk_with_ties(shape, k, dtype):
    """Small integers (exact in f16) give many ties; the order among them must be by index."""
    x = rng_for("topk", shape, k, dtype).integers(-3, 4, size=shape).astype(DTYPES[dtype])
    expected = topk_reference(x, k)
    actual = run_topk(x, k)
    assert actual.dtype == np.int64
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_topk_distinct_values(dtype):
    """Continuous values: the plain descending argsort."""
    x = rng_for("topk-distinct", dtype).standard_normal((5, 33)).astype(DTYPES[dtype])
    np.testing.assert_array_equal(run_topk(x, 7), topk_reference(x, 7))
    if dtype == "f32":
        assert len(np.unique(x)) == x.size  # no ties: argsort alone is the reference
        np.testing.assert_array_equal(run_topk(x, 7), np.argsort(-x, axis=-1)[:, :7])


def test_topk_special_values():
    """NaN above +inf, ties among NaNs and zeros by index, -inf selectable and tied by index."""
    nan, inf = np.nan, np.inf
    x = np.array(
        [
            [-inf, -inf, -inf, -inf],  # all equal: 0, 1, 2, 3
            [0.0, -0.0, 0.0, -1.0],  # -0.0 == 0.0: by index
            [1.0, nan, inf, -nan],  # NaNs (any sign) first, then +inf
            [-inf, 2.0, -inf, -3.0],  # -inf after every number, then by index
        ],
        np.float32,
    )
    expected = np.array([[0, 1, 2, 3], [0, 1, 2, 3], [1, 3, 2, 0], [1, 3, 0, 2]], np.int64)
    np.testing.assert_array_equal(topk_reference(x, 4), expected)
    np.testing.assert_array_equal(run_topk(x, 4), expected)


# --- sample: greedy and determinism -------------------------------------------------------


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", [(1, 5), (4, 10), (3, 33)], ids=lambda s: "x".join(map(str, s)))
def test_sample_temperature_zero_is_argmax(shape, dtype):
    """np.argmax returns the first maximum: ties to the lower index."""
    logits = rng_for("greedy", shape, dtype).integers(-2, 3, size=shape).astype(DTYPES[dtype])
    np.testing.assert_array_equal(run_sample(logits, temperature=0.0, seed=3), np.argmax(logits, axis=-1))


def test_sample_top_k_one_is_argmax():
    """top_k = 1 keeps only the most probable token (ties: the lower index), at any temperature."""
    logits = rng_for("topk1").integers(-2, 3, size=(16, 9)).astype(np.float32)
    for seed in (0, 1):
        np.testing.assert_array_equal(
            run_sample(logits, top_k=1, temperature=1.5, seed=seed), np.argmax(logits, axis=-1)
        )


def test_sample_same_seed_same_ids_and_different_seeds_differ():
    logits = np.zeros((64, 50), np.float32)  # uniform: each row a fresh draw from 50 tokens
    first = run_sample(logits, seed=7)
    np.testing.assert_array_equal(run_sample(logits, seed=7), first)
    other = run_sample(logits, seed=8)
    # Independent uniform draws agree on a row with probability 1/50: 64 agreements
    # would be a (1/50)**64 event; more than 12 agreements has probability < 1e-6.
    assert np.sum(first == other) <= 12
    # Rows are independent draws too: 64 rows from 50 tokens use many distinct ids.
    assert len(np.unique(first)) >= 25


def test_sample_f16_logits():
    """f16 logits widen exactly: the same draws as the same values in f32."""
    logits = rng_for("f16").standard_normal((32, 12)).astype(np.float16)
    np.testing.assert_array_equal(
        run_sample(logits, temperature=0.9, seed=4), run_sample(logits.astype(np.float32), temperature=0.9, seed=4)
    )


def test_sample_non_finite_rows_fall_back_to_greedy():
    nan, inf = np.nan, np.inf
    logits = np.array(
        [
            [0.0, 1.0, nan, 2.0, nan],  # NaN: greedy takes the first NaN
            [0.0, inf, 3.0, inf, 1.0],  # +inf - +inf is NaN: greedy takes the first +inf
            [-inf, -inf, -inf, -inf, -inf],  # nothing finite: all tie, index 0
            [-inf, 0.0, -inf, -inf, -inf],  # one finite logit: probability 1
        ],
        np.float32,
    )
    np.testing.assert_array_equal(run_sample(logits, top_p=0.9, seed=1), [2, 1, 0, 1])


# --- sample: distributions ------------------------------------------------------------------

# Upper 1e-4 quantiles of the chi-square distribution by degrees of freedom
# (scipy.stats.chi2.isf(1e-4, df), written out so that the test needs no scipy).
# A correct sampler fails with probability 1e-4 per test; the seeds are fixed,
# so the outcome is deterministic.
CHI2_CRITICAL_1E4 = {1: 15.1367, 2: 18.4207, 3: 21.1075, 4: 23.5127, 5: 25.7448}

STAT_LOGITS = np.array([0.5, 2.0, -1.5, 1.0, 0.0, -0.5], np.float32)  # most probable token not first
STAT_ROWS = 20000


def softmax64(logits: np.ndarray, temperature: float) -> np.ndarray:
    z = logits.astype(np.float64) / temperature
    e = np.exp(z - z.max())
    return e / e.sum()


def truncated(p: np.ndarray, top_k: int = 0, top_p: float = 1.0) -> np.ndarray:
    """The sampling distribution after top-k, then top-p on the renormalised top-k mass."""
    order = np.argsort(-p, kind="stable")  # most probable first, ties by index
    keep = np.zeros(p.shape, bool)
    keep[order[: top_k or len(p)]] = True
    q = np.where(keep, p, 0.0)
    q = q / q.sum()
    if top_p < 1.0:
        ranked = q[order]
        before = np.cumsum(ranked) - ranked  # mass ranked strictly before each token
        keep_ranked = before < top_p
        keep = np.zeros(p.shape, bool)
        keep[order[keep_ranked]] = True
        q = np.where(keep, q, 0.0)
        q = q / q.sum()
    return q


def chi_square(counts: np.ndarray, probs: np.ndarray) -> tuple[float, int]:
    """Pearson's statistic over the tokens of positive probability, and its degrees of freedom."""
    support = probs > 0
    expected = probs[support] * counts.sum()
    assert np.all(expected >= 5), "chi-square needs expected counts of at least 5"
    statistic = float(np.sum((counts[support] - expected) ** 2 / expected))
    return statistic, int(support.sum()) - 1


@pytest.mark.parametrize(
    "temperature, top_k, top_p, kept",
    [
        pytest.param(0.8, 0, 1.0, [0, 1, 2, 3, 4, 5], id="plain"),
        pytest.param(1.7, 0, 1.0, [0, 1, 2, 3, 4, 5], id="hot"),
        pytest.param(0.8, 3, 1.0, [0, 1, 3], id="top_k=3"),
        pytest.param(0.8, 0, 0.8, [1, 3], id="top_p=0.8"),
        # Raw mass of the top two is 0.815 < 0.82, renormalised over the top 3 it is
        # 0.893: top_p is measured after top_k, so two tokens stay, not three.
        pytest.param(0.8, 3, 0.82, [1, 3], id="top_k=3-top_p=0.82"),
    ],
)
def test_sample_distribution_chi_square(temperature, top_k, top_p, kept):
    logits = np.tile(STAT_LOGITS, (STAT_ROWS, 1))
    ids = run_sample(logits, top_k=top_k, top_p=top_p, temperature=temperature, seed=12345)
    counts = np.bincount(ids, minlength=len(STAT_LOGITS)).astype(np.float64)
    probs = truncated(softmax64(STAT_LOGITS, temperature), top_k, top_p)
    assert sorted(np.flatnonzero(probs)) == kept  # the reference keeps what the case says
    assert sorted(np.flatnonzero(counts)) == kept  # never a token outside the kept set
    statistic, df = chi_square(counts, probs)
    assert statistic < CHI2_CRITICAL_1E4[df], f"chi-square {statistic:.2f} with {df} dof; counts {counts}"


def test_sample_chi_square_has_power():
    """The same test rejects a plausible bug: sampling at temperature 1 instead of 0.8."""
    logits = np.tile(STAT_LOGITS, (STAT_ROWS, 1))
    counts = np.bincount(run_sample(logits, temperature=1.0, seed=12345), minlength=6).astype(np.float64)
    statistic, df = chi_square(counts, softmax64(STAT_LOGITS, 0.8))
    assert statistic > CHI2_CRITICAL_1E4[df]


@pytest.mark.parametrize(
    "top_k, top_p, kept",
    [
        pytest.param(2, 1.0, [0, 1], id="top_k=2"),  # equal probabilities: the lower indices
        pytest.param(0, 0.5, [0, 1], id="top_p=0.5"),  # 0.25 + 0.25 reaches 0.5: two tokens
        pytest.param(0, 0.6, [0, 1, 2], id="top_p=0.6"),  # mass before token 2 is 0.5 < 0.6
    ],
)
def test_sample_ties_go_to_the_lower_index(top_k, top_p, kept):
    logits = np.zeros((2000, 4), np.float32)  # four tokens of probability 0.25
    ids = run_sample(logits, top_k=top_k, top_p=top_p, seed=2)
    assert sorted(np.unique(ids)) == kept


# --- sample: the documented RNG, draw by draw ------------------------------------------------

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(z: int) -> int:
    z &= MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def documented_uniform(seed: int, row: int) -> float:
    key = splitmix64(seed + GOLDEN)  # a negative seed: its two's complement, by the mask
    return (splitmix64(key + (row + 1) * GOLDEN) >> 40) * 2.0**-24


@pytest.mark.parametrize("top_k, top_p, seed", [(0, 1.0, 99), (0, 1.0, -3), (4, 1.0, 99), (0, 0.7, 99), (5, 0.9, 99)])
def test_sample_draws_follow_the_documented_rng(top_k, top_p, seed):
    """Each row's token is the inverse CDF (index order) of the kept distribution at u(seed, row).

    The reference works in float64, the op in f32: rows whose u * total lies
    within 1e-5 of a CDF step could round either way and are skipped (f32
    softmax and prefix sums of 13 terms are accurate to ~1e-6).
    """
    rows, vocab = 200, 13
    logits = rng_for("rng", top_k, top_p).standard_normal((rows, vocab)).astype(np.float32)
    ids = run_sample(logits, top_k=top_k, top_p=top_p, temperature=0.9, seed=seed)
    checked = 0
    for b in range(rows):
        q = truncated(softmax64(logits[b], 0.9), top_k, top_p)
        cdf = np.cumsum(q)
        u = documented_uniform(seed, b)
        if np.min(np.abs(cdf - u)) < 1e-5:
            continue
        assert ids[b] == int(np.argmax(cdf > u)), f"row {b}: u = {u}, cdf = {cdf}"
        checked += 1
    assert checked >= rows - 5


# --- edges and the Python builders --------------------------------------------------------------


def test_sample_edges():
    """V = 1 always gives token 0; top_k = V and top_p = 1 change nothing."""
    np.testing.assert_array_equal(run_sample(np.zeros((3, 1), np.float32), top_p=0.3, seed=5), [0, 0, 0])
    logits = rng_for("edges").standard_normal((64, 7)).astype(np.float32)
    np.testing.assert_array_equal(run_sample(logits, top_k=7, seed=5), run_sample(logits, seed=5))


def test_builders_infer_i64_results_and_compile():
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.create()
        x_type = ir.RankedTensorType.get([3, 6], ir.F32Type.get())
        with ir.InsertionPoint(module.body):

            @func.FuncOp.from_py_func(x_type)
            def pick(x):
                top = rlx.TopkOp(x, 2)
                assert str(top.result.type) == "tensor<3x2xi64>"
                greedy = rlx.SampleOp(x, temperature=0.0)
                assert str(greedy.result.type) == "tensor<3xi64>"
                assert (greedy.top_k, greedy.top_p, greedy.seed) == (0, 1.0, 0)
                with pytest.raises(ValueError, match="k 7 is larger than the last axis"):
                    rlx.TopkOp(x, 7)
                with pytest.raises(ValueError, match=r"top_p 0 must be in \(0, 1\]"):
                    rlx.SampleOp(x, top_p=0.0)
                return top.result, greedy.result

    x = np.array([[0, 3, 1, 3, 2, -1]] * 3, np.float32)
    top, greedy = rlx_mlir.compile(module, entry="pick")(x)
    np.testing.assert_array_equal(top, [[1, 3]] * 3)
    np.testing.assert_array_equal(greedy, [1, 1, 1])
