"""rlx-mir-to-linalg: MIR ops to linalg / tensor / arith / math on tensors.

Each MIR op has one lowering function, applied as a Python rewrite pattern.
Named linalg ops are used where they exist (matmul, batch_matmul, transpose,
fill) and linalg.generic otherwise, so that later tiling and fusion see
structured ops.  f16 and bf16 tensors are computed in f32 and rounded once per op.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

from mlir import ir
from mlir.dialects import arith, linalg, tensor
from mlir.dialects import math as mmath
from mlir.rewrite import RewritePatternSet, walk_and_apply_patterns

from .. import linalg_builders as lb
from ..dialects import rlx
from ..shapes import is_static, shape_of
from .base import PassFailure, RlxPass, fail


# --- element arithmetic ------------------------------------------------------------


def _is_low_precision(element: ir.Type) -> bool:
    return isinstance(element, (ir.F16Type, ir.BF16Type))


def _widen(x: ir.Value) -> ir.Value:
    return arith.extf(ir.F32Type.get(), x) if _is_low_precision(x.type) else x


def _narrow(x: ir.Value, element: ir.Type) -> ir.Value:
    return arith.truncf(element, x) if x.type != element else x


def _const(like: ir.Value, value: float) -> ir.Value:
    return arith.constant(like.type, value)


def _sigmoid(x: ir.Value) -> ir.Value:
    one = _const(x, 1.0)
    return arith.divf(one, arith.addf(one, mmath.exp(arith.negf(x))))


def _gelu(x: ir.Value) -> ir.Value:
    inner = mmath.erf(arith.mulf(x, _const(x, 1.0 / math.sqrt(2.0))))
    return arith.mulf(arith.mulf(_const(x, 0.5), x), arith.addf(_const(x, 1.0), inner))


def _gelu_approx(x: ir.Value) -> ir.Value:
    cube = arith.mulf(arith.mulf(x, x), x)
    inner = arith.addf(x, arith.mulf(_const(x, 0.044715), cube))
    t = mmath.tanh(arith.mulf(_const(x, math.sqrt(2.0 / math.pi)), inner))
    return arith.mulf(arith.mulf(_const(x, 0.5), x), arith.addf(_const(x, 1.0), t))


ACTIVATIONS: dict[type, Callable[[ir.Value], ir.Value]] = {
    rlx.ReluOp: lambda x: arith.maximumf(x, _const(x, 0.0)),
    rlx.GeluOp: _gelu,
    rlx.GeluApproxOp: _gelu_approx,
    rlx.SiluOp: lambda x: arith.mulf(x, _sigmoid(x)),
    rlx.SigmoidOp: _sigmoid,
    rlx.TanhOp: mmath.tanh,
    rlx.ExpOp: mmath.exp,
    rlx.LogOp: mmath.log,
    rlx.SqrtOp: mmath.sqrt,
    rlx.RsqrtOp: mmath.rsqrt,
    rlx.NegOp: arith.negf,
    rlx.AbsOp: mmath.absf,
}

BINARIES: dict[type, Callable[[ir.Value, ir.Value], ir.Value]] = {
    rlx.AddOp: arith.addf,
    rlx.SubOp: arith.subf,
    rlx.MulOp: arith.mulf,
    rlx.DivOp: arith.divf,
    rlx.MaxOp: arith.maximumf,
    rlx.MinOp: arith.minimumf,
    rlx.PowOp: mmath.powf,
}


# --- lowerings, one per op kind --------------------------------------------------------


def _lower_activation(op) -> ir.Value:
    fn = ACTIVATIONS[type(op)]
    element = ir.RankedTensorType(op.result.type).element_type
    return lb.elementwise([op.input], op.result.type, lambda x: _narrow(fn(_widen(x)), element))


def _lower_binary(op) -> ir.Value:
    fn = BINARIES[type(op)]
    element = ir.RankedTensorType(op.result.type).element_type
    return lb.elementwise(
        [op.lhs, op.rhs], op.result.type, lambda a, b: _narrow(fn(_widen(a), _widen(b)), element)
    )


def _lower_matmul(op) -> ir.Value:
    lhs, rhs = op.lhs, op.rhs
    a, b, out = shape_of(lhs.type), shape_of(rhs.type), shape_of(op.result.type)
    element = ir.RankedTensorType(op.result.type).element_type
    accumulator = ir.F32Type.get() if _is_low_precision(element) else element
    if len(a) == 2 and len(b) == 2:
        product = linalg.matmul(lhs, rhs, outs=[lb.zeros(out, accumulator)])
    elif len(b) == 2:
        # [..., M, K] x [K, N]: fold the batch dims into M for one 2-D matmul.
        rows = 1
        for d in a[:-1]:
            rows *= d
        groups = [list(range(len(a) - 1)), [len(a) - 1]]
        flat_type = ir.RankedTensorType.get([rows, a[-1]], ir.RankedTensorType(lhs.type).element_type)
        flat = tensor.collapse_shape(flat_type, lhs, groups)
        flat_product = linalg.matmul(flat, rhs, outs=[lb.zeros([rows, b[-1]], accumulator)])
        product_type = ir.RankedTensorType.get(out, accumulator)
        product = tensor.expand_shape(product_type, flat_product, groups, [], out)
    elif len(a) == 3 and len(b) == 3 and a[0] == b[0]:
        product = linalg.batch_matmul(lhs, rhs, outs=[lb.zeros(out, accumulator)])
    else:
        product = _broadcast_batch_matmul(lhs, rhs, out, accumulator)
    if accumulator == element:
        return product
    return lb.elementwise([product], op.result.type, lambda x: arith.truncf(element, x))


def _broadcast_batch_matmul(lhs: ir.Value, rhs: ir.Value, out, accumulator: ir.Type) -> ir.Value:
    """Batched matmul with NumPy-broadcast batch dims as one linalg.generic.

    Iteration space (batch..., m, n, k); k is the reduction.
    """
    rank = len(out)
    batch = out[:-2]
    m, n, k = (ir.AffineDimExpr.get(i) for i in (rank - 2, rank - 1, rank))

    def operand_map(shape, inner):
        batch_map = lb.broadcast_map(shape[:-2], batch)
        return ir.AffineMap.get(rank + 1, 0, [*batch_map.results, *inner])

    maps = [
        operand_map(shape_of(lhs.type), [m, k]),
        operand_map(shape_of(rhs.type), [k, n]),
        ir.AffineMap.get(rank + 1, 0, [ir.AffineDimExpr.get(i) for i in range(rank)]),
    ]
    iterators = [lb.PARALLEL] * rank + [lb.REDUCTION]
    return lb.generic(
        [lhs, rhs],
        lb.zeros(out, accumulator),
        maps,
        iterators,
        lambda x, y, acc: arith.addf(acc, arith.mulf(_widen(x), _widen(y))),
    )


def _lower_reshape(op) -> ir.Value:
    return lb.reshape(op.input, op.result.type)


def _lower_transpose(op) -> ir.Value:
    result_type = ir.RankedTensorType(op.result.type)
    init = lb.empty(result_type.shape, result_type.element_type)
    return linalg.transpose(op.input, outs=[init], permutation=op.perm).results[0]


LOWERINGS: dict[type, Callable] = {
    **{cls: _lower_activation for cls in ACTIVATIONS},
    **{cls: _lower_binary for cls in BINARIES},
    rlx.MatmulOp: _lower_matmul,
    rlx.ReshapeOp: _lower_reshape,
    rlx.TransposeOp: _lower_transpose,
}


def _as_pattern(lowering: Callable) -> Callable:
    def rewrite(op, rewriter) -> None:
        with ir.InsertionPoint(op), op.location:
            value = lowering(op)
        rewriter.replace_op(op, [value])

    return rewrite


@dataclasses.dataclass(frozen=True)
class MirToLinalg(RlxPass):
    name = "rlx-mir-to-linalg"
    summary = "Lower MIR ops (dialect rlx) to linalg, tensor, arith and math on tensors"

    def run(self, module: ir.Operation) -> None:
        _check_static_shapes(module)
        patterns = RewritePatternSet()
        for op_class, lowering in LOWERINGS.items():
            patterns.add(op_class, _as_pattern(lowering))
        walk_and_apply_patterns(module, patterns.freeze())
        _check_fully_lowered(module)


def _rlx_ops(module: ir.Operation) -> list[ir.Operation]:
    found = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name.startswith("rlx."):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return found


def _check_static_shapes(module: ir.Operation) -> None:
    for op in _rlx_ops(module):
        for value in (*op.operands, *op.results):
            if not is_static(shape_of(value.type)):
                raise fail(op, f"'{op.name}' op has dynamic dimensions ({value.type}); bind them before lowering")


def _check_fully_lowered(module: ir.Operation) -> None:
    leftovers = _rlx_ops(module)
    for op in leftovers:
        op.location.emit_error(f"failed to legalize operation '{op.name}': no lowering to linalg")
    if leftovers:
        raise PassFailure("rlx-mir-to-linalg left RLX ops behind")
