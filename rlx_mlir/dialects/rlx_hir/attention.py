"""Attention blocks: rotary position embedding and multi-head attention."""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...dsl import Pure, same_as
from ..rlx import attention as mir_attention
from .dialect import RlxHir

__all__ = ["RopeOp", "AttentionOp"]


class RopeOp(RlxHir.Operation, name="rope", traits=[Pure]):
    """Rotary position embedding, NeoX rotate-half form, applied per head.

    Exactly the semantics of `rlx.rope`: `x` is `[B, S, H * head_dim]`, the
    first `n_rot` features of each head rotate, feature `i` paired with
    `i + n_rot / 2`, by the per-position tables `cos` and `sin`
    (`[S, n_rot / 2]`).  Expansion (RLX's `HirOp::RoPE`): one `rlx.rope`
    under both policies.
    """

    x = same_as(mir_attention.RopeOp.x)
    cos = same_as(mir_attention.RopeOp.cos)
    sin = same_as(mir_attention.RopeOp.sin)
    head_dim = same_as(mir_attention.RopeOp.head_dim)
    n_rot = same_as(mir_attention.RopeOp.n_rot)
    result = same_as(mir_attention.RopeOp.result)

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

    q = same_as(mir_attention.AttentionOp.q)
    k = same_as(mir_attention.AttentionOp.k)
    v = same_as(mir_attention.AttentionOp.v)
    mask = same_as(
        mir_attention.AttentionOp.mask,
        doc="present iff `mask_kind` is `custom` (`[B, Sk]`) or `bias` (`[B, H, Sq, Sk]`)",
    )
    num_heads = same_as(mir_attention.AttentionOp.num_heads)
    head_dim = same_as(mir_attention.AttentionOp.head_dim)
    mask_kind = same_as(mir_attention.AttentionOp.mask_kind, doc="which keys each query sees (as `rlx.attention`)")
    window = same_as(
        mir_attention.AttentionOp.window,
        doc="keys visible to each query with `sliding_window` (required then, and only then)",
    )
    score_scale = same_as(mir_attention.AttentionOp.score_scale)
    softcap = same_as(mir_attention.AttentionOp.softcap)
    result = same_as(mir_attention.AttentionOp.result)

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
