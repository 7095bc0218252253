"""Optimiser updates as MIR ops: SGD with momentum and AdamW (PyTorch's formulas).

An optimiser names the state it keeps per parameter (`state`), builds what every
parameter's update shares once (`prepare(emit, step)`), and builds the update
`(shared, param, grad, states) -> (new param, new states)` with an `Emitter`
(`transforms.autodiff.emit`), inside the compiled training step.  Hyperparameters
are compile-time constants; `step` (1, 2, ...) is a rank-0 f32 input of the step.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..dialects import rlx
from ..transforms.autodiff.emit import Emitter


@dataclass(frozen=True)
class SGD:
    """`v = momentum v + g (+ weight_decay p)`, `p -= lr v` (torch.optim.SGD, dampening 0)."""

    lr: float = 1e-2
    momentum: float = 0.9
    weight_decay: float = 0.0

    state = ("velocity",)

    def prepare(self, emit: Emitter, step: ir.Value) -> tuple:
        return ()

    def update(self, emit: Emitter, shared: tuple, p: ir.Value, g: ir.Value, states):
        (v,) = states
        if self.weight_decay:
            g = emit.add(g, emit.scale(p, self.weight_decay))
        v = emit.add(emit.scale(v, self.momentum), g)
        return emit.sub(p, emit.scale(v, self.lr)), [v]


@dataclass(frozen=True)
class AdamW:
    """torch.optim.AdamW: `p *= 1 - lr wd`; `m = b1 m + (1-b1) g`; `v = b2 v + (1-b2) g^2`;
    `p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)`."""

    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 1e-2

    state = ("m", "v")

    def prepare(self, emit: Emitter, step: ir.Value) -> tuple:
        """The bias corrections `1 - beta^t`, shared by every parameter."""
        one = emit.scalar(1.0, step)
        correction1 = emit.sub(one, emit.binary(rlx.PowOp, emit.scalar(self.beta1, step), step))
        correction2 = emit.sub(one, emit.binary(rlx.PowOp, emit.scalar(self.beta2, step), step))
        return correction1, correction2

    def update(self, emit: Emitter, shared: tuple, p: ir.Value, g: ir.Value, states):
        m, v = states
        correction1, correction2 = shared
        m = emit.add(emit.scale(m, self.beta1), emit.scale(g, 1.0 - self.beta1))
        v = emit.add(emit.scale(v, self.beta2), emit.scale(emit.mul(g, g), 1.0 - self.beta2))
        m_hat = emit.div(m, correction1)
        v_hat = emit.div(v, correction2)
        decayed = emit.scale(p, 1.0 - self.lr * self.weight_decay) if self.weight_decay else p
        denominator = emit.add(emit.unary(rlx.SqrtOp, v_hat), emit.scalar(self.eps, p))
        return emit.sub(decayed, emit.scale(emit.div(m_hat, denominator), self.lr)), [m, v]
