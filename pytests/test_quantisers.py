"""rlx_mlir.quant: the reference quantisers and dequantisers.

GGUF schemes are checked against the `gguf` package (llama.cpp's own Python reader): our
dequantisation must equal `gguf.quants.dequantize` bit for bit, on blocks our quantisers made and
on random valid bytes; our quantisers must write the bytes ggml's reference quantisers write
(pinned by hashes of ggml's output on platform-independent weights).  The side-tensor schemes are checked against formulas written here from
the layouts the module docstrings document.
"""

import hashlib
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as GT  # noqa: E402

from rlx_mlir import quant  # noqa: E402
from rlx_mlir.errors import RlxError  # noqa: E402

# ggml's struct sizes and where each block keeps its f16 scales (from ggml-common.h).
GGUF = {
    #  scheme: (ggml type, elements, bytes, byte offsets of f16 fields)
    "q4_0": (GT.Q4_0, 32, 18, (0,)),
    "q8_0": (GT.Q8_0, 32, 34, (0,)),
    "q4_k": (GT.Q4_K, 256, 144, (0, 2)),
    "q5_k": (GT.Q5_K, 256, 176, (0, 2)),
    "q6_k": (GT.Q6_K, 256, 210, (208,)),
    "q2_k": (GT.Q2_K, 256, 84, (80, 82)),
    "q3_k": (GT.Q3_K, 256, 110, (108,)),
}


def bits(a):
    """float32 array -> its bit patterns, so that equality is bit-exact (and -0.0 != 0.0)."""
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


def rel_rms(approx, exact):
    return float(np.sqrt(np.mean((approx - exact) ** 2)) / np.sqrt(np.mean(exact**2)))


