"""`rlx_hir.moe_ffn` under both policies against a per-token float64 numpy loop written from its
description in `dialect/rlx_hir.md`: router probabilities, the k best experts (ties to the lower
expert id), their weights (normalised or not), each chosen expert's SwiGLU, the shared expert and
its sigmoid gate.  Cases: ties in the router, an expert no token chooses, E = 1, k = E, sigmoid
scoring, and the `direct` expansion's IR (no expert runs on every token).
"""

from __future__ import annotations

import numpy as np
import pytest

from rlx_mlir import GraphModule
from rlx_mlir.frontend.builder import BuildError

POLICIES = ("direct", "fusable")


def silu(v):
    return v / (1.0 + np.exp(-v))


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def moe_reference(p, top_k, scoring="softmax", normalize=False):
    """Per token: scores, the k best experts, the weighted sum of their SwiGLUs, the shared expert."""
    x = p["x"].astype(np.float64)
    d = x.shape[-1]
    rows = x.reshape(-1, d)
    experts = p["router"].shape[1]
    out = np.zeros_like(rows)
    for t, row in enumerate(rows):
        logits = row @ p["router"].astype(np.float64)
        if scoring == "softmax":
            scores = np.exp(logits - logits.max())
            scores /= scores.sum()
        else:
            scores = sigmoid(logits)
        ranked = sorted(range(experts), key=lambda e: (-scores[e], e))[:top_k]  # equal scores: lower id first
        weights = np.array([scores[e] for e in ranked])
        if normalize:
            weights /= weights.sum()
        for e, weight in zip(ranked, weights):
            hidden = silu(row @ p["gate"][e]) * (row @ p["up"][e])
            out[t] += weight * (hidden @ p["down"][e])
        if "shared_gate" in p:
            shared = (silu(row @ p["shared_gate"]) * (row @ p["shared_up"])) @ p["shared_down"]
            if "shared_expert_gate" in p:
                shared *= sigmoid(row @ p["shared_expert_gate"])[0]
            out[t] += shared
    return out.reshape(x.shape)


def random_params(rng, shape, experts, hidden, shared=0, gated=False):
    d = shape[-1]

    def normal(*s, scale=1.0):
        return (rng.standard_normal(s) * scale).astype(np.float32)

    p = {
        "x": normal(*shape),
        "router": normal(d, experts),
        "gate": normal(experts, d, hidden, scale=d**-0.5),
        "up": normal(experts, d, hidden, scale=d**-0.5),
        "down": normal(experts, hidden, d, scale=hidden**-0.5),
    }
    if shared:
        p.update(shared_gate=normal(d, shared, scale=d**-0.5), shared_up=normal(d, shared, scale=d**-0.5),
                 shared_down=normal(shared, d, scale=shared**-0.5))
    if gated:
        p["shared_expert_gate"] = normal(d, 1)
    return p


def run_moe(p, policy, **attrs):
    g = GraphModule.hir("moe", policy=policy)
    tensors = {name: (g.input if name == "x" else g.param)(name, value.shape) for name, value in p.items()}
    shared = {name: tensors[name] for name in ("shared_gate", "shared_up", "shared_down", "shared_expert_gate") if name in p}
    out = g.moe_ffn(
        tensors["x"], tensors["router"], tensors["gate"], tensors["up"], tensors["down"],
        shared_gate_w=shared.get("shared_gate"), shared_up_w=shared.get("shared_up"),
        shared_down_w=shared.get("shared_down"), shared_expert_gate=shared.get("shared_expert_gate"), **attrs,
    )
    g.set_outputs(out)
    return g.compile()(**p)


def check(p, policy, **attrs):
    got = run_moe(p, policy, **attrs)
    want = moe_reference(p, attrs["top_k"], attrs.get("scoring", "softmax"), attrs.get("normalize", False))
    assert got.shape == want.shape
    assert np.allclose(got, want, rtol=1e-4, atol=1e-4), np.abs(got - want).max()


CASES = {
    # name: (x shape, E, F, attributes, shared size, shared gate)
    "mixtral-like": ((2, 5, 32), 8, 48, {"top_k": 2, "normalize": True}, 0, False),
    "qwen2-moe-like, shared expert and gate": ((7, 32), 6, 24, {"top_k": 2}, 40, True),
    "shared expert without gate": ((4, 16), 4, 16, {"top_k": 1}, 8, False),
    "sigmoid scoring": ((9, 16), 5, 20, {"top_k": 3, "scoring": "sigmoid", "normalize": True}, 0, False),
    "one expert": ((5, 16), 1, 24, {"top_k": 1}, 0, False),
    "k = E": ((6, 16), 3, 8, {"top_k": 3}, 0, False),
    "k = E normalised": ((6, 16), 4, 8, {"top_k": 4, "normalize": True}, 0, False),
    "many tokens": ((130, 32), 4, 40, {"top_k": 2}, 0, False),
}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", list(CASES))
def test_moe_ffn_matches_per_token_loop(case, policy):
    shape, experts, hidden, attrs, shared, gated = CASES[case]
    p = random_params(np.random.default_rng(sorted(CASES).index(case)), shape, experts, hidden, shared, gated)
    check(p, policy, **attrs)


