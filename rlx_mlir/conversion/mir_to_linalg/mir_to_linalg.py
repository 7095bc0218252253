"""rlx-mir-to-linalg: MIR ops to linalg / tensor / arith / math on tensors.

Each MIR op has one lowering function (in `rlx_mlir.conversion.mir_to_linalg`, one module per
op family), applied as a Python rewrite pattern.  Named linalg ops are used
where they exist (matmul, batch_matmul, transpose, fill, reduce) and
linalg.generic otherwise, so that later tiling and fusion see structured ops.
f16 and bf16 tensors are computed in f32 and rounded once per op.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from mlir import ir
from mlir.dialects import func
from mlir.rewrite import RewritePatternSet, walk_and_apply_patterns

from ...dialects import rlx
from ...dialects.rlx_lir.dialect import PlanOp
from ...ir.shapes import is_static, num_elements, shape_of
from ...ir.walk import collect_ops, ops_in_dialect
from ...passmanager.base import PassFailure, RlxPass, fail, option
from ...targets.cpu import MAX_THREADS
from .lowerings import LOWERINGS, TILED_LOWERINGS, threaded_lowerings
from .unsigned import is_unsigned, retype_unsigned_as_signless


def _as_pattern(lowering: Callable) -> Callable:
    def rewrite(op, rewriter) -> None:
        with ir.InsertionPoint(op), op.location:
            value = lowering(op)
        rewriter.replace_op(op, list(value) if isinstance(value, (list, tuple)) else [value])

    return rewrite


@dataclasses.dataclass(frozen=True)
class MirToLinalg(RlxPass):
    name = "rlx-mir-to-linalg"
    summary = "Lower MIR ops (dialect rlx) to linalg, tensor, arith and math on tensors"
    creates_rlx_ops = False
    tiled_attention: bool = option(
        False, "attention as a tiled loop nest with an online softmax (FlashAttention's form: no [Sq, Sk] scores "
        "in memory, causal blocks skipped); for CPU code, where the tiles run as GEMM kernels"
    )
    threads: int = option(
        0, "the threads the compiled code runs on, where known (0: not known); rlx.grouped_matmul shares its "
        "experts out between them (8-row tiles, an expert per thread or more, N whole 16-float vectors), else "
        "splits its output columns into a multiple of that many chunks where they allow",
        minimum=0, maximum=MAX_THREADS,
    )

    def run(self, module: ir.Operation) -> None:
        _check_input_level(module)
        _check_static_shapes(module)
        _check_constant_sizes(module)
        has_unsigned = _has_unsigned_values(module)
        patterns = RewritePatternSet()
        lowerings = {**LOWERINGS, **(TILED_LOWERINGS if self.tiled_attention else {}),
                     **(threaded_lowerings(self.threads) if self.threads else {})}
        for op_class, lowering in lowerings.items():
            patterns.add(op_class, _as_pattern(lowering))
        walk_and_apply_patterns(module, patterns.freeze())
        _check_fully_lowered(module)
        if has_unsigned:
            retype_unsigned_as_signless(module)


def _has_unsigned_values(module: ir.Operation) -> bool:
    """Whether a `ui8` tensor occurs at an RLX op or in a function signature (before lowering)."""

    def unsigned_tensor(t: ir.Type) -> bool:
        return isinstance(t, ir.ShapedType) and is_unsigned(ir.ShapedType(t).element_type)

    for op in ops_in_dialect(module, "rlx"):
        if any(unsigned_tensor(v.type) for v in (*op.operands, *op.results)):
            return True
    for function in collect_ops(module, func.FuncOp):
        types = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
        if any(unsigned_tensor(t) for t in (*types.inputs, *types.results)):
            return True
    return False


def _check_input_level(module: ir.Operation) -> None:
    """MIR is this pass's input: HIR must be lowered first, and a planned module is lowered by rlx-lir-to-linalg."""
    hir = ops_in_dialect(module, "rlx_hir")
    if hir:
        raise fail(hir[0], f"'{hir[0].name}' op is HIR: run rlx-hir-to-mir before rlx-mir-to-linalg "
                           "(rlx-lower-to-llvm runs both)")
    plans = collect_ops(module, PlanOp)
    if plans:
        raise fail(plans[0].operation, "this function is planned (rlx-mir-to-lir ran): lower it with rlx-lir-to-linalg "
                                       "after rlx-mir-to-lir, not with rlx-mir-to-linalg")


def _check_static_shapes(module: ir.Operation) -> None:
    for op in ops_in_dialect(module, "rlx"):
        for value in (*op.operands, *op.results):
            if not is_static(shape_of(value.type)):
                raise fail(op, f"'{op.name}' op has dynamic dimensions ({value.type}); bind them before lowering")


# Constants become data in the compiled code, which the small code model (the JIT's)
# addresses within 2 GiB; a larger one, such as a huge splat, would exhaust memory in LLVM.
MAX_CONSTANT_BYTES = 1 << 31


def _check_constant_sizes(module: ir.Operation) -> None:
    for op in collect_ops(module, rlx.ConstantOp):
        type_ = ir.RankedTensorType(op.results[0].type)
        size = num_elements(type_.shape) * max(1, type_.element_type.width // 8)
        if size > MAX_CONSTANT_BYTES:
            raise fail(
                op,
                f"'{op.name}' op of type {type_} is {size} bytes, too large to embed in the compiled code "
                f"(at most {MAX_CONSTANT_BYTES} bytes); pass it as an argument",
            )


def _check_fully_lowered(module: ir.Operation) -> None:
    leftovers = ops_in_dialect(module, "rlx")
    for op in leftovers:
        op.location.emit_error(f"failed to legalize operation '{op.name}': no lowering to linalg")
    if leftovers:
        raise PassFailure("rlx-mir-to-linalg left RLX ops behind")
