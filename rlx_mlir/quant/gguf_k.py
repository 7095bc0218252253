"""GGUF's K-quant super-block formats: `q2_k` .. `q6_k`, `q8_k` (ggml's `block_q4_K`, ...).

A row of K weights is K/256 super-blocks back to back; super-block b holds elements
`256*b .. 256*b+255` of the row.  Offsets below are in bytes from the start of a super-block;
`f16` is little-endian IEEE half.  "Element e" is the e-th of the super-block's 256 weights.

`q4_k`, 144 bytes per 256 weights (8 sub-blocks of 32, each with a 6-bit scale and a 6-bit min)::

    offset 0    f16  d            scale of the sub-block scales
    offset 2    f16  dmin         scale of the sub-block mins
    offset 4    u8   scales[12]   sc[0..7], m[0..7], 6 bits each, packed as below
    offset 16   u8   qs[128]      4-bit codes

    sc[j] = scales[j] & 63,                               m[j] = scales[j+4] & 63       (j < 4)
    sc[j] = (scales[j+4] & 0xF) | ((scales[j-4] >> 6) << 4),
    m[j]  = (scales[j+4] >> 4)  | ((scales[j]   >> 6) << 4)                             (j >= 4)

    element e = 64*g + 32*h + l   (g in 0..3, h in 0..1, l in 0..31), sub-block j = 2*g + h:
    code[e] = (qs[32*g + l] >> (4*h)) & 0xF
    w[e]    = (d * sc[j]) * code[e] - (dmin * m[j])

`q5_k`, 176 bytes per 256 weights: `q4_k` with a fifth bit per weight::

    offset 0    f16  d
    offset 2    f16  dmin
    offset 4    u8   scales[12]   as q4_k
    offset 16   u8   qh[32]       high bits: bit j of qh[l] is the fifth bit of element 32*j + l
    offset 48   u8   qs[128]      low 4 bits, as q4_k's codes

    code[e] = ((qs[32*g + l] >> (4*h)) & 0xF) | (((qh[l] >> j) & 1) << 4)     (e = 32*j + l, j = 2*g + h)
    w[e]    = (d * sc[j]) * code[e] - (dmin * m[j])                             (code in 0..31)

`q6_k`, 210 bytes per 256 weights (16 sub-blocks of 16, each with an int8 scale)::

    offset 0    u8   ql[128]      low 4 bits
    offset 128  u8   qh[64]       high 2 bits
    offset 192  i8   scales[16]
    offset 208  f16  d            (last)

    element e = 128*p + 32*q + l   (p in 0..1, q in 0..3, l in 0..31):
    low[e]  = (ql[64*p + 32*(q & 1) + l] >> (4*(q >> 1))) & 0xF
    high[e] = (qh[32*p + l] >> (2*q)) & 3
    w[e]    = (d * scales[e // 16]) * ((low[e] | (high[e] << 4)) - 32)        (code - 32 in -32..31)

`q2_k`, 84 bytes per 256 weights (16 sub-blocks of 16, each with a 4-bit scale and a 4-bit min)::

    offset 0    u8   scales[16]   sc[j] = scales[j] & 0xF, m[j] = scales[j] >> 4
    offset 16   u8   qs[64]       2-bit codes
    offset 80   f16  d
    offset 82   f16  dmin

    element e = 128*p + 32*q + l   (p in 0..1, q in 0..3, l in 0..31), sub-block j = e // 16:
    code[e] = (qs[32*p + l] >> (2*q)) & 3
    w[e]    = (d * sc[j]) * code[e] - (dmin * m[j])

`q3_k`, 110 bytes per 256 weights (16 sub-blocks of 16, each with a signed 6-bit scale)::

    offset 0    u8   hmask[32]    third bit: bit (e // 32) of hmask[e % 32] belongs to element e
    offset 32   u8   qs[64]       low 2 bits, laid out as q2_k's codes
    offset 96   u8   scales[12]   s[0..15], 6 bits each, stored + 32:
                                  s[j] = ((scales[j % 8] >> (4 * (j // 8))) & 0xF)
                                         | (((scales[8 + j % 4] >> (2 * (j // 4))) & 3) << 4)
    offset 108  f16  d

    value[e] = low[e] - (4 if the hmask bit of e is 0 else 0)                      (-4..3)
    w[e]     = (d * (s[e // 16] - 32)) * value[e]

`q8_k`, 292 bytes per 256 weights (ggml's intermediate format for dot products, rarely stored)::

    offset 0    f32  d
    offset 4    i8   qs[256]
    offset 260  i16  bsums[16]    bsums[j] = sum of qs[16*j .. 16*j+15] (not needed to decode)

    w[e] = d * qs[e]

Dequantisation computes in float32 in exactly the order written (the scale products first), which
is what ggml's `dequantize_row_*` and `gguf.quants.dequantize` do, bit for bit.

The quantisers follow ggml's reference ones (`quantize_row_q4_K_ref`, ...): q4_k/q5_k pick each
sub-block's scale and min with `make_qkx2_quants` (a weighted least-squares search over
candidate scales, weights `rms(x) + |x|`; q2_k the same with weights `|x|` and absolute error),
q6_k each sub-block's scale with `make_qx_quants` (weights `x*x`, 19 candidate scales), q3_k
with `make_q3_quants` (coordinate descent); the sub-block scales are then quantised to 4 / 6 /
8 bits against the super-block's f16 `d` (and `dmin`), and the codes recomputed from those.
q8_k is ggml's `quantize_row_q8_K_ref` (`d = -max / 127` for the signed largest element).  The
loops over one block's elements run vectorised across all blocks at once, in float32 and in
ggml's order of operations (sums added left to right), so the bytes are the ones ggml's
`quantize_row_*_ref` writes (pytests/test_quantisers.py pins this).
(gguf.quants cannot decode q8_k; the others decode bit-exactly with it.)
"""

