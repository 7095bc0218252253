"""Shape and data movement: reshape, transpose, narrow, concat, expand, gather."""

from __future__ import annotations

from typing import Sequence

from mlir import ir

from ...dsl import AnyTensor, DenseI64ArrayAttr, I64Attr, IntTensor, Pure, VerifyError, attribute, operand, result
from ...ir.shapes import DYNAMIC, element_of, format_shape, is_static, num_elements, shape_of
from .dialect import Rlx, same_element_type


def _normalize_axis(axis: int, shape: Sequence[int], what: str = "input") -> int:
    """`axis` in `0 .. rank-1`, counting a negative axis from the end (NumPy / PyTorch).

    VerifyError("axis 3 is out of range for rank 2 input [4, 5]") otherwise.
    """
    rank = len(shape)
    if not -rank <= axis < rank:
        raise VerifyError(f"axis {axis} is out of range for rank {rank} {what} {format_shape(shape)}")
    return axis + rank if axis < 0 else axis


# --- shape ------------------------------------------------------------------------


class ReshapeOp(Rlx.Operation, name="reshape", traits=[Pure]):
    """Reinterprets the elements (row-major order) in a new shape.

    The result type states the new shape; its element count and element type
    equal the input's.  The builder `ReshapeOp(input, result_type=...)` takes
    the full result type; `ReshapeOp.to_shape(input, shape)` takes a shape
    instead, in which one dimension may be `-1` (resolved from the element
    count, as in `torch.reshape` / `numpy.reshape`).  A pure view: no data moves.
    """

    input = operand(AnyTensor, "the tensor to reshape")
    result = result(AnyTensor, "same elements, new shape")

    @classmethod
    def to_shape(cls, input, shape: Sequence[int], *, loc=None, ip=None) -> "ReshapeOp":
        """Builds a reshape of `input` to `shape`, where one dimension may be `-1`.

        The `-1` becomes the element count of `input` divided by the product of
        the other dimensions.  Raises ValueError for two or more `-1`s, other
        negative sizes, an element count that does not fit the shape, a `-1`
        next to a zero-sized dimension (any size would fit: ambiguous, as in
        PyTorch) and a `-1` for an input with dynamic dimensions.
        """
        value = input if isinstance(input, ir.Value) else input.result
        source = shape_of(value.type)
        target = [int(d) for d in shape]

        def fail(message: str):
            return ValueError(f"'{cls.OPERATION_NAME}' op {message}")

        unknown = [i for i, d in enumerate(target) if d == -1]
        if len(unknown) > 1:
            raise fail(f"shape {format_shape(target)} has more than one -1 dimension")
        negative = [d for d in target if d < -1]
        if negative:
            raise fail(f"shape {format_shape(target)} has a negative dimension {negative[0]}")
        if unknown:
            if not is_static(source):
                raise fail(f"cannot resolve -1 in {format_shape(target)} for the dynamic input {format_shape(source)}")
            known = num_elements([d for d in target if d != -1])
            count = num_elements(source)
            if known == 0:
                raise fail(
                    f"cannot resolve -1 in {format_shape(target)}: the other dimensions have zero elements, "
                    "so any size fits"
                )
            if count % known != 0:
                raise fail(
                    f"cannot reshape {format_shape(source)} ({count} elements) to {format_shape(target)}: "
                    f"{count} is not a multiple of {known}"
                )
            target[unknown[0]] = count // known
        elif is_static(source) and num_elements(source) != num_elements(target):
            raise fail(
                f"cannot reshape {format_shape(source)} ({num_elements(source)} elements) "
                f"to {format_shape(target)} ({num_elements(target)} elements)"
            )
        result_type = ir.RankedTensorType.get(target, element_of(value.type))
        return cls(value, result_type=result_type, loc=loc, ip=ip)

    def verify(self) -> None:
        source, target = self.input.type, self.result.type
        if element_of(source) != element_of(target):
            raise VerifyError(f"changes the element type from {element_of(source)} to {element_of(target)}")
        a, b = shape_of(source), shape_of(target)
        if is_static(a) and is_static(b) and num_elements(a) != num_elements(b):
            raise VerifyError(
                f"cannot reshape {format_shape(a)} ({num_elements(a)} elements) "
                f"to {format_shape(b)} ({num_elements(b)} elements)"
            )


