"""GGUF's 32-element block formats `q4_0` and `q8_0` (ggml's `block_q4_0`, `block_q8_0`).

A row of K weights is K/32 blocks back to back; block b holds elements `32*b .. 32*b+31` of the
row.  All multi-byte fields are little-endian; `f16` is IEEE half.

`q4_0`, 18 bytes per 32 weights::

    offset 0   f16  d          the block scale
    offset 2   u8   qs[16]     4-bit codes: qs[j] & 0xF is element j, qs[j] >> 4 is element j + 16

    w[j] = d * (code[j] - 8)                       (code in 0..15, so w in d * [-8, 7])

`q8_0`, 34 bytes per 32 weights::

    offset 0   f16  d
    offset 2   i8   qs[32]     element j is qs[j]

    w[j] = d * qs[j]

Dequantisation computes in float32 exactly as written (`float32(d) * float32(q)`), which is what
ggml's `dequantize_row_q4_0` / `_q8_0` and `gguf.quants.dequantize` do, bit for bit.

The quantisers are ggml's reference ones (`quantize_row_q4_0_ref`, `quantize_row_q8_0_ref`):
q4_0 takes the element of largest magnitude `m` (with its sign), `d = m / -8`, and
`code = min(15, trunc(x / d + 8.5))`; q8_0 takes `d = max|x| / 127` and `q = round(x / d)`
(half away from zero).  They write the same bytes as ggml's (and as `gguf.quants.quantize`).
"""

from __future__ import annotations

import numpy as np

from .base import GgufScheme, f16_from_bytes, f16_to_bytes


def _signed_absmax(blocks: np.ndarray) -> np.ndarray:
    """Per row, the element of largest magnitude with its sign (the first such one), as [n, 1]."""
    return np.take_along_axis(blocks, np.abs(blocks).argmax(axis=-1)[:, None], axis=-1)


def _reciprocal(d: np.ndarray) -> np.ndarray:
    """1/d, and 0 where d == 0 (ggml's `id = d ? 1.0f/d : 0.0f`)."""
    with np.errstate(divide="ignore"):
        return np.where(d == 0, np.float32(0), np.float32(1) / d).astype(np.float32)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """C `roundf`: to nearest, halves away from zero (exact: no `|x| + 0.5` that can round up)."""
    a = np.abs(x)
    whole = np.floor(a)
    return np.sign(x) * (whole + np.floor(2 * (a - whole)))


def quantize_q4_0(blocks: np.ndarray) -> np.ndarray:
    d = _signed_absmax(blocks) / np.float32(-8)
    codes = np.trunc(blocks * _reciprocal(d) + np.float32(8.5))
    codes = np.clip(codes, 0, 15).astype(np.uint8)
    qs = codes[:, :16] | (codes[:, 16:] << 4)
    return np.concatenate([f16_to_bytes(d[:, 0]), qs], axis=1)


def dequantize_q4_0(blocks: np.ndarray) -> np.ndarray:
    d = f16_from_bytes(blocks[:, 0:2])[:, None]
    qs = blocks[:, 2:18]
    codes = np.concatenate([qs & 0x0F, qs >> 4], axis=1)
    return d * (codes.astype(np.int8) - np.int8(8)).astype(np.float32)


def quantize_q8_0(blocks: np.ndarray) -> np.ndarray:
    d = np.abs(blocks).max(axis=-1, keepdims=True) / np.float32(127)
    scaled = blocks * _reciprocal(d)
    q = _round_half_away(scaled)
    return np.concatenate([f16_to_bytes(d[:, 0]), q.astype(np.int8).view(np.uint8)], axis=1)


def dequantize_q8_0(blocks: np.ndarray) -> np.ndarray:
    d = f16_from_bytes(blocks[:, 0:2])[:, None]
    return np.ascontiguousarray(blocks[:, 2:34]).view(np.int8).astype(np.float32) * d


Q4_0 = GgufScheme("q4_0", 32, 18, quantize_q4_0, dequantize_q4_0, "Q4_0")
Q8_0 = GgufScheme("q8_0", 32, 34, quantize_q8_0, dequantize_q8_0, "Q8_0")

SCHEMES = (Q4_0, Q8_0)