from __future__ import annotations

import numpy as np

from .base import QK_K, GgufScheme, f16_from_bytes, f16_to_bytes, nearest_int

GROUP_MAX_EPS = np.float32(1e-15)  # ggml: below this a group counts as all zero


# ---------------------------------------------------------------------------------------------
# ggml's scale searches, vectorised over groups: x is [groups, n] float32.


def _sum(a):
    """Row sums added left to right in float32, as ggml's C loops add them (numpy's `sum` adds
    pairwise, which changes the last bits and with them some of the searches' choices).  One
    vector add per column, across all groups at once."""
    columns = np.ascontiguousarray(a.T, dtype=np.float32)
    total = columns[0].copy()
    for column in columns[1:]:
        total += column
    return total


def make_qkx2_quants(x, weights, nmax, rmin, rdelta, nstep, use_mad=False):
    """ggml's `make_qkx2_quants`: per group a scale > 0 and a min >= 0 with `x ~ scale*L - min`.

    Starts from the range `[min(x, 0), max(x)]` mapped onto `0..nmax`, then tries `nstep + 1`
    slightly different scales, each followed by the weighted least-squares fit of (scale, min)
    to the rounded codes; keeps the fit of least weighted error.  As in ggml, each candidate is
    taken relative to the best offset found so far.  Returns (scale, min) [groups] and the
    codes of the best fit [groups, n] uint8.
    """
    f32 = np.float32
    lo = np.minimum(x.min(axis=1), f32(0))
    hi = x.max(axis=1)
    flat = hi == lo
    hi = np.where(flat, lo + f32(1), hi)  # any range: a flat group's result is replaced below
    sum_w = _sum(weights)
    sum_x = _sum(weights * x)

    def codes(iscale, offset):
        return np.clip(np.rint(iscale[:, None] * (x - offset[:, None])), 0, nmax).astype(f32)

    def error(scale, offset, levels):
        diff = scale[:, None] * levels + offset[:, None] - x
        return _sum(weights * (np.abs(diff) if use_mad else diff * diff))

    iscale = f32(nmax) / (hi - lo)
    best_scale = f32(1) / iscale
    best_min = lo
    best_levels = codes(iscale, lo)
    best_err = error(best_scale, best_min, best_levels)
    with np.errstate(divide="ignore", invalid="ignore"):
        for step in range(nstep + 1):
            iscale = (f32(rmin) + f32(rdelta) * f32(step) + f32(nmax)) / (hi - best_min)
            levels = codes(iscale, best_min)
            sum_l = _sum(weights * levels)
            sum_l2 = _sum(weights * levels * levels)
            sum_xl = _sum(weights * levels * x)
            det = sum_w * sum_l2 - sum_l * sum_l
            scale = (sum_w * sum_xl - sum_x * sum_l) / det
            offset = (sum_l2 * sum_x - sum_l * sum_xl) / det
            positive = offset > 0  # the fit wants a positive min: pin it at 0, refit the scale
            offset = np.where(positive, f32(0), offset)
            scale = np.where(positive, sum_xl / sum_l2, scale)
            err = error(scale, offset, levels)
            better = (det > 0) & (err < best_err)
            best_err = np.where(better, err, best_err)
            best_scale = np.where(better, scale, best_scale)
            best_min = np.where(better, offset, best_min)
            best_levels = np.where(better[:, None], levels, best_levels)
    best_levels = np.where(flat[:, None], f32(0), best_levels).astype(np.uint8)
    return np.where(flat, f32(0), best_scale), np.where(flat, -lo, -best_min), best_levels


