"""The `rlx_hir` dialect class and shape checks shared by the HIR blocks."""

from __future__ import annotations

from typing import Optional, Sequence

from mlir import ir

from ...dsl import Dialect, VerifyError
from ...ir.shapes import DYNAMIC, format_shape, shape_of

# The fusion policies of an HIR module (its attribute FUSION_POLICY_ATTR, in ir/attrs).
FUSION_POLICIES = ("direct", "fusable")


class RlxHir(Dialect, name="rlx_hir"):
    """RLX HIR: model blocks (linear layers, norms, attention, decoder blocks) on ranked tensors.

    A module's fusion policy, the module attribute `rlx_hir.fusion_policy`
    (`"direct"`, the default as in RLX's `HirModule::new`, or `"fusable"`),
    decides how `rlx-hir-to-mir` expands blocks: `direct` emits RLX's fused
    MIR ops where they exist, `fusable` primitive chains that later passes
    may fuse.  The pass option `policy` overrides the attribute.

    Escape hatch (RLX's `HirOp::Mir`): any MIR op (dialect `rlx`) may appear
    directly in an HIR function, mixed with HIR blocks; `rlx-hir-to-mir`
    leaves it as it is.  Blocks are expanded in place, and every MIR op of an
    expansion carries the block's location, so a named block
    (`loc("attn"(...))`, RLX's `HirModule::named`) names each op it becomes.
    """


# --- shape checks shared by the blocks --------------------------------------------------------


def same_size(a: int, b: int) -> bool:
    """Equal sizes, a dynamic dimension (`?`) on either side matching any size."""
    return a == b or a == DYNAMIC or b == DYNAMIC


def fits(actual: Sequence[int], expected: Sequence[int]) -> bool:
    """Shapes agree dimension by dimension, up to dynamic dimensions."""
    return len(actual) == len(expected) and all(same_size(a, e) for a, e in zip(actual, expected))


def activations_shape(name: str, type_: ir.Type) -> tuple[int, ...]:
    """The shape of an activation tensor `[..., K]` (rank 1 or more)."""
    shape = shape_of(type_)
    if not shape:
        raise VerifyError(f"{name} must have rank 1 or more ([..., K]), got []")
    return shape


def weight_shape(name: str, type_: ir.Type, layout: str) -> tuple[int, int]:
    """The `[K, N]` of a rank-2 weight."""
    shape = shape_of(type_)
    if len(shape) != 2:
        raise VerifyError(f"{name} must have rank 2 ({layout}), got {format_shape(shape)}")
    return shape[0], shape[1]


def check_contracting(x_name: str, x_shape, w_name: str, w_shape) -> None:
    """The last dim of the activations equals the weight's rows."""
    if not same_size(x_shape[-1], w_shape[0]):
        raise VerifyError(
            f"contracting dimensions differ: {x_name} {format_shape(x_shape)} has K = {x_shape[-1]}, "
            f"{w_name} {format_shape(w_shape)} has K = {w_shape[0]}"
        )


def check_shape(name: str, type_: Optional[ir.Type], expected: Sequence[int], layout: str) -> None:
    """`type_` has shape `expected` (described as `layout`, e.g. "[D]")."""
    shape = shape_of(type_)
    if not fits(shape, expected):
        raise VerifyError(f"{name} must have shape {layout} = {format_shape(expected)}, got {format_shape(shape)}")


def check_positive(name: str, value: int) -> None:
    if value <= 0:
        raise VerifyError(f"{name} must be positive, got {value}")
