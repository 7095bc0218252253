"""rlx-fold-constants: evaluate RLX ops on constant operands at compile time.

An RLX op whose operands are all constants (`rlx.constant`, or `arith.constant`
of a dense tensor) is evaluated with NumPy and replaced by an `rlx.constant`
of its result type, at its location.  Folding repeats down a chain in one
run (each folded constant feeds the next op).  Operand constants left
without uses are erased.

Ops folded, with their exactness against the JIT (which computes f16 in f32
and rounds once, like this pass):

* bit-identical (exactly rounded, or data movement):
  `add`, `sub`, `mul`, `div`, `max`, `min` (`arith.maximumf` / `minimumf`:
  NaN propagates, `-0 < +0`), `relu`, `neg`, `abs`, `sqrt`, `compare`,
  `where`, `cast` (not bf16), `reshape`, `transpose`, `narrow`, `concat`,
  `expand`, `gather`.  NaN results are NaN; their payload bits are not
  promised.
* transcendental, evaluated in float64 and rounded once to the result type:
  `exp`, `log`, `tanh`, `sigmoid`, `silu`, `gelu`, `gelu_approx`, `rsqrt`,
  `pow`.  The JIT evaluates the f32 formulas with MLIR's polynomial
  expansions (or libm), so a folded value can differ from the run-time one
  by up to 2 ulp of `max(|x|, |result|, 1)` in f32 (as measured in
  pytests/test_mir_passes.py): a relative difference for large results, an
  absolute one near zero, where the f32 formulas cancel (e.g. gelu for
  x < -4, where the JIT is off by up to ~6e-8 and the folded value is the
  accurate one).  For f16 the JIT also rounds f32 to f16 once more, which
  can differ from the one rounding of the float64 value in a last bit.

Not folded: bf16 (NumPy has no bf16), casts from floats to integers with NaN
or out-of-range values (unspecified at run time), ops with a result larger
than `max-elements` elements, and anything NumPy cannot evaluate (dense
resource constants, matmul, reductions, norms, ...): those are left
unchanged.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Optional

import numpy as np
from mlir import ir
from mlir.dialects import arith

from ...dialects import rlx
from ...dsl import Operation
from ...ir import dtypes
from ...ir.shapes import DYNAMIC, shape_of
from ...passmanager.base import RlxPass, option

# The element types folded (ir/dtypes gives their NumPy types): not bf16 (NumPy has none),
# f64 or the other integer widths.
_FOLDED = ("f32", "f16", "i64", "i32", "i1")
_INTEGERS = (np.int64, np.int32, np.bool_)


def _dtype(element: ir.Type) -> Optional[type]:
    """The NumPy scalar type of an element type that is folded, or None."""
    name = str(element)
    return np.dtype(dtypes.element_type(name).numpy).type if name in _FOLDED else None


def _element(value: ir.Value) -> ir.Type:
    return ir.RankedTensorType(value.type).element_type


# --- exactly rounded elementwise maths --------------------------------------------------


def _widen(x: np.ndarray) -> np.ndarray:
    """f16 computes in f32 (as the lowering does); other types unchanged."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`arith.maximumf`: NaN propagates and `+0` is larger than `-0` (np.maximum picks its first zero)."""
    a, b = np.broadcast_arrays(a, b)
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero, np.where(np.signbit(a), b, a), np.maximum(a, b))


