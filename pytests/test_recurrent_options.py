"""The Mamba and Qwen3-Next options of `rlx.selective_scan` and `rlx.gated_delta_net`.

selective_scan: `d` skip, `z` gate, `delta_softplus`, an initial state and the final state (chunked
prefill then decode continuation). gated_delta_net: grouped value heads (fewer q/k heads than v heads),
dk != dv, `use_qk_l2norm`, and the Hugging Face / FLA state layout `[b, h, dk, dv]`. Every case is
compared with a float64 reference written here as plain loops over time from the op descriptions
(dialect/rlx.md), nothing taken from the lowering.
"""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir.dialects import rlx
from rlx_mlir.frontend.builder import GraphModule

RTOL, ATOL = 2e-5, 2e-6


def softplus(x):
    return np.logaddexp(0.0, x)


def silu(x):
    return x / (1.0 + np.exp(-x))


def reference_scan(x, delta, a, b_in, c, d=None, z=None, state=None, delta_softplus=False):
    x, delta, a, b_in, c = (np.asarray(v, np.float64) for v in (x, delta, a, b_in, c))
    batch, length, channels = x.shape
    n = a.shape[1]
    dt = softplus(delta) if delta_softplus else delta
    y = np.zeros((batch, length, channels))
    final = np.zeros((batch, channels, n))
    for bb in range(batch):
        st = np.zeros((channels, n)) if state is None else np.asarray(state[bb], np.float64).copy()
        for t in range(length):
            for i in range(channels):
                st[i] = np.exp(dt[bb, t, i] * a[i]) * st[i] + dt[bb, t, i] * b_in[bb, t] * x[bb, t, i]
                value = np.sum(c[bb, t] * st[i])
                if d is not None:
                    value += d[i] * x[bb, t, i]
                if z is not None:
                    value *= silu(np.float64(z[bb, t, i]))
                y[bb, t, i] = value
        final[bb] = st
    return y, final


def scan_inputs(rng, batch, length, channels, n):
    f = np.float32
    return dict(
        x=rng.uniform(-1, 1, (batch, length, channels)).astype(f),
        delta=rng.uniform(-2, 1, (batch, length, channels)).astype(f),  # raw: softplus makes it positive
        a=-rng.uniform(0.1, 2.0, (channels, n)).astype(f),
        b_in=rng.uniform(-1, 1, (batch, length, n)).astype(f),
        c=rng.uniform(-1, 1, (batch, length, n)).astype(f),
        d=rng.uniform(-1, 1, (channels,)).astype(f),
        z=rng.uniform(-3, 3, (batch, length, channels)).astype(f),
        state=rng.uniform(-1, 1, (batch, channels, n)).astype(f),
    )


def scan_graph(shape, n, optional, delta_softplus=True):
    batch, length, channels = shape
    g = GraphModule.mir("scan")
    x = g.input("x", shape)
    delta = g.input("delta", shape)
    a = g.input("a", (channels, n))
    b_in = g.input("b_in", (batch, length, n))
    c = g.input("c", (batch, length, n))
    extra = {}
    if "d" in optional:
        extra["d"] = g.input("d", (channels,))
    if "z" in optional:
        extra["z"] = g.input("z", shape)
    if "state" in optional:
        extra["state"] = g.input("state", (batch, channels, n))
    y, final = g.op(rlx.SelectiveScanOp, x, delta, a, b_in, c, state_size=n,
                    delta_softplus=True if delta_softplus else None, **extra)
    g.set_outputs([y, final])
    return g.compile()


