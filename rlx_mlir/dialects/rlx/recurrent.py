"""Recurrent and structured ops: selective scan, gated DeltaNet, causal depthwise conv."""

from __future__ import annotations

from typing import Optional, Sequence

from mlir import ir

from ...dsl import FloatTensor, I64Attr, Pure, VerifyError, attribute, operand, result
from ...ir.shapes import DYNAMIC, format_shape, shape_of
from .dialect import Rlx, same_element_type

__all__ = ["SelectiveScanOp", "GatedDeltaNetOp", "DepthwiseConv1dCausalOp"]


# --- shared checks ------------------------------------------------------------------


def _rank(name: str, type_: ir.Type, rank: int, layout: str) -> tuple[int, ...]:
    shape = shape_of(type_)
    if len(shape) != rank:
        raise VerifyError(f"{name} must have rank {rank} ({layout}), got {format_shape(shape)}")
    return shape


def _fits(actual: Sequence[int], expected: Sequence[int]) -> bool:
    """Shapes agree, a dynamic dimension (`?`) on either side matching any size."""
    return len(actual) == len(expected) and all(
        a == e or DYNAMIC in (a, e) for a, e in zip(actual, expected)
    )


def _expect(name: str, type_: ir.Type, expected: Sequence[int], layout: str, because: str) -> None:
    shape = shape_of(type_)
    if not _fits(shape, expected):
        raise VerifyError(
            f"{name} has shape {format_shape(shape)}, expected {layout} = {format_shape(expected)} {because}"
        )


def _positive(name: str, value: int) -> None:
    if value <= 0:
        raise VerifyError(f"{name} must be positive, got {value}")


# --- selective scan (Mamba) ----------------------------------------------------------


class SelectiveScanOp(Rlx.Operation, name="selective_scan", traits=[Pure]):
    """Mamba's selective state-space scan (S6), with a diagonal `A`.

    Shapes, with `n = state_size`: `x` and `delta` are `[b, s, h]` (batch,
    sequence, channels), `a` is `[h, n]`, `b_in` and `c` are `[b, s, n]`
    (the input-dependent `B` and `C`, shared by every channel); the result
    `y` is `[b, s, h]`.  For every batch `bb` a state `st[i, j]` (`i < h`,
    `j < n`) starts at zero and, for `t = 0 .. s - 1` in order:

        st[i, j]   = exp(delta[bb, t, i] * a[i, j]) * st[i, j]
                     + delta[bb, t, i] * b_in[bb, t, j] * x[bb, t, i]
        y[bb, t, i] = sum_j c[bb, t, j] * st[i, j]

    i.e. zero-order-hold discretisation of `A` (`exp(delta * A)`) and the
    simplified Euler discretisation of `B` (`delta * B`), as Mamba's reference
    `selective_scan_ref` without the `D` skip term, the `z` gate or a softplus
    on `delta` (the caller applies those; `a` is used as given, typically
    `-exp(A_log)`).  RLX's `SelectiveScan` takes the same five inputs.  The
    state is not an operand or a result: it always starts at zero.

    All operands and the result have one element type (f32, f16 or bf16);
    with f16 / bf16 the inputs are widened, the state and the `c . st`
    accumulation are kept in f32, and `y` is rounded once per element.
    """

    x = operand(FloatTensor, "the input sequence, `[b, s, h]`")
    delta = operand(FloatTensor, "per-step, per-channel step sizes, `[b, s, h]` (already positive)")
    a = operand(FloatTensor, "the diagonal state matrix per channel, `[h, n]`")
    b_in = operand(FloatTensor, "the input projection `B` per step, `[b, s, n]`")
    c = operand(FloatTensor, "the output projection `C` per step, `[b, s, n]`")
    state_size = attribute(I64Attr, "`n`, the state size per channel (positive; the last dim of `a`)")
    result = result(FloatTensor, "`y`, `[b, s, h]`")

    @classmethod
    def infer_result_type(
        cls, x: ir.Type, delta: ir.Type, a: ir.Type, b_in: ir.Type, c: ir.Type, state_size: int
    ) -> ir.Type:
        element = same_element_type(x, delta, a, b_in, c)
        _positive("state_size", state_size)
        b, s, h = _rank("x", x, 3, "[b, s, h]")
        n = state_size
        because = f"for x {format_shape((b, s, h))} and state_size {n}"
        _expect("delta", delta, (b, s, h), "[b, s, h]", because)
        _expect("a", a, (h, n), "[h, n]", because)
        _expect("b_in", b_in, (b, s, n), "[b, s, n]", because)
        _expect("c", c, (b, s, n), "[b, s, n]", because)
        return ir.RankedTensorType.get([b, s, h], element)


