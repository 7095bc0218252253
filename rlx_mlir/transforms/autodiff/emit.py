"""`Emitter`: builds the MIR ops of a backward pass at one insertion point.

VJP rules never construct op classes directly: they call the methods here, which
keep every new op at the insertion point and location of the forward op being
differentiated, and which know the shape bookkeeping the rules share (summing a
cotangent over broadcast axes, constants of a value's element type).
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np
from mlir import ir

from ...dialects import rlx
from ...ir.shapes import element_of, shape_of


class Emitter:
    """Builds MIR ops at `ip`, each at location `loc` (set per forward op by the driver)."""

    def __init__(self, ip: ir.InsertionPoint, loc: ir.Location, needed: Callable[[ir.Value], bool] = lambda v: True):
        self.ip = ip
        self.loc = loc
        self.needed = needed  # whether a value needs a cotangent (rules may skip the work for others)
        # reverse(ops, seeds, values, names) -> cotangents of values: the driver's reverse sweep,
        # for the rules of ops with bodies (set by the driver; emit cannot import it)
        self.reverse: Optional[Callable] = None
        # forward(ops, values, tangents, outputs) -> tangents of outputs: the forward sweep, for
        # the JVP rules of ops with bodies (set by the forward-mode driver)
        self.forward: Optional[Callable] = None

    def _kw(self) -> dict:
        return {"loc": self.loc, "ip": self.ip}

    # -- constants -------------------------------------------------------------------

    def splat(self, value: float, shape: Sequence[int], element: ir.Type) -> ir.Value:
        """A constant tensor of `shape` filled with `value`."""
        type_ = ir.RankedTensorType.get(list(shape), element)
        if isinstance(element, ir.IntegerType):
            attr = ir.IntegerAttr.get(element, int(value))
        else:
            attr = ir.FloatAttr.get(element, float(value))
        return rlx.ConstantOp(value=ir.DenseElementsAttr.get_splat(type_, attr), **self._kw()).result

    def scalar(self, value: float, like: ir.Value) -> ir.Value:
        """A rank-0 constant of `like`'s element type (broadcasts in any binary op)."""
        return self.splat(value, [], element_of(like.type))

    def zeros_like(self, value: ir.Value) -> ir.Value:
        return self.splat(0.0, shape_of(value.type), element_of(value.type))

    def array(self, data: np.ndarray, element: ir.Type) -> ir.Value:
        """A constant holding `data` (already of the numpy dtype matching `element`)."""
        type_ = ir.RankedTensorType.get(list(data.shape), element)
        attr = ir.DenseElementsAttr.get(np.ascontiguousarray(data), type=type_)
        return rlx.ConstantOp(value=attr, **self._kw()).result

    # -- elementwise -----------------------------------------------------------------

    def add(self, a, b):
        return rlx.AddOp(a, b, **self._kw()).result

    def sub(self, a, b):
        return rlx.SubOp(a, b, **self._kw()).result

    def mul(self, a, b):
        return rlx.MulOp(a, b, **self._kw()).result

    def div(self, a, b):
        return rlx.DivOp(a, b, **self._kw()).result

    def neg(self, a):
        return rlx.NegOp(a, **self._kw()).result

    def unary(self, op_class: type, a):
        return op_class(a, **self._kw()).result

    def binary(self, op_class: type, a, b):
        return op_class(a, b, **self._kw()).result

    def scale(self, a, factor: float):
        return self.mul(a, self.scalar(factor, a))

    def compare(self, predicate: str, a, b):
        return rlx.CompareOp(a, b, predicate=predicate, **self._kw()).result

    def where(self, condition, on_true, on_false):
        return rlx.WhereOp(condition, on_true, on_false, **self._kw()).result

    def cast(self, a, element: ir.Type):
        type_ = ir.RankedTensorType.get(list(shape_of(a.type)), element)
        return rlx.CastOp(a, result_type=type_, **self._kw()).result

    def indicator(self, condition, like: ir.Value):
        """1.0 where `condition` holds, else 0.0, in `like`'s element type.  A `where` (whose
        condition is a selector) rather than a cast of the i1, so that a backward graph can be
        differentiated again (a cast from i1 on a differentiated path is an error)."""
        return self.where(condition, self.scalar(1.0, like), self.scalar(0.0, like))

    # -- shapes ------------------------------------------------------------------------

    def reshape(self, a, shape: Sequence[int]):
        if tuple(shape) == shape_of(a.type):
            return a
        type_ = ir.RankedTensorType.get(list(shape), element_of(a.type))
        return rlx.ReshapeOp(a, result_type=type_, **self._kw()).result

    def transpose(self, a, perm: Sequence[int]):
        if list(perm) == list(range(len(perm))):
            return a
        return rlx.TransposeOp(a, perm=list(perm), **self._kw()).result

    def expand(self, a, shape: Sequence[int]):
        if tuple(shape) == shape_of(a.type):
            return a
        return rlx.ExpandOp(a, shape=list(shape), **self._kw()).result

    def narrow(self, a, axis: int, start: int, length: int):
        return rlx.NarrowOp(a, axis=axis, start=start, len=length, **self._kw()).result

    def concat(self, parts: Sequence[ir.Value], axis: int):
        return rlx.ConcatOp.of(list(parts), axis, **self._kw())

    # -- reductions and products -------------------------------------------------------

    def reduce(self, a, kind: str, axes: Sequence[int], keep_dim: bool = False):
        return rlx.ReduceOp(a, kind=kind, axes=list(axes), keep_dim=keep_dim, **self._kw()).result

    def sum(self, a, axes: Sequence[int], keep_dim: bool = False):
        if not axes:
            return a
        return self.reduce(a, "sum", axes, keep_dim)

    def matmul(self, a, b):
        return rlx.MatmulOp(a, b, **self._kw()).result

    def dot_general(self, a, b, lhs_contracting, rhs_contracting, lhs_batch=(), rhs_batch=()):
        """`rlx.dot_general`, with each operand first transposed to `[batch..., free..., contracting...]`
        (free dimensions in their order, so the result is the same): the lowering is fast when the
        contracted dimensions are the last ones and 30-100x slower otherwise."""
        a, lhs_contracting, lhs_batch = self._contracting_last(a, lhs_contracting, lhs_batch)
        b, rhs_contracting, rhs_batch = self._contracting_last(b, rhs_contracting, rhs_batch)
        return rlx.DotGeneralOp(
            a,
            b,
            lhs_contracting=list(lhs_contracting),
            rhs_contracting=list(rhs_contracting),
            lhs_batch=list(lhs_batch),
            rhs_batch=list(rhs_batch),
            **self._kw(),
        ).result

    def matmul_transposed(self, a, b, transpose_a: bool = False, transpose_b: bool = False):
        """The 2-D product `op(a) @ op(b)` (`op` transposes where asked) as one `rlx.dot_general`
        contracting `a`'s first dimension (`transpose_a`) or `b`'s last (`transpose_b`).  Unlike a
        `rlx.transpose` feeding `rlx.matmul`, which the plan stores in a slot of its own, the
        transposition stays inside the product's lowering, where rlx-pack-matmul reads the
        operand in place, transposed (a weight gradient `x^T dy` at forward GEMM speed)."""
        return rlx.DotGeneralOp(
            a,
            b,
            lhs_contracting=[0 if transpose_a else 1],
            rhs_contracting=[1 if transpose_b else 0],
            lhs_batch=[],
            rhs_batch=[],
            **self._kw(),
        ).result

    def _contracting_last(self, value, contracting, batch):
        rank = len(shape_of(value.type))
        free = [d for d in range(rank) if d not in contracting and d not in batch]
        perm = [*batch, *free, *contracting]
        nb, nf = len(batch), len(free)
        return (self.transpose(value, perm), list(range(nb + nf, rank)), list(range(nb)))

    def swap_last(self, a):
        """`a` with its last two dimensions exchanged."""
        rank = len(shape_of(a.type))
        return self.transpose(a, [*range(rank - 2), rank - 1, rank - 2])

    def unbroadcast(self, cotangent: ir.Value, shape: Sequence[int]) -> ir.Value:
        """`cotangent` summed over the axes NumPy broadcasting added or stretched to reach its
        shape from `shape`, then reshaped to `shape`: the adjoint of broadcasting."""
        out = shape_of(cotangent.type)
        shape = tuple(shape)
        if out == shape:
            return cotangent
        lead = len(out) - len(shape)
        axes = list(range(lead)) + [lead + i for i, size in enumerate(shape) if size == 1 and out[lead + i] != 1]
        summed = self.sum(cotangent, axes, keep_dim=True)
        return self.reshape(summed, shape)

    def broadcast_along(self, vector: ir.Value, axis: int, rank: int) -> ir.Value:
        """A 1-D `[n]` reshaped to rank `rank` with `n` at `axis` and 1 elsewhere."""
        shape = [1] * rank
        shape[axis] = shape_of(vector.type)[0]
        return self.reshape(vector, shape)


def accumulate(emit: Emitter, old: Optional[ir.Value], new: ir.Value) -> ir.Value:
    """The sum of two cotangents of one value (`new` alone when there was none)."""
    return new if old is None else emit.add(old, new)
