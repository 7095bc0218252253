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

Quantised weights: `LlamaConfig(quant=...)` names the projections kept in a GGUF
block format, either one scheme for every projection and the LM head
(`quant="q4_k"`) or a mapping from weight name to scheme (`{"layers.0.q":
"q8_0", "lm_head": "q6_k", ...}`; a name not in it stays float32).  Such a
weight is a `u8` parameter `[out, row_bytes]`: the packed bytes of `W [out, in]`
exactly as GGUF stores them (`rlx_mlir.quant.quantize(w.T, scheme)` of a builder
weight `w [in, out]`), and its projection is `rlx.dequant_matmul`, which decodes
the blocks inside the contraction (the float32 weight is never built).  The
mapping may also name `"embed"`: the table is then `u8 [vocab, row_bytes]`
(`quantize(embed, scheme)`, rows as they are) and the lookup `rlx.dequant_gather`
decodes only the picked rows (a GGUF file's `token_embd` is stored this way).
The norms stay float32.

    config = LlamaConfig(quant="q8_0")
    weights = random_weights(config)        # projections packed (uint8), the rest float32
    logits = build_llama(config).compile()(tokens=tokens, **weights)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Union

import numpy as np

from .. import quant as quantisers
from ..dialects import rlx
from ..dialects.rlx.quant import ACTIVATION_MODES, Q8_ACTIVATION_SCHEMES
from ..dialects.rlx.quant import GGUF_SCHEMES as DEQUANT_SCHEMES
from ..frontend.builder import GraphModule, Tensor

# The weights of a layer that are projections (`x @ w`), the ones that may be kept quantised.
LAYER_PROJECTIONS = ("q", "k", "v", "o", "gate", "up", "down")

QuantSpec = Union[str, Mapping[str, str], tuple, None]


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
    # Projections kept quantised (see the module doc): None, one scheme for all, or weight name -> scheme.
    # A mapping is stored as a sorted tuple of (name, scheme) pairs, so the config stays hashable.
    quant: QuantSpec = None
    # "q8": the q4_k projections multiply 8-bit activations (`rlx.dequant_matmul`'s opt-in
    # `activations`, llama.cpp's numerics and speed); "f32" (the default): exact f32 products.
    quant_activations: str = "f32"

    def __post_init__(self):
        if self.quant_activations not in ACTIVATION_MODES:
            raise ValueError(f"quant_activations must be one of {', '.join(map(repr, ACTIVATION_MODES))}, "
                             f"got {self.quant_activations!r}")
        if isinstance(self.quant, Mapping):
            object.__setattr__(self, "quant", tuple(sorted(self.quant.items())))
        quant_schemes(self)  # checks names, schemes and block sizes


def projection_names(c: LlamaConfig) -> list[str]:
    """Every weight that is a projection: each layer's q, k, v, o, gate, up, down, then the LM head."""
    return [f"layers.{i}.{w}" for i in range(c.layers) for w in LAYER_PROJECTIONS] + ["lm_head"]


def quant_schemes(c: LlamaConfig) -> dict[str, str]:
    """Weight name -> GGUF scheme for the projections `c.quant` keeps quantised (empty: an f32 model).

    ValueError for a name that is not a projection, a scheme `rlx.dequant_matmul` does not
    decode, or an input size that is not a multiple of the scheme's block.
    """
    if c.quant is None:
        return {}
    if isinstance(c.quant, str):
        schemes = dict.fromkeys(projection_names(c), c.quant)
    else:
        try:
            schemes = dict(c.quant)
        except (TypeError, ValueError):
            raise ValueError(f"quant must be None, a scheme name or a mapping of weight name to scheme, "
                             f"got {c.quant!r}") from None
    quantisable = set(projection_names(c)) | {"embed"}
    shapes = weight_shapes(c)
    for name, scheme in schemes.items():
        if name not in quantisable:
            raise ValueError(f"quant names '{name}', which is not a projection or the embedding of this model "
                             "(layers.{i}.q/k/v/o/gate/up/down, lm_head or embed)")
        if scheme not in DEQUANT_SCHEMES:
            raise ValueError(f"quant: '{name}' has scheme {scheme!r}; rlx.dequant_matmul decodes "
                             f"{', '.join(DEQUANT_SCHEMES)}")
        k, block = packed_matrix_shape(name, shapes[name])[1], DEQUANT_SCHEMES[scheme].block
        if k % block:
            raise ValueError(f"quant: '{name}' has {k} inputs, not a multiple of the {block}-weight blocks "
                             f"of {scheme}")
    return schemes


def packed_matrix_shape(name: str, shape: tuple[int, ...]) -> tuple[int, int]:
    """`(rows, K)` of the matrix a quantised weight packs, row by row: `W [out, in]` of a projection
    (the transpose of the builder's `[in, out]`), the embedding table `[vocab, hidden]` as it is."""
    return tuple(shape) if name == "embed" else tuple(shape[::-1])


def to_packed_matrix(name: str, w: np.ndarray) -> np.ndarray:
    """The matrix of `packed_matrix_shape` from a builder weight."""
    return w if name == "embed" else w.T


def rope_tables(seq: int, head_dim: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin `[seq, head_dim / 2]` for positions 0..seq-1 (NeoX / Hugging Face frequencies)."""
    inverse = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.outer(np.arange(seq, dtype=np.float64), inverse)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def rope_inputs(g: GraphModule, c, dynamic: bool) -> tuple[Tensor, Tensor]:
    """The cos and sin tables a whole-sequence model reads: `c.seq` rows, or with `dynamic` the first
    `SEQ` rows of a `c.max_seq`-row table (`c`: a config with seq, max_seq, head_dim, rope_theta)."""
    if dynamic:
        tables = (g.constant(t) for t in rope_tables(c.max_seq, c.head_dim, c.rope_theta))
        return tuple(g.named("rope", lambda t=t: g.op(rlx.NarrowOp, t, axis=0, start=0, len="SEQ")) for t in tables)
    return tuple(g.constant(t) for t in rope_tables(c.seq, c.head_dim, c.rope_theta))


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


def param_types(c: LlamaConfig) -> dict[str, tuple[tuple[int, ...], str]]:
    """Each parameter's (shape, dtype) as the model takes it: `weight_shapes` in f32, except the
    quantised projections, `u8 [out, row_bytes]`."""
    schemes = quant_schemes(c)
    types = {}
    for name, shape in weight_shapes(c).items():
        if name in schemes:
            rows, k = packed_matrix_shape(name, shape)
            types[name] = ((rows, DEQUANT_SCHEMES[schemes[name]].row_bytes(k)), "u8")
        else:
            types[name] = (shape, "f32")
    return types


def dequantize_weights(c: LlamaConfig, weights: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The float32 weights (`[in, out]`) of the f32 model that computes what `c`'s quantised one does."""
    schemes = quant_schemes(c)
    shapes = weight_shapes(c)
    def decoded(name: str, w: np.ndarray) -> np.ndarray:
        matrix = quantisers.dequantize(w, schemes[name], packed_matrix_shape(name, shapes[name]))
        return np.ascontiguousarray(to_packed_matrix(name, matrix))

    return {name: decoded(name, w) if name in schemes else np.asarray(w, np.float32) for name, w in weights.items()}


def random_weights(c: LlamaConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Weights scaled like a trained model's (fan-in), norm gains near 1; the projections that
    `c.quant` names quantised (packed `uint8 [out, row_bytes]`)."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in weight_shapes(c).items():
        if len(shape) == 1:
            weights[name] = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            weights[name] = (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
    for name, scheme in quant_schemes(c).items():
        weights[name] = quantisers.quantize(to_packed_matrix(name, weights[name]), scheme)
    return weights


def _activations(scheme: str | None, activations: str) -> str | None:
    """The `activations` attribute of a projection in `scheme` (None: the default, f32)."""
    return activations if activations != "f32" and scheme in Q8_ACTIVATION_SCHEMES else None


def project(g: GraphModule, x: Tensor, w: Tensor, scheme: str | None, activations: str = "f32") -> Tensor:
    """`x @ w` (MIR `rlx.matmul`, `w [in, out]`) or, with a scheme, `rlx.dequant_matmul` on packed `w`
    (with `activations`, LlamaConfig's `quant_activations`, where the scheme has such a kernel)."""
    if scheme is None:
        return g.op(rlx.MatmulOp, x, w)
    return g.dequant_matmul(x, w, scheme, activations=_activations(scheme, activations))


def swiglu(g: GraphModule, x: Tensor, params: Mapping[str, Tensor], schemes: Mapping[str, str], p: str,
           activations: str = "f32") -> Tensor:
    """The SwiGLU FFN of layer prefix `p`: HIR `swiglu_ffn` in f32, three projections when any is quantised."""
    if not any(p + w in schemes for w in ("gate", "up", "down")):
        return g.swiglu_ffn(x, params[p + "up"], params[p + "gate"], params[p + "down"])
    up = project(g, x, params[p + "up"], schemes.get(p + "up"), activations)
    gate = project(g, x, params[p + "gate"], schemes.get(p + "gate"), activations)
    return project(g, up * g.op(rlx.SiluOp, gate), params[p + "down"], schemes.get(p + "down"), activations)


def embed(g: GraphModule, table: Tensor, tokens: Tensor, scheme: str | None) -> Tensor:
    """The token embedding: `rlx.gather` of the f32 table or, with a scheme, `rlx.dequant_gather` of the packed one."""
    return g.op(rlx.GatherOp, table, tokens, axis=0) if scheme is None else g.dequant_gather(table, tokens, scheme)


def lm_head(g: GraphModule, x: Tensor, w: Tensor, scheme: str | None, activations: str = "f32") -> Tensor:
    if scheme is None:
        return g.linear(x, w)
    return g.dequant_linear(x, w, scheme, activations=_activations(scheme, activations))


def _quantized_decoder_block(g, c: LlamaConfig, x, params, schemes, p: str, zeros, cos, sin) -> Tensor:
    """`llama_decoder_block`'s computation (its HIR expansion) with some projections quantised."""
    normed = g.rms_norm(x, params[p + "ln1"], zeros, eps=c.eps)
    q, k, v = (project(g, normed, params[p + w], schemes.get(p + w), c.quant_activations) for w in ("q", "k", "v"))
    q = g.rope(q, cos, sin, c.head_dim)
    k = g.rope(k, cos, sin, c.head_dim)
    attended = g.attention(q, k, v, num_heads=c.heads, head_dim=c.head_dim, mask_kind="causal")
    projected = project(g, attended, params[p + "o"], schemes.get(p + "o"), c.quant_activations)
    normed2 = g.residual_rms_norm(projected, x, params[p + "ln2"], zeros, eps=c.eps)
    return (x + projected) + swiglu(g, normed2, params, schemes, p, c.quant_activations)


def build_llama(c: LlamaConfig, name: str = "llama", *, dynamic: bool = False) -> GraphModule:
    """The model as an HIR GraphModule taking `tokens` [batch, seq] (i64) and every weight by name.

    With `dynamic`, tokens are `["BATCH", "SEQ"]` (any batch, `SEQ <= max_seq`).
    """
    g = GraphModule.hir(name, policy=c.policy)
    if dynamic:
        tokens = g.input("tokens", ("BATCH", "SEQ"), "i64")
    else:
        tokens = g.input("tokens", (c.batch, c.seq), "i64")
    params = {n: g.param(n, shape, dtype) for n, (shape, dtype) in param_types(c).items()}
    schemes = quant_schemes(c)
    cos, sin = rope_inputs(g, c, dynamic)
    zeros = g.constant(np.zeros(c.hidden, np.float32))  # RLX norms carry a beta
    x = g.named("embed", lambda: embed(g, params["embed"], tokens, schemes.get("embed")))
    for i in range(c.layers):
        p = f"layers.{i}."
        if any(p + w in schemes for w in LAYER_PROJECTIONS):
            x = g.named(f"layers.{i}", lambda x=x, p=p: _quantized_decoder_block(
                g, c, x, params, schemes, p, zeros, cos, sin))
            continue
        x = g.named(f"layers.{i}", lambda x=x, p=p: g.llama_decoder_block(
            x, params[p + "ln1"], zeros, params[p + "q"], params[p + "k"], params[p + "v"], params[p + "o"],
            params[p + "ln2"], zeros, params[p + "gate"], params[p + "up"], params[p + "down"], cos, sin,
            num_heads=c.heads, head_dim=c.head_dim, num_kv_heads=c.kv_heads, eps=c.eps, mask_kind="causal",
        ))
    x = g.named("norm", lambda: g.rms_norm(x, params["norm"], zeros, eps=c.eps))
    logits = g.named("lm_head", lambda: lm_head(g, x, params["lm_head"], schemes.get("lm_head"), c.quant_activations))
    g.set_outputs(logits)
    return g


__all__ = [
    "DEQUANT_SCHEMES",
    "LAYER_PROJECTIONS",
    "LlamaConfig",
    "Tensor",
    "build_llama",
    "dequantize_weights",
    "embed",
    "lm_head",
    "packed_matrix_shape",
    "param_types",
    "project",
    "projection_names",
    "quant_schemes",
    "random_weights",
    "rope_inputs",
    "rope_tables",
    "swiglu",
    "to_packed_matrix",
    "weight_shapes",
]
