"""Numerics of `rlx.selective_scan`, `rlx.gated_delta_net` and `rlx.depthwise_conv1d_causal`.

Each case builds a module as MLIR text (or with the op classes), compiles it
with `rlx_mlir.compile` (the default path: the module is planned into LIR, one
arena) and compares with a float64 reference written here as plain Python
loops over time, straight from the recurrences in the op descriptions.  Nothing
from the lowering is imported.

Tolerances are per element and computed from the data: a first-order bound on
the rounding error of the f32 computation (derived next to each reference),
times SAFETY, plus for f16 outputs the final rounding to f16.  The references
also carry "magnitude" companions (the same recurrence on absolute values, or
norms) so that the bounds scale with the values that were actually rounded.
"""

from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import func

import rlx_mlir
from rlx_mlir import compile as rlx_compile
from rlx_mlir.dialects import rlx

U32 = 2.0**-24  # f32 unit roundoff
F16_ULP_REL = 2.0**-10  # one f16 ulp relative to the value (worst case): covers rounding to f16
F16_TINY = 2.0**-24  # f16 subnormal spacing: absolute resolution near zero
SAFETY = 4.0  # slack on the first-order bounds (higher-order terms, exp's ~1-2 ulp)

NP = {"f32": np.float32, "f16": np.float16}