class TransposeOp(Rlx.Operation, name="transpose", traits=[Pure]):
    """Permutes dimensions: `result.shape[i] = input.shape[perm[i]]`."""

    input = operand(AnyTensor, "the tensor to permute")
    perm = attribute(DenseI64ArrayAttr, "a permutation of `0 .. rank-1`")
    result = result(AnyTensor, "the permuted tensor")

    @classmethod
    def infer_result_type(cls, input: ir.Type, perm: list[int]) -> ir.Type:
        shape = shape_of(input)
        if sorted(perm) != list(range(len(shape))):
            raise VerifyError(
                f"perm [{', '.join(map(str, perm))}] is not a permutation of the {len(shape)} dimensions "
                f"of {format_shape(shape)}"
            )
        return ir.RankedTensorType.get([shape[p] for p in perm], element_of(input))


# --- data movement -------------------------------------------------------------------


class NarrowOp(Rlx.Operation, name="narrow", traits=[Pure]):
    """The slice `[start, start + len)` of one axis (`torch.narrow`).

    The result has the input's shape with dimension `axis` replaced by `len`,
    and the input's element type.  A negative `axis` counts from the end.
    `start` and `len` are non-negative and `start + len` must not exceed the
    dimension (unlike `torch.narrow`, a negative `start` is rejected rather
    than counted from the end).  `len` may be 0.  Lowers to
    `tensor.extract_slice` (a view after bufferization).
    """

    input = operand(AnyTensor, "the tensor to slice")
    axis = attribute(I64Attr, "the axis to slice (negative counts from the end)")
    start = attribute(I64Attr, "first index of the slice along `axis`, `>= 0`")
    len = attribute(I64Attr, "number of indices in the slice, `>= 0`")
    result = result(AnyTensor, "the slice: the input's shape with `len` at `axis`")

    @classmethod
    def infer_result_type(cls, input: ir.Type, axis: int, start: int, len: int) -> ir.Type:
        shape = list(shape_of(input))
        dim = _normalize_axis(axis, shape)
        if start < 0:
            raise VerifyError(f"start {start} must be non-negative")
        if len < 0:
            raise VerifyError(f"len {len} must be non-negative")
        size = shape[dim]
        if size != DYNAMIC and start + len > size:
            raise VerifyError(f"start {start} + len {len} exceeds dimension {size} of axis {axis}")
        shape[dim] = len
        return ir.RankedTensorType.get(shape, element_of(input))


class ConcatOp(Rlx.Operation, name="concat", traits=[Pure]):
    """Joins two tensors along one axis (`torch.cat` / `numpy.concatenate`).

    Both inputs have one element type and one rank, and equal dimensions
    except along `axis` (negative counts from the end), where the result's
    size is the sum of theirs.  Lowers to `tensor.concat`.

    More inputs chain: `ConcatOp.of([a, b, c], axis)` builds
    `concat(concat(a, b), c)`.  The op is binary, not variadic, because IRDL
    in LLVM 22 checks every operand of a variadic field against one constraint
    variable, which binds to the first operand's type: a variadic concat could
    only join tensors of identical shape.
    """

    lhs = operand(AnyTensor, "the first tensor")
    rhs = operand(AnyTensor, "the second tensor, appended after `lhs` along `axis`")
    axis = attribute(I64Attr, "the axis to join along (negative counts from the end)")
    result = result(AnyTensor, "`lhs` then `rhs` along `axis`")

    @classmethod
    def infer_result_type(cls, lhs: ir.Type, rhs: ir.Type, axis: int) -> ir.Type:
        element = same_element_type(lhs, rhs)
        first, second = shape_of(lhs), shape_of(rhs)
        dim = _normalize_axis(axis, first, "lhs")
        if len(second) != len(first):
            raise VerifyError(
                f"rhs {format_shape(second)} has rank {len(second)}, but lhs {format_shape(first)} has rank {len(first)}"
            )
        out = list(first)
        for d, (a, b) in enumerate(zip(first, second)):
            if d == dim:
                out[d] = DYNAMIC if DYNAMIC in (a, b) else a + b
            elif a != b and DYNAMIC not in (a, b):
                raise VerifyError(
                    f"rhs {format_shape(second)} differs from lhs {format_shape(first)} "
                    f"in dimension {d}, which is not the concatenation axis {axis}"
                )
            elif a == DYNAMIC:
                out[d] = b
        return ir.RankedTensorType.get(out, element)

    @classmethod
    def of(cls, inputs, axis: int, *, loc=None, ip=None) -> ir.Value:
        """Concatenates any number of tensors (at least one) as a chain of binary concats."""
        if not inputs:
            raise ValueError("'rlx.concat' needs at least one input")
        value = inputs[0]
        for following in inputs[1:]:
            value = cls(value, following, axis, loc=loc, ip=ip).result
        return value