def make_qx_quants(x, nmax):
    """ggml's `make_qx_quants` with rmse_type 1: per group a signed scale with `x ~ scale * L`,
    L in `-nmax .. nmax-1`, fitted by least squares with weights `x*x` over 19 candidate scales.
    Returns the scales [groups] (0 for an all-zero group) and the codes `L + nmax` of the best
    candidate [groups, n] uint8 (0 for an all-zero group)."""
    f32 = np.float32
    signed_max = np.take_along_axis(x, np.abs(x).argmax(axis=1)[:, None], axis=1)[:, 0]
    zero = np.abs(signed_max) < GROUP_MAX_EPS
    signed_max = np.where(zero, f32(1), signed_max)
    weights = x * x

    def fit(iscale):
        levels = np.clip(np.rint(iscale[:, None] * x), -nmax, nmax - 1).astype(f32)
        return levels, _sum(weights * x * levels), _sum(weights * levels * levels)

    best_levels, sum_lx, sum_l2 = fit(f32(-nmax) / signed_max)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(sum_l2 != 0, sum_lx / sum_l2, f32(0))
        best = scale * sum_lx
        for step in (*range(-9, 0), *range(1, 10)):
            levels, sum_lx, sum_l2 = fit(-(f32(nmax) + f32(0.1) * f32(step)) / signed_max)
            better = (sum_l2 > 0) & (sum_lx * sum_lx > best * sum_l2)
            scale = np.where(better, sum_lx / sum_l2, scale)
            best = np.where(better, scale * sum_lx, best)
            best_levels = np.where(better[:, None], levels, best_levels)
    codes = np.where(zero[:, None], 0, best_levels + nmax).astype(np.uint8)
    return np.where(zero, f32(0), scale), codes


def _quantize_scales(values, levels):
    """Sub-block scales (or mins) >= 0, [n, groups] -> (super scale f32 [n], codes 0..levels [n, groups]).

    The super-block scale is `max / levels`, rounded to f16 by the caller's storage."""
    top = values.max(axis=1)
    top = np.where(top > 0, top, np.float32(0))  # ggml starts from +0 (a min of -0.0 stays out)
    with np.errstate(divide="ignore"):
        inv = np.where(top > 0, np.float32(levels) / top, np.float32(0))
    codes = np.clip(nearest_int(inv[:, None] * values), 0, levels).astype(np.uint8)
    return top / np.float32(levels), codes


def _requantize(x, d, offset, nmax, kept):
    """Codes `round((x + offset) / d)` clipped to `0..nmax` per sub-block; where d == 0 (any code
    decodes the same) the search's codes `kept`, as ggml leaves them."""
    with np.errstate(divide="ignore", invalid="ignore"):
        levels = np.clip(np.rint((x + offset[..., None]) / d[..., None]), 0, nmax)
    return np.where(d[..., None] == 0, kept, levels).astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# q4_k and q5_k: 8 sub-blocks of 32, 6-bit scales and mins packed into 12 bytes.


