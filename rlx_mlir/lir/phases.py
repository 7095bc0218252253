"""Streaming phases of a scheduled MIR function (RLX's `phase.rs`, catalogue §6.3).

A streaming forward pass is split into three phases, ordered 0 < 1 < 2:

  ``prologue``  one-time setup (in RLX: Input / Param / Constant nodes)
  ``steady``    the per-token loop body (RLX's ``SteadyState``)
  ``epilogue``  final projection, sampling, detokenisation

`derive_phases` reproduces RLX's `derive_phases`, a purely *positional* heuristic over the
schedule, given the ops' names in schedule order (e.g. ``"rlx.matmul"``):

1. leaves (``rlx.constant``; RLX's Input / Param are function arguments here, not ops)
   → ``prologue``;
2. ``rlx.sample`` / ``rlx.topk`` → ``epilogue``;
3. any other op → ``epilogue`` if it comes after the last sample/topk, or after the last
   *compute* op (matmul-like ops and attention, `COMPUTE_OPS`); otherwise ``steady``. With neither
   a sample/topk nor a compute op, every such op is ``steady``.

So, as in RLX and despite its documentation, embeddings and prefill land in ``steady``, and a
leaf stays in ``prologue`` wherever it is scheduled. `COMPUTE_OPS` lists RLX's full set of compute
ops by their MIR names; those the dialect does not define yet simply never occur.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "COMPUTE_OPS",
    "EPILOGUE",
    "LEAF_OPS",
    "PHASES",
    "PROLOGUE",
    "SAMPLE_OPS",
    "STEADY",
    "derive_phases",
    "ops_in_phase",
    "phase_order",
]

PROLOGUE = "prologue"
STEADY = "steady"
EPILOGUE = "epilogue"
PHASES = (PROLOGUE, STEADY, EPILOGUE)

LEAF_OPS = frozenset({"rlx.constant"})
SAMPLE_OPS = frozenset({"rlx.sample", "rlx.topk"})
COMPUTE_OPS = frozenset(
    {
        "rlx.matmul",
        "rlx.fused_matmul_bias_act",
        "rlx.attention",
        "rlx.dot_general",
        # RLX's other compute ops, under the names they would get in the rlx dialect
        "rlx.fused_attention_block",
        "rlx.fused_transformer_layer",
        "rlx.grouped_matmul",
        "rlx.dequant_grouped_matmul",
        "rlx.dequant_moe_weights",
        "rlx.lora_matmul",
        "rlx.dequant_matmul",
        "rlx.gated_delta_net",
    }
)


def phase_order(phase: str) -> int:
    """0 for prologue, 1 for steady, 2 for epilogue (RLX's `Phase::order`)."""
    try:
        return PHASES.index(phase)
    except ValueError:
        raise ValueError(f"unknown phase {phase!r}; expected one of {', '.join(PHASES)}") from None


def derive_phases(op_names: Sequence[str]) -> list[str]:
    """The phase of each op of a schedule, given the ops' names in schedule order."""
    names = list(op_names)
    last_sample = max((i for i, n in enumerate(names) if n in SAMPLE_OPS), default=None)
    last_compute = max((i for i, n in enumerate(names) if n in COMPUTE_OPS), default=None)
    phases = []
    for step, name in enumerate(names):
        if name in LEAF_OPS:
            phases.append(PROLOGUE)
        elif name in SAMPLE_OPS:
            phases.append(EPILOGUE)
        elif (last_sample is not None and step > last_sample) or (
            last_compute is not None and step > last_compute
        ):
            phases.append(EPILOGUE)
        else:
            phases.append(STEADY)
    return phases


def ops_in_phase(phases: Sequence[str], phase: str) -> list[int]:
    """Schedule indices of the ops in `phase` (RLX's `nodes_in_phase`), in schedule order."""
    phase_order(phase)
    return [i for i, p in enumerate(phases) if p == phase]
