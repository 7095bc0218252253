"""KV cache: writing new keys / values at a runtime position, attention over a
cache, and RoPE at runtime positions.

A cache is preallocated at a fixed capacity `C` (`[B, C, Hkv * D]`, the
layout of `rlx.attention`'s `k` and `v`), so a decode step has static shapes
whatever the number of past tokens, and is compiled once.  How far the cache
is filled is a runtime input, `pos`, a rank-0 i64 tensor: the first new token
is at position `pos`.  Each op clamps `pos` into its valid range (see each op),
so an out-of-range position never reads or writes outside a buffer; callers
(`rlx_mlir.models.generate`) check the capacity before running.

`rlx.kv_cache_write` has value semantics (it returns the updated cache); when
its cache is a function argument and the updated cache is returned as a
result tied to that argument (result attribute `rlx.tied = <argument index>`),
rlx-lower-to-llvm writes the new rows into the caller's buffer in place: no
copy of the cache (see `rlx_mlir.transforms.abi.drop_tied_results`).  Untied, the
result is a new buffer and the argument is left unchanged (arguments are
read-only for bufferization, `rlx_mlir.transforms.abi.readonly_arguments`).
"""

from __future__ import annotations

from mlir import ir

from ...dsl import F32Attr, FloatTensor, I64Attr, Pure, TensorOf, VerifyError, attribute, operand, result
from ...ir.shapes import DYNAMIC, format_shape, shape_of
from .attention import _fits, _positive, _rank3, _static_last_dim, rope_features
from .dialect import Rlx, same_element_type

__all__ = ["CachedAttentionOp", "KvCacheWriteOp", "RopeAtOp"]

PositionTensor = TensorOf(("i64",))


def _check_position(pos: ir.Type) -> None:
    if shape_of(pos) != ():
        raise VerifyError(f"pos must be a rank-0 i64 tensor (one position), got shape {format_shape(shape_of(pos))}")


def _check_fits(what: str, length: int, capacity: int, where: str) -> None:
    """`what` has S = length positions; they must fit in the `capacity` positions of `where`."""
    if DYNAMIC not in (length, capacity) and length > capacity:
        raise VerifyError(f"{what} has S = {length} positions, more than the {capacity} of {where}")


class KvCacheWriteOp(Rlx.Operation, name="kv_cache_write", traits=[Pure]):
    """The cache with `S` new rows written at a runtime position.

    `cache` is `[B, C, W]` (capacity `C` positions of width `W`, e.g.
    `Hkv * head_dim`), `new` is `[B, S, W]` with `S <= C`, `pos` a rank-0 i64
    tensor.  With `p = clamp(pos, 0, C - S)`:

        result[b, t, w] = new[b, t - p, w]   if p <= t < p + S
                          cache[b, t, w]     otherwise

    (a dynamic-update-slice along axis 1; every batch row is written at the
    same position).  Lowers to `tensor.insert_slice` at the dynamic offset,
    which bufferizes in place into the cache's buffer when the old cache is
    not read afterwards.
    """

    cache = operand(FloatTensor, "the cache, `[B, C, W]`")
    new = operand(FloatTensor, "the rows to write, `[B, S, W]`")
    pos = operand(PositionTensor, "rank-0 i64: the cache position of `new`'s first row")
    result = result(FloatTensor, "the updated cache, `[B, C, W]`, like `cache`")

    @classmethod
    def infer_result_type(cls, cache: ir.Type, new: ir.Type, pos: ir.Type) -> ir.Type:
        element = same_element_type(cache, new)
        b, c, w = _rank3("cache", cache, "[B, C, W]")
        nb, s, nw = _rank3("new", new, "[B, S, W]")
        _check_position(pos)
        if not _fits([nb, nw], [b, w]):
            raise VerifyError(
                f"new {format_shape((nb, s, nw))} does not match cache {format_shape((b, c, w))} "
                f"in batch and width"
            )
        _check_fits("new", s, c, "the cache")
        return ir.RankedTensorType.get([b, c, w], element)


