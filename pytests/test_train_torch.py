"""The 2-layer Llama's gradient with respect to every weight against PyTorch autograd on the same
weights (float64, the model written here with torch's own ops: F.rms_norm, scaled-dot-product
attention, F.silu, F.cross_entropy); skipped with a message when torch is not installed.
test_train checks the same gradient against finite differences on sampled coordinates always."""

from __future__ import annotations

import numpy as np
import pytest
from test_train import SMALL, _llama_loss

from rlx_mlir.models.llama import LlamaConfig, random_weights

torch = pytest.importorskip("torch", reason="PyTorch is not installed: the autograd comparison is skipped "
                                            "(pip install torch, in the bench extra)")


def torch_llama_loss(w: dict, tokens, labels, c: LlamaConfig):
    """Mean next-token cross-entropy of the Llama of rlx_mlir.models.llama (weights `[in, out]`,
    pre-norm RMSNorm, NeoX rotate-half RoPE, causal GQA attention, SwiGLU), in torch."""
    F = torch.nn.functional
    b, s = tokens.shape
    x = w["embed"][tokens]  # [B, S, D]
    inverse = c.rope_theta ** (-torch.arange(0, c.head_dim, 2, dtype=torch.float64) / c.head_dim)
    angles = torch.outer(torch.arange(s, dtype=torch.float64), inverse)
    cos, sin = torch.cos(angles), torch.sin(angles)  # [S, hd / 2]

    def rope(t):  # [B, H, S, hd]
        first, second = t[..., : c.head_dim // 2], t[..., c.head_dim // 2:]
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)

    def heads(t, n):
        return t.view(b, s, n, c.head_dim).transpose(1, 2)

    for i in range(c.layers):
        p = f"layers.{i}."
        n1 = F.rms_norm(x, (c.hidden,), w[p + "ln1"], eps=c.eps)
        q, k, v = rope(heads(n1 @ w[p + "q"], c.heads)), rope(heads(n1 @ w[p + "k"], c.kv_heads)), heads(n1 @ w[p + "v"], c.kv_heads)
        group = c.heads // c.kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + attn.transpose(1, 2).reshape(b, s, c.heads * c.head_dim) @ w[p + "o"]
        n2 = F.rms_norm(x, (c.hidden,), w[p + "ln2"], eps=c.eps)
        x = x + (F.silu(n2 @ w[p + "gate"]) * (n2 @ w[p + "up"])) @ w[p + "down"]
    logits = F.rms_norm(x, (c.hidden,), w["norm"], eps=c.eps) @ w["lm_head"]
    return F.cross_entropy(logits.reshape(b * s, -1), labels.reshape(-1))


def test_llama_gradient_of_every_weight_matches_pytorch_autograd():
    c = SMALL
    rng = np.random.default_rng(7)
    weights = random_weights(c, seed=4)
    tokens = rng.integers(0, c.vocab, (c.batch, c.seq))
    labels = rng.integers(0, c.vocab, (c.batch, c.seq))
    g = _llama_loss(c).lower()
    (loss,) = g.reopen()
    names = list(weights)
    grads = g.grad(loss, [g.argument(n) for n in names])
    g.set_outputs([loss, *grads])
    out = g.compile()(tokens=tokens, labels=labels, **weights)

    params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in weights.items()}
    reference = torch_llama_loss(params, torch.tensor(tokens), torch.tensor(labels), c)
    reference.backward()
    assert out[0] == pytest.approx(reference.item(), rel=1e-5)
    assert len(names) == 2 + 9 * c.layers + 1  # embed, per layer 9, the final norm, lm_head
    for name, grad in zip(names, out[1:]):
        expected = params[name].grad.numpy()
        scale = float(np.abs(expected).max())
        np.testing.assert_allclose(grad, expected, rtol=1e-3, atol=1e-4 * scale, err_msg=name)
