"""Function records (the manifest's `functions`): what follows from one without MLIR."""

from __future__ import annotations


def descriptor_count(record: dict) -> int:
    """The memref descriptors the C interface of a function record takes: one per input, one for
    the caller's arena where it has one, one per result not tied to an input."""
    tied = sum(output["tied"] is not None for output in record["outputs"])
    return len(record["inputs"]) + ("arena" in record) + len(record["outputs"]) - tied
