"""NVFP4: 4-bit E2M1 values with an FP8-E4M3 scale per 16 along K and one float32 global scale.

The float weight is `W [N, K]` (`y = x @ W.T`); the stored arrays are K-major like the
`int8/B` schemes (RLX's `Nvfp4Block` layout)::

    codes         [K, N/2]    uint8    two E2M1 codes per byte along N:
                                       codes[k, j] & 0xF is column 2j, codes[k, j] >> 4 is 2j + 1
    scales        [K/16, N]   uint8    FP8 E4M3 (the `fn` variant) bytes, one per 16 consecutive k, per n
    global_scale  [1]         float32

    W[n, k] = (e2m1(code[k, n]) * e4m3(scales[k // 16, n])) * global_scale[0]   (float32, this order)

E2M1 code (bit 3 sign, bits 2-1 exponent, bit 0 mantissa)::

    code & 7:   0    1    2    3    4    5    6    7
    value:      0   0.5  1.0  1.5  2.0  3.0  4.0  6.0        (negated when code & 8)

FP8 E4M3FN byte (bit 7 sign, bits 6-3 exponent e, bits 2-0 mantissa m, bias 7, no infinities)::

    e == 0:                 (m / 8) * 2**-6        (subnormal; 0x00 is zero)
    0 < e, byte & 0x7F != 0x7F:  (1 + m / 8) * 2**(e - 7)   (largest finite 0x7E = 448)
    byte & 0x7F == 0x7F:    NaN (as MLIR's `f8E4M3FN` and `arith.extf` read it; never written)

N and K: K a multiple of 16, N even.

The quantiser: `global_scale = max|W| / (6 * 448)` (1 for an all-zero weight), so that every block
scale fits E4M3; each block's scale is `max|w| / 6 / global_scale` rounded to the nearest E4M3
value; each code is the E2M1 value nearest `w / (scale * global_scale)` (0 where that scale is 0).
Both roundings go to the nearest representable value, ties to the even code, saturating at the
largest finite value.

This is RLX's side-tensor layout, not GGUF's `NVFP4` block type (64 weights with four unsigned
E4M3 scales inside each 36-byte block), and not ModelOpt's checkpoint layout (codes `[N, K/2]`
packed along K, scales `[N, K/16]`): a loader transposes and repacks those.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .base import Operand, QuantError, check_array, check_float_weight, check_shape

GROUP = 16
E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], np.float32)  # codes 0..7 (magnitudes)
E4M3_MAX = 448.0


def decode_e4m3(raw: np.ndarray) -> np.ndarray:
    """FP8 E4M3FN bytes -> float32 (NaN for 0x7F / 0xFF)."""
    raw = np.asarray(raw, np.uint8)
    exponent = ((raw >> 3) & 0xF).astype(np.int32)
    mantissa = (raw & 0x7).astype(np.float32)
    magnitude = np.where(
        exponent == 0,
        mantissa / np.float32(8) * np.float32(2.0**-6),
        (np.float32(1) + mantissa / np.float32(8)) * np.ldexp(np.float32(1), exponent - 7).astype(np.float32),
    ).astype(np.float32)
    magnitude = np.where((raw & 0x7F) == 0x7F, np.float32(np.nan), magnitude)
    return np.where(raw & 0x80, -magnitude, magnitude)


def decode_e2m1(codes: np.ndarray) -> np.ndarray:
    """E2M1 codes (0..15, one per element) -> float32."""
    magnitude = E2M1_VALUES[codes & 7]
    return np.where(codes & 8, -magnitude, magnitude)


_E4M3_POSITIVE = decode_e4m3(np.arange(0x7F, dtype=np.uint8))  # codes 0x00..0x7E, ascending


def _nearest_code(magnitude: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Index of the entry of the ascending `table` nearest each magnitude >= 0; ties go to the
    even index; beyond the last entry saturates to it."""
    upper = np.clip(np.searchsorted(table, magnitude, side="left"), 1, len(table) - 1)
    lower = upper - 1
    below, above = magnitude - table[lower], table[upper] - magnitude
    pick_upper = (above < below) | ((above == below) & (upper % 2 == 0))
    return np.where(pick_upper, upper, lower).astype(np.uint8)


def encode_e4m3(values: np.ndarray) -> np.ndarray:
    """float32 >= 0 -> the nearest E4M3FN byte (ties to even, saturating at 448)."""
    return _nearest_code(np.asarray(values, np.float32), _E4M3_POSITIVE)


def encode_e2m1(values: np.ndarray) -> np.ndarray:
    """float32 -> the nearest E2M1 code (ties to even, saturating at +-6); no negative zero."""
    values = np.asarray(values, np.float32)
    code = _nearest_code(np.abs(values), E2M1_VALUES)
    return np.where((values < 0) & (code != 0), code | 8, code).astype(np.uint8)


class Nvfp4Weight(NamedTuple):
    """The stored arrays of an `nvfp4` weight."""

    codes: np.ndarray
    scales: np.ndarray
    global_scale: np.ndarray


class Nvfp4Scheme:
    is_gguf = False
    name = "nvfp4"
    block_size = GROUP

    def __repr__(self):
        return "<nvfp4 scheme: E2M1 codes, an E4M3 scale per 16 along K, a float32 global scale>"

    def _check_shape(self, shape) -> tuple[int, int]:
        shape = check_shape(shape, self.name, GROUP)
        if len(shape) != 2:
            raise QuantError(f"nvfp4: the weight must be 2-D [N, K], got shape {shape}")
        if shape[0] % 2:
            raise QuantError(f"nvfp4: N = {shape[0]} must be even (two 4-bit codes per byte along N)")
        return shape

    def operands(self, shape) -> tuple[Operand, ...]:
        n, k = self._check_shape(shape)
        return (
            Operand("codes", (k, n // 2), "uint8"),
            Operand("scales", (k // GROUP, n), "uint8"),
            Operand("global_scale", (1,), "float32"),
        )

    def quantize(self, w) -> Nvfp4Weight:
        w = check_float_weight(w, self.name, GROUP, min_ndim=2)
        n, k = self._check_shape(w.shape)
        blocks = w.T.reshape(k // GROUP, GROUP, n)
        amax = float(np.abs(w).max())
        global_scale = np.float32(amax / (6 * E4M3_MAX)) if amax > 0 else np.float32(1)
        scales = encode_e4m3(np.abs(blocks).max(axis=1) / np.float32(6) / global_scale)
        step = decode_e4m3(scales) * global_scale  # [K/16, N]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(step[:, None, :] == 0, np.float32(0), blocks / step[:, None, :])
        codes = encode_e2m1(ratio).reshape(k, n)
        packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
        return Nvfp4Weight(packed, scales, np.array([global_scale], np.float32))

    def dequantize(self, data, shape) -> np.ndarray:
        if not isinstance(data, tuple) or len(data) != 3:
            raise QuantError(f"nvfp4: expected the stored arrays (codes, scales, global_scale), got {type(data).__name__}")
        n, k = self._check_shape(shape)
        packed, scales, global_scale = (check_array(a, self.name, op) for a, op in zip(data, self.operands((n, k))))
        codes = np.empty((k, n), np.uint8)
        codes[:, 0::2], codes[:, 1::2] = packed & 0xF, packed >> 4
        block_scale = np.repeat(decode_e4m3(scales), GROUP, axis=0)
        return ((decode_e2m1(codes) * block_scale) * global_scale[0]).T.copy()


NVFP4 = Nvfp4Scheme()