class CachedAttentionOp(Rlx.Operation, name="cached_attention", traits=[Pure]):
    """Causal multi-head attention of `S` new queries over a KV cache.

    `q` is `[B, S, H * D]`; `k_cache` and `v_cache` are `[B, C, Hkv * D]`
    (capacity `C`, already holding the new tokens' keys and values, see
    `rlx.kv_cache_write`), `pos` a rank-0 i64 tensor, `H = num_heads`,
    `D = head_dim`, `Hkv` dividing `H` (grouped-query heads: query head `h`
    reads kv head `h // (H / Hkv)`).  With `p = clamp(pos, 0, C - S)`, query
    `i` is the token at position `p + i` and sees the keys at positions
    `j <= p + i`; keys at `p + S` and beyond are never read (they may hold
    anything).  That is exactly

        rlx.attention(q, k_cache[:, :p + S], v_cache[:, :p + S], mask_kind = causal)

    (the causal mask aligned to the end of the keys), with the same scale
    (`score_scale`, by default `1 / sqrt(D)`) and a numerically stable
    softmax; the work grows with `p + S`, not with `C`.  Every query sees at
    least key 0, so no row is empty.  f16 / bf16 compute in f32 and round once.
    """

    q = operand(FloatTensor, "queries of the new tokens, `[B, S, H * D]`")
    k_cache = operand(FloatTensor, "keys, `[B, C, Hkv * D]`")
    v_cache = operand(FloatTensor, "values, `[B, C, Hkv * D]`, like `k_cache`")
    pos = operand(PositionTensor, "rank-0 i64: the position of the first query")
    num_heads = attribute(I64Attr, "`H`, the number of query heads")
    head_dim = attribute(I64Attr, "`D`, features per head")
    score_scale = attribute(F32Attr, "multiplies `q . k`; absent means `1 / sqrt(head_dim)`", optional=True)
    result = result(FloatTensor, "`[B, S, H * D]`, like `q`")

    @classmethod
    def infer_result_type(
        cls, q: ir.Type, k_cache: ir.Type, v_cache: ir.Type, pos: ir.Type, num_heads: int, head_dim: int,
        score_scale: float | None,
    ) -> ir.Type:
        element = same_element_type(q, k_cache, v_cache)
        _positive("num_heads", num_heads)
        _positive("head_dim", head_dim)
        b, s, _ = _rank3("q", q, "[B, S, H * D]")
        kb, c, _ = _rank3("k_cache", k_cache, "[B, C, Hkv * D]")
        qd = _static_last_dim("q", shape_of(q))
        kd = _static_last_dim("k_cache", shape_of(k_cache))
        _check_position(pos)
        if qd != num_heads * head_dim:
            raise VerifyError(f"q last dim {qd} is not num_heads * head_dim = {num_heads} * {head_dim}")
        if not _fits([kb], [b]):
            raise VerifyError(f"k_cache batch {kb} differs from q batch {b}")
        if kd % head_dim:
            raise VerifyError(f"k_cache last dim {kd} is not a multiple of head_dim {head_dim}")
        if num_heads % (kd // head_dim):
            raise VerifyError(f"{num_heads} query heads are not a multiple of {kd // head_dim} kv heads")
        if not _fits(shape_of(v_cache), shape_of(k_cache)):
            raise VerifyError(
                f"v_cache shape {format_shape(shape_of(v_cache))} differs from k_cache shape "
                f"{format_shape(shape_of(k_cache))}"
            )
        _check_fits("q", s, c, "the cache")
        return ir.RankedTensorType.get([b, s, qd], element)


class RopeAtOp(Rlx.Operation, name="rope_at", traits=[Pure]):
    """Rotary position embedding (as `rlx.rope`) at runtime positions `pos .. pos + S - 1`.

    `x` is `[B, S, H * head_dim]`; `cos` and `sin` are tables of `P`
    positions, `[P, n_rot / 2]`; `pos` is a rank-0 i64 tensor.  With
    `p = clamp(pos, 0, P - S)`, this is `rlx.rope(x, cos[p : p + S],
    sin[p : p + S])`: position `s` of `x` is rotated by table row `p + s`
    (NeoX rotate-half pairs, the first `n_rot` features of each head).
    """

    x = operand(FloatTensor, "the activations, `[B, S, H * head_dim]`")
    cos = operand(FloatTensor, "cosines per position and rotated pair, `[P, n_rot / 2]`")
    sin = operand(FloatTensor, "sines per position and rotated pair, `[P, n_rot / 2]`")
    pos = operand(PositionTensor, "rank-0 i64: the position of `x`'s first row")
    head_dim = attribute(I64Attr, "features per head; the last dim of `x` is a multiple of it")
    n_rot = attribute(I64Attr, "rotated features at the start of each head: even, `0 < n_rot <= head_dim`")
    result = result(FloatTensor, "`[B, S, H * head_dim]`, like `x`")

    @classmethod
    def infer_result_type(
        cls, x: ir.Type, cos: ir.Type, sin: ir.Type, pos: ir.Type, head_dim: int, n_rot: int
    ) -> ir.Type:
        element = same_element_type(x, cos, sin)
        b, s, c = rope_features(x, head_dim, n_rot)
        _check_position(pos)
        table = shape_of(cos)
        if len(table) != 2 or not _fits(table[1:], [n_rot // 2]):
            raise VerifyError(f"cos has shape {format_shape(table)}, expected [P, n_rot / 2] with n_rot {n_rot}")
        if not _fits(shape_of(sin), table):
            raise VerifyError(f"sin shape {format_shape(shape_of(sin))} differs from cos shape {format_shape(table)}")
        _check_fits("x", s, table[0], "the cos / sin tables")
        return ir.RankedTensorType.get([b, s, c], element)