@functools.lru_cache(maxsize=None)
def compiled(text: str, plan: bool = True):
    return rlx_compile(text, entry="f", plan=plan)


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def ttype(shape, dtype: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def module_text(op: str, operand_shapes, result_shapes, dtype: str, attrs: str) -> str:
    """`func.func @f` applying one `rlx.<op>` to its arguments and returning every result."""
    types = [ttype(s, dtype) for s in operand_shapes]
    results = [ttype(s, dtype) for s in result_shapes]
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    args = ", ".join(f"%a{i}" for i in range(len(types)))
    lhs = "%0" if len(results) == 1 else f"%0:{len(results)}"
    rets = "%0" if len(results) == 1 else ", ".join(f"%0#{i}" for i in range(len(results)))
    rtype = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
    return (
        f"func.func @f({params}) -> {rtype} {{\n"
        f'  {lhs} = "rlx.{op}"({args}) {{{attrs}}} : ({", ".join(types)}) -> {rtype}\n'
        f"  return {rets} : {', '.join(results)}\n"
        f"}}\n"
    )


def selective_scan_text(x_shape, n: int, dtype: str, attrs: str = "", optional=(), return_state: bool = False) -> str:
    """`func.func @f(x, delta, a, b_in, c, <optional...>)` applying `rlx.selective_scan` (two results, the
    operand segments spelled out); returns `y`, and with `return_state` also the final state.
    `optional`: the names among "d", "z", "state" given, in that order."""
    b, s, h = x_shape
    shapes = [x_shape, x_shape, (h, n), (b, s, n), (b, s, n)]
    extra = {"d": (h,), "z": (b, s, h), "state": (b, h, n)}
    shapes += [extra[name] for name in ("d", "z", "state") if name in optional]
    types = [ttype(shape, dtype) for shape in shapes]
    segments = ", ".join(["1"] * 5 + ["1" if name in optional else "0" for name in ("d", "z", "state")])
    y, st = ttype(x_shape, dtype), ttype((b, h, n), dtype)
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    args = ", ".join(f"%a{i}" for i in range(len(types)))
    attrs = f"state_size = {n}, operandSegmentSizes = array<i32: {segments}>" + (f", {attrs}" if attrs else "")
    returned = f"%0#0, %0#1 : {y}, {st}" if return_state else f"%0#0 : {y}"
    return (
        f"func.func @f({params}) -> {'(' + y + ', ' + st + ')' if return_state else y} {{\n"
        f'  %0:2 = "rlx.selective_scan"({args}) {{{attrs}}} : ({", ".join(types)}) -> ({y}, {st})\n'
        f"  return {returned}\n"
        f"}}\n"
    )


def with_output_rounding(bound: np.ndarray, expected: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "f16":
        return bound + F16_ULP_REL * np.abs(expected) + F16_TINY
    return bound


def assert_within(actual, expected, bound, what: str = "") -> None:
    actual = np.asarray(actual, np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    error = np.abs(actual - expected)
    bad = ~(error <= bound)  # NaN counts as bad
    if bad.any():
        index = np.unravel_index(np.argmax(np.where(bad, error - bound, -np.inf)), error.shape)
        raise AssertionError(
            f"{what}: {bad.sum()} of {bad.size} elements off; worst at {index}: got {actual[index]}, "
            f"expected {expected[index]} (error {error[index]:.3g} > bound {bound[index]:.3g})"
        )


# --- selective scan --------------------------------------------------------------------------


def reference_selective_scan(x, delta, a, b_in, c):
    """Mamba's recurrence in float64, a loop over batch, time and channel.

    Error bound: each step rounds exp(delta * a) (libm-quality exp: ~2u, plus
    u |delta a| from rounding its argument), the drive delta * b * x (2u) and
    the update (2u): a local error <= (4 + |delta a|) u times the step's
    magnitude.  The decay is in (0, 1] here (a < 0, delta > 0), so errors do not
    grow: after t + 1 steps the state error is <= (t + 1)(4 + max|delta a|) u
    st_abs, where st_abs runs the same recurrence on |drive|.  The read-out adds
    n u sum_j |c_j| st_abs_j.  Returns (y, per-element bound on the f32 error).
    """
    x, delta, a, b_in, c = (np.asarray(v, np.float64) for v in (x, delta, a, b_in, c))
    batch, length, channels = x.shape
    n = a.shape[1]
    y = np.zeros((batch, length, channels))
    bound = np.zeros_like(y)
    max_da = float(np.max(np.abs(delta[..., None] * a))) if y.size else 0.0
    for bb in range(batch):
        state = np.zeros((channels, n))
        state_abs = np.zeros((channels, n))
        for t in range(length):
            for i in range(channels):
                decay = np.exp(delta[bb, t, i] * a[i, :])  # [n]
                drive = delta[bb, t, i] * b_in[bb, t, :] * x[bb, t, i]  # [n]
                state[i] = decay * state[i] + drive
                state_abs[i] = decay * state_abs[i] + np.abs(drive)
                y[bb, t, i] = np.sum(c[bb, t, :] * state[i])
                magnitude = np.sum(np.abs(c[bb, t, :]) * state_abs[i])
                bound[bb, t, i] = SAFETY * U32 * (n + (t + 1) * (4 + max_da)) * magnitude
    return y, bound


def selective_scan_inputs(rng, batch, length, channels, n, dtype):
    np_dtype = NP[dtype]
    x = rng.uniform(-1, 1, (batch, length, channels)).astype(np_dtype)
    delta = rng.uniform(0.01, 0.5, (batch, length, channels)).astype(np_dtype)  # softplus output: positive
    a = -rng.uniform(0.1, 2.0, (channels, n)).astype(np_dtype)  # -exp(A_log): negative
    b_in = rng.uniform(-1, 1, (batch, length, n)).astype(np_dtype)
    c = rng.uniform(-1, 1, (batch, length, n)).astype(np_dtype)
    return x, delta, a, b_in, c


SELECTIVE_SCAN_CASES = [
    # (batch, length, channels, state_size)
    (2, 7, 5, 4),
    (1, 1, 1, 1),  # size-1 batch, sequence, channels and state
    (3, 16, 8, 16),
    (1, 9, 33, 3),  # channel count not a multiple of a vector width
]


# f16 on two shapes: the storage conversion does not depend on the shape.
SELECTIVE_SCAN_RUNS = [(s, "f32") for s in SELECTIVE_SCAN_CASES] + [(s, "f16") for s in SELECTIVE_SCAN_CASES[:2]]


@pytest.mark.parametrize(("shape", "dtype"), SELECTIVE_SCAN_RUNS, ids=lambda v: v if isinstance(v, str) else "x".join(map(str, v)))
def test_selective_scan(shape, dtype):
    batch, length, channels, n = shape
    inputs = selective_scan_inputs(rng_for("ssm", shape, dtype), batch, length, channels, n, dtype)
    text = selective_scan_text((batch, length, channels), n, dtype)
    actual = compiled(text)(*inputs)
    assert actual.dtype == NP[dtype]
    expected, bound = reference_selective_scan(*inputs)
    assert_within(actual, expected, with_output_rounding(bound, expected, dtype), f"selective_scan {shape} {dtype}")


def test_selective_scan_long_sequence_decays():
    """256 steps with strong decay: the state stays bounded and matches the reference (no drift)."""
    inputs = selective_scan_inputs(rng_for("ssm-long"), 1, 256, 4, 8, "f32")
    text = selective_scan_text((1, 256, 4), 8, "f32")
    expected, bound = reference_selective_scan(*inputs)
    assert_within(compiled(text)(*inputs), expected, bound, "selective_scan long")


def test_selective_scan_wide_range_of_decays():
    """delta * a from about -100 (exp underflows towards subnormals) to +5 (growth), over 3 steps."""
    rng = rng_for("ssm-wide")
    x, _, _, b_in, c = selective_scan_inputs(rng, 2, 3, 6, 5, "f32")
    delta = rng.uniform(0.01, 10.0, x.shape).astype(np.float32)
    a = rng.uniform(-10.0, 0.5, (6, 5)).astype(np.float32)
    text = selective_scan_text(x.shape, 5, "f32")
    expected, bound = reference_selective_scan(x, delta, a, b_in, c)
    assert_within(compiled(text)(x, delta, a, b_in, c), expected, bound, "selective_scan wide decays")


# --- gated delta net -------------------------------------------------------------------------


def reference_gated_delta_net(q, k, v, g, beta, state=None):
    """The gated delta rule in float64: per batch and head, a loop over time, S laid out [n_v, n_k].

    Error bound: with alpha <= 1, beta in [0, 1] and unit keys, the error of S
    propagates through alpha (I - beta k k^T), whose spectral norm is <= 1, so
    the Frobenius error of S is at most the sum of the steps' local errors.  A
    step rounds S @ k (n terms), the correction and the update: local error
    <= (n + 4) u m_t, m_t = alpha ||S|| + |beta| (||v|| + alpha ||S|| ||k||) ||k||.
    The read-out S @ q / sqrt(n) adds n u ||S|| ||q|| / sqrt(n).  Returns
    (out, out bound, final state, state bound).
    """
    q, k, v, g, beta = (np.asarray(x, np.float64) for x in (q, k, v, g, beta))
    batch, length, heads, n = q.shape
    out = np.zeros((batch, length, heads, n))
    out_bound = np.zeros_like(out)
    final = np.zeros((batch, heads, n, n))
    final_bound = np.zeros_like(final)
    for bb in range(batch):
        for hh in range(heads):
            S = np.zeros((n, n)) if state is None else np.asarray(state[bb, hh], np.float64).copy()
            accumulated = 0.0  # sum of the local error magnitudes
            for t in range(length):
                alpha = np.exp(g[bb, t, hh])
                k_t, v_t, q_t, beta_t = k[bb, t, hh], v[bb, t, hh], q[bb, t, hh], beta[bb, t, hh]
                norm_s = np.linalg.norm(S)
                accumulated += (n + 4) * (
                    alpha * norm_s
                    + abs(beta_t) * (np.linalg.norm(v_t) + alpha * norm_s * np.linalg.norm(k_t)) * np.linalg.norm(k_t)
                )
                S = alpha * S
                u = beta_t * (v_t - S @ k_t)
                S = S + np.outer(u, k_t)
                out[bb, t, hh] = S @ (q_t / np.sqrt(n))
                q_norm = np.linalg.norm(q_t) / np.sqrt(n)
                out_bound[bb, t, hh] = SAFETY * U32 * (accumulated + n * np.linalg.norm(S)) * q_norm
            final[bb, hh] = S
            final_bound[bb, hh] = SAFETY * U32 * accumulated
    return out, out_bound, final, final_bound


def gated_delta_net_inputs(rng, batch, length, heads, n, dtype, with_state):
    np_dtype = NP[dtype]
    q = rng.uniform(-1, 1, (batch, length, heads, n))
    k = rng.uniform(-1, 1, (batch, length, heads, n))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)  # L2-normalised keys (the caller's job, as in the models)
    v = rng.uniform(-1, 1, (batch, length, heads, n))
    g = -rng.uniform(0.0, 0.7, (batch, length, heads))  # log-decay: alpha in (0.5, 1]
    beta = rng.uniform(0.0, 1.0, (batch, length, heads))  # sigmoid output
    inputs = [q, k, v, g, beta]
    if with_state:
        inputs.append(rng.uniform(-1, 1, (batch, heads, n, n)))
    return [x.astype(np_dtype) for x in inputs]


def gated_delta_net_text(batch, length, heads, n, dtype, with_state):
    operands = [(batch, length, heads, n)] * 3 + [(batch, length, heads)] * 2
    if with_state:
        operands.append((batch, heads, n, n))
    results = [(batch, length, heads, n), (batch, heads, n, n)]
    return module_text("gated_delta_net", operands, results, dtype, f"state_size = {n}")


GATED_DELTA_NET_CASES = [
    # (batch, length, heads, n, with initial state)
    (2, 5, 3, 4, True),
    (1, 1, 1, 8, False),  # size-1 batch, sequence and heads
    (1, 12, 2, 16, True),
    (3, 6, 1, 5, False),
]


GATED_DELTA_NET_RUNS = [(c, "f32") for c in GATED_DELTA_NET_CASES] + [(c, "f16") for c in GATED_DELTA_NET_CASES[:2]]


def _gdn_id(value) -> str:
    return value if isinstance(value, str) else "x".join(map(str, value[:4])) + ("-state" if value[4] else "")


@pytest.mark.parametrize(("case", "dtype"), GATED_DELTA_NET_RUNS, ids=_gdn_id)
def test_gated_delta_net(case, dtype):
    batch, length, heads, n, with_state = case
    inputs = gated_delta_net_inputs(rng_for("gdn", case, dtype), batch, length, heads, n, dtype, with_state)
    state_before = inputs[-1].copy() if with_state else None
    out, final = compiled(gated_delta_net_text(batch, length, heads, n, dtype, with_state))(*inputs)
    assert out.dtype == NP[dtype] and final.dtype == NP[dtype]
    expected_out, out_bound, expected_final, final_bound = reference_gated_delta_net(*inputs)
    assert_within(out, expected_out, with_output_rounding(out_bound, expected_out, dtype), f"gdn out {case} {dtype}")
    assert_within(
        final, expected_final, with_output_rounding(final_bound, expected_final, dtype), f"gdn state {case} {dtype}"
    )
    if with_state:  # the op is pure: its state operand is left alone
        np.testing.assert_array_equal(inputs[-1], state_before)


def _split(inputs, cut):
    """Per-step operands split along the sequence (axis 1) at `cut`."""
    return [x[:, :cut] for x in inputs], [x[:, cut:] for x in inputs]


@pytest.mark.parametrize("cut", [1, 3])
def test_gated_delta_net_chunks_equal_whole_sequence(cut):
    """Two calls with the first call's final state as the second's initial state equal one call."""
    batch, length, heads, n = 2, 7, 3, 8
    inputs = gated_delta_net_inputs(rng_for("gdn-chunks"), batch, length, heads, n, "f32", with_state=False)
    whole_out, whole_final = compiled(gated_delta_net_text(batch, length, heads, n, "f32", False))(*inputs)
    first, second = _split(inputs, cut)
    out1, state1 = compiled(gated_delta_net_text(batch, cut, heads, n, "f32", False))(*first)
    out2, state2 = compiled(gated_delta_net_text(batch, length - cut, heads, n, "f32", True))(*second, state1)
    expected_out, out_bound, expected_final, final_bound = reference_gated_delta_net(*inputs)
    assert_within(whole_out, expected_out, out_bound, "whole out")
    # The chunked run does the same f32 operations in the same order as the whole run.
    chunked = np.concatenate([out1, out2], axis=1)
    assert_within(chunked, whole_out.astype(np.float64), out_bound, "chunked out vs whole")
    assert_within(state2, whole_final.astype(np.float64), final_bound, "chunked final state vs whole")


CHAIN_TEXT = """
func.func @f(%q1: {s1}, %k1: {s1}, %v1: {s1}, %g1: {g1}, %b1: {g1},
             %q2: {s2}, %k2: {s2}, %v2: {s2}, %g2: {g2}, %b2: {g2}) -> ({s1}, {s2}, {st}) {{
  %0:2 = "rlx.gated_delta_net"(%q1, %k1, %v1, %g1, %b1) {{state_size = {n}}} : ({s1}, {s1}, {s1}, {g1}, {g1}) -> ({s1}, {st})
  %1:2 = "rlx.gated_delta_net"(%q2, %k2, %v2, %g2, %b2, %0#1) {{state_size = {n}}} : ({s2}, {s2}, {s2}, {g2}, {g2}, {st}) -> ({s2}, {st})
  %2 = "rlx.add"(%0#0, %0#0) : ({s1}, {s1}) -> {s1}
  return %2, %1#0, %1#1 : {s1}, {s2}, {st}
}}
"""


@pytest.mark.parametrize("plan", [True, False], ids=["lir-plan", "direct"])
def test_gated_delta_net_chained_in_one_function(plan):
    """Both chunks in one function: the first op's results are intermediates (state feeds the second op,
    out feeds an add), on the planned (LIR arena) path and on the direct path."""
    batch, length, heads, n, cut = 1, 6, 2, 4, 2
    text = CHAIN_TEXT.format(
        s1=ttype((batch, cut, heads, n), "f32"), g1=ttype((batch, cut, heads), "f32"),
        s2=ttype((batch, length - cut, heads, n), "f32"), g2=ttype((batch, length - cut, heads), "f32"),
        st=ttype((batch, heads, n, n), "f32"), n=n,
    )
    inputs = gated_delta_net_inputs(rng_for("gdn-chain"), batch, length, heads, n, "f32", with_state=False)
    first, second = _split(inputs, cut)
    doubled, out2, final = compiled(text, plan)(*first, *second)
    expected_out, out_bound, expected_final, final_bound = reference_gated_delta_net(*inputs)
    assert_within(doubled, 2 * expected_out[:, :cut], 2 * out_bound[:, :cut], "2 * first chunk out")
    assert_within(out2, expected_out[:, cut:], out_bound[:, cut:], "second chunk out")
    assert_within(final, expected_final, final_bound, "final state")


# --- causal depthwise conv1d ----------------------------------------------------------------


def reference_conv(x, weight, left_pad):
    """out[b, s, c] = sum_k w[c, 0, 0, k] xp[b, s + k, c], xp = left_pad ++ x; loops over s and k.

    Error bound: a K-term f32 sum of products, <= K u sum_k |w| |xp|.
    """
    x, weight, left_pad = (np.asarray(v, np.float64) for v in (x, weight, left_pad))
    kernel = weight.shape[-1]
    xp = np.concatenate([left_pad, x], axis=1)
    out = np.zeros(x.shape)
    magnitude = np.zeros(x.shape)
    for s in range(x.shape[1]):
        for k in range(kernel):
            out[:, s, :] += weight[:, 0, 0, k] * xp[:, s + k, :]
            magnitude[:, s, :] += np.abs(weight[:, 0, 0, k] * xp[:, s + k, :])
    return out, SAFETY * kernel * U32 * magnitude


def conv_inputs(rng, batch, length, channels, kernel, dtype):
    np_dtype = NP[dtype]
    return (
        rng.uniform(-1, 1, (batch, length, channels)).astype(np_dtype),
        rng.uniform(-1, 1, (channels, 1, 1, kernel)).astype(np_dtype),
        rng.uniform(-1, 1, (batch, kernel - 1, channels)).astype(np_dtype),
    )


def conv_text(batch, length, channels, kernel, dtype):
    operands = [(batch, length, channels), (channels, 1, 1, kernel), (batch, kernel - 1, channels)]
    return module_text("depthwise_conv1d_causal", operands, [(batch, length, channels)], dtype, f"kernel_size = {kernel}")


CONV_CASES = [
    # (batch, length, channels, kernel)
    (2, 6, 5, 4),
    (1, 1, 1, 1),  # size-1 everything, K = 1: an empty pad
    (1, 1, 3, 4),  # one step: every tap but the last reads the pad
    (3, 9, 16, 3),
]


CONV_RUNS = [(s, "f32") for s in CONV_CASES] + [(s, "f16") for s in CONV_CASES[:2]]


@pytest.mark.parametrize(("shape", "dtype"), CONV_RUNS, ids=lambda v: v if isinstance(v, str) else "x".join(map(str, v)))
def test_depthwise_conv1d_causal(shape, dtype):
    inputs = conv_inputs(rng_for("conv", shape, dtype), *shape, dtype)
    actual = compiled(conv_text(*shape, dtype))(*inputs)
    assert actual.dtype == NP[dtype]
    expected, bound = reference_conv(*inputs)
    assert_within(actual, expected, with_output_rounding(bound, expected, dtype), f"conv {shape} {dtype}")


@pytest.mark.parametrize("cut", [2, 5])
def test_depthwise_conv1d_causal_chunks_equal_whole_sequence(cut):
    """Streaming: the next chunk's pad is the last K - 1 rows of left_pad ++ chunk (cut 2 < K - 1 = 3
    keeps rows of the first pad in the second)."""
    batch, length, channels, kernel = 2, 8, 5, 4
    x, weight, pad = conv_inputs(rng_for("conv-chunks"), batch, length, channels, kernel, "f32")
    whole = compiled(conv_text(batch, length, channels, kernel, "f32"))(x, weight, pad)
    out1 = compiled(conv_text(batch, cut, channels, kernel, "f32"))(x[:, :cut], weight, pad)
    next_pad = np.ascontiguousarray(np.concatenate([pad, x[:, :cut]], axis=1)[:, -(kernel - 1):])
    out2 = compiled(conv_text(batch, length - cut, channels, kernel, "f32"))(x[:, cut:], weight, next_pad)
    expected, bound = reference_conv(x, weight, pad)
    assert_within(whole, expected, bound, "whole")
    assert_within(np.concatenate([out1, out2], axis=1), whole.astype(np.float64), bound, "chunked vs whole")


# --- the Python builders ----------------------------------------------------------------------


def test_python_builders_infer_types_and_reject_bad_shapes():
    """Build with the op classes (GatedDeltaNetOp.build infers both results), then compile and run."""
    with rlx_mlir.make_context(), ir.Location.unknown():
        f32 = ir.F32Type.get()
        T = lambda *shape: ir.RankedTensorType.get(list(shape), f32)  # noqa: E731
        qkv, gb, st = T(1, 3, 2, 4), T(1, 3, 2), T(1, 2, 4, 4)
        xs, a_type, bc, w_type, pad_type = T(1, 3, 5), T(5, 2), T(1, 3, 2), T(5, 1, 1, 3), T(1, 2, 5)
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):

            @func.FuncOp.from_py_func(qkv, qkv, qkv, gb, gb, st, xs, a_type, bc, w_type, pad_type)
            def f(q, k, v, g, beta, state, x, a, b_in, w, pad):
                gdn = rlx.GatedDeltaNetOp.build(q, k, v, g, beta, state=state, state_size=4)
                assert [r.type for r in gdn.results] == [qkv, st]
                assert gdn.state == state and gdn.state_size == 4
                assert gdn.out == gdn.results[0] and gdn.final_state == gdn.results[1]
                stateless = rlx.GatedDeltaNetOp.build(q, k, v, g, beta, state_size=4)
                assert stateless.state is None and len(stateless.operation.operands) == 5
                explicit = rlx.GatedDeltaNetOp(q, k, v, g, beta, 4, result_types=[qkv, st])
                assert [r.type for r in explicit.results] == [qkv, st]
                with pytest.raises(ValueError, match=r"'rlx.gated_delta_net' op q head dim 4 \(q \[1, 3, 2, 4\]\) differs from state_size 8"):
                    rlx.GatedDeltaNetOp.build(q, k, v, g, beta, state_size=8)
                with pytest.raises(ValueError, match=r"state has shape \[1, 3, 5\], expected \[b, hv, dv, dk\] \(state_layout v_k\) = \[1, 2, 4, 4\]"):
                    rlx.GatedDeltaNetOp.build(q, k, v, g, beta, state=x, state_size=4)

                ssm = rlx.SelectiveScanOp(x, x, a, b_in, b_in, 2)
                assert ssm.y.type == xs and ssm.final_state.type == T(1, 5, 2)
                with pytest.raises(ValueError, match=r"'rlx.selective_scan' op a has shape \[5, 2\], expected \[h, n\] = \[5, 3\]"):
                    rlx.SelectiveScanOp(x, x, a, b_in, b_in, 3)

                conv = rlx.DepthwiseConv1dCausalOp(x, w, pad, 3)
                assert conv.result.type == xs
                with pytest.raises(ValueError, match=r"'rlx.depthwise_conv1d_causal' op kernel_size must be positive, got 0"):
                    rlx.DepthwiseConv1dCausalOp(x, w, pad, 0)
                return gdn.results[0], gdn.results[1], stateless.results[1], ssm.y, conv.result

    exe = rlx_compile(module, entry="f")
    rng = rng_for("builders")
    q, k, v, g, beta, state = gated_delta_net_inputs(rng, 1, 3, 2, 4, "f32", with_state=True)
    x, delta, a, b_in, _ = selective_scan_inputs(rng, 1, 3, 5, 2, "f32")
    _, w, pad = conv_inputs(rng, 1, 3, 5, 3, "f32")
    out, final, stateless_final, ssm, conv = exe(q, k, v, g, beta, state, x, a, b_in, w, pad)
    expected_out, out_bound, expected_final, final_bound = reference_gated_delta_net(q, k, v, g, beta, state)
    assert_within(out, expected_out, out_bound, "built gdn out")
    assert_within(final, expected_final, final_bound, "built gdn state")
    _, _, expected_stateless, stateless_bound = reference_gated_delta_net(q, k, v, g, beta)
    assert_within(stateless_final, expected_stateless, stateless_bound, "built stateless gdn state")
    assert_within(ssm, *reference_selective_scan(x, x, a, b_in, b_in), "built selective scan")
    assert_within(conv, *reference_conv(x, w, pad), "built conv")
