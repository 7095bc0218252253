"""Whole-layer blocks: the Llama decoder layer."""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...dsl import F32Attr, FloatTensor, I64Attr, Pure, VerifyError, attribute, operand, result, same_as
from ...ir.shapes import format_shape, shape_of
from ..rlx.dialect import same_element_type
from ..rlx.norm import DEFAULT_EPS
from .attention import AttentionOp
from .dialect import RlxHir, check_positive, check_shape, weight_shape

__all__ = ["LlamaDecoderBlockOp"]


class LlamaDecoderBlockOp(RlxHir.Operation, name="llama_decoder_block", traits=[Pure]):
    """One Llama decoder layer (pre-norm attention and SwiGLU FFN, both residual).

    With `x` `[B, S, D]`, `H = num_heads`, `Hkv = num_kv_heads`,
    `hd = head_dim`, RMSNorms over the last axis with `eps`, and RoPE (NeoX
    rotate-half, all `hd` features of each head rotate) by the per-position
    tables `cos`, `sin` (`[S, hd / 2]`):

        n1  = rms_norm(x, ln1_g, ln1_b)
        q   = rope(n1 @ q_w)              [B, S, H * hd]
        k   = rope(n1 @ k_w)              [B, S, Hkv * hd]
        v   = n1 @ v_w                    [B, S, Hkv * hd]
        h   = x + attention(q, k, v) @ o_w
        n2  = rms_norm(h, ln2_g, ln2_b)
        out = h + ((n2 @ up_w) * silu(n2 @ gate_w)) @ down_w

    `attention` is `rlx.attention` with `num_heads`, `head_dim`, `mask_kind`
    (default `causal`), `window` and the optional `mask`, scale
    `1 / sqrt(hd)`; grouped-query heads (`Hkv` dividing `H`) are handled by
    it directly, without repeating K and V.  This is RLX's
    `HirOp::LlamaDecoderBlock` (`LlamaDecoderBlock`).

    Expansion: under `fusable`, primitives only: `rlx.rms_norm`, three
    `rlx.matmul`s, two `rlx.rope`s, `rlx.attention`, `rlx.matmul`, `rlx.add`,
    `rlx.rms_norm`, the SwiGLU chain (two `rlx.matmul`s, `rlx.silu`,
    `rlx.mul`, `rlx.matmul`) and `rlx.add`.  Under `direct` the second norm
    is `rlx.fused_residual_rms_norm(attn_out, x)` (the sum `h` is still
    formed by an `rlx.add` for the final residual) and the FFN is the direct
    `rlx_hir.swiglu_ffn` expansion (`rlx.concat` of `up_w` and `gate_w`,
    `rlx.matmul`, `rlx.fused_swiglu`, `rlx.matmul`); the first norm has no
    residual and stays `rlx.rms_norm`.
    """

    x = operand(FloatTensor, "the residual stream, `[B, S, D]`")
    ln1_g = operand(FloatTensor, "attention norm scale, `[D]`")
    ln1_b = operand(FloatTensor, "attention norm shift, `[D]` (zeros for none)")
    q_w = operand(FloatTensor, "query projection, `[D, H * hd]`")
    k_w = operand(FloatTensor, "key projection, `[D, Hkv * hd]`")
    v_w = operand(FloatTensor, "value projection, `[D, Hkv * hd]`")
    o_w = operand(FloatTensor, "output projection, `[H * hd, D]`")
    ln2_g = operand(FloatTensor, "FFN norm scale, `[D]`")
    ln2_b = operand(FloatTensor, "FFN norm shift, `[D]` (zeros for none)")
    gate_w = operand(FloatTensor, "FFN gate projection, `[D, F]`")
    up_w = operand(FloatTensor, "FFN up projection, `[D, F]`")
    down_w = operand(FloatTensor, "FFN down projection, `[F, D]`")
    cos = operand(FloatTensor, "RoPE cosines, `[S, hd / 2]`")
    sin = operand(FloatTensor, "RoPE sines, `[S, hd / 2]`")
    mask = same_as(
        AttentionOp.mask,
        doc="present iff `mask_kind` is `custom` (`[B, S]`) or `bias` (`[B, H, S, S]`), as `rlx.attention`",
    )
    num_heads = attribute(I64Attr, "`H`, query heads")
    head_dim = attribute(I64Attr, "`hd`, features per head (even: RoPE rotates pairs)")
    num_kv_heads = attribute(I64Attr, "`Hkv`, key / value heads; divides `H`")
    eps = attribute(F32Attr, "epsilon of both RMSNorms; must be positive", default=DEFAULT_EPS)
    mask_kind = same_as(AttentionOp.mask_kind, default="causal")
    window = same_as(AttentionOp.window)
    result = result(FloatTensor, "`[B, S, D]`, like `x`")

    @classmethod
    def infer_result_type(
        cls,
        x: ir.Type,
        ln1_g: ir.Type,
        ln1_b: ir.Type,
        q_w: ir.Type,
        k_w: ir.Type,
        v_w: ir.Type,
        o_w: ir.Type,
        ln2_g: ir.Type,
        ln2_b: ir.Type,
        gate_w: ir.Type,
        up_w: ir.Type,
        down_w: ir.Type,
        cos: ir.Type,
        sin: ir.Type,
        mask: Optional[ir.Type],
        num_heads: int,
        head_dim: int,
        num_kv_heads: int,
        eps: float,
        mask_kind: str,
        window: Optional[int],
    ) -> ir.Type:
        operands = (x, ln1_g, ln1_b, q_w, k_w, v_w, o_w, ln2_g, ln2_b, gate_w, up_w, down_w, cos, sin, mask)
        element = same_element_type(*(t for t in operands if t is not None))
        check_positive("num_heads", num_heads)
        check_positive("head_dim", head_dim)
        check_positive("num_kv_heads", num_kv_heads)
        if head_dim % 2:
            raise VerifyError(f"head_dim {head_dim} must be even (RoPE rotates feature pairs)")
        if num_heads % num_kv_heads:
            raise VerifyError(f"num_heads {num_heads} is not a multiple of num_kv_heads {num_kv_heads}")
        if not eps > 0.0:
            raise VerifyError(f"eps must be positive, got {eps}")
        if mask_kind == "sliding_window":
            if window is None:
                raise VerifyError("mask_kind 'sliding_window' requires a window attribute")
            check_positive("window", window)
        elif window is not None:
            raise VerifyError(f"window {window} is only meaningful with mask_kind 'sliding_window', not '{mask_kind}'")

        shape = shape_of(x)
        if len(shape) != 3:
            raise VerifyError(f"x must have rank 3 ([B, S, D]), got {format_shape(shape)}")
        b, s, d = shape
        qd, kvd = num_heads * head_dim, num_kv_heads * head_dim
        for name, type_ in (("ln1_g", ln1_g), ("ln1_b", ln1_b), ("ln2_g", ln2_g), ("ln2_b", ln2_b)):
            check_shape(name, type_, [d], "[D]")
        check_shape("q_w", q_w, [d, qd], "[D, num_heads * head_dim]")
        check_shape("k_w", k_w, [d, kvd], "[D, num_kv_heads * head_dim]")
        check_shape("v_w", v_w, [d, kvd], "[D, num_kv_heads * head_dim]")
        check_shape("o_w", o_w, [qd, d], "[num_heads * head_dim, D]")
        _, f = weight_shape("gate_w", gate_w, "[D, F]")
        check_shape("gate_w", gate_w, [d, f], "[D, F]")
        check_shape("up_w", up_w, [d, f], "[D, F] (the shape of gate_w)")
        check_shape("down_w", down_w, [f, d], "[F, D]")
        check_shape("cos", cos, [s, head_dim // 2], "[S, head_dim / 2]")
        check_shape("sin", sin, [s, head_dim // 2], "[S, head_dim / 2]")
        if mask_kind in ("custom", "bias"):
            if mask is None:
                raise VerifyError(f"mask_kind '{mask_kind}' requires a mask operand")
            if mask_kind == "custom":
                check_shape("mask", mask, [b, s], "[B, S]")
            else:
                check_shape("mask", mask, [b, num_heads, s, s], "[B, num_heads, S, S]")
        elif mask is not None:
            raise VerifyError(f"mask_kind '{mask_kind}' takes no mask operand, got one of type {mask}")
        return ir.RankedTensorType.get([b, s, d], element)
