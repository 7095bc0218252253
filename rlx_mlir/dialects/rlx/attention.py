"""Attention and rotary position embedding (RoPE)."""

from __future__ import annotations

import math

from mlir import ir

from ...dsl import F32Attr, FloatTensor, I64Attr, Pure, StrEnumAttr, VerifyError, attribute, operand, result
from ...ir.shapes import DYNAMIC, format_shape, shape_of
from .dialect import Rlx, same_element_type

__all__ = ["RopeOp", "AttentionOp"]

MASK_KINDS = ("none", "causal", "sliding_window", "custom", "bias")


def _rank3(name: str, type_: ir.Type, layout: str) -> tuple[int, ...]:
    shape = shape_of(type_)
    if len(shape) != 3:
        raise VerifyError(f"{name} must have rank 3 ({layout}), got {format_shape(shape)}")
    return shape


def _fits(actual, expected) -> bool:
    """Shapes agree, a dynamic dimension (`?`) on either side matching any size."""
    return len(actual) == len(expected) and all(
        a == e or DYNAMIC in (a, e) for a, e in zip(actual, expected)
    )


def _static_last_dim(name: str, shape) -> int:
    if shape[-1] == DYNAMIC:
        raise VerifyError(f"{name} last dim must be static (it holds the heads), got {format_shape(shape)}")
    return shape[-1]


def _positive(name: str, value: int) -> None:
    if value <= 0:
        raise VerifyError(f"{name} must be positive, got {value}")


def rope_features(x: ir.Type, head_dim: int, n_rot: int) -> tuple[int, int, int]:
    """The checks RoPE ops share on `x` `[B, S, H * head_dim]` and the rotated features; returns x's shape."""
    _positive("head_dim", head_dim)
    _positive("n_rot", n_rot)
    if n_rot % 2:
        raise VerifyError(f"n_rot {n_rot} must be even (features rotate in pairs)")
    if n_rot > head_dim:
        raise VerifyError(f"n_rot {n_rot} exceeds head_dim {head_dim}")
    b, s, c = _rank3("x", x, "[B, S, H * head_dim]")
    c = _static_last_dim("x", (b, s, c))
    if c % head_dim:
        raise VerifyError(f"x last dim {c} is not a multiple of head_dim {head_dim}")
    return b, s, c


# --- rotary position embedding ---------------------------------------------------------


