"""What the RLX fusion passes fused, and what they considered and left alone.

Every fusion pass (rlx-fuse-matmul-bias-act, rlx-fuse-residual-norm,
rlx-fuse-swiglu, rlx-fuse-shared-matmul) records each rewrite it makes and
each candidate it rejects, with the reason.  Nothing is kept unless a report
is being collected:

    from rlx_mlir.transforms.mir import fusion_report

    with fusion_report.collect() as report:
        run_pipeline(module, "builtin.module(rlx-fuse-matmul-bias-act)")
    report.fused    # [Fused(pass_name, op, location, result), ...]
    report.missed   # [Missed(pass_name, op, location, reason), ...]
    print(report)   # a readable table

`rlx-opt --rlx-fusion-report` prints that table to stderr after the pipeline.
Collection is process-wide (passes run inside MLIR's pass manager, which
calls back into Python): every report open when a pass records sees the
entry.

The module also holds the small IR-matching helpers the fusion passes share.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Union

from mlir import ir

from ...ir.diagnostics import position_of
from ...ir.shapes import DYNAMIC, format_shape, shape_of
from ...ir.walk import collect_ops
from ...passmanager.base import fail


@dataclass(frozen=True)
class Fused:
    """A rewrite a fusion pass made: the anchor `op`, where it was, what replaced it."""

    pass_name: str
    op: str
    location: str
    result: str


@dataclass(frozen=True)
class Missed:
    """A candidate a fusion pass considered and left unchanged, and why."""

    pass_name: str
    op: str
    location: str
    reason: str


@dataclass
class FusionReport:
    fused: list[Fused] = field(default_factory=list)
    missed: list[Missed] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"RLX fusion report: {len(self.fused)} fused, {len(self.missed)} not fused"]
        if self.fused:
            lines.append("fused:")
            lines += _table(
                ("pass", "op", "location", "result"),
                [(e.pass_name, e.op, e.location, e.result) for e in self.fused],
            )
        if self.missed:
            lines.append("not fused:")
            lines += _table(
                ("pass", "op", "location", "reason"),
                [(e.pass_name, e.op, e.location, e.reason) for e in self.missed],
            )
        return "\n".join(lines)


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]

    def line(cells) -> str:
        # The last column is free text: no padding after it.
        return "  " + "  ".join(c.ljust(w) for c, w in zip(cells[:-1], widths)) + "  " + cells[-1]

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


_lock = threading.Lock()
_active: list[FusionReport] = []


@contextlib.contextmanager
def collect() -> Iterator[FusionReport]:
    """Collects what the fusion passes run inside the `with` block record."""
    report = FusionReport()
    with _lock:
        _active.append(report)
    try:
        yield report
    finally:
        with _lock:
            _active.remove(report)


def collecting() -> bool:
    return bool(_active)


def format_location(location: ir.Location) -> str:
    """`file:line:col` of a location (looking through names, call sites and fusions)."""
    position = position_of(location)
    if position is not None:
        return f"{position.filename}:{position.line}:{position.column}"
    text = str(location)
    return text[4:-1] if text.startswith("loc(") and text.endswith(")") else text


def _op_of(op: Union[ir.Operation, ir.OpView]) -> ir.Operation:
    return op.operation if isinstance(op, ir.OpView) else op


def record_fused(pass_name: str, op: Union[ir.Operation, ir.OpView], result: str) -> None:
    """Records that `op` (the pattern's anchor) was fused into `result` (a short description)."""
    _record("fused", Fused, pass_name, op, result)


def record_missed(pass_name: str, op: Union[ir.Operation, ir.OpView], reason: str) -> None:
    """Records that the candidate anchored at `op` was not fused, and why."""
    _record("missed", Missed, pass_name, op, reason)


def _record(field_name: str, kind: type, pass_name: str, op, detail: str) -> None:
    if not _active:
        return
    operation = _op_of(op)
    entry = kind(pass_name, operation.name, format_location(operation.location), detail)
    with _lock:
        for report in _active:
            getattr(report, field_name).append(entry)


# --- matching helpers shared by the fusion passes ------------------------------------------


def ops_of(module: ir.Operation, *op_classes: type) -> list:
    """Every op of the given classes nested in `module`, in walk (pre-)order, as op views."""
    return collect_ops(module, op_classes, ir.WalkOrder.PRE_ORDER)


def guarded(pass_name: str, anchor, rewrite: Callable) -> None:
    """Runs `rewrite(anchor)`; a builder's ValueError (a rewrite the op verifiers reject,
    which the matching should have ruled out) becomes an error at the anchor's location.
    The passes build every new op before they touch the old ones, so the IR stays valid."""
    try:
        rewrite(anchor)
    except ValueError as error:
        raise fail(_op_of(anchor), f"{pass_name}: cannot build the fused ops: {error}") from None


def producer(value: ir.Value, op_class: type):
    """The op view of class `op_class` that defines `value`, or None (other op, block argument)."""
    owner = value.owner  # a result's owner is its op's typed view
    return owner if isinstance(owner, op_class) else None


def use_count(value: ir.Value) -> int:
    return sum(1 for _ in value.uses)


def single_user(value: ir.Value) -> Optional[ir.OpView]:
    """The op (its typed view) using `value` when it has exactly one use, else None."""
    uses = list(value.uses)
    return uses[0].owner if len(uses) == 1 else None


def static_shape(value: ir.Value) -> Optional[tuple[int, ...]]:
    """The shape of a ranked tensor value when every dimension is static, else None."""
    shape = shape_of(value.type)
    return None if DYNAMIC in shape else shape


def describe_shape(value: ir.Value) -> str:
    return format_shape(shape_of(value.type))


def fused_location(*ops) -> ir.Location:
    """One location for an op replacing `ops`: the anchor's first, so diagnostics point at it."""
    locations = [_op_of(op).location for op in ops]
    return locations[0] if len(locations) == 1 else ir.Location.fused(locations)
