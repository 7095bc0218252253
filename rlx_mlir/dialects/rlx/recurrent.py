"""Recurrent and structured ops: selective scan, gated DeltaNet, causal depthwise conv."""

from __future__ import annotations

from typing import Optional, Sequence

from mlir import ir

from ...dsl import BoolAttr, FloatTensor, I64Attr, Pure, StrEnumAttr, VerifyError, attribute, operand, result
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
    """Mamba's selective state-space scan (S6), with a diagonal `A`, as Mamba's `selective_scan_fn`.

    Shapes, with `n = state_size`: `x` and `delta` are `[b, s, h]` (batch,
    sequence, channels), `a` is `[h, n]`, `b_in` and `c` are `[b, s, n]`
    (the input-dependent `B` and `C`, shared by every channel); the optional
    `d` is `[h]`, the optional `z` is `[b, s, h]` and the optional `state` is
    `[b, h, n]`.  The results are `y`, `[b, s, h]`, and `final_state`,
    `[b, h, n]`.  With `dt = softplus(delta)` when `delta_softplus` is set
    (else `dt = delta`), for every batch `bb` a state `st[i, j]` (`i < h`,
    `j < n`) starts at `state[bb]` (zeros when `state` is absent) and, for
    `t = 0 .. s - 1` in order:

        st[i, j]   = exp(dt[bb, t, i] * a[i, j]) * st[i, j]
                     + dt[bb, t, i] * b_in[bb, t, j] * x[bb, t, i]
        y[bb, t, i] = sum_j c[bb, t, j] * st[i, j]      (+ d[i] * x[bb, t, i] with `d`)
        y[bb, t, i] *= silu(z[bb, t, i])                 (with `z`)

    and `final_state[bb] = st` after the last step: zero-order-hold
    discretisation of `A` (`exp(dt * A)`) and the simplified Euler
    discretisation of `B` (`dt * B`), as Mamba's reference
    `selective_scan_ref`; `a` is used as given (typically `-exp(A_log)`).
    Because the state is an operand and a result, a sequence can be processed
    in chunks (chunked prefill, then one token per decode step): running
    `[0, s1)` and then `[s1, s)` with the first call's `final_state` as the
    second call's `state` gives the same `y` and final state as one call.
    RLX's `SelectiveScan` is this op with the five required operands.

    All operands and the results have one element type (f32, f16 or bf16);
    with f16 / bf16 the inputs are widened, the state and the `c . st`
    accumulation are kept in f32, and `y` and the final state are rounded once
    per element.
    """

    x = operand(FloatTensor, "the input sequence, `[b, s, h]`")
    delta = operand(FloatTensor, "per-step, per-channel step sizes, `[b, s, h]` (positive, or see `delta_softplus`)")
    a = operand(FloatTensor, "the diagonal state matrix per channel, `[h, n]`")
    b_in = operand(FloatTensor, "the input projection `B` per step, `[b, s, n]`")
    c = operand(FloatTensor, "the output projection `C` per step, `[b, s, n]`")
    d = operand(FloatTensor, "the skip `D` per channel, `[h]`: `y += d * x` (absent: none)", optional=True)
    z = operand(FloatTensor, "the gate, `[b, s, h]`: `y *= silu(z)` (absent: none)", optional=True)
    state = operand(FloatTensor, "the initial state `[b, h, n]` (absent: zeros)", optional=True)
    state_size = attribute(I64Attr, "`n`, the state size per channel (positive; the last dim of `a`)")
    delta_softplus = attribute(
        BoolAttr, "apply `softplus` to `delta` first (Mamba's `delta_softplus`); absent means false", optional=True
    )
    y = result(FloatTensor, "`y`, `[b, s, h]`")
    final_state = result(FloatTensor, "the state after the last step, `[b, h, n]`")

    @classmethod
    def infer_result_types(
        cls, x: ir.Type, delta: ir.Type, a: ir.Type, b_in: ir.Type, c: ir.Type, d: Optional[ir.Type],
        z: Optional[ir.Type], state: Optional[ir.Type], state_size: int, delta_softplus: Optional[bool] = None,
    ) -> list[ir.Type]:
        element = same_element_type(*(t for t in (x, delta, a, b_in, c, d, z, state) if t is not None))
        _positive("state_size", state_size)
        b, s, h = _rank("x", x, 3, "[b, s, h]")
        n = state_size
        because = f"for x {format_shape((b, s, h))} and state_size {n}"
        _expect("delta", delta, (b, s, h), "[b, s, h]", because)
        _expect("a", a, (h, n), "[h, n]", because)
        _expect("b_in", b_in, (b, s, n), "[b, s, n]", because)
        _expect("c", c, (b, s, n), "[b, s, n]", because)
        if d is not None:
            _expect("d", d, (h,), "[h]", because)
        if z is not None:
            _expect("z", z, (b, s, h), "[b, s, h]", because)
        if state is not None:
            _expect("state", state, (b, h, n), "[b, h, n]", because)
        return [ir.RankedTensorType.get([b, s, h], element), ir.RankedTensorType.get([b, h, n], element)]

    @classmethod
    def build(cls, x, delta, a, b_in, c, *, state_size: int, d=None, z=None, state=None,
              delta_softplus: bool = False, loc=None, ip=None) -> "SelectiveScanOp":
        """Builds the op with both result types inferred (ValueError when the operands do not fit)."""
        return cls(x, delta, a, b_in, c, state_size, d=d, z=z, state=state,
                   delta_softplus=True if delta_softplus else None, loc=loc, ip=ip)


