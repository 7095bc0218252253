"""Selection: top-k indices and sampling."""

from __future__ import annotations

import math

from mlir import ir

from ...dsl import F32Attr, FloatTensor, I64Attr, Pure, TensorOf, VerifyError, attribute, operand, result
from ...ir.shapes import DYNAMIC, format_shape, shape_of
from .dialect import Rlx

__all__ = ["TopkOp", "SampleOp"]

I64Tensor = TensorOf(("i64",))


class TopkOp(Rlx.Operation, name="topk", traits=[Pure]):
    """Indices of the `k` largest values along the last axis.

    `input [..., N]` (f32, f16 or bf16) gives `i64 [..., k]`: for every leading
    index, the positions of the `k` largest values of `input[..., :]` in
    descending order of value; equal values are ordered by ascending index
    (ties go to the lower index), so the result is fully determined.  This is
    the index half of PyTorch's `torch.topk(x, k, dim=-1, largest=True,
    sorted=True)` with a stable tie rule.  Values compare as numbers: `-0.0`
    and `+0.0` tie, `-inf` is the smallest value and can be selected like any
    other.  NaN counts as larger than every number, `+inf` included (as
    `torch.topk` ranks it, and where `np.sort` puts it), and NaNs tie among
    themselves, whatever their sign or payload.  f16 and bf16 inputs compare exactly (their
    widening to f32 is exact).  Requires `0 < k <= N`.
    """

    input = operand(FloatTensor, "the scores, `[..., N]`")
    k = attribute(I64Attr, "how many indices to select per row, `0 < k <= N`")
    result = result(I64Tensor, "`i64 [..., k]`: indices into the last axis, best first")

    @classmethod
    def infer_result_type(cls, input: ir.Type, k: int) -> ir.Type:
        shape = shape_of(input)
        if not shape:
            raise VerifyError("requires an input of rank 1 or more, got a rank 0 input []")
        if k <= 0:
            raise VerifyError(f"k {k} must be positive")
        if shape[-1] != DYNAMIC and k > shape[-1]:
            raise VerifyError(f"k {k} is larger than the last axis ({shape[-1]}) of input {format_shape(shape)}")
        return ir.RankedTensorType.get([*shape[:-1], k], ir.IntegerType.get_signless(64))


class SampleOp(Rlx.Operation, name="sample", traits=[Pure]):
    """Draws one token id per row from `logits [B, V]`: greedy, top-k, top-p.

    `logits [B, V]` (f32, f16 or bf16) gives `i64 [B]`, each in `0 .. V-1`;
    `V` must be positive (an empty vocabulary has no token to draw).
    All arithmetic is in f32 (f16 and bf16 logits widen exactly).

    * `temperature == 0`: greedy, the index of the row's largest logit; ties
      go to the lower index and NaN counts as the largest value (the rule of
      `rlx.topk`).  `top_k`, `top_p` and `seed` are then ignored.
    * otherwise `p = softmax(logits / temperature)` over the row (divide, then
      subtract the row maximum, `exp`, divide by the sum).  Tokens are ranked
      by `p`, most probable first, equal probabilities by ascending index.
      - `top_k > 0` keeps the first `top_k` tokens of that ranking.
      - `top_p < 1` then keeps the shortest prefix of the ranking of the kept
        tokens whose mass reaches `top_p` of their total: token `i` stays
        when the mass of the kept tokens ranked before it is below
        `top_p * total` (f32 sums), so at least one token stays, and the
        nucleus is measured on the distribution already renormalised over the
        top-k tokens (the order of Hugging Face's and vLLM's samplers).  Ties
        at the boundary go to the lower index, as in the ranking.
      - Renormalised over the kept tokens, one token is drawn by inverse CDF
        in index order: with `C_i` the sum of the kept `p_j` for `j <= i` and
        `T = C_{V-1}`, the result is the smallest `i` with `C_i > u * T`
        (`u * T` is rounded down below `T` if it rounds up to it), so a token
        of zero probability is never drawn.
    * The uniform `u` of row `b` is a counter-based draw of `(seed, b)`:
      `u = (splitmix64(key + (b + 1) * G) >> 40) * 2**-24` with
      `key = splitmix64(seed + G)`, `G = 0x9E3779B97F4A7C15`, all arithmetic
      modulo 2**64 (a negative seed is its two's complement), and Vigna's
      finaliser `splitmix64(z)`:
      `z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EB; return z ^ (z >> 31)`.
      So row `b` uses the `(b + 1)`-th output of a SplitMix64 generator whose
      state starts at the generator's first output for `seed`: the same seed
      gives the same ids, rows are independent draws, and `u` is a multiple of
      `2**-24` in `[0, 1)`.
    * A row whose softmax is not finite (a NaN or `+inf` logit, all logits
      `-inf`, or `logits / temperature` overflowing to `+inf`) returns the
      greedy choice for that row instead.
    """

    logits = operand(FloatTensor, "unnormalised scores, `[B, V]`")
    top_k = attribute(I64Attr, "keep only the `top_k` most probable tokens; 0 turns it off", default=0)
    top_p = attribute(F32Attr, "nucleus mass in `(0, 1]`; 1.0 turns it off", default=1.0)
    temperature = attribute(F32Attr, "divides the logits; 0 means greedy argmax", default=1.0)
    seed = attribute(I64Attr, "seed of the counter-based uniform draw", default=0)
    result = result(I64Tensor, "`i64 [B]`: the drawn token ids")

    @classmethod
    def infer_result_type(
        cls, logits: ir.Type, top_k: int, top_p: float, temperature: float, seed: int
    ) -> ir.Type:
        shape = shape_of(logits)
        if len(shape) != 2:
            raise VerifyError(f"requires a rank 2 input [B, V], got {format_shape(shape)}")
        vocab = shape[1]
        if vocab == 0:
            raise VerifyError(f"cannot draw a token from an empty vocabulary: logits {format_shape(shape)} has V = 0")
        if top_k < 0:
            raise VerifyError(f"top_k {top_k} must not be negative (0 turns it off)")
        if vocab != DYNAMIC and top_k > vocab:
            raise VerifyError(f"top_k {top_k} is larger than the vocabulary ({vocab}) of logits {format_shape(shape)}")
        if not 0.0 < top_p <= 1.0:
            raise VerifyError(f"top_p {_number(top_p)} must be in (0, 1]")
        if not (temperature >= 0.0 and math.isfinite(temperature)):
            raise VerifyError(f"temperature {_number(temperature)} must be finite and not negative")
        return ir.RankedTensorType.get([shape[0]], ir.IntegerType.get_signless(64))


def _number(value: float) -> str:
    return f"{value:g}"