# --- gated delta net ------------------------------------------------------------------


class GatedDeltaNetOp(Rlx.Operation, name="gated_delta_net", traits=[Pure]):
    """Gated DeltaNet linear attention (Qwen3-Next, Kimi-Linear): the gated delta rule.

    Shapes, with `n = state_size`: `q`, `k`, `v` are `[b, s, h, n]` (batch,
    sequence, heads, head dim; q / k / v share the head count and the head
    dim), `g` and `beta` are `[b, s, h]`; the optional `state` and the
    `final_state` result are `[b, h, n, n]`.  Per batch `bb` and head `hh` the
    state `S` is an `n x n` matrix laid out `[n_v, n_k]`: `S[i, j]` couples
    value feature `i` with key feature `j` (so `S @ k` is a value-shaped
    vector).  `S` starts at `state[bb, hh]` (zeros when `state` is absent)
    and, for `t = 0 .. s - 1` in order, with `q_t = q[bb, t, hh, :]` (etc.),
    `alpha_t = exp(g[bb, t, hh])` and `beta_t = beta[bb, t, hh]`:

        S     = alpha_t * S                      # gated decay (g is a log-decay)
        u     = beta_t * (v_t - S @ k_t)         # delta-rule correction, [n_v]
        S     = S + outer(u, k_t)                # S[i, j] += u[i] * k_t[j]
        out[bb, t, hh, :] = S @ (q_t / sqrt(n))  # read with the updated state

    and `final_state[bb, hh] = S` after the last step.  The `1 / sqrt(n)`
    query scale is part of the op (RLX's "q scaled 1/sqrt(n)"); any L2
    normalisation of `q` / `k`, the sigmoid of `beta` and the computation of
    `g` (e.g. `-exp(A_log) * softplus(a + dt_bias)`) are the caller's.
    Because the whole state is a result, a sequence can be processed in
    chunks: running `[0, s1)` and then `[s1, s)` with the first call's
    `final_state` as the second call's `state` gives the same outputs and
    final state as one call (RLX's `carry_state` variant; without `state`,
    RLX's reset-per-batch variant).

    The op has two results.  The builder `GatedDeltaNetOp(q, k, v, g, beta,
    state_size, state=..., result_types=[out, final_state])` takes the result
    types; `GatedDeltaNetOp.build(q, k, v, g, beta, state=..., state_size=n)`
    infers them.

    All operands and results have one element type (f32, f16 or bf16); with
    f16 / bf16 everything is computed in f32 (state, decay, matrix-vector
    products) and the outputs and the final state are rounded once.
    """

    q = operand(FloatTensor, "queries, `[b, s, h, n]` (scaled by `1 / sqrt(n)` inside the op)")
    k = operand(FloatTensor, "keys, `[b, s, h, n]`")
    v = operand(FloatTensor, "values, `[b, s, h, n]`")
    g = operand(FloatTensor, "log-decay per step and head, `[b, s, h]` (`alpha = exp(g)`)")
    beta = operand(FloatTensor, "delta-rule write strength per step and head, `[b, s, h]`")
    state = operand(
        FloatTensor, "initial state `[b, h, n, n]`, layout `[n_v, n_k]`; absent means zeros", optional=True
    )
    state_size = attribute(I64Attr, "`n`, the head dim of q / k / v (positive)")
    out = result(FloatTensor, "the read-outs `S @ (q / sqrt(n))`, `[b, s, h, n]`")
    final_state = result(FloatTensor, "the state after the last step, `[b, h, n, n]`, layout `[n_v, n_k]`")

    @classmethod
    def infer_result_types(
        cls,
        q: ir.Type,
        k: ir.Type,
        v: ir.Type,
        g: ir.Type,
        beta: ir.Type,
        state: Optional[ir.Type],
        state_size: int,
    ) -> list[ir.Type]:
        element = same_element_type(*(t for t in (q, k, v, g, beta, state) if t is not None))
        _positive("state_size", state_size)
        b, s, h, n = _rank("q", q, 4, "[b, s, h, n]")
        if n != state_size and n != DYNAMIC:
            raise VerifyError(f"q head dim {n} (q {format_shape((b, s, h, n))}) differs from state_size {state_size}")
        n = state_size
        because = f"for q {format_shape((b, s, h, n))}"
        _expect("k", k, (b, s, h, n), "[b, s, h, n]", because)
        _expect("v", v, (b, s, h, n), "[b, s, h, n]", because)
        _expect("g", g, (b, s, h), "[b, s, h]", because)
        _expect("beta", beta, (b, s, h), "[b, s, h]", because)
        if state is not None:
            _expect("state", state, (b, h, n, n), "[b, h, n, n]", because)
        return [
            ir.RankedTensorType.get([b, s, h, n], element),
            ir.RankedTensorType.get([b, h, n, n], element),
        ]

    @classmethod
    def build(cls, q, k, v, g, beta, *, state=None, state_size: int, loc=None, ip=None) -> "GatedDeltaNetOp":
        """Builds the op with both result types inferred (ValueError when the operands do not fit)."""
        return cls(q, k, v, g, beta, state_size, state=state, loc=loc, ip=ip)