def _minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`arith.minimumf`: NaN propagates and `-0` is smaller than `+0`."""
    a, b = np.broadcast_arrays(a, b)
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero, np.where(np.signbit(a), a, b), np.minimum(a, b))


_EXACT_BINARIES: dict[type, Callable] = {
    rlx.AddOp: np.add,
    rlx.SubOp: np.subtract,
    rlx.MulOp: np.multiply,
    rlx.DivOp: np.divide,
    rlx.MaxOp: _maximum,
    rlx.MinOp: _minimum,
}

_EXACT_ACTIVATIONS: dict[type, Callable] = {
    rlx.ReluOp: lambda x: _maximum(x, np.zeros((), x.dtype)),
    rlx.NegOp: np.negative,
    rlx.AbsOp: np.abs,
    rlx.SqrtOp: np.sqrt,
}


# --- transcendental maths, float64 --------------------------------------------------------

_erf = np.frompyfunc(math.erf, 1, 1)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def _gelu_approx(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


_TRANSCENDENTAL_ACTIVATIONS: dict[type, Callable] = {
    rlx.ExpOp: np.exp,
    rlx.LogOp: np.log,
    rlx.TanhOp: np.tanh,
    rlx.SigmoidOp: _sigmoid,
    rlx.SiluOp: lambda x: x * _sigmoid(x),
    rlx.GeluOp: _gelu,
    rlx.GeluApproxOp: _gelu_approx,
    rlx.RsqrtOp: lambda x: 1.0 / np.sqrt(x),
}

_COMPARISONS = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


# --- evaluation per op ----------------------------------------------------------------------


class _CannotFold(Exception):
    """The op (or these values) cannot be evaluated exactly as the JIT would."""


def _cast(x: np.ndarray, target: type) -> np.ndarray:
    if x.dtype == target:
        return x
    if target is np.bool_:
        return x != 0  # NaN is true
    if np.issubdtype(x.dtype, np.floating) and np.issubdtype(target, np.integer):
        info = np.iinfo(target)
        wide = x.astype(np.float64)
        truncated = np.trunc(wide)
        if not np.all(np.isfinite(wide)) or np.any(truncated < info.min) or np.any(truncated > info.max):
            raise _CannotFold("float to integer cast of NaN or out-of-range values")
        return truncated.astype(target)
    # Floats narrow / widen with round-to-nearest-even, integers convert to floats by
    # one rounding, integers wrap or sign-extend and i1 becomes 0 or 1: NumPy's
    # astype does each of these as LLVM's truncf / extf / sitofp / trunc / sext / uitofp.
    return x.astype(target)


def _evaluate(view: Operation, inputs: list[np.ndarray], result_dtype: type) -> np.ndarray:
    cls = type(view)
    if cls in _EXACT_BINARIES:
        a, b = (_widen(x) for x in inputs)
        return _EXACT_BINARIES[cls](a, b)
    if cls in _EXACT_ACTIVATIONS:
        return _EXACT_ACTIVATIONS[cls](_widen(inputs[0]))
    if cls in _TRANSCENDENTAL_ACTIVATIONS:
        return _TRANSCENDENTAL_ACTIVATIONS[cls](inputs[0].astype(np.float64))
    if cls is rlx.PowOp:
        return np.power(inputs[0].astype(np.float64), inputs[1].astype(np.float64))
    if cls is rlx.CompareOp:
        return _COMPARISONS[view.predicate](inputs[0], inputs[1])
    if cls is rlx.WhereOp:
        return np.where(*inputs)
    if cls is rlx.CastOp:
        return _cast(inputs[0], result_dtype)
    if cls is rlx.ReshapeOp:
        return inputs[0].reshape(shape_of(view.result.type))
    if cls is rlx.TransposeOp:
        return np.transpose(inputs[0], view.perm)
    if cls is rlx.NarrowOp:
        x = inputs[0]
        axis = view.axis % x.ndim
        index = [slice(None)] * x.ndim
        index[axis] = slice(view.start, view.start + view.len)
        return x[tuple(index)]
    if cls is rlx.ConcatOp:
        return np.concatenate(inputs, axis=view.axis)
    if cls is rlx.ExpandOp:
        return np.broadcast_to(inputs[0], view.shape)
    if cls is rlx.GatherOp:
        return np.take(inputs[0], inputs[1], axis=view.axis, mode="clip")
    raise _CannotFold(f"no folder for '{view.operation.name}'")


FOLDABLE: frozenset[type] = frozenset(
    [
        *_EXACT_BINARIES,
        *_EXACT_ACTIVATIONS,
        *_TRANSCENDENTAL_ACTIVATIONS,
        rlx.PowOp,
        rlx.CompareOp,
        rlx.WhereOp,
        rlx.CastOp,
        rlx.ReshapeOp,
        rlx.TransposeOp,
        rlx.NarrowOp,
        rlx.ConcatOp,
        rlx.ExpandOp,
        rlx.GatherOp,
    ]
)


# --- the pass ---------------------------------------------------------------------------------


def _constant_attribute(value: ir.Value) -> Optional[ir.DenseElementsAttr]:
    """The dense elements of `value` when an rlx.constant or a tensor arith.constant defines it."""
    owner = value.owner
    if not isinstance(owner, (rlx.ConstantOp, arith.ConstantOp)):
        return None
    attribute = owner.attributes["value"]
    if not isinstance(attribute, ir.DenseElementsAttr):
        return None  # e.g. dense_resource, or a scalar arith.constant
    if not isinstance(value.type, ir.RankedTensorType) or attribute.type != value.type:
        return None
    return attribute


def _as_array(attribute: ir.DenseElementsAttr, value: ir.Value) -> Optional[np.ndarray]:
    dtype = _dtype(_element(value))
    if dtype is None:
        return None
    try:
        if attribute.is_splat:
            # A read-only broadcast of the one value: a splat operand costs no memory however
            # large it is (the results folded are bounded by max-elements). np.array() would
            # materialise it, and for i1 reads past the bindings' one packed byte.
            element = attribute.get_splat_value()
            scalar = ir.IntegerAttr(element).value if dtype in _INTEGERS else ir.FloatAttr(element).value
            array = np.broadcast_to(np.array(scalar).astype(dtype), shape_of(value.type))
        else:
            array = np.array(attribute)
    except (TypeError, ValueError, RuntimeError):
        return None
    if array.dtype != dtype or array.shape != shape_of(value.type):
        return None
    return array


def _as_attribute(array: np.ndarray, result_type: ir.Type) -> Optional[ir.DenseElementsAttr]:
    attribute = ir.DenseElementsAttr.get(np.ascontiguousarray(array))
    return attribute if attribute.type == result_type else None


def _num_elements(shape) -> int:
    count = 1
    for d in shape:
        count *= d
    return count


@dataclasses.dataclass(frozen=True)
class FoldConstants(RlxPass):
    name = "rlx-fold-constants"
    summary = "Evaluate RLX ops whose operands are all constants (NumPy) into rlx.constant"
    max_elements: int = option(1 << 20, "fold only results with at most this many elements", minimum=0)

    def run(self, module: ir.Operation) -> None:
        candidates: list[ir.Operation] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if type(op.opview) in FOLDABLE:
                candidates.append(op)
            return ir.WalkResult.ADVANCE

        module.walk(visit, ir.WalkOrder.PRE_ORDER)  # producers before users in each block
        sources: list[ir.Operation] = []
        for op in candidates:
            folded_sources = self._fold(op)
            if folded_sources is not None:
                sources += folded_sources
        # Operand constants that lost their last use go too: each once (deduplicated while
        # every wrapper is valid), users before producers.
        unique: dict[ir.Operation, None] = dict.fromkeys(sources)
        for source in reversed(list(unique)):
            if not any(list(r.uses) for r in source.results):  # rlx.constant or arith.constant
                source.erase()

    def _fold(self, op: ir.Operation) -> Optional[list[ir.Operation]]:
        """Folds `op` when possible; returns the ops that defined its operands, else None."""
        view = op.opview
        result_type = op.results[0].type
        shape = shape_of(result_type)
        if DYNAMIC in shape or _num_elements(shape) > self.max_elements:
            return None
        result_dtype = _dtype(ir.RankedTensorType(result_type).element_type)
        if result_dtype is None:
            return None
        inputs = []
        for operand in op.operands:
            attribute = _constant_attribute(operand)
            array = None if attribute is None else _as_array(attribute, operand)
            if array is None:
                return None
            inputs.append(array)
        try:
            with np.errstate(all="ignore"):
                array = np.asarray(_evaluate(view, inputs, result_dtype))
                if array.dtype != result_dtype:
                    array = array.astype(result_dtype)  # one rounding to the result type
        except (_CannotFold, ValueError, TypeError):
            return None  # not evaluable exactly (or at all): the op stays
        if array.shape != shape:
            return None
        try:
            attribute = _as_attribute(array, result_type)
        except (ValueError, TypeError):
            attribute = None
        if attribute is None:
            return None
        constant = rlx.ConstantOp(attribute, loc=op.location, ip=ir.InsertionPoint(op))
        op.results[0].replace_all_uses_with(constant.result)
        producers = [operand.owner.operation for operand in op.operands]
        op.erase()
        return producers
