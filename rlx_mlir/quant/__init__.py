"""Quantised weights: reference quantisers and dequantisers for every scheme RLX runs (pure numpy).

    from rlx_mlir import quant
    packed = quant.quantize(w, "q4_k")                   # w [N, K] float -> uint8 [N, K/256*144]
    w2 = quant.dequantize(packed, "q4_k", w.shape)       # -> float32 [N, K]

The float weight is always `W [N, K]` (N outputs, K inputs, `y = x @ W.T`: PyTorch's `Linear`
and GGUF's row order); blocks run along K.  Schemes (`SCHEMES`):

- GGUF, one `uint8 [N, row_bytes(scheme, K)]` array, ggml's block structs back to back per row
  (`gguf_legacy`: `q4_0`, `q8_0`; `gguf_k`: `q4_k`, `q5_k`, `q6_k`, `q2_k`, `q3_k`, `q8_k`).
  Dequantisation is bit-exact with ggml / `gguf.quants.dequantize`.
- `int8/B`, `int8_asym/B`, `int4/B` (`blockwise`): a `BlockwiseWeight(w_q, scale, zp)`, K-major.
- `nvfp4` (`nvfp4`): an `Nvfp4Weight(codes, scales, global_scale)`, K-major.

Each module's docstring gives its layouts byte by byte.  `operands(scheme, (N, K))` lists the
stored arrays (name, shape, numpy dtype) a weight of that shape takes.  Bad scheme names, shapes
and byte counts raise `QuantError` (a `ValueError` and an `RlxError`).

This package sits low in the layers: it imports only numpy, `rlx_mlir.errors` and itself.
"""

from __future__ import annotations

import numpy as np

from . import blockwise, gguf_k, gguf_legacy, nvfp4
from .base import Operand, QuantError
from .blockwise import BlockwiseWeight
from .nvfp4 import Nvfp4Weight

_FIXED = {s.name: s for s in (*gguf_legacy.SCHEMES, *gguf_k.SCHEMES, nvfp4.NVFP4)}

GGUF_SCHEMES = tuple(name for name, s in _FIXED.items() if s.is_gguf)
# Every scheme spelling; `{block}` stands for a positive block size dividing K ("int8/32").
SCHEMES = (*GGUF_SCHEMES, *(f"{kind}/{{block}}" for kind in blockwise.KINDS), "nvfp4")


def scheme(name: str):
    """The scheme object for a name such as "q4_k" or "int8/32" (QuantError if there is none)."""
    if not isinstance(name, str):
        raise QuantError(f"a quantisation scheme is named by a string such as 'q4_k', got {name!r}")
    found = _FIXED.get(name) or blockwise.parse(name)
    if found is None:
        raise QuantError(f"unknown quantisation scheme '{name}'; expected one of {', '.join(SCHEMES)}")
    return found


def is_gguf(name: str) -> bool:
    """True for the GGUF schemes (one packed uint8 array per weight)."""
    return scheme(name).is_gguf


def block_size(name: str) -> int:
    """Weights per block along K (32 for q4_0/q8_0, 256 for the K-quants, B for int8/B, 16 for nvfp4)."""
    return scheme(name).block_size


def block_bytes(name: str) -> int:
    """Bytes of one GGUF block (18 for q4_0, 144 for q4_k, ...); QuantError for the schemes
    that store side tensors (see `operands`)."""
    found = scheme(name)
    if not found.is_gguf:
        raise QuantError(
            f"{name} stores separate arrays, not packed blocks; block_bytes and row_bytes are for the GGUF schemes "
            f"({', '.join(GGUF_SCHEMES)}); use operands('{name}', (N, K))"
        )
    return found.block_bytes


def row_bytes(name: str, k: int) -> int:
    """Bytes of one packed row of K weights of a GGUF scheme: `K / block_size * block_bytes`."""
    block_bytes(name)  # the check and its message
    return scheme(name).row_bytes(k)


def operands(name: str, shape) -> tuple[Operand, ...]:
    """The arrays a weight of logical shape `shape` (N, K) is stored as: (name, shape, numpy dtype)."""
    return scheme(name).operands(shape)


def quantize(w: np.ndarray, name: str):
    """Quantise the float weight `w [N, K]` (GGUF schemes also take `[..., K]`).

    GGUF schemes return `uint8 [N, row_bytes(name, K)]`; `int8/B`, `int8_asym/B`, `int4/B` a
    `BlockwiseWeight`; `nvfp4` an `Nvfp4Weight` (named tuples of numpy arrays)."""
    return scheme(name).quantize(w)


def dequantize(data, name: str, shape) -> np.ndarray:
    """The float32 weight of logical shape `shape` (N, K) that `data` (what `quantize` returned,
    or bytes from a checkpoint in the same layout) stands for."""
    return scheme(name).dequantize(data, shape)


__all__ = [
    "GGUF_SCHEMES",
    "SCHEMES",
    "BlockwiseWeight",
    "Nvfp4Weight",
    "Operand",
    "QuantError",
    "block_bytes",
    "block_size",
    "dequantize",
    "is_gguf",
    "operands",
    "quantize",
    "row_bytes",
    "scheme",
]
