"""The Llama-style decoder of `rlx_mlir.models.llama` as one *step* over a KV cache.

`build_llama_step(config, seq, capacity)` builds the function that runs `seq`
new tokens starting at a runtime position: a prefill is a step with the whole
prompt at position 0, a decode step is a step with one token at the current
position.  Every layer keeps its keys and values in caches preallocated at
`capacity` positions, `[batch, capacity, kv_heads * head_dim]`, written in
place (`rlx.kv_cache_write`, results tied to the cache arguments), so a
decode step has the same static shapes whatever the past length and is
compiled once.

    arguments: tokens [batch, seq] i64 (seq an int or a symbol such as "SEQ"), pos [] i64 (position of tokens[:, 0]),
               layers.{i}.k_cache, layers.{i}.v_cache for each layer, then the weights (by name)
    results:   logits [batch, seq, vocab], then each cache (tied: updated in place)

Per layer, as `llama_decoder_block`: RMSNorm, q / k / v projections, RoPE at
positions `pos + s` (`rlx.rope_at` on tables of `capacity` rows), the new keys
and values written into the caches, causal grouped-query attention of the new
queries over the cache (`rlx.cached_attention`), output projection and
residual, RMSNorm, SwiGLU and residual; then the final norm and the LM head.
The projections `config.quant` names take packed `u8` weights and run as
`rlx.dequant_matmul` (`rlx_mlir.models.llama`'s module doc).
"""

from __future__ import annotations

import numpy as np

from ..dialects import rlx
from ..frontend.builder import GraphModule
from .llama import LlamaConfig, embed, lm_head, param_types, project, quant_schemes, rope_tables, swiglu


def cache_names(c: LlamaConfig) -> list[str]:
    """The cache arguments, in order: layers.{i}.k_cache, layers.{i}.v_cache for each layer."""
    return [f"layers.{i}.{kind}_cache" for i in range(c.layers) for kind in ("k", "v")]


def cache_shape(c: LlamaConfig, capacity: int) -> tuple[int, int, int]:
    return (c.batch, capacity, c.kv_heads * c.head_dim)


def build_llama_step(c: LlamaConfig, seq: int | str, capacity: int, name: str = "llama_step") -> GraphModule:
    """The model run on `seq` new tokens at runtime position `pos`, over caches of `capacity` positions.

    `seq` may be a symbol (`"SEQ"`): one compile then serves every number of
    new tokens, each specialised on first use (`rlx_mlir.dims.variants`).
    """
    if isinstance(seq, int) and not 0 < seq <= capacity:
        raise ValueError(f"seq {seq} must be between 1 and the cache capacity {capacity}")
    g = GraphModule.hir(name, policy=c.policy)
    tokens = g.input("tokens", (c.batch, seq), "i64")
    pos = g.input("pos", (), "i64")
    caches = {n: g.input(n, cache_shape(c, capacity)) for n in cache_names(c)}
    params = {n: g.param(n, shape, dtype) for n, (shape, dtype) in param_types(c).items()}
    schemes = quant_schemes(c)
    cos, sin = (g.constant(t) for t in rope_tables(capacity, c.head_dim, c.rope_theta))
    zeros = g.constant(np.zeros(c.hidden, np.float32))  # RLX norms carry a beta
    x = g.named("embed", lambda: embed(g, params["embed"], tokens, schemes.get("embed")))
    updated = []
    for i in range(c.layers):
        p = f"layers.{i}."

        def layer(x=x, p=p):
            normed = g.rms_norm(x, params[p + "ln1"], zeros, eps=c.eps)
            q, k, v = (project(g, normed, params[p + w], schemes.get(p + w), c.quant_activations) for w in ("q", "k", "v"))
            q = g.op(rlx.RopeAtOp, q, cos, sin, pos, head_dim=c.head_dim, n_rot=c.head_dim)
            k = g.op(rlx.RopeAtOp, k, cos, sin, pos, head_dim=c.head_dim, n_rot=c.head_dim)
            k_cache = g.op(rlx.KvCacheWriteOp, caches[p + "k_cache"], k, pos)
            v_cache = g.op(rlx.KvCacheWriteOp, caches[p + "v_cache"], v, pos)
            attended = g.op(rlx.CachedAttentionOp, q, k_cache, v_cache, pos, num_heads=c.heads, head_dim=c.head_dim)
            projected = project(g, attended, params[p + "o"], schemes.get(p + "o"), c.quant_activations)
            normed2 = g.residual_rms_norm(projected, x, params[p + "ln2"], zeros, eps=c.eps)
            ffn = swiglu(g, normed2, params, schemes, p, c.quant_activations)
            return (x + projected) + ffn, k_cache, v_cache

        x, k_cache, v_cache = g.named(f"layers.{i}", layer)
        updated += [k_cache, v_cache]
    x = g.named("norm", lambda: g.rms_norm(x, params["norm"], zeros, eps=c.eps))
    logits = g.named("lm_head", lambda: lm_head(g, x, params["lm_head"], schemes.get("lm_head"), c.quant_activations))
    g.set_outputs([logits, *updated])
    g.tie_outputs({1 + i: name for i, name in enumerate(cache_names(c))})
    return g


__all__ = ["build_llama_step", "cache_names", "cache_shape"]
