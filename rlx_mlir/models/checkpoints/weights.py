"""What every checkpoint format is mapped to: the builder's weight dict, checked, and the errors.

A reader (GGUF, Hugging Face) produces the model's tensors under the builder's names
(`rlx_mlir.models.llama.weight_shapes`: `embed`, `layers.{i}.q`, ..., `norm`, `lm_head`) but in
the checkpoint's own *PyTorch* layout: every projection `W [out, in]` (`y = x @ W.T`), the
embedding `[vocab, hidden]`, norms `[hidden]`.  `builder_weights` turns that into what
`build_llama` / `CachedLlama` take: projections transposed to `[in, out]`, float32, C-contiguous,
every name present and every shape checked against the config.

A projection may also arrive still quantised, as a `QuantizedWeight` (the packed GGUF bytes
`uint8 [out, row_bytes]` of `W [out, in]`, blocks along `in`): `dequantize_weight` decodes it
with `rlx_mlir.quant`.  For a config whose `quant` keeps that projection quantised,
`builder_weights` hands the bytes over as they are (`uint8 [out, row_bytes]`, the layout the
model's `u8` parameter takes: GGUF's `[out, in]` rows, no transpose).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ... import quant
from ...errors import RlxError
from ..llama import LlamaConfig, packed_matrix_shape, param_types, quant_schemes, weight_shapes

# LlamaConfig fields a caller chooses at load time; the others come from the checkpoint.
RUNTIME_FIELDS = ("batch", "seq", "max_seq", "policy", "quant_activations")


class CheckpointError(RlxError, ValueError):
    """A checkpoint that cannot be loaded: not found, malformed, an unsupported architecture or
    feature, a missing tensor or a tensor of the wrong shape (a ValueError and an RlxError)."""


@dataclass(frozen=True)
class QuantizedWeight:
    """A projection `W [out, in]` kept in a GGUF block format: `data` is `uint8 [out, row_bytes]`
    (`rlx_mlir.quant.row_bytes(scheme, in)`), each row that row's blocks back to back, the layout
    `rlx_mlir.quant.dequantize(data, scheme, shape)` decodes."""

    scheme: str
    data: np.ndarray
    shape: tuple[int, int]  # logical (out, in)


def dequantize_weight(weight, name: str) -> np.ndarray:
    """A float32 array for a tensor that may be a `QuantizedWeight`."""
    if not isinstance(weight, QuantizedWeight):
        return np.asarray(weight, np.float32)
    try:
        return quant.dequantize(weight.data, weight.scheme, weight.shape)
    except quant.QuantError as e:
        raise CheckpointError(f"tensor '{name}': {e}") from None


def simulate_quantization(w: np.ndarray, scheme: str, name: str, source: str) -> np.ndarray:
    """`W [out, in]` quantised to `scheme` along `in` and decoded again (float32)."""
    try:
        return quant.dequantize(quant.quantize(w, scheme), scheme, w.shape)
    except quant.QuantError as e:
        raise CheckpointError(f"{source}: cannot quantise '{name}' {list(w.shape)} to {scheme}: {e}") from None


def check_quantize_option(scheme) -> None:
    if scheme is not None and (not isinstance(scheme, str) or scheme not in quant.GGUF_SCHEMES):
        raise CheckpointError(
            f"quantize={scheme!r}: expected None or a GGUF scheme ({', '.join(quant.GGUF_SCHEMES)})"
        )


def make_config(source: str, runtime: dict, **architecture) -> LlamaConfig:
    """The LlamaConfig of a checkpoint: `architecture` read from it, `runtime` (RUNTIME_FIELDS) chosen by the caller."""
    unknown = sorted(set(runtime) - set(RUNTIME_FIELDS))
    if unknown:
        known = {f.name for f in fields(LlamaConfig)}
        what = "comes from the checkpoint" if set(unknown) <= known else "is not a LlamaConfig field"
        raise CheckpointError(
            f"{source}: {', '.join(unknown)} {what}; only {', '.join(RUNTIME_FIELDS)} may be given at load time"
        )
    for name, value in architecture.items():
        if name in ("rope_theta", "eps"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise CheckpointError(f"{source}: {name} must be a positive number, got {value!r}")
            architecture[name] = float(value)
        elif isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise CheckpointError(f"{source}: {name} must be a positive integer, got {value!r}")
    if architecture["heads"] % architecture["kv_heads"]:
        raise CheckpointError(
            f"{source}: {architecture['heads']} attention heads are not a multiple of "
            f"{architecture['kv_heads']} key/value heads"
        )
    return LlamaConfig(**architecture, **runtime)


def builder_weights(config: LlamaConfig, tensors: dict[str, np.ndarray], source: str) -> dict[str, np.ndarray]:
    """The weights `build_llama` / `CachedLlama` take, from `tensors` in PyTorch layout (see the module doc)."""
    expected = weight_shapes(config)
    missing = [name for name in expected if name not in tensors]
    if missing:
        raise CheckpointError(f"{source}: missing tensor(s) for {', '.join(missing)}")
    extra = sorted(set(tensors) - set(expected))
    if extra:
        raise CheckpointError(f"{source}: tensor(s) for {', '.join(extra)}, which the config ({_describe(config)}) "
                              "does not have")
    schemes = quant_schemes(config)
    types = param_types(config)
    weights = {}
    for name, shape in expected.items():
        tensor = tensors[name]
        if name in schemes:
            weights[name] = _packed(tensor, name, schemes[name], packed_matrix_shape(name, shape), types[name][0], source)
            continue
        tensor = dequantize_weight(tensor, name)
        # Projections are [out, in] in checkpoints and [in, out] in the builder; the embedding is [vocab, hidden] in both.
        transposed = len(shape) == 2 and name != "embed"
        stored = shape[::-1] if transposed else shape
        if tuple(tensor.shape) != stored:
            raise CheckpointError(
                f"{source}: tensor for '{name}' has shape {list(tensor.shape)}; the config "
                f"({_describe(config)}) needs {list(stored)}"
            )
        weights[name] = np.ascontiguousarray(tensor.T if transposed else tensor, dtype=np.float32)
    return weights


def _packed(tensor, name: str, scheme: str, logical: tuple, packed: tuple, source: str) -> np.ndarray:
    """The bytes of a projection the model keeps quantised, checked against the scheme and shape it needs."""
    if not isinstance(tensor, QuantizedWeight) or tensor.scheme != scheme:
        given = tensor.scheme if isinstance(tensor, QuantizedWeight) else "float"
        raise CheckpointError(f"{source}: tensor for '{name}' is {given}; the config keeps it quantised as {scheme}")
    if tuple(tensor.shape) != logical or tuple(tensor.data.shape) != packed:
        raise CheckpointError(
            f"{source}: tensor for '{name}' has shape {list(tensor.shape)} ({list(tensor.data.shape)} bytes); "
            f"the config needs {list(logical)} ({list(packed)} bytes of {scheme})"
        )
    return np.ascontiguousarray(tensor.data, dtype=np.uint8)


def quantize_weight(w: np.ndarray, scheme: str, name: str, source: str) -> QuantizedWeight:
    """`W [out, in]` quantised to `scheme` along `in`, kept packed."""
    try:
        return QuantizedWeight(scheme, quant.quantize(w, scheme), tuple(w.shape))
    except quant.QuantError as e:
        raise CheckpointError(f"{source}: cannot quantise '{name}' {list(w.shape)} to {scheme}: {e}") from None


def _describe(c: LlamaConfig) -> str:
    return (f"layers={c.layers}, hidden={c.hidden}, heads={c.heads}, kv_heads={c.kv_heads}, "
            f"head_dim={c.head_dim}, ffn={c.ffn}, vocab={c.vocab}")


__all__ = [
    "CheckpointError",
    "QuantizedWeight",
    "RUNTIME_FIELDS",
    "builder_weights",
    "check_quantize_option",
    "dequantize_weight",
    "make_config",
    "quantize_weight",
    "simulate_quantization",
]
