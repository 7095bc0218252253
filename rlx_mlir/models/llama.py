"""A Llama-style decoder built with `GraphModule`: embedding, decoder blocks
(RMSNorm, grouped-query causal attention with NeoX RoPE, SwiGLU), final norm
and LM head.  Weights are `[in, out]`.

    config = LlamaConfig(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=97, seq=7)
    weights = random_weights(config, seed=0)
    g = build_llama(config)
    logits = g.compile()(tokens=tokens, **weights)

`build_llama(config, dynamic=True)` builds the same model with symbolic `BATCH`
and `SEQ` (tokens `["BATCH", "SEQ"]`, RoPE rows narrowed to `SEQ` from a
`max_seq`-row table): one `compile()` then runs any batch and any length up to
`max_seq`, specialising each new shape on first use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dialects import rlx
from ..frontend.builder import GraphModule, Tensor


@dataclass(frozen=True)
class LlamaConfig:
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 16
    ffn: int = 128
    vocab: int = 97
    seq: int = 7
    batch: int = 1
    max_seq: int = 128  # RoPE positions available to a dynamic build
    rope_theta: float = 10000.0
    eps: float = 1e-5
    policy: str = "direct"


def rope_tables(seq: int, head_dim: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin `[seq, head_dim / 2]` for positions 0..seq-1 (NeoX / Hugging Face frequencies)."""
    inverse = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.outer(np.arange(seq, dtype=np.float64), inverse)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def weight_shapes(c: LlamaConfig) -> dict[str, tuple[int, ...]]:
    shapes = {"embed": (c.vocab, c.hidden)}
    for i in range(c.layers):
        p = f"layers.{i}."
        shapes.update({
            p + "ln1": (c.hidden,),
            p + "q": (c.hidden, c.heads * c.head_dim),
            p + "k": (c.hidden, c.kv_heads * c.head_dim),
            p + "v": (c.hidden, c.kv_heads * c.head_dim),
            p + "o": (c.heads * c.head_dim, c.hidden),
            p + "ln2": (c.hidden,),
            p + "gate": (c.hidden, c.ffn),
            p + "up": (c.hidden, c.ffn),
            p + "down": (c.ffn, c.hidden),
        })
    shapes.update({"norm": (c.hidden,), "lm_head": (c.hidden, c.vocab)})
    return shapes


def random_weights(c: LlamaConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Weights scaled like a trained model's (fan-in), norm gains near 1."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in weight_shapes(c).items():
        if len(shape) == 1:
            weights[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            weights[name] = (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
    return weights


def build_llama(c: LlamaConfig, name: str = "llama", *, dynamic: bool = False) -> GraphModule:
    """The model as an HIR GraphModule taking `tokens` [batch, seq] (i64) and every weight by name.

    With `dynamic`, tokens are `["BATCH", "SEQ"]` (any batch, `SEQ <= max_seq`).
    """
    g = GraphModule.hir(name, policy=c.policy)
    if dynamic:
        tokens = g.input("tokens", ("BATCH", "SEQ"), "i64")
    else:
        tokens = g.input("tokens", (c.batch, c.seq), "i64")
    params = {n: g.param(n, shape) for n, shape in weight_shapes(c).items()}
    if dynamic:
        tables = (g.constant(t) for t in rope_tables(c.max_seq, c.head_dim, c.rope_theta))
        cos, sin = (g.named("rope", lambda t=t: g.op(rlx.NarrowOp, t, axis=0, start=0, len="SEQ")) for t in tables)
    else:
        cos, sin = (g.constant(t) for t in rope_tables(c.seq, c.head_dim, c.rope_theta))
    zeros = g.constant(np.zeros(c.hidden, np.float32))  # RLX norms carry a beta
    x = g.named("embed", lambda: g.op(rlx.GatherOp, params["embed"], tokens, axis=0))
    for i in range(c.layers):
        p = f"layers.{i}."
        x = g.named(f"layers.{i}", lambda x=x, p=p: g.llama_decoder_block(
            x, params[p + "ln1"], zeros, params[p + "q"], params[p + "k"], params[p + "v"], params[p + "o"],
            params[p + "ln2"], zeros, params[p + "gate"], params[p + "up"], params[p + "down"], cos, sin,
            num_heads=c.heads, head_dim=c.head_dim, num_kv_heads=c.kv_heads, eps=c.eps, mask_kind="causal",
        ))
    x = g.named("norm", lambda: g.rms_norm(x, params["norm"], zeros, eps=c.eps))
    logits = g.named("lm_head", lambda: g.linear(x, params["lm_head"]))
    g.set_outputs(logits)
    return g


__all__ = ["LlamaConfig", "Tensor", "build_llama", "random_weights", "rope_tables", "weight_shapes"]
