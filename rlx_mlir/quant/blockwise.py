"""Integer block quantisation with side tensors: `int8/{B}`, `int8_asym/{B}`, `int4/{B}`.

`B` (the block, e.g. `int8/32`, `int4/128`) is any positive integer dividing K.  The float weight is
`W [N, K]` (`y = x @ W.T`); the stored arrays are laid out K-major, `[K, N]`, so that a GEMV walks
contiguous N for each k (as RLX's `DequantMatMul` expects)::

    w_q    [K, N]     int8  (int8/B)         codes, row k holds W[:, k]
           [K, N]     uint8 (int8_asym/B)
           [K, N/2]   uint8 (int4/B)         two 4-bit codes per byte along N:
                                             w_q[k, j] & 0xF is column 2j, w_q[k, j] >> 4 is 2j + 1
    scale  [K/B, N]   float32                one scale per block of B consecutive k, per column n
    zp     [K/B, N]   float32                zero point, an integer value (in code units)

    W[n, k] = (float32(q[k, n]) - zp[k // B, n]) * scale[k // B, n]      (float32, in this order)

where `q[k, n]` is the code read with its storage type: int8 -128..127, uint8 0..255, the int4
nibble 0..15.  int4 needs N even.

What the quantisers write (round half to even, per block of B along K, per column):
- `int8/B`: symmetric, `scale = max|w| / 127`, `q = round(w / scale)` in -127..127, `zp = 0`.
- `int8_asym/B`: `lo = min(w, 0)`, `hi = max(w, 0)`, `scale = (hi - lo) / 255` (`hi - lo` in
  float64 where it passes the float32 maximum),
  `zp = round(-lo / scale)` in 0..255, `q = clip(round(w / scale) + zp, 0, 255)`.
- `int4/B`: symmetric, `scale = max|w| / 7`, `q = round(w / scale) + 8` in 1..15, `zp = 8`.
  Any zero point 0..15 dequantises (GPTQ/AWQ-style asymmetric int4 checkpoints fit as they are).
A block of zeros gets `scale = 0` (and `q = zp`), which dequantises to zeros.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from .base import Operand, QuantError, check_array, check_float_weight, check_shape

KINDS = ("int8", "int8_asym", "int4")
_NAME = re.compile(r"(int8|int8_asym|int4)/([1-9][0-9]*)")


class BlockwiseWeight(NamedTuple):
    """The stored arrays of an `int8/B`, `int8_asym/B` or `int4/B` weight."""

    w_q: np.ndarray
    scale: np.ndarray
    zp: np.ndarray


class BlockwiseScheme:
    """One of `int8/B`, `int8_asym/B`, `int4/B`."""

    is_gguf = False

    def __init__(self, kind: str, block: int):
        self.kind = kind
        self.block_size = block
        self.name = f"{kind}/{block}"

    def __repr__(self):
        return f"<blockwise scheme {self.name}>"

    def operands(self, shape) -> tuple[Operand, ...]:
        n, k = self._check_shape(shape)
        code_shape, code_dtype = {
            "int8": ((k, n), "int8"),
            "int8_asym": ((k, n), "uint8"),
            "int4": ((k, n // 2), "uint8"),
        }[self.kind]
        side = (k // self.block_size, n)
        return (Operand("w_q", code_shape, code_dtype), Operand("scale", side, "float32"), Operand("zp", side, "float32"))

    def _check_shape(self, shape) -> tuple[int, int]:
        shape = check_shape(shape, self.name, self.block_size)
        if len(shape) != 2:
            raise QuantError(f"{self.name}: the weight must be 2-D [N, K], got shape {shape}")
        if self.kind == "int4" and shape[0] % 2:
            raise QuantError(f"{self.name}: N = {shape[0]} must be even (two 4-bit codes per byte along N)")
        return shape

    def quantize(self, w) -> BlockwiseWeight:
        w = check_float_weight(w, self.name, self.block_size, min_ndim=2)
        n, k = self._check_shape(w.shape)
        blocks = np.ascontiguousarray(w.T).reshape(k // self.block_size, self.block_size, n)  # [K/B, B, N], C order
        if self.kind == "int8_asym":
            lo = np.minimum(blocks.min(axis=1), np.float32(0))
            hi = np.maximum(blocks.max(axis=1), np.float32(0))
            with np.errstate(over="ignore"):
                spread = hi - lo
            # Where hi - lo passes the f32 maximum (weights near +-3.4e38), the spread is taken in
            # float64: scale stays finite (it was inf, and every weight of the block NaN).
            wide = (hi.astype(np.float64) - lo.astype(np.float64)) / 255
            scale = np.where(np.isinf(spread), wide.astype(np.float32), spread / np.float32(255))
            zp = np.clip(np.rint(-lo / np.where(scale == 0, np.float32(1), scale)), 0, 255)
            qmin, qmax = 0, 255
        else:
            levels = 127 if self.kind == "int8" else 7
            scale = np.abs(blocks).max(axis=1) / np.float32(levels)
            zp = np.full_like(scale, 0 if self.kind == "int8" else 8)
            qmin, qmax = (-127, 127) if self.kind == "int8" else (0, 15)
        safe = np.where(scale == 0, np.float32(1), scale)[:, None, :]
        q = np.clip(np.rint(blocks / safe) + zp[:, None, :], qmin, qmax).reshape(k, n)
        if self.kind == "int8":
            w_q = q.astype(np.int8)
        elif self.kind == "int8_asym":
            w_q = q.astype(np.uint8)
        else:
            codes = q.astype(np.uint8)
            w_q = codes[:, 0::2] | (codes[:, 1::2] << 4)
        return BlockwiseWeight(w_q, scale.astype(np.float32), zp.astype(np.float32))

    def dequantize(self, data, shape) -> np.ndarray:
        if not isinstance(data, tuple) or len(data) != 3:
            raise QuantError(f"{self.name}: expected the stored arrays (w_q, scale, zp), got {type(data).__name__}")
        n, k = self._check_shape(shape)
        w_q, scale, zp = (check_array(a, self.name, op) for a, op in zip(data, self.operands((n, k))))
        if self.kind == "int4":
            q = np.empty((k, n), np.uint8)
            q[:, 0::2], q[:, 1::2] = w_q & 0xF, w_q >> 4
        else:
            q = w_q

        def per_k(side):  # [K/B, N] -> [K, N]
            return np.repeat(side, self.block_size, axis=0)

        return ((q.astype(np.float32) - per_k(zp)) * per_k(scale)).T.copy()


def parse(name: str):
    """The scheme an `int8/B`-style name spells, or None if it is not one; QuantError for a bad B."""
    kind, slash, block = name.partition("/")
    if kind not in KINDS:
        return None
    if not _NAME.fullmatch(name):
        raise QuantError(
            f"bad quantisation scheme '{name}': expected '{kind}/B' with the block B a positive integer, such as '{kind}/32'"
        )
    return BlockwiseScheme(kind, int(block))