# --- causal depthwise conv1d ------------------------------------------------------------


class DepthwiseConv1dCausalOp(Rlx.Operation, name="depthwise_conv1d_causal", traits=[Pure]):
    """Causal depthwise 1-D convolution along the sequence, with an explicit left pad.

    `x` is `[B, S, C]` (channels last), `weight` is `[C, 1, 1, K]` (RLX's
    layout: one `K`-tap filter per channel), `left_pad` is `[B, K - 1, C]`:
    the `K - 1` rows that precede `x` (zeros at the start of a sequence, the
    previous chunk's last rows when streaming).  With
    `xp = concat(left_pad, x)` along axis 1 (`[B, S + K - 1, C]`):

        out[b, s, c] = sum_{k < K} weight[c, 0, 0, k] * xp[b, s + k, c]

    so tap `K - 1` multiplies the current row and tap `0` the row `K - 1`
    steps back.  With a zero `left_pad` this is PyTorch's
    `conv1d(x.transpose(1, 2), weight.view(C, 1, K), groups=C, padding=K-1)[..., :S]`
    transposed back (cross-correlation, as in Mamba's and Qwen3-Next's short
    causal convolutions); `left_pad` replaces the zero padding.  No bias, no
    activation.
    Streaming: the next chunk's `left_pad` is the last `K - 1` rows of `xp`;
    chunks chained that way give the same output as the whole sequence.

    All operands and the result have one element type (f32, f16 or bf16);
    f16 / bf16 accumulate in f32 and round once.
    """

    x = operand(FloatTensor, "the input, `[B, S, C]`")
    weight = operand(FloatTensor, "per-channel filters, `[C, 1, 1, K]`")
    left_pad = operand(FloatTensor, "the `K - 1` rows before `x`, `[B, K - 1, C]`")
    kernel_size = attribute(I64Attr, "`K`, the filter length (positive)")
    result = result(FloatTensor, "`[B, S, C]`, like `x`")

    @classmethod
    def infer_result_type(
        cls, x: ir.Type, weight: ir.Type, left_pad: ir.Type, kernel_size: int
    ) -> ir.Type:
        element = same_element_type(x, weight, left_pad)
        _positive("kernel_size", kernel_size)
        b, s, c = _rank("x", x, 3, "[B, S, C]")
        because = f"for x {format_shape((b, s, c))} and kernel_size {kernel_size}"
        _rank("weight", weight, 4, "[C, 1, 1, K]")
        _expect("weight", weight, (c, 1, 1, kernel_size), "[C, 1, 1, K]", because)
        _expect("left_pad", left_pad, (b, kernel_size - 1, c), "[B, K - 1, C]", because)
        return ir.RankedTensorType.get([b, s, c], element)