def pack_scale_min_k4(sc, m):
    """6-bit sc[n, 8], m[n, 8] -> the 12 `scales` bytes of block_q4_K / block_q5_K."""
    packed = np.empty((sc.shape[0], 12), np.uint8)
    packed[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
    packed[:, 4:8] = (m[:, 0:4] & 63) | ((m[:, 4:8] >> 4) << 6)
    packed[:, 8:12] = (sc[:, 4:8] & 0xF) | ((m[:, 4:8] & 0xF) << 4)
    return packed


def unpack_scale_min_k4(scales):
    """The 12 `scales` bytes -> (sc [n, 8], m [n, 8]) uint8 (ggml's `get_scale_min_k4`)."""
    low, mid, high = scales[:, 0:4], scales[:, 4:8], scales[:, 8:12]
    sc = np.concatenate([low & 63, (high & 0xF) | ((low >> 6) << 4)], axis=1)
    m = np.concatenate([mid & 63, (high >> 4) | ((mid >> 6) << 4)], axis=1)
    return sc, m


def _quantize_k_scales_mins(blocks, nmax, rmin, nstep):
    """The shared first half of q4_k/q5_k: blocks [n, 256] -> (d, dmin f16 bytes, scales bytes, codes [n, 8, 32])."""
    n = blocks.shape[0]
    x = blocks.reshape(n * 8, 32)
    rms = np.sqrt(_sum(x * x) / np.float32(32))
    scales, mins, kept = make_qkx2_quants(x, rms[:, None] + np.abs(x), nmax, rmin, 0.1, nstep)
    d, sc = _quantize_scales(scales.reshape(n, 8), 63)
    dmin, m = _quantize_scales(mins.reshape(n, 8), 63)
    d_bytes, dmin_bytes = f16_to_bytes(d), f16_to_bytes(dmin)
    d_sub = f16_from_bytes(d_bytes)[:, None] * sc.astype(np.float32)
    m_sub = f16_from_bytes(dmin_bytes)[:, None] * m.astype(np.float32)
    codes = _requantize(blocks.reshape(n, 8, 32), d_sub, m_sub, nmax, kept.reshape(n, 8, 32))
    return d_bytes, dmin_bytes, pack_scale_min_k4(sc, m), codes


def _pack_nibbles_k(low4):
    """codes [n, 8, 32] (low 4 bits used) -> qs [n, 128]: sub-block 2g in the low, 2g+1 in the high nibbles."""
    pairs = (low4 & 0xF).reshape(-1, 4, 2, 32)
    return (pairs[:, :, 0] | (pairs[:, :, 1] << 4)).reshape(-1, 128)


def _unpack_nibbles_k(qs):
    """qs [n, 128] -> codes [n, 8, 32] (the inverse of `_pack_nibbles_k`)."""
    qs = qs.reshape(-1, 4, 1, 32)
    return np.concatenate([qs & 0xF, qs >> 4], axis=2).reshape(-1, 8, 32)


def _dequantize_k(d, dmin, scales, codes):
    sc, m = unpack_scale_min_k4(scales)
    d_sub = (d[:, None] * sc.astype(np.float32))[..., None]
    m_sub = (dmin[:, None] * m.astype(np.float32))[..., None]
    return (d_sub * codes.astype(np.float32) - m_sub).reshape(-1, QK_K)


def quantize_q4_k(blocks):
    d, dmin, scales, codes = _quantize_k_scales_mins(blocks, 15, -1.0, 20)
    return np.concatenate([d, dmin, scales, _pack_nibbles_k(codes)], axis=1)


def dequantize_q4_k(blocks):
    d, dmin = f16_from_bytes(blocks[:, 0:2]), f16_from_bytes(blocks[:, 2:4])
    return _dequantize_k(d, dmin, blocks[:, 4:16], _unpack_nibbles_k(blocks[:, 16:144]))


def quantize_q5_k(blocks):
    d, dmin, scales, codes = _quantize_k_scales_mins(blocks, 31, -0.5, 15)
    fifth = (codes >> 4).transpose(0, 2, 1)  # [n, 32 (l), 8 (j)]: bit j of qh[l]
    qh = (fifth << np.arange(8, dtype=np.uint8)).sum(axis=2, dtype=np.uint8)
    return np.concatenate([d, dmin, scales, qh, _pack_nibbles_k(codes)], axis=1)


def dequantize_q5_k(blocks):
    d, dmin = f16_from_bytes(blocks[:, 0:2]), f16_from_bytes(blocks[:, 2:4])
    qh = blocks[:, 16:48]
    fifth = (qh[:, None, :] >> np.arange(8, dtype=np.uint8)[None, :, None]) & 1  # [n, 8 (j), 32 (l)]
    codes = _unpack_nibbles_k(blocks[:, 48:176]) | (fifth << 4)
    return _dequantize_k(d, dmin, blocks[:, 4:16], codes)


# ---------------------------------------------------------------------------------------------
# q6_k: 16 sub-blocks of 16, int8 scales, 6-bit codes split into ql (4 bits) and qh (2 bits).


def quantize_q6_k(blocks):
    n = blocks.shape[0]
    scales, kept = make_qx_quants(blocks.reshape(n * 16, 16), 32)
    scales = scales.reshape(n, 16)
    biggest = np.take_along_axis(scales, np.abs(scales).argmax(axis=1)[:, None], axis=1)[:, 0]
    zero = np.abs(biggest) < GROUP_MAX_EPS  # ggml writes such a super-block as all zero bytes
    iscale = np.float32(-128) / np.where(zero, np.float32(1), biggest)
    d_bytes = f16_to_bytes(np.float32(1) / iscale)
    sc = np.minimum(127, nearest_int(iscale[:, None] * scales)).astype(np.int8)
    d_sub = f16_from_bytes(d_bytes)[:, None] * sc.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        levels = np.clip(np.rint(blocks.reshape(n, 16, 16) / d_sub[..., None]), -32, 31) + 32
    codes = np.where(d_sub[..., None] == 0, kept.reshape(n, 16, 16), levels).astype(np.uint8)
    codes = codes.reshape(n, 2, 4, 32)  # [n, p, q, l]
    low = codes & 0xF
    ql = np.concatenate([low[:, :, 0] | (low[:, :, 2] << 4), low[:, :, 1] | (low[:, :, 3] << 4)], axis=2)
    qh = ((codes >> 4) << (2 * np.arange(4, dtype=np.uint8))[None, None, :, None]).sum(axis=2, dtype=np.uint8)
    out = np.concatenate([ql.reshape(n, 128), qh.reshape(n, 64), sc.view(np.uint8), d_bytes], axis=1)
    out[zero] = 0
    return out


def dequantize_q6_k(blocks):
    n = blocks.shape[0]
    ql = blocks[:, 0:128].reshape(n, 2, 1, 64)
    qh = blocks[:, 128:192].reshape(n, 2, 1, 32)
    scales = np.ascontiguousarray(blocks[:, 192:208]).view(np.int8).astype(np.float32)
    d = f16_from_bytes(blocks[:, 208:210])
    low = np.concatenate([ql & 0xF, ql >> 4], axis=2).reshape(n, 2, 4, 32)
    high = (qh >> (2 * np.arange(4, dtype=np.uint8))[None, None, :, None]) & 3
    codes = (low | (high << 4)).astype(np.int8) - np.int8(32)
    d_sub = (d[:, None] * scales)[..., None]
    return (d_sub * codes.reshape(n, 16, 16).astype(np.float32)).reshape(n, QK_K)


# ---------------------------------------------------------------------------------------------
# q2_k and q3_k: 16 sub-blocks of 16, 2-bit codes (q3_k adds a high bit per weight in hmask).


def make_q3_quants(x, nmax):
    """ggml's `make_q3_quants` with do_rmse: per group a signed scale with `x ~ scale * L`,
    L in `-nmax .. nmax-1`: round against the largest-magnitude element, then 5 passes of
    coordinate descent on the weighted (`x*x`) least-squares fit.  Returns the scales [groups]
    (0 for an all-zero group) and the codes `L + nmax` [groups, n] uint8 (0 for an all-zero group)."""
    f32 = np.float32
    signed_max = np.take_along_axis(x, np.abs(x).argmax(axis=1)[:, None], axis=1)[:, 0]
    zero = np.abs(signed_max) < GROUP_MAX_EPS
    iscale = f32(-nmax) / np.where(zero, f32(1), signed_max)
    levels = np.clip(np.rint(iscale[:, None] * x), -nmax, nmax - 1).astype(f32)
    weights = x * x
    sum_lx = _sum(weights * x * levels)
    sum_l2 = _sum(weights * levels * levels)
    # A pass that changes nothing leaves the state as it was, so running every group through
    # all 5 passes equals ggml's early exit.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(5):
            for i in range(x.shape[1]):
                xi, wi, li = x[:, i], weights[:, i], levels[:, i]
                slx = sum_lx - wi * xi * li
                sl2 = sum_l2 - wi * li * li
                new = np.clip(np.rint(xi * sl2 / slx), -nmax, nmax - 1).astype(f32)
                slx_new = slx + wi * xi * new
                sl2_new = sl2 + wi * new * new
                take = (
                    (slx > 0)
                    & (new != li)
                    & (sl2_new > 0)
                    & (slx_new * slx_new * sum_l2 > sum_lx * sum_lx * sl2_new)
                )
                levels[:, i] = np.where(take, new, li)
                sum_lx = np.where(take, slx_new, sum_lx)
                sum_l2 = np.where(take, sl2_new, sum_l2)
        codes = np.where(zero[:, None], 0, levels + nmax).astype(np.uint8)
        return np.where(zero, f32(0), sum_lx / sum_l2), codes


def _pack_crumbs(codes):
    """2-bit codes [n, 256] -> qs [n, 64]: element 128*h + 32*s + l in bits 2s of qs[32*h + l]."""
    crumbs = (codes & 3).reshape(-1, 2, 4, 32)
    shifted = crumbs << (2 * np.arange(4, dtype=np.uint8))[None, None, :, None]
    return shifted.sum(axis=2, dtype=np.uint8).reshape(-1, 64)


def _unpack_crumbs(qs):
    """qs [n, 64] -> 2-bit codes [n, 16, 16] (sub-block, element)."""
    shifted = qs.reshape(-1, 2, 1, 32) >> (2 * np.arange(4, dtype=np.uint8))[None, None, :, None]
    return (shifted & 3).reshape(-1, 16, 16)


def quantize_q2_k(blocks):
    n = blocks.shape[0]
    x = blocks.reshape(n * 16, 16)
    scales, mins, kept = make_qkx2_quants(x, np.abs(x), 3, -0.5, 0.1, 15, use_mad=True)
    d, sc = _quantize_scales(scales.reshape(n, 16), 15)
    dmin, m = _quantize_scales(mins.reshape(n, 16), 15)
    d_bytes, dmin_bytes = f16_to_bytes(d), f16_to_bytes(dmin)
    d_sub = f16_from_bytes(d_bytes)[:, None] * sc.astype(np.float32)
    m_sub = f16_from_bytes(dmin_bytes)[:, None] * m.astype(np.float32)
    codes = _requantize(blocks.reshape(n, 16, 16), d_sub, m_sub, 3, kept.reshape(n, 16, 16))
    return np.concatenate([sc | (m << 4), _pack_crumbs(codes.reshape(n, QK_K)), d_bytes, dmin_bytes], axis=1)


def dequantize_q2_k(blocks):
    scales = blocks[:, 0:16]
    d, dmin = f16_from_bytes(blocks[:, 80:82]), f16_from_bytes(blocks[:, 82:84])
    d_sub = (d[:, None] * (scales & 0xF).astype(np.float32))[..., None]
    m_sub = (dmin[:, None] * (scales >> 4).astype(np.float32))[..., None]
    return (d_sub * _unpack_crumbs(blocks[:, 16:80]).astype(np.float32) - m_sub).reshape(-1, QK_K)


def pack_scales_q3_k(sc):
    """6-bit sc[n, 16] (stored +32) -> the 12 `scales` bytes of block_q3_K."""
    packed = np.empty((sc.shape[0], 12), np.uint8)
    packed[:, 0:8] = (sc[:, 0:8] & 0xF) | ((sc[:, 8:16] & 0xF) << 4)
    high = (sc >> 4).reshape(-1, 4, 4) << (2 * np.arange(4, dtype=np.uint8))[None, :, None]  # [n, j // 4, j % 4]
    packed[:, 8:12] = high.sum(axis=1, dtype=np.uint8)
    return packed


def unpack_scales_q3_k(scales):
    """The 12 `scales` bytes -> signed sub-block scales [n, 16] int8 (-32..31)."""
    low = np.concatenate([scales[:, 0:8] & 0xF, scales[:, 0:8] >> 4], axis=1)
    high = (scales[:, None, 8:12] >> (2 * np.arange(4, dtype=np.uint8))[None, :, None]) & 3
    return (low | (high.reshape(-1, 16) << 4)).astype(np.int8) - np.int8(32)


def quantize_q3_k(blocks):
    n = blocks.shape[0]
    scales, kept = make_q3_quants(blocks.reshape(n * 16, 16), 4)
    scales = scales.reshape(n, 16)
    biggest = np.take_along_axis(scales, np.abs(scales).argmax(axis=1)[:, None], axis=1)[:, 0]
    zero = biggest == 0  # ggml leaves d and the scales bytes zero
    iscale = np.float32(-32) / np.where(zero, np.float32(1), biggest)
    sc = np.clip(nearest_int(iscale[:, None] * scales), -32, 31) + 32
    sc = np.where(zero[:, None], 0, sc).astype(np.uint8)
    d_bytes = f16_to_bytes(np.where(zero, np.float32(0), np.float32(1) / iscale))
    packed_scales = pack_scales_q3_k(sc)
    d_sub = f16_from_bytes(d_bytes)[:, None] * unpack_scales_q3_k(packed_scales).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        levels = np.clip(np.rint(blocks.reshape(n, 16, 16) / d_sub[..., None]), -4, 3) + 4
    codes = np.where(d_sub[..., None] == 0, kept.reshape(n, 16, 16), levels).astype(np.uint8)
    codes = codes.reshape(n, 8, 32)  # [n, e // 32, e % 32]
    hmask = ((codes >> 2) << np.arange(8, dtype=np.uint8)[None, :, None]).sum(axis=1, dtype=np.uint8)
    return np.concatenate([hmask, _pack_crumbs(codes.reshape(n, QK_K)), packed_scales, d_bytes], axis=1)


def dequantize_q3_k(blocks):
    hmask = blocks[:, 0:32]
    high = (hmask[:, None, :] >> np.arange(8, dtype=np.uint8)[None, :, None]) & 1  # [n, e // 32, e % 32]
    low = _unpack_crumbs(blocks[:, 32:96])
    values = low.astype(np.int8) - ((high.reshape(-1, 16, 16) ^ 1) << 2).astype(np.int8)
    d = f16_from_bytes(blocks[:, 108:110])
    d_sub = (d[:, None] * unpack_scales_q3_k(blocks[:, 96:108]).astype(np.float32))[..., None]
    return (d_sub * values.astype(np.float32)).reshape(-1, QK_K)


# ---------------------------------------------------------------------------------------------
# q8_k: ggml's intermediate format (an f32 scale, 256 int8 codes, 16 int16 sums).


def quantize_q8_k(blocks):
    n = blocks.shape[0]
    signed_max = np.take_along_axis(blocks, np.abs(blocks).argmax(axis=1)[:, None], axis=1)[:, 0]
    zero = signed_max == 0
    iscale = np.float32(-127) / np.where(zero, np.float32(1), signed_max)
    q = np.minimum(127, nearest_int(iscale[:, None] * blocks))
    q = np.where(zero[:, None], 0, q).astype(np.int8)
    d = np.where(zero, np.float32(0), np.float32(1) / iscale).astype("<f4")
    bsums = q.reshape(n, 16, 16).sum(axis=2, dtype=np.int16).astype("<i2")
    return np.concatenate([d.view(np.uint8).reshape(n, 4), q.view(np.uint8), bsums.view(np.uint8).reshape(n, 32)], axis=1)


def dequantize_q8_k(blocks):
    d = np.ascontiguousarray(blocks[:, 0:4]).view("<f4").astype(np.float32)
    return d * np.ascontiguousarray(blocks[:, 4:260]).view(np.int8).astype(np.float32)


Q2_K = GgufScheme("q2_k", QK_K, 84, quantize_q2_k, dequantize_q2_k, "Q2_K")
Q3_K = GgufScheme("q3_k", QK_K, 110, quantize_q3_k, dequantize_q3_k, "Q3_K")
Q4_K = GgufScheme("q4_k", QK_K, 144, quantize_q4_k, dequantize_q4_k, "Q4_K")
Q5_K = GgufScheme("q5_k", QK_K, 176, quantize_q5_k, dequantize_q5_k, "Q5_K")
Q6_K = GgufScheme("q6_k", QK_K, 210, quantize_q6_k, dequantize_q6_k, "Q6_K")
Q8_K = GgufScheme("q8_k", QK_K, 292, quantize_q8_k, dequantize_q8_k, "Q8_K")

SCHEMES = (Q4_K, Q5_K, Q6_K, Q2_K, Q3_K, Q8_K)
