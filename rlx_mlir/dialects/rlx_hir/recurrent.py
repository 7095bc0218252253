"""Recurrent blocks: gated DeltaNet linear attention, with and without a carried state."""

from __future__ import annotations

from mlir import ir

from ...dsl import FloatTensor, Pure, operand, same_as
from ..rlx import recurrent as mir_recurrent
from .dialect import RlxHir

__all__ = ["GatedDeltaNetOp", "GatedDeltaNetCarryOp"]

_MIR = mir_recurrent.GatedDeltaNetOp  # the MIR op both blocks expand to


class GatedDeltaNetOp(RlxHir.Operation, name="gated_delta_net", traits=[Pure]):
    """Gated DeltaNet linear attention over a sequence, the state starting at zero.

    Exactly the read-outs of `rlx.gated_delta_net` without a `state` operand
    (see it for the recurrence): `q`, `k`, `v` are `[b, s, h, n]`
    (`n = state_size`), `g` (the log-decay, `alpha = exp(g)`) and `beta`
    (the delta-rule write strength) `[b, s, h]`; per batch and head an
    `n x n` state starts at zeros, and the result `out[b, t, h, :]` is the
    updated state times `q_t / sqrt(n)`.  The final state is dropped (use
    `rlx_hir.gated_delta_net_carry` to keep it).  This is RLX's
    `HirOp::GatedDeltaNet` (reset-per-batch form).

    Expansion (both policies; RLX lowers to `Op::GatedDeltaNet`): one
    `rlx.gated_delta_net` without `state`, its `out` result replacing the
    block (its `final_state` result is unused).
    """

    q = same_as(_MIR.q, doc="queries, `[b, s, h, n]` (scaled by `1 / sqrt(n)` inside)")
    k = same_as(_MIR.k)
    v = same_as(_MIR.v)
    g = same_as(_MIR.g, doc="log-decay per step and head, `[b, s, h]`")
    beta = same_as(_MIR.beta, doc="write strength per step and head, `[b, s, h]`")
    state_size = same_as(_MIR.state_size)
    result = same_as(_MIR.out, doc="the read-outs, `[b, s, h, n]`")

    @classmethod
    def infer_result_type(
        cls, q: ir.Type, k: ir.Type, v: ir.Type, g: ir.Type, beta: ir.Type, state_size: int
    ) -> ir.Type:
        return mir_recurrent.GatedDeltaNetOp.infer_result_types(q, k, v, g, beta, None, state_size)[0]


class GatedDeltaNetCarryOp(RlxHir.Operation, name="gated_delta_net_carry", traits=[Pure]):
    """Gated DeltaNet linear attention continuing from a carried state (streaming / decode).

    Exactly `rlx.gated_delta_net` with its `state` operand: `q`, `k`, `v`
    are `[b, s, h, n]` (`n = state_size`), `g` and `beta` `[b, s, h]`,
    `state` `[b, h, n, n]` (layout `[n_v, n_k]`, zeros at the start of a
    stream).  Results: `out` `[b, s, h, n]` and `new_state` `[b, h, n, n]`,
    the state after the last step, to pass as the next chunk's `state`;
    chunks chained that way give the outputs of one pass over the whole
    sequence.  This is RLX's carry-state `HirOp::GatedDeltaNet`.

    Expansion (both policies; RLX lowers to `Op::GatedDeltaNet`): one
    `rlx.gated_delta_net` with `state`, whose two results replace the
    block's.  The builder `GatedDeltaNetCarryOp(q, k, v, g, beta, state,
    state_size, result_types=[...])` takes the result types;
    `GatedDeltaNetCarryOp.build(q, k, v, g, beta, state, state_size=n)`
    infers them.
    """

    q = same_as(GatedDeltaNetOp.q)
    k = same_as(GatedDeltaNetOp.k)
    v = same_as(GatedDeltaNetOp.v)
    g = same_as(GatedDeltaNetOp.g)
    beta = same_as(GatedDeltaNetOp.beta)
    state = operand(FloatTensor, "the carried state, `[b, h, n, n]`, layout `[n_v, n_k]`")  # required here: optional in MIR
    state_size = same_as(_MIR.state_size)
    out = same_as(GatedDeltaNetOp.result)
    new_state = same_as(_MIR.final_state, doc="the state after the last step, `[b, h, n, n]`")

    @classmethod
    def infer_result_types(
        cls, q: ir.Type, k: ir.Type, v: ir.Type, g: ir.Type, beta: ir.Type, state: ir.Type, state_size: int
    ) -> list[ir.Type]:
        return mir_recurrent.GatedDeltaNetOp.infer_result_types(q, k, v, g, beta, state, state_size)

    @classmethod
    def build(cls, q, k, v, g, beta, state, *, state_size: int, loc=None, ip=None) -> "GatedDeltaNetCarryOp":
        """Builds the op with both result types inferred (ValueError when the operands do not fit)."""
        return cls(q, k, v, g, beta, state, state_size, loc=loc, ip=ip)