def test_weights(n=48, k=1024, seed=0):
    """Weights with the shapes quantisers trip on: gaussian rows, heavy tails, rows at very
    different scales, an all-zero block, a constant negative block, an all-positive block."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n, k)).astype(np.float32)
    w[1] = rng.standard_t(2, k)
    w[2] *= 1e-2
    w[3] *= 300.0
    w[4, :256] = 0.0
    w[5, :256] = -0.75
    w[6] = np.abs(w[6]) + 0.5
    return w


test_weights.__test__ = False  # a helper, not a test


# ---------------------------------------------------------------------------------------------
# GGUF: sizes, bit-exact decode against gguf, round-trip error


@pytest.mark.parametrize("name", GGUF)
def test_gguf_sizes_match_ggml(name):
    gtype, elements, nbytes, _ = GGUF[name]
    assert (quant.block_size(name), quant.block_bytes(name)) == (elements, nbytes) == gguf.GGML_QUANT_SIZES[gtype]
    assert quant.row_bytes(name, 4 * elements) == 4 * nbytes
    assert quant.operands(name, (3, 2 * elements)) == (quant.Operand("w", (3, 2 * nbytes), "uint8"),)


@pytest.mark.parametrize("name", GGUF)
def test_gguf_decode_of_our_blocks_is_bit_exact(name):
    w = test_weights()
    packed = quant.quantize(w, name)
    assert packed.dtype == np.uint8 and packed.shape == (48, quant.row_bytes(name, 1024))
    ours = quant.dequantize(packed, name, w.shape)
    theirs = gguf.quants.dequantize(packed, GGUF[name][0])
    assert ours.dtype == np.float32 and ours.shape == w.shape
    np.testing.assert_array_equal(bits(ours), bits(theirs))


@pytest.mark.parametrize("name", GGUF)
@pytest.mark.parametrize("seed", [1, 2])
def test_gguf_decode_of_random_bytes_is_bit_exact(name, seed):
    gtype, elements, nbytes, f16_offsets = GGUF[name]
    rng = np.random.default_rng(seed)
    rows, k = 16, 8 * elements
    raw = rng.integers(0, 256, (rows, k // elements, nbytes), dtype=np.uint8)
    # Any bytes are a valid block once the f16 scales are finite: draw finite halves of every size.
    for offset in f16_offsets:
        halves = rng.integers(0, 1 << 16, raw.shape[:2], dtype=np.uint16)
        finite = np.isfinite(halves.view(np.float16))
        halves = np.where(finite, halves, halves & 0x7BFF)  # exponent 31 -> 30: finite
        raw[:, :, offset : offset + 2] = halves.view(np.uint8).reshape(*raw.shape[:2], 2)
    raw = raw.reshape(rows, -1)
    ours = quant.dequantize(raw, name, (rows, k))
    theirs = gguf.quants.dequantize(raw, gtype)
    assert np.isfinite(ours).all()
    np.testing.assert_array_equal(bits(ours), bits(theirs))


# Relative RMS error bounds on gaussian weights (measured: q2_k 0.30, q3_k 0.15, q4_0 0.086,
# q4_k 0.072, q5_k 0.036, q6_k 0.018, q8_k 0.0070, q8_0 0.0054).
ERROR_BOUND = {
    "q2_k": 0.32,
    "q3_k": 0.165,
    "q4_0": 0.095,
    "q4_k": 0.08,
    "q5_k": 0.04,
    "q6_k": 0.02,
    "q8_k": 0.008,
    "q8_0": 0.006,
}


def test_gguf_round_trip_error_is_bounded_and_ordered():
    w = np.random.default_rng(3).standard_normal((64, 2048)).astype(np.float32)
    err = {name: rel_rms(quant.dequantize(quant.quantize(w, name), name, w.shape), w) for name in ERROR_BOUND}
    for name, bound in ERROR_BOUND.items():
        assert err[name] < bound, (name, err[name])
    assert err["q2_k"] > err["q3_k"] > err["q4_k"] > err["q5_k"] > err["q6_k"] > err["q8_0"]
    # The K-quants' scale/min search beats q4_0's plain max-abs scale at about the same 4.5 bits.
    assert err["q4_k"] < 0.9 * err["q4_0"]


@pytest.mark.parametrize("name", GGUF)
def test_gguf_round_trip_is_bounded_on_awkward_rows(name):
    w = test_weights()
    out = quant.dequantize(quant.quantize(w, name), name, w.shape)
    for row in range(w.shape[0]):
        assert rel_rms(out[row], w[row]) < 3 * ERROR_BOUND[name], (name, row)  # every scale, tails too
    np.testing.assert_array_equal(out[4, :256], 0.0)  # an all-zero block stays zero
    np.testing.assert_allclose(out[5, :256], -0.75, rtol=4 * ERROR_BOUND[name] ** 2)


@pytest.mark.parametrize("name", ["q4_0", "q8_0"])
def test_gguf_simple_quantisers_match_gguf_bytes(name):
    """gguf.quants implements these two quantisers (ggml's reference ones): same bytes."""
    w = test_weights()
    np.testing.assert_array_equal(quant.quantize(w, name), gguf.quants.quantize(w, GGUF[name][0]))


def golden_weights():
    """64 x 1024 weights from integer hashing and exact float arithmetic (the same on every
    platform and numpy version): sums of four uniforms, heavier tails, rows at scales 2^-6..2^2,
    a zero block and a constant block."""
    i = np.arange(64 * 1024, dtype=np.uint64)
    mults = [(2654435761, 12345), (2246822519, 777), (3266489917, 99991), (668265263, 4242)]
    u = [((i * np.uint64(a) + np.uint64(b)) % np.uint64(1 << 32)).astype(np.float64) / 2.0**32 for a, b in mults]
    w = (u[0] + u[1] + u[2] + u[3] - 2.0).reshape(64, 1024)
    w = w * (1 + 10 * w * w)
    w = w * (2.0 ** (np.arange(64) % 9 - 6))[:, None]
    w[3, :256] = 0.0
    w[5, :256] = -0.75
    return w.astype(np.float32)


# sha256 (first 32 hex digits) of the bytes ggml's own reference quantisers (quantize_row_*_ref in
# ggml-quants.c, ggml commit d99724f2, built with gcc -O2) write for golden_weights().
GGML_REFERENCE_SHA256 = {
    "q4_0": "1635a0ffe503cce10c330beb0ef79d5d",
    "q8_0": "8bd658c21aa258e5fc22d07ab1095052",
    "q4_k": "53f164774ccd6dc6fde15b6402e0d9ff",
    "q5_k": "a3c39b8fa7a20cbc4d7c1b0353bfbaff",
    "q6_k": "80e6f61fb0ce3a4caa3b3991460323e5",
    "q2_k": "de73e85b2bbe2a2cf5e4dc81e98daf26",
    "q3_k": "4ce21bfc2adf0583296f477f8a9faffd",
    "q8_k": "66ef82058955f72ca5fdad4fda93bb7a",
}


@pytest.mark.parametrize("name", GGML_REFERENCE_SHA256)
def test_quantisers_write_ggml_reference_bytes(name):
    packed = quant.quantize(golden_weights(), name)
    assert hashlib.sha256(packed.tobytes()).hexdigest()[:32] == GGML_REFERENCE_SHA256[name]


@pytest.mark.parametrize("name", ["q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k"])
def test_k_quant_blocks_use_their_scales(name):
    """Blocks at very different magnitudes in one row each get their own scale (so each is
    reproduced to the scheme's relative accuracy, not the row's)."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((4, 1024)).astype(np.float32) * np.repeat([1e-3, 1.0, 50.0, 1e3], 256)
    out = quant.dequantize(quant.quantize(w, name), name, w.shape)
    for b in range(4):
        cols = slice(256 * b, 256 * b + 256)
        assert rel_rms(out[:, cols], w[:, cols]) < 1.5 * ERROR_BOUND[name]


def test_q8_k_layout():
    """gguf.quants cannot decode q8_k (ggml's dot-product partner format); check the struct here:
    f32 d, int8 qs[256], int16 bsums[16] (the sums of each 16 codes), w = d * q."""
    w = test_weights(n=8, k=512)
    packed = quant.quantize(w, "q8_k")
    assert packed.shape == (8, 2 * 292) and quant.block_bytes("q8_k") == gguf.GGML_QUANT_SIZES[GT.Q8_K][1]
    blocks = packed.reshape(16, 292)
    d = blocks[:, 0:4].copy().view("<f4")[:, 0]
    q = blocks[:, 4:260].copy().view(np.int8).astype(np.int64)
    bsums = blocks[:, 260:292].copy().view("<i2")
    np.testing.assert_array_equal(bsums, q.reshape(16, 16, 16).sum(axis=2))
    assert np.abs(q).max() == 127
    expected = (d[:, None] * q.astype(np.float32)).reshape(8, 512)
    np.testing.assert_array_equal(bits(quant.dequantize(packed, "q8_k", w.shape)), bits(expected))
    assert rel_rms(expected, w) < 3 * ERROR_BOUND["q8_k"]


def test_q4_0_hand_built_block_decodes_as_documented():
    d = np.float16(0.5)
    codes = np.arange(32) % 16
    qs = (codes[:16] | (codes[16:] << 4)).astype(np.uint8)
    block = np.concatenate([np.frombuffer(d.tobytes(), np.uint8), qs])[None, :]
    np.testing.assert_array_equal(quant.dequantize(block, "q4_0", (1, 32))[0], 0.5 * (codes - 8))


def test_gguf_dequantize_takes_bytes():
    w = np.random.default_rng(11).standard_normal((2, 256)).astype(np.float32)
    packed = quant.quantize(w, "q4_k")
    np.testing.assert_array_equal(quant.dequantize(packed.tobytes(), "q4_k", (2, 256)), quant.dequantize(packed, "q4_k", (2, 256)))


@pytest.mark.parametrize("name", [n for n in GGUF if n != "q8_k"])  # q8_k keeps its scale in f32
@pytest.mark.parametrize("magnitude", [1e9, 1e30, 3e38])
def test_gguf_weight_too_large_for_the_f16_scale_is_an_error(name, magnitude):
    """A block whose scale overflows the block's f16 (65504) would decode to inf or NaN: an error
    naming the scheme (it was packed silently; 1e9 overflows every f16-scaled scheme, 1e30 the
    quantisers' own f32 arithmetic).  The largest weights that fit still round-trip."""
    block = 32 if name in ("q4_0", "q8_0") else 256
    w = np.full((2, block), magnitude, np.float32)
    w[1, 3] = -magnitude / 3
    with pytest.raises(quant.QuantError, match=rf"^{name}: a block's scale does not fit the f16 of a GGUF block \(largest 65504\)"):
        quant.quantize(w, name)
    fits = w / magnitude * 1e5
    assert np.isfinite(quant.dequantize(quant.quantize(fits, name), name, fits.shape)).all()


def test_gguf_quantize_takes_leading_dimensions():
    w = np.random.default_rng(5).standard_normal((2, 3, 256)).astype(np.float32)
    packed = quant.quantize(w, "q6_k")
    assert packed.shape == (2, 3, 210)
    np.testing.assert_array_equal(quant.dequantize(packed, "q6_k", w.shape), quant.dequantize(packed.reshape(6, 210), "q6_k", (6, 256)).reshape(w.shape))


# ---------------------------------------------------------------------------------------------
# int8 / int8_asym / int4: formulas written from the documented layout


def blockwise_reference(w, kind, block):
    """Independent quantise-dequantise of W [N, K], per column n and block of `block` along K."""
    n, k = w.shape
    out = np.empty_like(w, dtype=np.float64)
    for col in range(n):
        for start in range(0, k, block):
            x = w[col, start : start + block].astype(np.float64)
            if kind == "int8_asym":
                lo, hi = min(x.min(), 0.0), max(x.max(), 0.0)
                s = (hi - lo) / 255
                zp = np.clip(np.round(-lo / s), 0, 255) if s else 0.0
                q = np.clip(np.round(x / s) + zp, 0, 255) if s else np.zeros_like(x)
                out[col, start : start + block] = (q - zp) * s
            else:
                s = np.abs(x).max() / (127 if kind == "int8" else 7)
                q = np.round(x / s) if s else np.zeros_like(x)
                out[col, start : start + block] = q * s
    return out


@pytest.mark.parametrize("name", ["int8/32", "int8_asym/32", "int4/32", "int8/64", "int4/128"])
def test_blockwise_round_trip_matches_reference(name):
    kind, block = name.split("/")
    w = np.random.default_rng(6).standard_normal((16, 256)).astype(np.float32)
    w[0, :128] = 0.0
    w[1] = np.abs(w[1])
    stored = quant.quantize(w, name)
    expected_ops = quant.operands(name, w.shape)
    assert [(a.shape, a.dtype.name) for a in stored] == [(op.shape, op.dtype) for op in expected_ops]
    got = quant.dequantize(stored, name, w.shape)
    assert got.dtype == np.float32 and got.shape == w.shape
    np.testing.assert_allclose(got, blockwise_reference(w, kind, int(block)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["int8/32", "int8_asym/32", "int4/32"])
def test_blockwise_weights_near_the_float32_maximum_stay_finite(name):
    """A block spanning -3e38..3e38: int8_asym's hi - lo passes the f32 maximum (its scale was inf
    and the block decoded to NaN); every scheme decodes within half a step of the weight (and f32
    rounding)."""
    w = np.random.default_rng(9).uniform(-3e38, 3e38, (4, 64)).astype(np.float32)
    w[:, 0], w[:, 1] = np.float32(3.3e38), np.float32(-3.3e38)
    stored = quant.quantize(w, name)
    assert np.isfinite(stored[1]).all(), f"{name}: a scale is not finite"
    got = quant.dequantize(stored, name, w.shape).astype(np.float64)
    step = np.repeat(stored[1].astype(np.float64).T, 32, axis=1)  # [N, K]: each weight's block scale
    assert np.isfinite(got).all()
    assert (np.abs(got - w) <= 0.5 * step * (1 + 1e-5)).all()  # the decode rounds to f32


@pytest.mark.parametrize("name", ["int8/32", "int8_asym/32", "int4/32", "nvfp4"])
def test_side_tensor_quantisers_return_c_contiguous_arrays(name):
    """The stored arrays go to the compiled kernels and to files as they are: C order, not views
    of a transposed temporary."""
    w = np.random.default_rng(7).standard_normal((64, 128)).astype(np.float32)
    stored = quant.quantize(w, name)
    for array, operand in zip(stored, quant.operands(name, w.shape)):
        assert array.flags.c_contiguous, f"{name}: {operand.name} {array.shape} is not C-contiguous"


@pytest.mark.parametrize("kind", ["int8", "int8_asym", "int4"])
def test_blockwise_decode_of_given_arrays(kind):
    """Arbitrary stored arrays (zero points included) decode as W[n, k] = (q[k, n] - zp) * scale."""
    n, k, block = 6, 8, 4
    rng = np.random.default_rng(7)
    scale = rng.uniform(0.1, 2.0, (k // block, n)).astype(np.float32)
    if kind == "int8":
        q = rng.integers(-128, 128, (k, n)).astype(np.int8)
        zp = np.zeros((k // block, n), np.float32)
        w_q = q
    elif kind == "int8_asym":
        q = rng.integers(0, 256, (k, n)).astype(np.uint8)
        zp = rng.integers(0, 256, (k // block, n)).astype(np.float32)
        w_q = q
    else:
        q = rng.integers(0, 16, (k, n)).astype(np.uint8)
        zp = rng.integers(0, 16, (k // block, n)).astype(np.float32)
        w_q = np.zeros((k, n // 2), np.uint8)
        for kk in range(k):
            for j in range(n // 2):
                w_q[kk, j] = q[kk, 2 * j] | (q[kk, 2 * j + 1] << 4)
    expected = np.empty((n, k), np.float32)
    for nn in range(n):
        for kk in range(k):
            expected[nn, kk] = (np.float32(q[kk, nn]) - zp[kk // block, nn]) * scale[kk // block, nn]
    got = quant.dequantize((w_q, scale, zp), f"{kind}/{block}", (n, k))
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------------------------
# nvfp4


def e4m3_reference(byte):
    byte = int(byte)
    sign = -1.0 if byte & 0x80 else 1.0
    e, m = (byte >> 3) & 0xF, byte & 7
    if e == 0xF and m == 7:
        return math.nan
    return sign * (math.ldexp(m / 8, -6) if e == 0 else math.ldexp(1 + m / 8, e - 7))


E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def test_nvfp4_decode_of_given_arrays():
    n, k = 4, 32
    rng = np.random.default_rng(8)
    codes = rng.integers(0, 256, (k, n // 2), dtype=np.uint8)
    scales = rng.integers(0, 256, (k // 16, n), dtype=np.uint8)
    scales[0, 0], scales[1, 1], scales[1, 2] = 0x7F, 0xFF, 0x00  # NaN, NaN, zero
    gscale = np.array([0.37], np.float32)
    got = quant.dequantize((codes, scales, gscale), "nvfp4", (n, k))
    for nn in range(n):
        for kk in range(k):
            nibble = (codes[kk, nn // 2] >> (4 * (nn % 2))) & 0xF
            want = np.float32(np.float32(E2M1[nibble]) * np.float32(e4m3_reference(scales[kk // 16, nn]))) * gscale[0]
            assert bits(got[nn, kk]) == bits(np.float32(want)) or (math.isnan(want) and np.isnan(got[nn, kk]))
    assert np.isnan(got[0, :16]).all() and np.isnan(got[1, 16:]).all()


def test_nvfp4_quantiser_picks_the_nearest_value():
    w = np.random.default_rng(9).standard_normal((8, 64)).astype(np.float32)
    w[0, :16] = 0.0
    codes, scales, gscale = stored = quant.quantize(w, "nvfp4")
    assert (codes.shape, scales.shape, gscale.shape) == ((64, 4), (4, 8), (1,))
    assert not np.isnan(quant.dequantize(stored, "nvfp4", w.shape)).any()
    assert gscale[0] == np.float32(np.abs(w).max() / (6 * 448))
    got = quant.dequantize(stored, "nvfp4", w.shape)
    grid = np.array(E2M1[:8], np.float32)
    for nn in range(8):
        for b in range(4):
            step = np.float32(e4m3_reference(scales[b, nn])) * gscale[0]
            x = w[nn, 16 * b : 16 * b + 16]
            # the block scale: the E4M3 value nearest max|x| / 6 / global
            ideal = np.abs(x).max() / 6 / gscale[0]
            candidates = np.array([e4m3_reference(c) for c in range(0x7F)])
            assert abs(e4m3_reference(scales[b, nn]) - ideal) <= np.abs(candidates - ideal).min() * (1 + 1e-6)
            # every weight: the signed grid value nearest it
            values = np.concatenate([grid, -grid]) * step
            nearest = np.abs(x[:, None] - values[None, :]).min(axis=1)
            np.testing.assert_allclose(np.abs(got[nn, 16 * b : 16 * b + 16] - x), nearest, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(got[0, :16], 0.0)
    assert rel_rms(got, w) < 0.12


def test_nvfp4_roundings_tie_to_even_and_saturate():
    from rlx_mlir.quant import nvfp4

    halfway = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, -0.25, -5.0, -0.3]
    assert nvfp4.encode_e2m1(np.array(halfway, np.float32)).tolist() == [0, 2, 2, 4, 4, 6, 6, 7, 0, 14, 9]
    # 1.0 = 0x38, 1.125 = 0x39, 1.25 = 0x3A; 448 = 0x7E is the largest finite value
    e4m3 = nvfp4.encode_e4m3(np.array([1.0625, 1.1875, 1.2, 448.0, 500.0, 0.0], np.float32))
    assert e4m3.tolist() == [0x38, 0x3A, 0x3A, 0x7E, 0x7E, 0x00]


# ---------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    "name, message",
    [
        ("q4_1", "unknown quantisation scheme 'q4_1'; expected one of q4_0, q8_0, q4_k"),
        ("Q4_K", "unknown quantisation scheme 'Q4_K'"),
        ("int8/0", "bad quantisation scheme 'int8/0': expected 'int8/B' with the block B a positive integer"),
        ("int4/x", "bad quantisation scheme 'int4/x'"),
        ("int8", "bad quantisation scheme 'int8'"),
    ],
)
def test_unknown_schemes(name, message):
    with pytest.raises(quant.QuantError, match=re.escape(message)):
        quant.quantize(np.zeros((2, 32), np.float32), name)
    with pytest.raises(ValueError, match=re.escape(message)):
        quant.block_size(name)


def test_quant_error_is_a_value_error_and_an_rlx_error():
    assert issubclass(quant.QuantError, ValueError) and issubclass(quant.QuantError, RlxError)


@pytest.mark.parametrize(
    "name, shape, message",
    [
        ("q4_k", (4, 300), "q4_k: K = 300 (the weight's last dimension) is not a multiple of the block size 256"),
        ("q8_0", (4, 40), "q8_0: K = 40 (the weight's last dimension) is not a multiple of the block size 32"),
        ("int8/32", (4, 48), "int8/32: K = 48 (the weight's last dimension) is not a multiple of the block size 32"),
        ("int4/16", (3, 32), "int4/16: N = 3 must be even"),
        ("nvfp4", (2, 24), "nvfp4: K = 24 (the weight's last dimension) is not a multiple of the block size 16"),
        ("int8/16", (2, 2, 32), "int8/16: the weight must be 2-D [N, K], got shape (2, 2, 32)"),
    ],
)
def test_bad_weight_shapes(name, shape, message):
    with pytest.raises(quant.QuantError, match=re.escape(message)):
        quant.quantize(np.ones(shape, np.float32), name)


def test_bad_weights():
    with pytest.raises(quant.QuantError, match=re.escape("q8_0: the weight holds non-finite values")):
        quant.quantize(np.full((1, 32), np.inf, np.float32), "q8_0")
    with pytest.raises(quant.QuantError, match=re.escape("q8_0: the weight must be a float array, got dtype <U1")):
        quant.quantize(np.full((1, 32), "a"), "q8_0")


def test_wrong_byte_counts_name_scheme_expected_and_given():
    packed = quant.quantize(np.ones((2, 256), np.float32), "q4_k")
    message = "q4_k: a weight of shape (2, 256) takes 288 bytes (144 per block of 256), got 286 bytes"
    with pytest.raises(quant.QuantError, match=re.escape(message)):
        quant.dequantize(packed.reshape(-1)[:286], "q4_k", (2, 256))
    with pytest.raises(quant.QuantError, match=re.escape("q6_k: a weight of shape (2, 256) takes 420 bytes")):
        quant.dequantize(packed, "q6_k", (2, 256))
    with pytest.raises(quant.QuantError, match=re.escape("q4_k: the packed weight must be a uint8 array, got dtype float32")):
        quant.dequantize(packed.astype(np.float32), "q4_k", (2, 256))
    with pytest.raises(quant.QuantError, match=re.escape("q4_k: K = 100 is not a multiple of the block size 256")):
        quant.dequantize(packed, "q4_k", (2, 100))


def test_wrong_side_arrays():
    w_q, scale, zp = quant.quantize(np.ones((4, 64), np.float32), "int8/32")
    with pytest.raises(quant.QuantError, match=re.escape("int8/32: scale must have shape (2, 4), got (4, 2)")):
        quant.dequantize((w_q, scale.T, zp), "int8/32", (4, 64))
    with pytest.raises(quant.QuantError, match=re.escape("int8/32: w_q must have dtype int8, got uint8")):
        quant.dequantize((w_q.view(np.uint8), scale, zp), "int8/32", (4, 64))
    with pytest.raises(quant.QuantError, match=re.escape("int8/32: expected the stored arrays (w_q, scale, zp)")):
        quant.dequantize(w_q, "int8/32", (4, 64))
    codes, scales, gscale = quant.quantize(np.ones((4, 64), np.float32), "nvfp4")
    with pytest.raises(quant.QuantError, match=re.escape("nvfp4: global_scale must have shape (1,), got ()")):
        quant.dequantize((codes, scales, np.float32(1.0)), "nvfp4", (4, 64))


def test_block_bytes_is_for_gguf_schemes_only():
    with pytest.raises(quant.QuantError, match=re.escape("int4/32 stores separate arrays, not packed blocks")):
        quant.block_bytes("int4/32")
    with pytest.raises(quant.QuantError, match=re.escape("nvfp4 stores separate arrays")):
        quant.row_bytes("nvfp4", 64)
    with pytest.raises(quant.QuantError, match=re.escape("q4_0: K = 33 is not a positive multiple of the block size 32")):
        quant.row_bytes("q4_0", 33)


# ---------------------------------------------------------------------------------------------
# the package's place in the layers, speed, the README example


def test_quant_imports_no_mlir():
    code = "import sys, rlx_mlir.quant; bad = [m for m in sys.modules if m == 'mlir' or m.startswith('mlir.')]; assert not bad, bad"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_quantising_a_large_weight_takes_seconds():
    import time

    w = np.random.default_rng(10).standard_normal((1024, 4096)).astype(np.float32)
    start = time.perf_counter()
    quant.quantize(w, "q4_k")
    assert time.perf_counter() - start < 20  # ~1.5 s here; a per-block Python loop takes minutes


def test_readme_example_runs():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Quantised weights", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
