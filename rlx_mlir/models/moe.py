"""A Mixtral / Qwen2-MoE-shaped decoder: the Llama model of `rlx_mlir.models.llama` with each
layer's SwiGLU FFN replaced by a routed mixture of experts (`rlx_hir.moe_ffn`).

    config = MoeConfig(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, experts=4, top_k=2,
                       expert_ffn=32, vocab=97, seq=7)
    weights = random_weights(config, seed=0)
    logits = build_moe(config).compile()(tokens=tokens, **weights)

    model = CachedMoe(config, weights, capacity=64)          # KV-cache generation
    ids = generate(model, prompt_ids, max_new_tokens=8)      # rlx_mlir.models.generate.generate

Per layer (`moe_decoder_block`): RMSNorm, q / k / v projections, NeoX RoPE, causal grouped-query
attention, output projection and residual, RMSNorm, then the MoE FFN and residual.  The MoE FFN
routes each token to its `top_k` of `experts` SwiGLU experts (router softmax, or sigmoid with
`scoring="sigmoid"`; `normalize` divides the chosen probabilities by their sum: Mixtral), plus an
optional shared expert of `shared_ffn` (Qwen2-MoE; `shared_gate` adds its per-token sigmoid gate).

Weights, `[in, out]` per expert as in the Llama model (layer prefix `layers.{i}.`): `ln1`, `q`,
`k`, `v`, `o`, `ln2`, `router [D, E]`, `experts.gate` and `experts.up` `[E, D, F]`,
`experts.down [E, F, D]`, and with a shared expert `shared.gate`, `shared.up` `[D, S]`,
`shared.down [S, D]`, `shared_gate [D, 1]`; plus `embed`, `norm`, `lm_head`.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from ..dialects import rlx
from ..frontend.builder import GraphModule, Tensor
from .generate import CachedLlama
from .llama import LlamaConfig, rope_tables
from .llama_cached import _tie_results, cache_names, cache_shape


@dataclasses.dataclass(frozen=True)
class MoeConfig(LlamaConfig):
    experts: int = 4
    top_k: int = 2
    expert_ffn: int = 64  # F, the hidden size of each expert
    normalize: bool = True  # Mixtral; Qwen2-MoE's norm_topk_prob
    scoring: str = "softmax"
    shared_ffn: int = 0  # S, the shared expert's hidden size; 0: no shared expert
    shared_gate: bool = False  # Qwen2-MoE's sigmoid gate on the shared expert

    def __post_init__(self):
        if self.quant is not None:
            raise ValueError("MoeConfig: quantised weights are not supported by the MoE model yet (quant must be None)")
        if not 0 < self.top_k <= self.experts:
            raise ValueError(f"MoeConfig: top_k {self.top_k} must be between 1 and experts {self.experts}")
        if self.shared_gate and not self.shared_ffn:
            raise ValueError("MoeConfig: shared_gate needs a shared expert (shared_ffn > 0)")


def weight_shapes(c: MoeConfig) -> dict[str, tuple[int, ...]]:
    d, e, f = c.hidden, c.experts, c.expert_ffn
    shapes = {"embed": (c.vocab, d)}
    for i in range(c.layers):
        p = f"layers.{i}."
        shapes.update({
            p + "ln1": (d,),
            p + "q": (d, c.heads * c.head_dim),
            p + "k": (d, c.kv_heads * c.head_dim),
            p + "v": (d, c.kv_heads * c.head_dim),
            p + "o": (c.heads * c.head_dim, d),
            p + "ln2": (d,),
            p + "router": (d, e),
            p + "experts.gate": (e, d, f),
            p + "experts.up": (e, d, f),
            p + "experts.down": (e, f, d),
        })
        if c.shared_ffn:
            shapes.update({p + "shared.gate": (d, c.shared_ffn), p + "shared.up": (d, c.shared_ffn),
                           p + "shared.down": (c.shared_ffn, d)})
        if c.shared_gate:
            shapes[p + "shared_gate"] = (d, 1)
    shapes.update({"norm": (d,), "lm_head": (d, c.vocab)})
    return shapes


def random_weights(c: MoeConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Weights scaled like a trained model's (by fan-in, the second-last dimension), norm gains near 1."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in weight_shapes(c).items():
        if len(shape) == 1:
            weights[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            weights[name] = (rng.standard_normal(shape) / np.sqrt(shape[-2])).astype(np.float32)
    return weights


def moe_ffn(g: GraphModule, c: MoeConfig, x: Tensor, params: Mapping[str, Tensor], p: str) -> Tensor:
    """The MoE FFN of layer prefix `p` (`rlx_hir.moe_ffn`)."""
    shared = {}
    if c.shared_ffn:
        shared = dict(shared_gate_w=params[p + "shared.gate"], shared_up_w=params[p + "shared.up"],
                      shared_down_w=params[p + "shared.down"])
    if c.shared_gate:
        shared["shared_expert_gate"] = params[p + "shared_gate"]
    return g.moe_ffn(x, params[p + "router"], params[p + "experts.gate"], params[p + "experts.up"],
                     params[p + "experts.down"], top_k=c.top_k, scoring=c.scoring, normalize=c.normalize, **shared)


def moe_decoder_block(g: GraphModule, c: MoeConfig, x: Tensor, params: Mapping[str, Tensor], p: str,
                      zeros: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """One decoder layer: pre-norm causal grouped-query attention with RoPE and residual, then the
    pre-norm MoE FFN and residual (`llama_decoder_block` with the FFN routed)."""
    normed = g.rms_norm(x, params[p + "ln1"], zeros, eps=c.eps)
    q, k, v = (g.op(rlx.MatmulOp, normed, params[p + w]) for w in ("q", "k", "v"))
    q = g.rope(q, cos, sin, c.head_dim)
    k = g.rope(k, cos, sin, c.head_dim)
    attended = g.attention(q, k, v, num_heads=c.heads, head_dim=c.head_dim, mask_kind="causal")
    projected = g.op(rlx.MatmulOp, attended, params[p + "o"])
    normed2 = g.residual_rms_norm(projected, x, params[p + "ln2"], zeros, eps=c.eps)
    return (x + projected) + moe_ffn(g, c, normed2, params, p)


def build_moe(c: MoeConfig, name: str = "moe") -> GraphModule:
    """The model as an HIR GraphModule taking `tokens` [batch, seq] (i64) and every weight by name."""
    g = GraphModule.hir(name, policy=c.policy)
    tokens = g.input("tokens", (c.batch, c.seq), "i64")
    params = {n: g.param(n, shape) for n, shape in weight_shapes(c).items()}
    cos, sin = (g.constant(t) for t in rope_tables(c.seq, c.head_dim, c.rope_theta))
    zeros = g.constant(np.zeros(c.hidden, np.float32))  # RLX norms carry a beta
    x = g.named("embed", lambda: g.op(rlx.GatherOp, params["embed"], tokens, axis=0))
    for i in range(c.layers):
        x = g.named(f"layers.{i}", lambda x=x, p=f"layers.{i}.": moe_decoder_block(g, c, x, params, p, zeros, cos, sin))
    x = g.named("norm", lambda: g.rms_norm(x, params["norm"], zeros, eps=c.eps))
    g.set_outputs(g.named("lm_head", lambda: g.linear(x, params["lm_head"])))
    return g


def build_moe_step(c: MoeConfig, seq: int | str, capacity: int, name: str = "moe_step") -> GraphModule:
    """The model run on `seq` new tokens at runtime position `pos` over KV caches of `capacity`
    positions: the arguments and results of `rlx_mlir.models.llama_cached.build_llama_step`."""
    if isinstance(seq, int) and not 0 < seq <= capacity:
        raise ValueError(f"seq {seq} must be between 1 and the cache capacity {capacity}")
    g = GraphModule.hir(name, policy=c.policy)
    tokens = g.input("tokens", (c.batch, seq), "i64")
    pos = g.input("pos", (), "i64")
    caches = {n: g.input(n, cache_shape(c, capacity)) for n in cache_names(c)}
    params = {n: g.param(n, shape) for n, shape in weight_shapes(c).items()}
    cos, sin = (g.constant(t) for t in rope_tables(capacity, c.head_dim, c.rope_theta))
    zeros = g.constant(np.zeros(c.hidden, np.float32))
    x = g.named("embed", lambda: g.op(rlx.GatherOp, params["embed"], tokens, axis=0))
    updated = []
    for i in range(c.layers):
        p = f"layers.{i}."

        def layer(x=x, p=p):
            normed = g.rms_norm(x, params[p + "ln1"], zeros, eps=c.eps)
            q, k, v = (g.op(rlx.MatmulOp, normed, params[p + w]) for w in ("q", "k", "v"))
            q = g.op(rlx.RopeAtOp, q, cos, sin, pos, head_dim=c.head_dim, n_rot=c.head_dim)
            k = g.op(rlx.RopeAtOp, k, cos, sin, pos, head_dim=c.head_dim, n_rot=c.head_dim)
            k_cache = g.op(rlx.KvCacheWriteOp, caches[p + "k_cache"], k, pos)
            v_cache = g.op(rlx.KvCacheWriteOp, caches[p + "v_cache"], v, pos)
            attended = g.op(rlx.CachedAttentionOp, q, k_cache, v_cache, pos, num_heads=c.heads, head_dim=c.head_dim)
            projected = g.op(rlx.MatmulOp, attended, params[p + "o"])
            normed2 = g.residual_rms_norm(projected, x, params[p + "ln2"], zeros, eps=c.eps)
            return (x + projected) + moe_ffn(g, c, normed2, params, p), k_cache, v_cache

        x, k_cache, v_cache = g.named(f"layers.{i}", layer)
        updated += [k_cache, v_cache]
    x = g.named("norm", lambda: g.rms_norm(x, params["norm"], zeros, eps=c.eps))
    logits = g.named("lm_head", lambda: g.linear(x, params["lm_head"]))
    g.set_outputs([logits, *updated])
    _tie_results(g, first_cache_argument=2, count=len(updated))
    return g


class CachedMoe(CachedLlama):
    """`CachedLlama` for a `MoeConfig`: the same caches, steps and `generate()`, MoE layers."""

    def __init__(self, config: MoeConfig, weights: dict[str, np.ndarray], capacity: int, **compile_options):
        super().__init__(config, weights, capacity, build_step=build_moe_step, **compile_options)


__all__ = ["CachedMoe", "MoeConfig", "build_moe", "build_moe_step", "moe_decoder_block", "moe_ffn", "random_weights",
           "weight_shapes"]
