"""Building ops on symbolic shapes: what `GraphModule` does when a shape names a symbol.

An op whose operands have symbolic shapes, or whose size attributes are
expressions (`len="SEQ"`, `shape=("BATCH", "SEQ", 64)`), is built twice over:

1. at each probe binding (`dynamic.probe_bindings`), in a scratch block whose
   arguments have the operands' shapes at those sizes, through the op's own
   builder, so its shape inference and verifier run on static types;
2. once for real, on the `?`-typed operands, with the result type written
   from the result's symbolic shape (recovered from the probes by
   `dynamic.derive_dims`), symbolic attribute entries as the placeholder
   `-1`, and the expressions in `rlx.sym` (`rlx.dims` for an op without
   shape inference, whose symbolic result shape the caller gives).

An op that fails at every probe raises ValueError with the probe sizes
written as symbols (`operand shapes [BATCH, SEQ] and [SEQ, BATCH] do not
broadcast`).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from mlir import ir
from mlir.dialects import func

from ..dsl import DenseI64ArrayAttr, I64Attr, VerifyError
from ..ir.attrs import DIMS_ATTR, SYM_ATTR
from ..ir.shapes import DYNAMIC
from .dynamic import PLACEHOLDER, _candidates, _size, _translate, derive_dims, dims_attr, probe_bindings
from .expr import Dim, DimExpr, DimExprError, as_dim, dim_symbols, evaluate_dim


def parse_shape(shape: Sequence) -> tuple[Dim, ...]:
    """A builder shape (ints, symbol names, expressions) as Dims; ValueError for a bad entry."""
    dims = []
    for d in shape:
        try:
            dim = as_dim(d)
        except DimExprError as error:
            raise ValueError(f"shape {list(shape)}: {error}") from None
        if isinstance(dim, int) and dim < 0:
            raise ValueError(f"shape {list(shape)} must be non-negative integers or symbol expressions")
        dims.append(dim)
    return tuple(dims)


def is_symbolic(dims: Sequence[Dim]) -> bool:
    return any(isinstance(d, DimExpr) for d in dims)


def same_dims(a: Sequence[Dim], b: Sequence[Dim]) -> bool:
    """True when two symbolic shapes agree at every probe binding (`SEQ + SEQ` is `2*SEQ`)."""
    if len(a) != len(b):
        return False
    bindings = probe_bindings(sorted(dim_symbols(a) | dim_symbols(b)))
    return all(evaluate_dim(x, p) == evaluate_dim(y, p) for p in bindings for x, y in zip(a, b))


def tensor_type(dims: Sequence[Dim], element: ir.Type) -> ir.RankedTensorType:
    """The tensor type of a symbolic shape: `?` where a dimension is an expression."""
    return ir.RankedTensorType.get([DYNAMIC if isinstance(d, DimExpr) else d for d in dims], element)


def has_symbolic_attributes(op_class, keywords: dict) -> bool:
    """True when a size attribute among `keywords` is given as an expression (a string)."""
    for attr_def in getattr(op_class, "_attribute_defs", ()):
        value = keywords.get(attr_def.name)
        if attr_def.constraint is I64Attr and isinstance(value, (str, DimExpr)):
            return True
        if attr_def.constraint is DenseI64ArrayAttr and isinstance(value, (list, tuple)):
            if any(isinstance(v, (str, DimExpr)) for v in value):
                return True
    return False


def symbolic_attributes(op_class, keywords: dict) -> dict[str, Any]:
    """The size attributes among `keywords` given as expressions: {name: Dim or tuple of Dims}."""
    found = {}
    for attr_def in getattr(op_class, "_attribute_defs", ()):
        value = keywords.get(attr_def.name)
        if attr_def.constraint is I64Attr and isinstance(value, (str, DimExpr)):
            found[attr_def.name] = as_dim(value)
        elif attr_def.constraint is DenseI64ArrayAttr and isinstance(value, (list, tuple)) and any(
            isinstance(v, (str, DimExpr)) for v in value
        ):
            found[attr_def.name] = tuple(as_dim(v) for v in value)
    return found


def _evaluate(entry, binding) -> Any:
    if isinstance(entry, tuple):
        return [_size(d, binding) for d in entry]
    return evaluate_dim(entry, binding)


def _placeholder(entry) -> Any:
    if isinstance(entry, tuple):
        return [PLACEHOLDER if isinstance(d, DimExpr) else d for d in entry]
    return PLACEHOLDER


def _sym_attr(entries: dict) -> ir.DictAttr:
    return ir.DictAttr.get(
        {name: dims_attr(e) if isinstance(e, tuple) else ir.StringAttr.get(str(e)) for name, e in entries.items()}
    )


class Operand:
    """An operand of the op being built: its SSA value and symbolic shape."""

    def __init__(self, value: ir.Value, dims: Sequence[Dim]):
        self.value, self.dims = value, tuple(dims)


def build(
    make: Callable[..., Any],
    positional: Sequence[Any],
    keywords: dict,
    op_class,
    results: int,
    result_dims: Optional[Sequence[Dim]] = None,
    result_element: Optional[ir.Type] = None,
) -> tuple[Any, list[tuple[Dim, ...]]]:
    """Builds an op on symbolic shapes at the current insertion point; returns (op, result shapes).

    `positional` and `keywords` are the builder's arguments, with every tensor
    operand given as an `Operand` and symbolic size attributes as expressions.
    `make(*positional, **keywords)` builds the op from plain values (it is
    called at the probe sizes, in a scratch block).  For an op without shape
    inference, `result_dims` is its result's symbolic shape (and
    `result_element` its element type, by default the first operand's).
    """
    symbolic = symbolic_attributes(op_class, keywords)
    operands = [a for a in (*positional, *keywords.values()) if isinstance(a, Operand)]
    symbols = set().union(*(dim_symbols(o.dims) for o in operands)) if operands else set()
    for entry in symbolic.values():
        symbols |= dim_symbols(entry if isinstance(entry, tuple) else (entry,))
    if result_dims is not None:
        symbols |= dim_symbols(result_dims)
    infers = hasattr(op_class, "infer_result_type") or hasattr(op_class, "infer_result_types")
    if not infers and result_dims is None:
        raise ValueError(f"'{op_class.OPERATION_NAME}' op has no shape inference: give its symbolic out_shape")
    bindings = probe_bindings(sorted(symbols))
    passed, failures = [], []
    for binding in bindings:
        try:
            types = _probe(make, positional, keywords, symbolic, binding, op_class, result_dims, result_element)
        except (ValueError, VerifyError, DimExprError) as error:
            failures.append((binding, str(error)))
            continue
        passed.append((binding, types))
    if len(passed) < 2:
        binding, message = failures[0]
        raise ValueError(_translate(message, binding))
    candidates = _candidates([d for o in operands for d in o.dims] + _flatten(symbolic.values()) + list(result_dims or ()))
    shapes = []
    for number in range(len(passed[0][1])):
        samples = [tuple(ir.RankedTensorType(types[number]).shape) for _, types in passed]
        try:
            shapes.append(derive_dims(samples, [b for b, _ in passed], candidates))
        except ValueError as error:
            raise ValueError(f"'{op_class.OPERATION_NAME}' op result #{number}: {error}") from None
    elements = [ir.RankedTensorType(t).element_type for t in passed[0][1]]
    result_types = [tensor_type(dims, element) for dims, element in zip(shapes, elements)]
    real_positional = [a.value if isinstance(a, Operand) else a for a in positional]
    real_keywords = {k: (v.value if isinstance(v, Operand) else v) for k, v in keywords.items()}
    for name, entry in symbolic.items():
        real_keywords[name] = _placeholder(entry)
    real_keywords.pop("result_type", None)
    if results == 1:
        op = op_class(*real_positional, **real_keywords, result_type=result_types[0])
    else:
        op = op_class(*real_positional, **real_keywords, result_types=result_types)
    if symbolic:
        op.operation.attributes[SYM_ATTR] = _sym_attr(symbolic)
    if not infers:
        op.operation.attributes[DIMS_ATTR] = dims_attr(shapes[0])
    return op, shapes


def _flatten(entries) -> list:
    flat = []
    for e in entries:
        flat += list(e) if isinstance(e, tuple) else [e]
    return flat


def _probe(make, positional, keywords, symbolic, binding, op_class, result_dims, result_element) -> list:
    """The op's result types when every symbol takes its size in `binding` (built in a scratch block)."""
    scratch = ir.Module.create()
    operand_types, slots = [], []
    for argument in (*positional, *keywords.values()):
        if isinstance(argument, Operand):
            element = ir.RankedTensorType(argument.value.type).element_type
            operand_types.append(ir.RankedTensorType.get([_size(d, binding) for d in argument.dims], element))
            slots.append(argument)
    with ir.InsertionPoint(scratch.body):
        holder = func.FuncOp("probe", ir.FunctionType.get(operand_types, []))
    entry = holder.add_entry_block()
    values = {id(slot): arg for slot, arg in zip(slots, entry.arguments)}
    static_positional = [values[id(a)] if isinstance(a, Operand) else a for a in positional]
    static_keywords = {k: (values[id(v)] if isinstance(v, Operand) else v) for k, v in keywords.items()}
    for name, entry_dims in symbolic.items():
        static_keywords[name] = _evaluate(entry_dims, binding)
    if result_dims is not None:
        first = next((a for a in (*positional, *keywords.values()) if isinstance(a, Operand)), None)
        element = result_element or ir.RankedTensorType(first.value.type).element_type
        static_keywords["result_type"] = ir.RankedTensorType.get([_size(d, binding) for d in result_dims], element)
    with ir.InsertionPoint(entry):
        op = make(*static_positional, **static_keywords)
    view = op.operation.opview
    if hasattr(view, "verify_invariants"):
        try:
            view.verify_invariants()
        except VerifyError as error:
            raise ValueError(f"'{op_class.OPERATION_NAME}' op {error}") from None
    return [r.type for r in op.operation.results]
