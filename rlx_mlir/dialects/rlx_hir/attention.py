"""Attention blocks: rotary position embedding and multi-head attention."""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...dsl import F32Attr, FloatTensor, I64Attr, Pure, StrEnumAttr, attribute, operand, result
from ..rlx import attention as mir_attention
from .dialect import RlxHir

__all__ = ["RopeOp", "AttentionOp"]

MASK_KINDS = mir_attention.MASK_KINDS


class RopeOp(RlxHir.Operation, name="rope", traits=[Pure]):
    """Rotary position embedding, NeoX rotate-half form, applied per head.

    Exactly the semantics of `rlx.rope`: `x` is `[B, S, H * head_dim]`, the
    first `n_rot` features of each head rotate, feature `i` paired with
    `i + n_rot / 2`, by the per-position tables `cos` and `sin`
    (`[S, n_rot / 2]`).  Expansion (RLX's `HirOp::RoPE`): one `rlx.rope`
    under both policies.
    """

    x = operand(FloatTensor, "the activations, `[B, S, H * head_dim]`")
    cos = operand(FloatTensor, "cosines per position and rotated pair, `[S, n_rot / 2]`")
    sin = operand(FloatTensor, "sines per position and rotated pair, `[S, n_rot / 2]`")
    head_dim = attribute(I64Attr, "features per head; the last dim of `x` is a multiple of it")
    n_rot = attribute(I64Attr, "rotated features at the start of each head: even, `0 < n_rot <= head_dim`")
    result = result(FloatTensor, "`[B, S, H * head_dim]`, like `x`")

    @classmethod
    def infer_result_type(cls, x: ir.Type, cos: ir.Type, sin: ir.Type, head_dim: int, n_rot: int) -> ir.Type:
        return mir_attention.RopeOp.infer_result_type(x, cos, sin, head_dim, n_rot)


class AttentionOp(RlxHir.Operation, name="attention", traits=[Pure]):
    """Multi-head scaled dot-product attention with grouped-query heads and masks.

    Exactly the semantics of `rlx.attention` (see it for the formulas): `q`
    is `[B, Sq, H * D]`, `k` and `v` `[B, Sk, Hkv * D]` with `Hkv` dividing
    `H`; `mask_kind` is `none`, `causal` (aligned to the end of the keys),
    `sliding_window` (with `window`), `custom` (`mask` `[B, Sk]`, nonzero =
    key valid) or `bias` (`mask` `[B, H, Sq, Sk]` added to the scores).
    Expansion (RLX's `HirOp::Attention`): one `rlx.attention` under both
    policies.
    """

    q = operand(FloatTensor, "queries, `[B, Sq, H * D]`")
    k = operand(FloatTensor, "keys, `[B, Sk, Hkv * D]`")
    v = operand(FloatTensor, "values, `[B, Sk, Hkv * D]`, like `k`")
    mask = operand(
        FloatTensor,
        "present iff `mask_kind` is `custom` (`[B, Sk]`) or `bias` (`[B, H, Sq, Sk]`)",
        optional=True,
    )
    num_heads = attribute(I64Attr, "`H`, the number of query heads")
    head_dim = attribute(I64Attr, "`D`, features per head for q, k and v")
    mask_kind = attribute(StrEnumAttr(*MASK_KINDS), "which keys each query sees (as `rlx.attention`)")
    window = attribute(I64Attr, "keys visible to each query with `sliding_window` (required then, and only then)", optional=True)
    score_scale = attribute(F32Attr, "multiplies `q . k`; absent means `1 / sqrt(head_dim)`", optional=True)
    softcap = attribute(F32Attr, "`c > 0`: scores become `c * tanh(scores / c)` before masking", optional=True)
    result = result(FloatTensor, "`[B, Sq, H * D]`, like `q`")

    @classmethod
    def infer_result_type(
        cls,
        q: ir.Type,
        k: ir.Type,
        v: ir.Type,
        mask: Optional[ir.Type],
        num_heads: int,
        head_dim: int,
        mask_kind: str,
        window: Optional[int],
        score_scale: Optional[float],
        softcap: Optional[float],
    ) -> ir.Type:
        return mir_attention.AttentionOp.infer_result_type(
            q, k, v, mask, num_heads, head_dim, mask_kind, window, score_scale, softcap
        )
