"""Expansions of HIR blocks (dialect `rlx_hir`) into MIR ops (dialect `rlx`).

`EXPANSIONS` maps each HIR op class to `expand(op, policy) -> [values]`, one
value per result of the op.  An expansion runs with the insertion point before
the HIR op and the op's location as the current location, so every MIR op it
builds carries that location (a named block's `NameLoc` included).  MIR ops
are built through their classes' builders, which infer and check shapes (a
builder's ValueError, e.g. for a dynamic size that a slice needs statically,
becomes the pass's error at the block).

`policy` is `"direct"` (RLX's fused MIR ops where they exist) or `"fusable"`
(primitive chains only).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from mlir import ir

from ...dialects import rlx, rlx_hir
from ...ir.shapes import DYNAMIC, shape_of

DIRECT, FUSABLE = "direct", "fusable"

_ACTIVATION_OPS = {
    "relu": rlx.ReluOp,
    "gelu": rlx.GeluOp,
    "gelu_approx": rlx.GeluApproxOp,
    "silu": rlx.SiluOp,
    "sigmoid": rlx.SigmoidOp,
    "tanh": rlx.TanhOp,
}


# --- building blocks -----------------------------------------------------------------------


def _rank1_as_row(x: ir.Value, build: Callable[[ir.Value], ir.Value]) -> ir.Value:
    """`build(x)` for `x` of rank 2 or more; a rank-1 `x` `[K]` goes through `[1, K]` and back.

    MIR's matmul family takes rank 2 or more; HIR's linear blocks take `[..., K]`.
    """
    if len(shape_of(x.type)) != 1:
        return build(x)
    row = rlx.ReshapeOp(x, result_type=_with_shape(x, [1, shape_of(x.type)[0]])).result
    out = build(row)
    return rlx.ReshapeOp(out, result_type=_with_shape(out, [shape_of(out.type)[-1]])).result


def _with_shape(value: ir.Value, shape) -> ir.Type:
    return ir.RankedTensorType.get(list(shape), ir.RankedTensorType(value.type).element_type)


def _matmul(x: ir.Value, w: ir.Value) -> ir.Value:
    return _rank1_as_row(x, lambda row: rlx.MatmulOp(row, w).result)


def _activation(value: ir.Value, activation: str) -> ir.Value:
    if activation == "none":
        return value
    return _ACTIVATION_OPS[activation](value).result


def _fused_linear(x: ir.Value, w: ir.Value, bias: ir.Value, activation: str) -> ir.Value:
    return _rank1_as_row(x, lambda row: rlx.FusedMatmulBiasActOp(row, w, bias, activation=activation).result)


def _swiglu(x: ir.Value, up_w: ir.Value, gate_w: ir.Value, down_w: ir.Value, policy: str) -> ir.Value:
    """`(x @ up_w * silu(x @ gate_w)) @ down_w`."""
    if policy == DIRECT:
        both = rlx.ConcatOp(up_w, gate_w, 1).result  # [D, 2F]: up then gate, as fused_swiglu reads them
        hidden = rlx.FusedSwigluOp(_matmul(x, both)).result
    else:
        up = _matmul(x, up_w)
        gate = _matmul(x, gate_w)
        hidden = rlx.MulOp(up, rlx.SiluOp(gate).result).result
    return _matmul(hidden, down_w)


# --- one expansion per block ----------------------------------------------------------------------


def _expand_linear(op: rlx_hir.LinearOp, policy: str) -> list[ir.Value]:
    if op.bias is not None and policy == DIRECT:
        return [_fused_linear(op.x, op.w, op.bias, op.activation)]
    out = _matmul(op.x, op.w)
    if op.bias is not None:
        out = rlx.AddOp(out, op.bias).result
    return [_activation(out, op.activation)]


def _expand_dequant_linear(op: rlx_hir.DequantLinearOp, policy: str) -> list[ir.Value]:
    out = rlx.DequantMatmulOp(op.x, op.w, op.side, op.scheme, global_scale=op.global_scale, activations=op.activations).result
    if op.bias is not None:
        out = rlx.AddOp(out, op.bias).result
    return [_activation(out, op.activation)]


def _expand_lora_linear(op: rlx_hir.LoraLinearOp, policy: str) -> list[ir.Value]:
    out = _rank1_as_row(op.x, lambda row: rlx.LoraMatmulOp(row, op.w, op.a, op.b, scale=op.scale).result)
    if op.bias is not None:
        out = rlx.AddOp(out, op.bias).result
    return [_activation(out, op.activation)]


def _expand_linear_fused(op: rlx_hir.LinearFusedOp, policy: str) -> list[ir.Value]:
    return [_fused_linear(op.x, op.w, op.bias, op.activation)]


def _expand_shared_linear_pair(op: rlx_hir.SharedLinearPairOp, policy: str) -> list[ir.Value]:
    n1 = shape_of(op.w_first.type)[1]
    n2 = shape_of(op.w_second.type)[1]
    if policy == FUSABLE or DYNAMIC in (n1, n2):  # slicing the fused product needs static widths
        return [_matmul(op.x, op.w_first), _matmul(op.x, op.w_second)]
    both = _matmul(op.x, rlx.ConcatOp(op.w_first, op.w_second, 1).result)
    return [rlx.NarrowOp(both, -1, 0, n1).result, rlx.NarrowOp(both, -1, n1, n2).result]


def _expand_swiglu_ffn(op: rlx_hir.SwigluFfnOp, policy: str) -> list[ir.Value]:
    return [_swiglu(op.x, op.up_w, op.gate_w, op.down_w, policy)]


def _expand_rms_norm(op: rlx_hir.RmsNormOp, policy: str) -> list[ir.Value]:
    return [rlx.RmsNormOp(op.x, op.gamma, op.beta, axis=-1, eps=op.eps).result]


def _expand_residual_rms_norm(op: rlx_hir.ResidualRmsNormOp, policy: str) -> list[ir.Value]:
    if policy == DIRECT:
        return [rlx.FusedResidualRmsNormOp(op.x, op.residual, op.gamma, op.beta, eps=op.eps).result]
    total = rlx.AddOp(op.x, op.residual).result
    return [rlx.RmsNormOp(total, op.gamma, op.beta, axis=-1, eps=op.eps).result]


def _expand_rope(op: rlx_hir.RopeOp, policy: str) -> list[ir.Value]:
    return [rlx.RopeOp(op.x, op.cos, op.sin, op.head_dim, op.n_rot).result]


def _expand_attention(op: rlx_hir.AttentionOp, policy: str) -> list[ir.Value]:
    return [
        rlx.AttentionOp(
            op.q,
            op.k,
            op.v,
            op.num_heads,
            op.head_dim,
            op.mask_kind,
            mask=op.mask,
            window=op.window,
            score_scale=op.score_scale,
            softcap=op.softcap,
        ).result
    ]


def _expand_depthwise_conv1d_causal(op: rlx_hir.DepthwiseConv1dCausalOp, policy: str) -> list[ir.Value]:
    """One `rlx.depthwise_conv1d_causal` under both policies (same operands, same semantics)."""
    return [rlx.DepthwiseConv1dCausalOp(op.input, op.weight, op.left_pad, op.kernel_size).result]


def _expand_gated_delta_net(op: rlx_hir.GatedDeltaNetOp, policy: str) -> list[ir.Value]:
    """One `rlx.gated_delta_net` without a state (zeros); its final state is unused."""
    mir = rlx.GatedDeltaNetOp.build(op.q, op.k, op.v, op.g, op.beta, state_size=op.state_size)
    return [mir.operation.results[0]]


def _expand_gated_delta_net_carry(op: rlx_hir.GatedDeltaNetCarryOp, policy: str) -> list[ir.Value]:
    """One `rlx.gated_delta_net` with the carried state: (out, final_state)."""
    mir = rlx.GatedDeltaNetOp.build(op.q, op.k, op.v, op.g, op.beta, state=op.state, state_size=op.state_size)
    return list(mir.operation.results)


def _expand_llama_decoder_block(op: rlx_hir.LlamaDecoderBlockOp, policy: str) -> list[ir.Value]:
    heads, head_dim, eps = op.num_heads, op.head_dim, op.eps
    normed = rlx.RmsNormOp(op.x, op.ln1_g, op.ln1_b, axis=-1, eps=eps).result
    q = rlx.MatmulOp(normed, op.q_w).result
    k = rlx.MatmulOp(normed, op.k_w).result
    v = rlx.MatmulOp(normed, op.v_w).result
    q = rlx.RopeOp(q, op.cos, op.sin, head_dim, head_dim).result
    k = rlx.RopeOp(k, op.cos, op.sin, head_dim, head_dim).result
    attended = rlx.AttentionOp(q, k, v, heads, head_dim, op.mask_kind, mask=op.mask, window=op.window).result
    projected = rlx.MatmulOp(attended, op.o_w).result
    hidden = rlx.AddOp(op.x, projected).result
    if policy == DIRECT:
        normed2 = rlx.FusedResidualRmsNormOp(projected, op.x, op.ln2_g, op.ln2_b, eps=eps).result
    else:
        normed2 = rlx.RmsNormOp(hidden, op.ln2_g, op.ln2_b, axis=-1, eps=eps).result
    ffn = _swiglu(normed2, op.up_w, op.gate_w, op.down_w, policy)
    return [rlx.AddOp(hidden, ffn).result]


def _i64_constant(values) -> ir.Value:
    return rlx.ConstantOp(ir.DenseElementsAttr.get(np.ascontiguousarray(values, dtype=np.int64))).result


def _reshape(value: ir.Value, shape) -> ir.Value:
    if list(shape_of(value.type)) == list(shape):
        return value
    return rlx.ReshapeOp(value, result_type=_with_shape(value, shape)).result


def _expert(stack: ir.Value, e: int) -> ir.Value:
    """Expert `e`'s weight of a stack: `[in, out]` of `[E, in, out]`, or its packed slab `[out,
    bytes]` of `ui8 [E, out, bytes]`."""
    shape = shape_of(stack.type)
    return _reshape(rlx.NarrowOp(stack, 0, e, 1).result, shape[1:])


def _expert_matmul(x: ir.Value, weight: ir.Value, scheme) -> ir.Value:
    """`x` times an expert's weight (`rlx.matmul`, or `rlx.dequant_matmul` of a packed slab)."""
    if scheme is None:
        return rlx.MatmulOp(x, weight).result
    return rlx.DequantMatmulOp(x, weight, [], scheme).result


def _grouped_matmul(rows: ir.Value, stack: ir.Value, scheme, ids: ir.Value) -> ir.Value:
    """Each row times its expert's weight: `rlx.grouped_matmul`, or `rlx.dequant_grouped_matmul` of a packed stack."""
    if scheme is None:
        return rlx.GroupedMatmulOp(rows, stack, ids).result
    return rlx.DequantGroupedMatmulOp(rows, stack, ids, scheme).result


def _expand_moe_ffn(op: rlx_hir.MoeFfnOp, policy: str) -> list[ir.Value]:
    shape = shape_of(op.x.type)
    d, k = shape[-1], op.top_k
    experts, hidden = shape_of(op.gate_w.type)[0], shape_of(op.down_w.type)[1 if op.down_scheme is None else 2]
    tokens = 1
    for size in shape[:-1]:
        tokens *= size
    if DYNAMIC in (tokens, d, experts, hidden):
        raise ValueError(f"rlx_hir.moe_ffn needs static shapes, got x {list(shape)} and gate_w {list(shape_of(op.gate_w.type))}")
    x = _reshape(op.x, [tokens, d])
    logits = rlx.MatmulOp(x, op.router_w).result
    probs = rlx.SoftmaxOp(logits, -1).result if op.scoring == "softmax" else rlx.SigmoidOp(logits).result
    chosen = rlx.TopkOp(probs, k).result  # [T, k] expert ids, best first
    # The chosen probabilities: compare each id with every expert id, keep that expert's probability.
    one_hot = rlx.CompareOp(_reshape(chosen, [tokens, k, 1]), _i64_constant(np.arange(experts)), "eq").result
    zero = rlx.ConstantOp(ir.DenseElementsAttr.get(np.zeros((), np.float32))).result
    picked = rlx.WhereOp(one_hot, _reshape(probs, [tokens, 1, experts]), zero).result  # [T, k, E]
    weights = rlx.ReduceOp(picked, "sum", [-1]).result  # [T, k]
    if op.normalize:
        weights = rlx.DivOp(weights, rlx.ReduceOp(weights, "sum", [-1], keep_dim=True).result).result
    if policy == DIRECT:
        # One row per (token, choice), token-major; the grouped matmuls bucket the rows by expert.
        rows = _reshape(rlx.ExpandOp(_reshape(x, [tokens, 1, d]), [tokens, k, d]).result, [tokens * k, d])
        ids = _reshape(chosen, [tokens * k])
        gate = _grouped_matmul(rows, op.gate_w, op.gate_scheme, ids)
        up = _grouped_matmul(rows, op.up_w, op.up_scheme, ids)
        down = _grouped_matmul(rlx.MulOp(rlx.SiluOp(gate).result, up).result, op.down_w, op.down_scheme, ids)
        scaled = rlx.MulOp(down, _reshape(weights, [tokens * k, 1])).result
        token_of_row = _i64_constant(np.arange(tokens * k) // k)
        out = rlx.ScatterAddOp(scaled, token_of_row, out_dim=tokens).result
    else:
        # Every expert on every token, weighted by a dense [T, E] that is zero off the chosen experts:
        # one SwiGLU chain of 2-D matmuls per expert (its weights narrowed out of the stacks).
        dense = rlx.ReduceOp(rlx.WhereOp(one_hot, _reshape(weights, [tokens, k, 1]), zero).result, "sum", [1]).result
        out = None
        for e in range(experts):
            gate_e, up_e, down_e = (_expert(w, e) for w in (op.gate_w, op.up_w, op.down_w))
            gated = rlx.SiluOp(_expert_matmul(x, gate_e, op.gate_scheme)).result
            hidden_e = rlx.MulOp(gated, _expert_matmul(x, up_e, op.up_scheme)).result
            down_e = _expert_matmul(hidden_e, down_e, op.down_scheme)
            weighted = rlx.MulOp(down_e, rlx.NarrowOp(dense, -1, e, 1).result).result
            out = weighted if out is None else rlx.AddOp(out, weighted).result
    if op.shared_gate_w is not None:
        shared = _swiglu(x, op.shared_up_w, op.shared_gate_w, op.shared_down_w, policy)
        if op.shared_expert_gate is not None:
            shared = rlx.MulOp(shared, rlx.SigmoidOp(rlx.MatmulOp(x, op.shared_expert_gate).result).result).result
        out = rlx.AddOp(out, shared).result
    return [_reshape(out, shape)]


EXPANSIONS: dict[type, Callable[[ir.OpView, str], list[ir.Value]]] = {
    rlx_hir.LinearOp: _expand_linear,
    rlx_hir.LinearFusedOp: _expand_linear_fused,
    rlx_hir.DequantLinearOp: _expand_dequant_linear,
    rlx_hir.LoraLinearOp: _expand_lora_linear,
    rlx_hir.SharedLinearPairOp: _expand_shared_linear_pair,
    rlx_hir.SwigluFfnOp: _expand_swiglu_ffn,
    rlx_hir.RmsNormOp: _expand_rms_norm,
    rlx_hir.ResidualRmsNormOp: _expand_residual_rms_norm,
    rlx_hir.RopeOp: _expand_rope,
    rlx_hir.AttentionOp: _expand_attention,
    rlx_hir.DepthwiseConv1dCausalOp: _expand_depthwise_conv1d_causal,
    rlx_hir.GatedDeltaNetOp: _expand_gated_delta_net,
    rlx_hir.GatedDeltaNetCarryOp: _expand_gated_delta_net_carry,
    rlx_hir.LlamaDecoderBlockOp: _expand_llama_decoder_block,
    rlx_hir.MoeFfnOp: _expand_moe_ffn,
}