class ExpandOp(Rlx.Operation, name="expand", traits=[Pure]):
    """Broadcasts to a target shape (`numpy.broadcast_to`).

    The input's dimensions align with the trailing dimensions of `shape`; each
    equals the target size or is 1 (a size-1 dimension stretches by
    repetition).  Target dimensions beyond the input's rank are new leading
    dimensions.  Target sizes are non-negative (no `-1` as in `torch.expand`).
    Lowers to `linalg.broadcast`, after collapsing the stretched size-1
    dimensions away.
    """

    input = operand(AnyTensor, "the tensor to broadcast")
    shape = attribute(DenseI64ArrayAttr, "the target shape, of rank >= the input's")
    result = result(AnyTensor, "the input repeated to `shape`")

    @classmethod
    def infer_result_type(cls, input: ir.Type, shape: list[int]) -> ir.Type:
        source = shape_of(input)
        if any(d < 0 for d in shape):
            raise VerifyError(f"target shape {format_shape(shape)} has a negative dimension")
        if len(shape) < len(source):
            raise VerifyError(
                f"cannot expand rank {len(source)} input {format_shape(source)} "
                f"to the lower rank {len(shape)} shape {format_shape(shape)}"
            )
        offset = len(shape) - len(source)
        for i, size in enumerate(source):
            target = shape[offset + i]
            if size not in (1, target, DYNAMIC):
                raise VerifyError(
                    f"cannot expand {format_shape(source)} to {format_shape(shape)}: input dimension {i} "
                    f"has size {size}, target size {target} (only size-1 dimensions stretch)"
                )
        return ir.RankedTensorType.get(list(shape), element_of(input))


class GatherOp(Rlx.Operation, name="gather", traits=[Pure]):
    """Picks slices of `table` along `axis` by index (`numpy.take(table, indices, axis)`).

    `result[a..., i..., b...] = table[a..., clamp(indices[i...]), b...]`, with
    shape `table.shape[:axis] + indices.shape + table.shape[axis+1:]` and the
    table's element type; for `axis = 0` this is RLX's embedding lookup.
    A negative `axis` counts from the end of the table's dimensions.
    Out-of-range indices are clamped to `[0, n-1]` (`n = table.shape[axis]`,
    like `numpy.take(..., mode="clip")`; a negative index reads entry 0, it
    does not count from the end), so the op never reads out of bounds; the
    gathered axis must therefore be non-empty.
    """

    table = operand(AnyTensor, "the tensor to read from, rank >= 1, any element type")
    indices = operand(IntTensor, "positions along `axis`, any shape")
    axis = attribute(I64Attr, "the table axis the indices select along (negative counts from the end)")
    result = result(AnyTensor, "`table.shape[:axis] + indices.shape + table.shape[axis+1:]`")

    @classmethod
    def infer_result_type(cls, table: ir.Type, indices: ir.Type, axis: int) -> ir.Type:
        shape = shape_of(table)
        dim = _normalize_axis(axis, shape, "table")
        if shape[dim] == 0:
            raise VerifyError(f"cannot gather along the empty axis {axis} of table {format_shape(shape)}")
        out = [*shape[:dim], *shape_of(indices), *shape[dim + 1 :]]
        return ir.RankedTensorType.get(out, element_of(table))
