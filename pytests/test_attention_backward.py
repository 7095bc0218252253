"""Attention's VJP (transforms/autodiff/rules_attention.py) against a plain float64 numpy backward.

The reference is written from rlx.attention's documented semantics (dialect/rlx.md): per batch and
query head `h` (kv head `h // (H / Hkv)`), `S = scale q k^T`, soft-capped `c tanh(S / c)`, the bias
added, hidden keys at -inf, `P = softmax(S)` (a row that sees no key: P = 0), `O = P V`.  Its
backward is the textbook one, computed per head with every `[Sq, Sk]` matrix explicit:

    dP = dO V^T,  dS = P * (dP - rowsum(P * dP)),  d bias = dS,  through the cap dS *= 1 - tanh^2,
    dQ = scale dS K,  dK = scale dS^T Q  (summed over the query heads of a kv head),  dV = P^T dO.

Each case compiles `value_and_grad(sum(attention(q, k, v) * R))` and compares the gradients with
the reference's for the same R: causal and not, grouped-query heads, sliding windows, padding
masks with a row that sees no key, biases, soft-capping, and lengths that are no multiple of the
tiled forward's blocks (a tail block) or long enough to be tiled.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlx_mlir import GraphModule
from rlx_mlir.dialects import rlx


def _visible(kind, sq, sk, window, mask_row):
    i, j = np.arange(sq)[:, None], np.arange(sk)[None, :]
    offset = sk - sq
    if kind in ("causal", "sliding_window"):
        visible = j <= i + offset
        if kind == "sliding_window":
            visible &= j > i + offset - window
        return visible
    if kind == "custom":
        return np.broadcast_to(mask_row[None, :] != 0, (sq, sk))
    return np.ones((sq, sk), bool)


def reference(q, k, v, mask, d_out, *, h, d, kind, window=None, scale=None, softcap=None):
    """(out, dq, dk, dv, d_mask) of rlx.attention in float64, every head's matrices explicit."""
    b, sq, _ = q.shape
    sk = k.shape[1]
    hkv = k.shape[2] // d
    groups = h // hkv
    scale = 1 / math.sqrt(d) if scale is None else scale
    out, dq, dk, dv = (np.zeros_like(a) for a in (q, q, k, v))
    d_mask = np.zeros_like(mask) if kind == "bias" else None
    for bi in range(b):
        for hi in range(h):
            qs, kv = slice(hi * d, (hi + 1) * d), slice((hi // groups) * d, (hi // groups + 1) * d)
            qh, kh, vh, doh = q[bi, :, qs], k[bi, :, kv], v[bi, :, kv], d_out[bi, :, qs]
            raw = qh @ kh.T * scale
            s = softcap * np.tanh(raw / softcap) if softcap is not None else raw
            if kind == "bias":
                s = s + mask[bi, hi]
            visible = _visible(kind, sq, sk, window, mask[bi] if kind == "custom" else None)
            s = np.where(visible, s, -np.inf)
            p = np.zeros((sq, sk))
            for row in range(sq):
                if visible[row].any() and np.isfinite(s[row]).any():
                    e = np.exp(s[row] - s[row].max())
                    p[row] = e / e.sum()
            out[bi, :, qs] = p @ vh
            dp = doh @ vh.T
            ds = p * (dp - np.sum(p * dp, axis=1, keepdims=True))
            if kind == "bias":
                d_mask[bi, hi] = ds
            if softcap is not None:
                ds = ds * (1 - np.tanh(raw / softcap) ** 2)
            dq[bi, :, qs] = scale * ds @ kh
            dk[bi, :, kv] += scale * ds.T @ qh
            dv[bi, :, kv] += p.T @ doh
    return out, dq, dk, dv, d_mask


CASES = {
    # name: (b, h, hkv, d, sq, sk, kind, extra)
    "none": (2, 2, 2, 4, 5, 7, "none", {}),
    "causal": (1, 4, 4, 8, 6, 6, "causal", {}),
    "causal_more_keys": (1, 2, 2, 4, 3, 7, "causal", {}),
    "causal_rows_without_keys": (1, 2, 1, 4, 6, 3, "causal", {}),
    "causal_gqa": (2, 4, 2, 4, 5, 5, "causal", {}),
    "multi_query": (1, 4, 1, 4, 4, 6, "none", {}),
    "sliding_window": (1, 2, 1, 4, 7, 7, "sliding_window", {"window": 3}),
    "custom": (2, 2, 2, 4, 4, 5, "custom", {}),
    "bias_softcap_scale": (1, 4, 2, 4, 3, 5, "bias", {"softcap": 2.0, "score_scale": 0.7}),
    # tiled forward (blocks of up to 64 rows), a tail: 80 = 64 + 16 is no multiple of 64
    "causal_gqa_tiled": (1, 4, 2, 16, 80, 80, "causal", {}),
    "none_tiled": (1, 2, 2, 8, 64, 96, "none", {}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_attention_gradients_match_a_numpy_backward(name):
    b, h, hkv, d, sq, sk, kind, extra = CASES[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    q = rng.standard_normal((b, sq, h * d))
    k = rng.standard_normal((b, sk, hkv * d))
    v = rng.standard_normal((b, sk, hkv * d))
    weights = rng.standard_normal((b, sq, h * d))
    mask = None
    if kind == "custom":
        mask = (rng.uniform(0, 1, (b, sk)) < 0.6).astype(np.float64)
        mask[0] = 0.0  # batch 0: every key masked, every row sees none
        mask[-1, 0] = 1.0
    if kind == "bias":
        mask = rng.standard_normal((b, h, sq, sk))

    g = GraphModule.mir("f")
    args = [g.input("q", q.shape), g.input("k", k.shape), g.input("v", v.shape)]
    if mask is not None:
        args.append(g.input("mask", mask.shape))
    out = g.op(rlx.AttentionOp, *args[:3], mask=args[3] if mask is not None else None, num_heads=h, head_dim=d,
               mask_kind=kind, **extra)
    loss = g.op(rlx.ReduceOp, out * g.input("r", weights.shape), kind="sum", axes=[0, 1, 2])
    wrt = args if kind == "bias" else args[:3]
    value, grads = g.value_and_grad(loss, wrt)
    g.set_outputs([value, *grads])
    feed = {"q": q, "k": k, "v": v, "r": weights, **({"mask": mask} if mask is not None else {})}
    results = g.compile()(**{n: a.astype(np.float32) for n, a in feed.items()})

    want_out, *want = reference(q, k, v, mask, weights, h=h, d=d, kind=kind, window=extra.get("window"),
                                scale=extra.get("score_scale"), softcap=extra.get("softcap"))
    np.testing.assert_allclose(results[0], np.sum(want_out * weights), rtol=1e-4, atol=1e-3)
    for label, got, expected in zip(("dq", "dk", "dv", "d mask"), results[1:], want):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(expected).max()),
                                   err_msg=f"{name}: {label}")
    if kind == "custom":  # no key visible in batch 0: nothing flows back there
        assert not np.any(results[1][0]) and not np.any(results[2][0]) and not np.any(results[3][0])