@pytest.mark.parametrize("optional", [(), ("d",), ("z",), ("state",), ("d", "z", "state")])
def test_selective_scan_options(optional):
    rng = np.random.default_rng(len(optional) * 7 + 1)
    inputs = scan_inputs(rng, 2, 5, 3, 4)
    exe = scan_graph((2, 5, 3), 4, optional)
    args = [inputs[name] for name in ("x", "delta", "a", "b_in", "c")] + [inputs[name] for name in optional]
    y, final = exe(*args)
    want_y, want_final = reference_scan(*args[:5], **{name: inputs[name] for name in optional}, delta_softplus=True)
    np.testing.assert_allclose(y, want_y, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(final, want_final, rtol=RTOL, atol=ATOL)


def test_selective_scan_chunked_prefill_then_decode_equals_one_call():
    rng = np.random.default_rng(11)
    inputs = scan_inputs(rng, 1, 8, 6, 3)
    names = ("x", "delta", "a", "b_in", "c", "d", "z")
    whole = scan_graph((1, 8, 6), 3, ("d", "z"))
    y_all, final_all = whole(*[inputs[n] for n in names])

    def chunk(start, stop):
        return {n: (inputs[n][:, start:stop] if inputs[n].ndim == 3 else inputs[n]) for n in names}

    prefill = scan_graph((1, 5, 6), 3, ("d", "z"))
    step = scan_graph((1, 1, 6), 3, ("d", "z", "state"))
    part = chunk(0, 5)
    y_prefill, state = prefill(*[part[n] for n in names])
    ys = [y_prefill]
    for t in range(5, 8):
        part = chunk(t, t + 1)
        y_t, state = step(*[part[n] for n in names], state)
        ys.append(y_t)
    np.testing.assert_allclose(np.concatenate(ys, axis=1), y_all, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(state, final_all, rtol=RTOL, atol=ATOL)
    want_y, want_final = reference_scan(*[inputs[n] for n in names[:5]], d=inputs["d"], z=inputs["z"],
                                        delta_softplus=True)
    np.testing.assert_allclose(y_all, want_y, rtol=RTOL, atol=ATOL)


def test_selective_scan_option_shapes_are_checked():
    g = GraphModule.mir("scan")
    x = g.input("x", (1, 4, 3))
    a, bc = g.input("a", (3, 2)), g.input("bc", (1, 4, 2))
    with pytest.raises(rlx_mlir.RlxError, match=r"d has shape \[4\], expected \[h\] = \[3\]"):
        g.op(rlx.SelectiveScanOp, x, x, a, bc, bc, state_size=2, d=g.input("d", (4,)))
    with pytest.raises(rlx_mlir.RlxError, match=r"state has shape \[1, 2, 3\], expected \[b, h, n\] = \[1, 3, 2\]"):
        g.op(rlx.SelectiveScanOp, x, x, a, bc, bc, state_size=2, state=g.input("s", (1, 2, 3)))


# --- gated delta net ------------------------------------------------------------------------


def reference_gdn(q, k, v, g, beta, state=None, l2norm=False, keys_first=False):
    """Per batch and value head, S [dv, dk]; value head h reads key head h // (hv / hk)."""
    q, k, v, g, beta = (np.asarray(t, np.float64) for t in (q, k, v, g, beta))
    batch, length, key_heads, dk = q.shape
    heads, dv = v.shape[2], v.shape[3]
    group = heads // key_heads
    out = np.zeros((batch, length, heads, dv))
    final = np.zeros((batch, heads, dv, dk))
    for bb in range(batch):
        for hh in range(heads):
            if state is None:
                S = np.zeros((dv, dk))
            else:
                S = np.asarray(state[bb, hh], np.float64)
                S = S.T.copy() if keys_first else S.copy()
            for t in range(length):
                q_t, k_t = q[bb, t, hh // group], k[bb, t, hh // group]
                if l2norm:
                    q_t = q_t / np.sqrt(np.sum(q_t * q_t) + 1e-6)
                    k_t = k_t / np.sqrt(np.sum(k_t * k_t) + 1e-6)
                S = np.exp(g[bb, t, hh]) * S
                u = beta[bb, t, hh] * (v[bb, t, hh] - S @ k_t)
                S = S + np.outer(u, k_t)
                out[bb, t, hh] = S @ (q_t / np.sqrt(dk))
            final[bb, hh] = S
    return out, (final.transpose(0, 1, 3, 2) if keys_first else final)


def gdn_inputs(rng, batch, length, key_heads, heads, dk, dv, keys_first):
    f = np.float32
    state_shape = (batch, heads, dk, dv) if keys_first else (batch, heads, dv, dk)
    return [
        rng.uniform(-1, 1, (batch, length, key_heads, dk)).astype(f),
        rng.uniform(-1, 1, (batch, length, key_heads, dk)).astype(f),
        rng.uniform(-1, 1, (batch, length, heads, dv)).astype(f),
        -rng.uniform(0.0, 0.7, (batch, length, heads)).astype(f),
        rng.uniform(0.0, 1.0, (batch, length, heads)).astype(f),
        rng.uniform(-0.5, 0.5, state_shape).astype(f),
    ]


def gdn_graph(batch, length, key_heads, heads, dk, dv, l2norm, layout):
    state_shape = (batch, heads, dk, dv) if layout == "k_v" else (batch, heads, dv, dk)
    gm = GraphModule.mir("gdn")
    q, k = gm.input("q", (batch, length, key_heads, dk)), gm.input("k", (batch, length, key_heads, dk))
    v = gm.input("v", (batch, length, heads, dv))
    g, beta = gm.input("g", (batch, length, heads)), gm.input("beta", (batch, length, heads))
    state = gm.input("state", state_shape)
    out, final = gm.op(rlx.GatedDeltaNetOp, q, k, v, g, beta, state=state, state_size=dk,
                       use_qk_l2norm=True if l2norm else None, state_layout=layout)
    gm.set_outputs([out, final])
    return gm.compile()


@pytest.mark.parametrize("key_heads, heads, dk, dv, l2norm, layout", [
    (2, 4, 4, 6, True, "k_v"),   # Qwen3-Next: grouped value heads, dk != dv, in-kernel l2norm, HF layout
    (2, 4, 4, 6, False, "v_k"),
    (1, 3, 5, 2, True, "v_k"),
    (2, 2, 3, 3, True, "k_v"),
])
def test_gated_delta_net_options(key_heads, heads, dk, dv, l2norm, layout):
    rng = np.random.default_rng(heads * 13 + dk)
    args = gdn_inputs(rng, 2, 5, key_heads, heads, dk, dv, layout == "k_v")
    out, final = gdn_graph(2, 5, key_heads, heads, dk, dv, l2norm, layout)(*args)
    want_out, want_final = reference_gdn(*args, l2norm=l2norm, keys_first=layout == "k_v")
    np.testing.assert_allclose(out, want_out, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(final, want_final, rtol=RTOL, atol=ATOL)


def test_gated_delta_net_heads_must_group():
    gm = GraphModule.mir("gdn")
    q = gm.input("q", (1, 2, 2, 4))
    v = gm.input("v", (1, 2, 3, 4))
    g = gm.input("g", (1, 2, 3))
    with pytest.raises(rlx_mlir.RlxError, match="v has 3 heads, not a multiple of the 2 heads of q and k"):
        gm.op(rlx.GatedDeltaNetOp, q, q, v, g, g, state_size=4)