class RopeOp(Rlx.Operation, name="rope", traits=[Pure]):
    """Rotary position embedding, NeoX rotate-half form, applied per head.

    `x` is `[B, S, H * head_dim]`: each position holds `H` heads of
    `head_dim` features, back to back.  Within every head only the first
    `n_rot` features rotate (partial rotary when `n_rot < head_dim`); with
    `half = n_rot / 2`, for each batch `b`, position `s`, head and `i < half`,
    writing `x[i]` for feature `i` of that head:

        out[i]        = x[i]        * cos[s, i] - x[i + half] * sin[s, i]
        out[i + half] = x[i + half] * cos[s, i] + x[i]        * sin[s, i]

    and features `n_rot .. head_dim - 1` of each head are copied unchanged.
    This is GPT-NeoX's (and Hugging Face's `rotate_half`) pairing of feature
    `i` with `i + half`, not GPT-J's interleaved pairs `(2i, 2i + 1)`.  The
    `cos` / `sin` tables are given per position `s` (row `s` of the table
    applies to position `s` of `x`), already evaluated for the wanted
    frequencies and position offsets; they are shared by every batch and head.

    `x`, `cos`, `sin` and the result have one element type (f32, f16 or bf16);
    f16 and bf16 are computed in f32 and rounded once.
    """

    x = operand(FloatTensor, "the activations, `[B, S, H * head_dim]`")
    cos = operand(FloatTensor, "cosines per position and rotated pair, `[S, n_rot / 2]`")
    sin = operand(FloatTensor, "sines per position and rotated pair, `[S, n_rot / 2]`")
    head_dim = attribute(I64Attr, "features per head; the last dim of `x` is a multiple of it")
    n_rot = attribute(I64Attr, "rotated features at the start of each head: even, `0 < n_rot <= head_dim`")
    result = result(FloatTensor, "`[B, S, H * head_dim]`, like `x`")

    @classmethod
    def infer_result_type(
        cls, x: ir.Type, cos: ir.Type, sin: ir.Type, head_dim: int, n_rot: int
    ) -> ir.Type:
        element = same_element_type(x, cos, sin)
        b, s, c = rope_features(x, head_dim, n_rot)
        table = [s, n_rot // 2]
        for name, type_ in (("cos", cos), ("sin", sin)):
            if not _fits(shape_of(type_), table):
                raise VerifyError(
                    f"{name} has shape {format_shape(shape_of(type_))}, expected [S, n_rot / 2] = "
                    f"{format_shape(table)} for x {format_shape((b, s, c))} and n_rot {n_rot}"
                )
        return ir.RankedTensorType.get([b, s, c], element)


# --- attention ----------------------------------------------------------------------------


class AttentionOp(Rlx.Operation, name="attention", traits=[Pure]):
    """Multi-head scaled dot-product attention with grouped-query heads and masks.

    `q` is `[B, Sq, H * D]`, `k` and `v` are `[B, Sk, Hkv * D]`, heads laid out
    back to back in the last dimension, with `H = num_heads`, `D = head_dim`
    and `Hkv = k.shape[2] / D`.  `Hkv` must divide `H` (grouped-query
    attention; `Hkv = H` is plain multi-head, `Hkv = 1` multi-query): query head
    `h` attends with kv head `h // (H / Hkv)`.  For each batch `b`, query head
    `h`, query `i` and key `j`:

        scores[b, h, i, j] = (q[b, i, h] . k[b, j, h // (H / Hkv)]) * scale

    with `scale = score_scale`, by default `1 / sqrt(D)` (as PyTorch's
    `scaled_dot_product_attention`).  With `softcap = c`, scores become
    `c * tanh(scores / c)` (Gemma 2's logit soft-capping), before any mask.
    Then, by `mask_kind`, with `offset = Sk - Sq`:

    - `none`: every key is visible.
    - `causal`: key `j` is visible to query `i` iff `j <= i + offset`, i.e.
      the causal mask is aligned to the *end* of the key sequence, so the
      `Sq` queries are the last `Sq` positions of the `Sk` keys (decoding
      against a longer KV cache).  This differs from PyTorch's `is_causal`,
      which aligns to the start (`j <= i`) when `Sq != Sk`; both agree when
      `Sq == Sk`.
    - `sliding_window` (needs `window = n > 0`): causal as above and also
      `j > i + offset - n`: each query sees the `n` most recent keys,
      its own position included.
    - `custom` (needs `mask`, `[B, Sk]`): key `j` of batch `b` is visible to
      every query iff `mask[b, j] != 0` (1.0 = valid, 0.0 = masked; any
      nonzero value counts as valid, as when PyTorch converts a float mask to
      a boolean one).  A key padding mask.
    - `bias` (needs `mask`, `[B, H, Sq, Sk]`): `mask[b, h, i, j]` is added to
      the (scaled, soft-capped) score, as PyTorch's float `attn_mask`; a bias
      of `-inf` masks the key.

    Probabilities are the numerically stable softmax over the visible keys
    (`exp(s - max)`, normalised by their sum), and `out[b, i, h] = P . v[b, :,
    h // (H / Hkv)]`.  A query row that sees no key at all (every key masked,
    e.g. `causal` with `Sq > Sk` for the first rows, or an all-zero `custom`
    mask) outputs zeros, where PyTorch would produce NaN.  Dropout is not part
    of the op (inference).

    All operands and the result have one element type (f32, f16 or bf16); f16
    and bf16 compute in f32 throughout (scores, softmax, the `P . V`
    accumulation) and the output is rounded once.
    """

    q = operand(FloatTensor, "queries, `[B, Sq, H * D]`")
    k = operand(FloatTensor, "keys, `[B, Sk, Hkv * D]`")
    v = operand(FloatTensor, "values, `[B, Sk, Hkv * D]`, like `k`")
    mask = operand(
        FloatTensor,
        "present iff `mask_kind` is `custom` (`[B, Sk]`, nonzero = key valid) or `bias` "
        "(`[B, H, Sq, Sk]`, added to the scores)",
        optional=True,
    )
    num_heads = attribute(I64Attr, "`H`, the number of query heads")
    head_dim = attribute(I64Attr, "`D`, features per head for q, k and v")
    mask_kind = attribute(StrEnumAttr(*MASK_KINDS), "which keys each query sees (see above)")
    window = attribute(
        I64Attr, "keys visible to each query with `sliding_window` (required then, and only then; positive)",
        optional=True,
    )
    score_scale = attribute(F32Attr, "multiplies `q . k`; absent means `1 / sqrt(head_dim)`", optional=True)
    softcap = attribute(F32Attr, "`c > 0`: scores become `c * tanh(scores / c)` before masking", optional=True)
    result = result(FloatTensor, "`[B, Sq, H * D]`, like `q`")

    @classmethod
    def infer_result_type(
        cls,
        q: ir.Type,
        k: ir.Type,
        v: ir.Type,
        mask: ir.Type | None,
        num_heads: int,
        head_dim: int,
        mask_kind: str,
        window: int | None,
        score_scale: float | None,
        softcap: float | None,
    ) -> ir.Type:
        element = same_element_type(*(t for t in (q, k, v, mask) if t is not None))
        _positive("num_heads", num_heads)
        _positive("head_dim", head_dim)
        if mask_kind not in MASK_KINDS:
            choices = ", ".join(repr(m) for m in MASK_KINDS)
            raise VerifyError(f"mask_kind must be one of {choices}, but got {mask_kind!r}")
        if mask_kind == "sliding_window":
            if window is None:
                raise VerifyError("mask_kind 'sliding_window' requires a window attribute")
            _positive("window", window)
        elif window is not None:
            raise VerifyError(f"window {window} is only meaningful with mask_kind 'sliding_window', not '{mask_kind}'")
        if score_scale is not None and not math.isfinite(score_scale):
            raise VerifyError(f"score_scale must be finite, got {score_scale}")
        if softcap is not None and not softcap > 0.0:
            raise VerifyError(f"softcap must be positive, got {softcap}")

        b, sq, qd = _rank3("q", q, "[B, Sq, H * D]")
        kb, sk, kd = _rank3("k", k, "[B, Sk, Hkv * D]")
        qd, kd = _static_last_dim("q", shape_of(q)), _static_last_dim("k", shape_of(k))
        if qd != num_heads * head_dim:
            raise VerifyError(f"q last dim {qd} is not num_heads * head_dim = {num_heads} * {head_dim}")
        if not _fits([kb], [b]):
            raise VerifyError(f"k batch {kb} differs from q batch {b} (q {format_shape(shape_of(q))}, k {format_shape(shape_of(k))})")
        if kd % head_dim:
            raise VerifyError(f"k last dim {kd} is not a multiple of head_dim {head_dim}")
        kv_heads = kd // head_dim
        if num_heads % kv_heads:
            raise VerifyError(f"{num_heads} query heads are not a multiple of {kv_heads} kv heads")
        if not _fits(shape_of(v), shape_of(k)):
            raise VerifyError(f"v shape {format_shape(shape_of(v))} differs from k shape {format_shape(shape_of(k))}")

        if mask_kind in ("custom", "bias"):
            if mask is None:
                raise VerifyError(f"mask_kind '{mask_kind}' requires a mask operand")
            expected = [b, sk] if mask_kind == "custom" else [b, num_heads, sq, sk]
            layout = "[B, Sk]" if mask_kind == "custom" else "[B, H, Sq, Sk]"
            if not _fits(shape_of(mask), expected):
                raise VerifyError(
                    f"mask has shape {format_shape(shape_of(mask))}, expected {layout} = "
                    f"{format_shape(expected)} for mask_kind '{mask_kind}'"
                )
        elif mask is not None:
            raise VerifyError(f"mask_kind '{mask_kind}' takes no mask operand, got one of type {mask}")
        return ir.RankedTensorType.get([b, sq, qd], element)

    def scale(self) -> float:
        """The effective score scale: `score_scale`, or `1 / sqrt(head_dim)` when absent."""
        scale = self.score_scale
        return 1.0 / math.sqrt(self.head_dim) if scale is None else scale
