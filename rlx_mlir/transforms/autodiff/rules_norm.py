"""VJP rules of the norms (RMS, layer, their fused residual forms) and fused SwiGLU.

The statistics are recomputed from the forward op's input (the op keeps none);
the formulas are the closed forms, per position along the normalised axis `a`
with `n` its size and `g = dy * gamma`:

    rms:   r = 1 / sqrt(mean(x^2) + eps),   xhat = x r
           dx = r (g - xhat mean(g xhat))
    layer: r = 1 / sqrt(var + eps),          xhat = (x - mean(x)) r
           dx = r (g - mean(g) - xhat mean(g xhat))
    dgamma = sum(dy xhat) over every other axis,   dbeta = sum(dy) likewise.
"""

from __future__ import annotations

from ...dialects import rlx
from ...ir.shapes import shape_of
from .emit import Emitter
from .rules_elementwise import activation_derivative


def norm_cotangents(emit: Emitter, layer: bool, x, gamma, eps: float, axis: int, dy):
    """(dx, dgamma, dbeta) of rms_norm (layer=False) or layer_norm over `axis` of `x`."""
    shape = shape_of(x.type)
    rank = len(shape)
    centred = x
    if layer:
        centred = emit.sub(x, emit.reduce(x, "mean", [axis], keep_dim=True))
    statistic = emit.reduce(emit.mul(centred, centred), "mean", [axis], keep_dim=True)
    r = emit.unary(rlx.RsqrtOp, emit.add(statistic, emit.scalar(eps, x)))
    xhat = emit.mul(centred, r)
    g = emit.mul(dy, emit.broadcast_along(gamma, axis, rank))
    inner = emit.mul(xhat, emit.reduce(emit.mul(g, xhat), "mean", [axis], keep_dim=True))
    shifted = emit.sub(g, inner)
    if layer:
        shifted = emit.sub(shifted, emit.reduce(g, "mean", [axis], keep_dim=True))
    dx = emit.mul(r, shifted)
    others = [d for d in range(rank) if d != axis]
    d_gamma = emit.reshape(emit.sum(emit.mul(dy, xhat), others), shape_of(gamma.type))
    d_beta = emit.reshape(emit.sum(dy, others), shape_of(gamma.type))
    return dx, d_gamma, d_beta


def _axis_norm(layer: bool):
    def rule(emit, op, cts):
        (dy,) = cts
        axis = op.axis % len(shape_of(op.x.type))
        dx, d_gamma, d_beta = norm_cotangents(emit, layer, op.x, op.gamma, float(op.eps), axis, dy)
        return [(op.x, dx), (op.gamma, d_gamma), (op.beta, d_beta)]

    return rule


def _residual_norm(layer: bool):
    # h = x + residual (+ bias), y = norm(h) over the last axis: dx = dresidual = dh.
    def rule(emit, op, cts):
        (dy,) = cts
        h = emit.add(op.x, op.residual)
        if op.bias is not None:
            h = emit.add(h, op.bias)
        rank = len(shape_of(h.type))
        dh, d_gamma, d_beta = norm_cotangents(emit, layer, h, op.gamma, float(op.eps), rank - 1, dy)
        pairs = [(op.x, dh), (op.residual, dh), (op.gamma, d_gamma), (op.beta, d_beta)]
        if op.bias is not None:
            pairs.append((op.bias, emit.sum(dh, list(range(rank - 1)))))
        return pairs

    return rule


def _fused_swiglu(emit, op, cts):
    # y = up * silu(gate), input = [up | gate] along the last axis.
    (dy,) = cts
    x = op.input
    rank = len(shape_of(x.type))
    n = shape_of(op.result.type)[-1]
    up, gate = emit.narrow(x, rank - 1, 0, n), emit.narrow(x, rank - 1, n, n)
    silu = emit.unary(rlx.SiluOp, gate)
    d_up = emit.mul(dy, silu)
    d_gate = emit.mul(emit.mul(dy, up), activation_derivative(emit, "silu", gate, silu))
    return [(x, emit.concat([d_up, d_gate], rank - 1))]


RULES = {
    rlx.RmsNormOp: _axis_norm(False),
    rlx.LayerNormOp: _axis_norm(True),
    rlx.FusedResidualRmsNormOp: _residual_norm(False),
    rlx.FusedResidualLayerNormOp: _residual_norm(True),
    rlx.FusedSwigluOp: _fused_swiglu,
}