@pytest.mark.parametrize("policy", POLICIES)
def test_router_ties_go_to_the_lower_expert(policy):
    """Experts 1, 2 and 4 have the same router column: every token scores them equally, and the
    top 2 must be the lower ids among the tied (expert 3 has a column of zeros, expert 0 its own)."""
    p = random_params(np.random.default_rng(7), (8, 16), 5, 12)
    p["router"][:, 2] = p["router"][:, 1]
    p["router"][:, 4] = p["router"][:, 1]
    p["router"][:, 3] = 0.0
    check(p, policy, top_k=2)
    check(p, policy, top_k=2, normalize=True)


@pytest.mark.parametrize("policy", POLICIES)
def test_an_expert_no_token_chooses(policy):
    """Expert 2's router column is very negative for every token (positive inputs): it gets no rows,
    and its (huge) weights must not reach the output."""
    p = random_params(np.random.default_rng(11), (10, 16), 4, 12)
    p["x"] = np.abs(p["x"]) + 0.1
    p["router"][:, 2] = -50.0
    p["gate"][2] = 1e6
    check(p, policy, top_k=2)


def test_every_token_one_expert():
    """All tokens pick expert 0 first (its column dominates): one expert holds every row of the
    first choice, several row tiles of it."""
    p = random_params(np.random.default_rng(5), (40, 16), 3, 16)
    p["x"] = np.abs(p["x"]) + 0.1
    p["router"][:, 0] = 30.0
    check(p, "direct", top_k=2)


def test_direct_expansion_runs_grouped_matmuls_not_every_expert():
    g = GraphModule.hir("moe", policy="direct")
    x = g.input("x", (6, 16))
    out = g.moe_ffn(x, g.param("r", (16, 4)), g.param("g", (4, 16, 8)), g.param("u", (4, 16, 8)), g.param("d", (4, 8, 16)), top_k=2)
    g.set_outputs(out)
    g.lower()
    text = str(g)
    assert text.count('"rlx.grouped_matmul"') == 3 and text.count('"rlx.scatter_add"') == 1
    assert '"rlx.matmul"(%' in text  # the router only
    assert "tensor<4x6x8xf32>" not in text  # no [E, T, F] product of every expert with every token


def test_bad_shapes_are_build_errors():
    g = GraphModule.hir("moe")
    x, r = g.input("x", (6, 16)), g.param("r", (16, 4))
    gw, uw, dw = g.param("g", (4, 16, 8)), g.param("u", (4, 16, 8)), g.param("d", (4, 8, 16))
    with pytest.raises(BuildError, match=r"top_k 5 is larger than the number of experts E = 4"):
        g.moe_ffn(x, r, gw, uw, dw, top_k=5)
    with pytest.raises(BuildError, match=r"gate_w \[3, 16, 8\] must be \[E, D, F\] with E = 4"):
        g.moe_ffn(x, r, g.param("g3", (3, 16, 8)), uw, dw, top_k=2)
    with pytest.raises(BuildError, match=r"down_w must have shape \[E, F, D\] = \[4, 8, 16\], got \[4, 16, 8\]"):
        g.moe_ffn(x, r, gw, uw, g.param("d2", (4, 16, 8)), top_k=2)
    with pytest.raises(BuildError, match="a shared expert needs all of shared_gate_w, shared_up_w and shared_down_w"):
        g.moe_ffn(x, r, gw, uw, dw, top_k=2, shared_gate_w=g.param("sg", (16, 4)))
    with pytest.raises(BuildError, match="attribute 'scoring' must be one of 'softmax', 'sigmoid'"):
        g.moe_ffn(x, r, gw, uw, dw, top_k=2, scoring="relu")


def test_packed_expert_stacks_are_checked_against_their_scheme():
    g = GraphModule.hir("moe")
    x, r = g.input("x", (6, 32)), g.param("r", (32, 4))
    gw, uw, dw = g.param("g", (4, 32, 64)), g.param("u", (4, 32, 64)), g.param("d", (4, 64, 32))
    with pytest.raises(BuildError, match=r"gate_w is f32, but gate_scheme is 'q8_0': a packed \(ui8\) stack takes a scheme"):
        g.moe_ffn(x, r, gw, uw, dw, top_k=2, gate_scheme="q8_0")
    with pytest.raises(BuildError, match=r"up_w is ui8, but up_scheme is absent"):
        g.moe_ffn(x, r, gw, g.param("uq", (4, 64, 34), "u8"), dw, top_k=2)
    with pytest.raises(BuildError, match=r"scheme 'q4_0' needs 36 bytes per weight row for K = 64 \(2 blocks of 18 bytes\), but w has 34"):
        g.moe_ffn(x, r, gw, uw, g.param("dq", (4, 32, 34), "u8"), top_k=2, down_scheme="q4_0")
    with pytest.raises(BuildError, match=r"attribute 'gate_scheme' must be one of 'q4_0'"):
        g.moe_ffn(x, r, g.param("gq", (4, 64, 34), "u8"), uw, dw, top_k=2, gate_scheme="int8/32")