# --- gated delta net ------------------------------------------------------------------


STATE_LAYOUTS = ("v_k", "k_v")


class GatedDeltaNetOp(Rlx.Operation, name="gated_delta_net", traits=[Pure]):
    """Gated DeltaNet linear attention (Qwen3-Next, Kimi-Linear): the gated delta rule.

    Shapes: `q` and `k` are `[b, s, hk, dk]` (batch, sequence, key heads, key
    head dim), `v` is `[b, s, hv, dv]` (value heads, value head dim), `g` and
    `beta` are `[b, s, hv]`; `hv` is a multiple of `hk`, and value head `hh`
    reads key head `hh // (hv / hk)` (grouped heads, as Qwen3-Next's
    `repeat_interleave`; `hv = hk` is the plain case).  `dk = state_size`.  Per
    batch `bb` and value head `hh` the state `S` is a `dv x dk` matrix:
    `S[i, j]` couples value feature `i` with key feature `j` (so `S @ k` is a
    value-shaped vector).  The optional `state` and the `final_state` result
    are `[b, hv, dv, dk]` with `state_layout = "v_k"` (the default) or
    `[b, hv, dk, dv]` with `"k_v"` (the Hugging Face / flash-linear-attention
    layout, `S` transposed).  `S` starts at `state[bb, hh]` (zeros when
    `state` is absent) and, for `t = 0 .. s - 1` in order, with
    `q_t = q[bb, t, hh // (hv / hk), :]` (etc.), `alpha_t = exp(g[bb, t, hh])`
    and `beta_t = beta[bb, t, hh]`:

        q_t, k_t = q_t / |q_t|, k_t / |k_t|      # only with use_qk_l2norm (|x| = sqrt(sum x^2 + 1e-6))
        S     = alpha_t * S                      # gated decay (g is a log-decay)
        u     = beta_t * (v_t - S @ k_t)         # delta-rule correction, [dv]
        S     = S + outer(u, k_t)                # S[i, j] += u[i] * k_t[j]
        out[bb, t, hh, :] = S @ (q_t / sqrt(dk)) # read with the updated state

    and `final_state[bb, hh] = S` after the last step.  The `1 / sqrt(dk)`
    query scale is part of the op (RLX's "q scaled 1/sqrt(n)"); the L2
    normalisation of `q` / `k` is with `use_qk_l2norm` (FLA's
    `use_qk_l2norm_in_kernel`, epsilon 1e-6 inside the square root); the
    sigmoid of `beta` and the computation of `g` (e.g.
    `-exp(A_log) * softplus(a + dt_bias)`) are the caller's.
    Because the whole state is a result, a sequence can be processed in
    chunks: running `[0, s1)` and then `[s1, s)` with the first call's
    `final_state` as the second call's `state` gives the same outputs and
    final state as one call (RLX's `carry_state` variant; without `state`,
    RLX's reset-per-batch variant).

    The op has two results.  The builder `GatedDeltaNetOp(q, k, v, g, beta,
    state_size, state=..., result_types=[out, final_state])` takes the result
    types; `GatedDeltaNetOp.build(q, k, v, g, beta, state=..., state_size=dk)`
    infers them.

    All operands and results have one element type (f32, f16 or bf16); with
    f16 / bf16 everything is computed in f32 (state, decay, matrix-vector
    products) and the outputs and the final state are rounded once.
    """

    q = operand(FloatTensor, "queries, `[b, s, hk, dk]` (scaled by `1 / sqrt(dk)` inside the op)")
    k = operand(FloatTensor, "keys, `[b, s, hk, dk]`")
    v = operand(FloatTensor, "values, `[b, s, hv, dv]`, `hv` a multiple of `hk`")
    g = operand(FloatTensor, "log-decay per step and value head, `[b, s, hv]` (`alpha = exp(g)`)")
    beta = operand(FloatTensor, "delta-rule write strength per step and value head, `[b, s, hv]`")
    state = operand(
        FloatTensor, "initial state, `[b, hv, dv, dk]` (`v_k`) or `[b, hv, dk, dv]` (`k_v`); absent means zeros",
        optional=True,
    )
    state_size = attribute(I64Attr, "`dk`, the head dim of q and k (positive)")
    use_qk_l2norm = attribute(
        BoolAttr, "L2-normalise q and k along the head dim first; absent means false", optional=True
    )
    state_layout = attribute(
        StrEnumAttr(*STATE_LAYOUTS), "`v_k`: state `[.., dv, dk]`; `k_v`: `[.., dk, dv]` (HF/FLA); absent means `v_k`",
        optional=True,
    )
    out = result(FloatTensor, "the read-outs `S @ (q / sqrt(dk))`, `[b, s, hv, dv]`")
    final_state = result(FloatTensor, "the state after the last step, in the layout of `state_layout`")

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
        use_qk_l2norm: Optional[bool] = None,
        state_layout: Optional[str] = None,
    ) -> list[ir.Type]:
        state_layout = state_layout or "v_k"
        element = same_element_type(*(t for t in (q, k, v, g, beta, state) if t is not None))
        _positive("state_size", state_size)
        b, s, hk, dk = _rank("q", q, 4, "[b, s, hk, dk]")
        if dk != state_size and dk != DYNAMIC:
            raise VerifyError(f"q head dim {dk} (q {format_shape((b, s, hk, dk))}) differs from state_size {state_size}")
        dk = state_size
        because = f"for q {format_shape((b, s, hk, dk))}"
        _expect("k", k, (b, s, hk, dk), "[b, s, hk, dk]", because)
        _, _, hv, dv = _rank("v", v, 4, "[b, s, hv, dv]")
        _expect("v", v, (b, s, hv, dv), "[b, s, hv, dv]", because)
        if DYNAMIC not in (hk, hv) and hv % hk != 0:
            raise VerifyError(f"v has {hv} heads, not a multiple of the {hk} heads of q and k")
        because = f"for q {format_shape((b, s, hk, dk))} and v {format_shape((b, s, hv, dv))}"
        _expect("g", g, (b, s, hv), "[b, s, hv]", because)
        _expect("beta", beta, (b, s, hv), "[b, s, hv]", because)
        state_shape = (b, hv, dv, dk) if state_layout == "v_k" else (b, hv, dk, dv)
        if state is not None:
            layout = "[b, hv, dv, dk]" if state_layout == "v_k" else "[b, hv, dk, dv]"
            _expect("state", state, state_shape, f"{layout} (state_layout {state_layout})", because)
        return [
            ir.RankedTensorType.get([b, s, hv, dv], element),
            ir.RankedTensorType.get(list(state_shape), element),
        ]

    @classmethod
    def build(cls, q, k, v, g, beta, *, state=None, state_size: int, use_qk_l2norm: bool = False,
              state_layout: str = "v_k", loc=None, ip=None) -> "GatedDeltaNetOp":
        """Builds the op with both result types inferred (ValueError when the operands do not fit)."""
        return cls(q, k, v, g, beta, state_size, state=state, use_qk_l2norm=True if use_qk_l2norm else None,
                   state_layout=None if state_layout == "v_k" else state_layout, loc=loc, ip=ip)


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
