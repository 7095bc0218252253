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

Quantised weights: `MoeConfig(quant=...)` as `LlamaConfig`'s, one GGUF scheme for every projection
(`quant="q8_0"`) or a mapping from weight name to scheme; the projections are each layer's `q`,
`k`, `v`, `o`, `experts.gate`, `experts.up`, `experts.down` (and `shared.gate`, `shared.up`,
`shared.down`) and `lm_head`; a mapping may also name `"embed"` (the router, the shared expert's
gate and the norms stay float32).  A quantised matrix `w [in, out]` is `u8 [out, row_bytes]`
(`quant.quantize(w.T, scheme)`), run by `rlx.dequant_matmul`; a quantised embedding
`[vocab, hidden]` is `u8 [vocab, row_bytes]` (`quant.quantize(embed, scheme)`, rows as they are),
looked up by `rlx.dequant_gather`, which decodes only the rows of the tokens asked for; a quantised
expert stack `[E, in, out]` is `u8 [E, out, row_bytes]` (each expert's `quant.quantize(w[e].T,
scheme)`), run by `rlx_hir.moe_ffn`'s quantised form: under `direct`, `rlx.dequant_grouped_matmul`,
which decodes only the chosen experts' blocks inside the products (no float32 copy of an expert).
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from .. import quant as quantisers
from ..dialects import rlx
from ..frontend.builder import GraphModule, Tensor
from .generate import CachedLlama
from .llama import (
    DEQUANT_SCHEMES,
    LlamaConfig,
    embed,
    lm_head,
    packed_matrix_shape,
    project,
    rope_inputs,
    rope_tables,
    swiglu,
    to_packed_matrix,
)
from .llama_cached import cache_names, cache_shape

# The weights of a layer that are projections (`x @ w`), the ones that may be kept quantised.
EXPERT_STACKS = ("experts.gate", "experts.up", "experts.down")
SHARED_PROJECTIONS = ("shared.gate", "shared.up", "shared.down")


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
        if isinstance(self.quant, Mapping):
            object.__setattr__(self, "quant", tuple(sorted(self.quant.items())))
        if not 0 < self.top_k <= self.experts:
            raise ValueError(f"MoeConfig: top_k {self.top_k} must be between 1 and experts {self.experts}")
        if self.shared_gate and not self.shared_ffn:
            raise ValueError("MoeConfig: shared_gate needs a shared expert (shared_ffn > 0)")
        quant_schemes(self)  # checks names, schemes and block sizes


def projection_names(c: MoeConfig) -> list[str]:
    """Every weight that is a projection (may be quantised): per layer q, k, v, o, the expert stacks
    and the shared expert's projections, then the LM head."""
    per_layer = ("q", "k", "v", "o", *EXPERT_STACKS, *(SHARED_PROJECTIONS if c.shared_ffn else ()))
    return [f"layers.{i}.{w}" for i in range(c.layers) for w in per_layer] + ["lm_head"]


def quant_schemes(c: MoeConfig) -> dict[str, str]:
    """Weight name -> GGUF scheme of the projections `c.quant` keeps quantised (empty: an f32 model).

    ValueError for a name that is not a projection, a scheme the dequantising matmuls do not
    decode, or an input size that is not a multiple of the scheme's block.
    """
    if c.quant is None:
        return {}
    names = projection_names(c)
    quantisable = set(names) | {"embed"}
    if isinstance(c.quant, str):
        schemes = dict.fromkeys(names, c.quant)
    else:
        try:
            schemes = dict(c.quant)
        except (TypeError, ValueError):
            raise ValueError(f"quant must be None, a scheme name or a mapping of weight name to scheme, "
                             f"got {c.quant!r}") from None
    shapes = weight_shapes(c)
    for name, scheme in schemes.items():
        if name not in quantisable:
            raise ValueError(f"quant names '{name}', which is not a projection or the embedding of this model "
                             "(layers.{i}.q/k/v/o, layers.{i}.experts.gate/up/down, layers.{i}.shared.gate/up/down "
                             "with a shared expert, lm_head or embed)")
        if scheme not in DEQUANT_SCHEMES:
            raise ValueError(f"quant: '{name}' has scheme {scheme!r}; the quantised MoE model decodes "
                             f"{', '.join(DEQUANT_SCHEMES)}")
        k, block = _packed_k(name, shapes[name]), DEQUANT_SCHEMES[scheme].block
        if k % block:
            raise ValueError(f"quant: '{name}' has {k} inputs, not a multiple of the {block}-weight blocks "
                             f"of {scheme}")
    return schemes


def _packed_k(name: str, shape: tuple[int, ...]) -> int:
    """The length of the rows a quantised weight packs: the input size of a projection or expert
    stack (`[(E,) in, out]`), the hidden size of the embedding table."""
    return packed_matrix_shape(name, shape)[1] if len(shape) == 2 else shape[-2]


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


def param_types(c: MoeConfig) -> dict[str, tuple[tuple[int, ...], str]]:
    """Each parameter's (shape, dtype) as the model takes it: `weight_shapes` in f32, except the
    quantised projections, `u8 [out, row_bytes]`, quantised expert stacks, `u8 [E, out, row_bytes]`,
    and a quantised embedding, `u8 [vocab, row_bytes]`."""
    schemes = quant_schemes(c)
    types = {}
    for name, shape in weight_shapes(c).items():
        if name in schemes:
            row_bytes = DEQUANT_SCHEMES[schemes[name]].row_bytes(_packed_k(name, shape))
            rows = (*shape[:-2], shape[-1]) if len(shape) == 3 else (packed_matrix_shape(name, shape)[0],)
            types[name] = ((*rows, row_bytes), "u8")
        else:
            types[name] = (shape, "f32")
    return types


def quantize_weight(w: np.ndarray, scheme: str, name: str = "") -> np.ndarray:
    """A builder weight `[in, out]` (or a stack `[E, in, out]`) packed as the model takes it:
    `u8 [out, row_bytes]` (or `[E, out, row_bytes]`), GGUF's `W [out, in]` blocks; the weight
    named `"embed"` (`[vocab, hidden]`) packs its rows as they are."""
    if w.ndim == 3:
        return np.stack([quantisers.quantize(np.ascontiguousarray(expert.T), scheme) for expert in w])
    return quantisers.quantize(np.ascontiguousarray(to_packed_matrix(name, w)), scheme)


def dequantize_weight(packed: np.ndarray, scheme: str, shape: tuple[int, ...], name: str = "") -> np.ndarray:
    """The float32 builder weight of `shape` (`[in, out]` or `[E, in, out]`; the embedding's
    `[vocab, hidden]` with `name="embed"`) that `packed` holds."""
    if len(shape) == 3:
        return np.stack([quantisers.dequantize(slab, scheme, shape[:0:-1]).T for slab in packed])
    matrix = quantisers.dequantize(packed, scheme, packed_matrix_shape(name, shape))
    return np.ascontiguousarray(to_packed_matrix(name, matrix))


def dequantize_weights(c: MoeConfig, weights: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The float32 weights of the f32 model (`quant=None`) that computes what `c`'s quantised one does."""
    schemes, shapes = quant_schemes(c), weight_shapes(c)
    return {name: dequantize_weight(w, schemes[name], shapes[name], name) if name in schemes
            else np.asarray(w, np.float32) for name, w in weights.items()}


def random_weights(c: MoeConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Weights scaled like a trained model's (by fan-in, the second-last dimension), norm gains near 1;
    the projections `c.quant` names quantised (packed `uint8`, see `param_types`)."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in weight_shapes(c).items():
        if len(shape) == 1:
            weights[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            weights[name] = (rng.standard_normal(shape) / np.sqrt(shape[-2])).astype(np.float32)
    for name, scheme in quant_schemes(c).items():
        weights[name] = quantize_weight(weights[name], scheme, name)
    return weights


def moe_ffn(g: GraphModule, c: MoeConfig, x: Tensor, params: Mapping[str, Tensor], p: str) -> Tensor:
    """The MoE FFN of layer prefix `p` (`rlx_hir.moe_ffn`; quantised expert stacks packed).  A
    quantised shared expert runs beside the block (three projections, its sigmoid gate, an add)."""
    schemes = quant_schemes(c)
    shared = {}
    separate_shared = any(p + w in schemes for w in SHARED_PROJECTIONS)
    if c.shared_ffn and not separate_shared:
        shared = dict(shared_gate_w=params[p + "shared.gate"], shared_up_w=params[p + "shared.up"],
                      shared_down_w=params[p + "shared.down"])
        if c.shared_gate:
            shared["shared_expert_gate"] = params[p + "shared_gate"]
    out = g.moe_ffn(x, params[p + "router"], params[p + "experts.gate"], params[p + "experts.up"],
                    params[p + "experts.down"], top_k=c.top_k, scoring=c.scoring, normalize=c.normalize,
                    gate_scheme=schemes.get(p + "experts.gate"), up_scheme=schemes.get(p + "experts.up"),
                    down_scheme=schemes.get(p + "experts.down"), **shared)
    if separate_shared:
        expert = swiglu(g, x, params, schemes, p + "shared.")
        if c.shared_gate:
            expert = expert * g.op(rlx.SigmoidOp, g.op(rlx.MatmulOp, x, params[p + "shared_gate"]))
        out = out + expert
    return out


def moe_decoder_block(g: GraphModule, c: MoeConfig, x: Tensor, params: Mapping[str, Tensor], p: str,
                      zeros: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """One decoder layer: pre-norm causal grouped-query attention with RoPE and residual, then the
    pre-norm MoE FFN and residual (`llama_decoder_block` with the FFN routed)."""
    schemes = quant_schemes(c)
    normed = g.rms_norm(x, params[p + "ln1"], zeros, eps=c.eps)
    q, k, v = (project(g, normed, params[p + w], schemes.get(p + w)) for w in ("q", "k", "v"))
    q = g.rope(q, cos, sin, c.head_dim)
    k = g.rope(k, cos, sin, c.head_dim)
    attended = g.attention(q, k, v, num_heads=c.heads, head_dim=c.head_dim, mask_kind="causal")
    projected = project(g, attended, params[p + "o"], schemes.get(p + "o"))
    normed2 = g.residual_rms_norm(projected, x, params[p + "ln2"], zeros, eps=c.eps)
    return (x + projected) + moe_ffn(g, c, normed2, params, p)


def build_moe(c: MoeConfig, name: str = "moe", *, dynamic: bool = False) -> GraphModule:
    """The model as an HIR GraphModule taking `tokens` [batch, seq] (i64) and every weight by name.

    With `dynamic`, tokens are `["BATCH", "SEQ"]` (any batch, `SEQ <= max_seq`), as `build_llama`'s:
    one `compile()` serves every shape, each specialised on first use (`rlx_mlir.dims.variants`).
    """
    g = GraphModule.hir(name, policy=c.policy)
    tokens = g.input("tokens", ("BATCH", "SEQ") if dynamic else (c.batch, c.seq), "i64")
    params = {n: g.param(n, shape, dtype) for n, (shape, dtype) in param_types(c).items()}
    schemes = quant_schemes(c)
    cos, sin = rope_inputs(g, c, dynamic)
    zeros = g.constant(np.zeros(c.hidden, np.float32))  # RLX norms carry a beta
    x = g.named("embed", lambda: embed(g, params["embed"], tokens, schemes.get("embed")))
    for i in range(c.layers):
        x = g.named(f"layers.{i}", lambda x=x, p=f"layers.{i}.": moe_decoder_block(g, c, x, params, p, zeros, cos, sin))
    x = g.named("norm", lambda: g.rms_norm(x, params["norm"], zeros, eps=c.eps))
    g.set_outputs(g.named("lm_head", lambda: lm_head(g, x, params["lm_head"], schemes.get("lm_head"))))
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
    params = {n: g.param(n, shape, dtype) for n, (shape, dtype) in param_types(c).items()}
    schemes = quant_schemes(c)
    cos, sin = (g.constant(t) for t in rope_tables(capacity, c.head_dim, c.rope_theta))
    zeros = g.constant(np.zeros(c.hidden, np.float32))
    x = g.named("embed", lambda: embed(g, params["embed"], tokens, schemes.get("embed")))
    updated = []
    for i in range(c.layers):
        p = f"layers.{i}."

        def layer(x=x, p=p):
            normed = g.rms_norm(x, params[p + "ln1"], zeros, eps=c.eps)
            q, k, v = (project(g, normed, params[p + w], schemes.get(p + w)) for w in ("q", "k", "v"))
            q = g.op(rlx.RopeAtOp, q, cos, sin, pos, head_dim=c.head_dim, n_rot=c.head_dim)
            k = g.op(rlx.RopeAtOp, k, cos, sin, pos, head_dim=c.head_dim, n_rot=c.head_dim)
            k_cache = g.op(rlx.KvCacheWriteOp, caches[p + "k_cache"], k, pos)
            v_cache = g.op(rlx.KvCacheWriteOp, caches[p + "v_cache"], v, pos)
            attended = g.op(rlx.CachedAttentionOp, q, k_cache, v_cache, pos, num_heads=c.heads, head_dim=c.head_dim)
            projected = project(g, attended, params[p + "o"], schemes.get(p + "o"))
            normed2 = g.residual_rms_norm(projected, x, params[p + "ln2"], zeros, eps=c.eps)
            return (x + projected) + moe_ffn(g, c, normed2, params, p), k_cache, v_cache

        x, k_cache, v_cache = g.named(f"layers.{i}", layer)
        updated += [k_cache, v_cache]
    x = g.named("norm", lambda: g.rms_norm(x, params["norm"], zeros, eps=c.eps))
    logits = g.named("lm_head", lambda: lm_head(g, x, params["lm_head"], schemes.get("lm_head")))
    g.set_outputs([logits, *updated])
    g.tie_outputs({1 + i: name for i, name in enumerate(cache_names(c))})
    return g


class CachedMoe(CachedLlama):
    """`CachedLlama` for a `MoeConfig`: the same caches, steps and `generate()`, MoE layers."""

    def __init__(self, config: MoeConfig, weights: dict[str, np.ndarray], capacity: int, **compile_options):
        super().__init__(config, weights, capacity, build_step=build_moe_step, **compile_options)


__all__ = ["CachedMoe", "EXPERT_STACKS", "MoeConfig", "SHARED_PROJECTIONS", "build_moe", "build_moe_step",
           "dequantize_weight", "dequantize_weights", "moe_decoder_block", "moe_ffn", "param_types", "projection_names",
           "quant_schemes", "quantize_weight", "random_weights", "weight_shapes"]
