"""What a quantisation scheme is, the error every scheme raises, and the helpers they share.

A scheme turns a float weight `W [N, K]` (N output features, K input features, `y = x @ W.T`;
the PyTorch `Linear` and GGUF convention) into stored arrays, and back.  Blocks always run
along K.  Two kinds of storage exist:

- GGUF schemes (`GgufScheme`): one `uint8` array `[N, K / block_size * block_bytes]`, each row
  the row's blocks back to back, each block a ggml C struct (little-endian, no padding).
- Side-tensor schemes (`int8/{block}`, `int4/{block}`, `nvfp4`, ...): several arrays (the
  codes and their scales), returned as a named tuple; see their modules for the layouts.

Pure numpy; no MLIR.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from rlx_mlir.errors import RlxError

QK_K = 256  # elements per K-quant super-block (ggml's QK_K)


class QuantError(RlxError, ValueError):
    """A bad scheme name, weight shape or stored byte count (a ValueError and an RlxError)."""


class Operand(NamedTuple):
    """One stored array of a quantised weight: its name, shape and numpy dtype name."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # numpy spelling: "uint8", "int8", "float32"


def f16_to_bytes(values: np.ndarray) -> np.ndarray:
    """float32 `[...]` -> IEEE half (round to nearest even, as GGML_FP32_TO_FP16) as `uint8 [..., 2]`.

    A block scale beyond the half's range (65504; a weight of magnitude about 1e6 and up, or a
    quantiser's f32 arithmetic overflowing on a larger one) is a QuantError: its block would
    decode to inf or NaN."""
    with np.errstate(over="ignore", invalid="ignore"):
        halves = np.ascontiguousarray(np.asarray(values, np.float32).astype(np.float16))
    if not np.isfinite(halves).all():
        raise QuantError("a block's scale does not fit the f16 of a GGUF block (largest 65504): "
                         "the weight is too large for the scheme")
    return halves.view(np.uint8).reshape(*halves.shape, 2)


def f16_from_bytes(raw: np.ndarray) -> np.ndarray:
    """`uint8 [..., 2]` little-endian IEEE half -> float32 `[...]`."""
    return np.ascontiguousarray(raw).view(np.float16)[..., 0].astype(np.float32)


def nearest_int(x: np.ndarray) -> np.ndarray:
    """ggml's `nearest_int`: round half to even (the FPU's rounding), as int32."""
    return np.rint(x).astype(np.int32)


def check_float_weight(w, scheme: str, block: int, min_ndim: int = 1) -> np.ndarray:
    """`w` as a float32 array whose last axis (K) is a positive multiple of `block`."""
    w = np.asarray(w)
    if w.dtype.kind not in "fiu":
        raise QuantError(f"{scheme}: the weight must be a float array, got dtype {w.dtype}")
    if w.ndim < min_ndim or w.shape[-1] == 0:
        raise QuantError(
            f"{scheme}: expected a weight with at least {min_ndim} dimension(s) and K > 0 "
            f"(shape [N, K]), got shape {tuple(w.shape)}"
        )
    k = w.shape[-1]
    if k % block:
        raise QuantError(f"{scheme}: K = {k} (the weight's last dimension) is not a multiple of the block size {block}")
    w = w.astype(np.float32, copy=False)
    if not np.isfinite(w).all():
        raise QuantError(f"{scheme}: the weight holds non-finite values (inf or nan)")
    return w


def check_shape(shape, scheme: str, block: int) -> tuple[int, ...]:
    """The logical weight shape `(..., K)` given to `dequantize`, checked against the block."""
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError:
        raise QuantError(f"{scheme}: shape must be a tuple of ints such as (N, K), got {shape!r}") from None
    if not shape or any(d < 0 for d in shape) or shape[-1] == 0:
        raise QuantError(f"{scheme}: shape must be (..., K) with K > 0, got {shape}")
    if shape[-1] % block:
        raise QuantError(f"{scheme}: K = {shape[-1]} is not a multiple of the block size {block}")
    return shape


def check_array(a, scheme: str, operand: Operand) -> np.ndarray:
    """A stored array of the shape and dtype the scheme expects for `operand`."""
    a = np.asarray(a)
    if a.dtype != np.dtype(operand.dtype):
        raise QuantError(f"{scheme}: {operand.name} must have dtype {operand.dtype}, got {a.dtype}")
    if a.shape != operand.shape:
        raise QuantError(f"{scheme}: {operand.name} must have shape {operand.shape}, got {a.shape}")
    return a


class GgufScheme:
    """A GGUF block format: `quantize_blocks` / `dequantize_blocks` work on `[n_blocks, ...]` arrays.

    `quantize_blocks(float32 [n, block_size]) -> uint8 [n, block_bytes]` and
    `dequantize_blocks(uint8 [n, block_bytes]) -> float32 [n, block_size]`; this class adds the
    checks, the row layout and the chunking that bounds the quantisers' temporaries.
    """

    is_gguf = True
    _CHUNK_ELEMENTS = 1 << 20  # quantise this many weights at a time

    def __init__(
        self,
        name: str,
        block_size: int,
        block_bytes: int,
        quantize_blocks: Callable[[np.ndarray], np.ndarray],
        dequantize_blocks: Callable[[np.ndarray], np.ndarray],
        ggml_type: str,
    ):
        self.name = name
        self.block_size = block_size
        self.block_bytes = block_bytes
        self.ggml_type = ggml_type  # the GGMLQuantizationType member name: "Q4_K"
        self._quantize_blocks = quantize_blocks
        self._dequantize_blocks = dequantize_blocks

    def row_bytes(self, k: int) -> int:
        if k <= 0 or k % self.block_size:
            raise QuantError(f"{self.name}: K = {k} is not a positive multiple of the block size {self.block_size}")
        return k // self.block_size * self.block_bytes

    def operands(self, shape: tuple[int, ...]) -> tuple[Operand, ...]:
        shape = check_shape(shape, self.name, self.block_size)
        return (Operand("w", (*shape[:-1], self.row_bytes(shape[-1])), "uint8"),)

    def quantize(self, w) -> np.ndarray:
        w = check_float_weight(w, self.name, self.block_size)
        blocks = w.reshape(-1, self.block_size)
        step = max(1, self._CHUNK_ELEMENTS // self.block_size)
        out = np.empty((blocks.shape[0], self.block_bytes), np.uint8)
        for start in range(0, blocks.shape[0], step):
            try:
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # overflows end as the QuantError below
                    out[start : start + step] = self._quantize_blocks(blocks[start : start + step])
            except QuantError as error:
                raise QuantError(f"{self.name}: {error} (its largest magnitude is {float(np.abs(w).max()):.4g})") from None
        return out.reshape(*w.shape[:-1], self.row_bytes(w.shape[-1]))

    def __repr__(self):
        return f"<GGUF scheme {self.name}: {self.block_size} weights in {self.block_bytes} bytes>"

    def dequantize(self, data, shape) -> np.ndarray:
        shape = check_shape(shape, self.name, self.block_size)
        if isinstance(data, (bytes, bytearray, memoryview)):
            data = np.frombuffer(data, np.uint8)
        data = np.asarray(data)
        if data.dtype != np.uint8:
            raise QuantError(f"{self.name}: the packed weight must be a uint8 array, got dtype {data.dtype}")
        expected = int(np.prod(shape[:-1], dtype=np.int64)) * self.row_bytes(shape[-1])
        if data.size != expected:
            raise QuantError(
                f"{self.name}: a weight of shape {shape} takes {expected} bytes "
                f"({self.block_bytes} per block of {self.block_size}), got {data.size} bytes"
            )
        blocks = np.ascontiguousarray(data).reshape(-1, self.block_bytes)
        return self._dequantize_blocks(blocks).reshape(shape)
