"""Symbolic (dynamic) dimensions in RLX IR: how they are written, verified and bound.

A *dynamic function* has `?` dimensions in its types that stand for named
symbols.  Which symbol each `?` stands for is written once, where sizes enter
the function:

- an argument's `rlx.dims` attribute is its symbolic shape, an array of
  integers and expression strings (`["BATCH", "SEQ", 512]`, see `dim_expr`);
  its type has `?` exactly where the entry is an expression;
- an op attribute that holds a size (`rlx.narrow`'s `len`, `rlx.expand`'s
  `shape`, ...) keeps a placeholder `-1` where the size is symbolic, and the
  op's `rlx.sym` dictionary gives the expression: `rlx.sym = {len = "SEQ"}`,
  `rlx.sym = {shape = ["BATCH", "SEQ", 64]}`;
- an op without shape inference (`rlx.reshape`, `rlx.cast`, ...) with a
  dynamic result carries the result's symbolic shape in `rlx.dims`; on an op
  that infers its result, `rlx.dims` is an optional check.

Every other size follows from the ops' own shape inference.  Equal symbols
mean equal sizes.

**Binding** (`bind_function`, `bind_dims`, the pass `rlx-bind-dims`) gives
every symbol a positive size: argument types become static, `rlx.sym`
expressions are evaluated into the attributes, and every op's result type is
inferred again, in order, then checked by the op's own verifier.  A size that
makes an op invalid is an error at that op naming the binding.

**Verification** of a dynamic function (`verify_function`) cannot run the
static shape rules on `?`; instead the function is bound, in a copy, at four
*probe bindings* that give every symbol a distinct size (two sets of large
primes, two of small primes).  An op that fails at every probe is invalid
whatever the sizes (conflicting symbols, a reshape that loses elements, ...):
the error is reported with the probe sizes written back as symbols.  An op
valid at some probes only (a narrow of `SEQ` rows from a fixed table) is
checked again when the sizes are bound.  From the probes each result's
symbolic shape is recovered (`symbolic_shapes`), and the declared result
types must agree with it: `?` where the size depends on a symbol, the size
itself where it does not.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence, Union

from mlir import ir
from mlir.dialects.func import FuncOp, ReturnOp

from ..dsl import DenseI64ArrayAttr, I64Attr, Operation, VerifyError
from ..errors import RlxError
from ..ir.attrs import DIMS_ATTR, SYM_ATTR
from ..ir.shapes import DYNAMIC
from ..ir.walk import is_op
from .expr import Dim, DimExpr, DimExprError, as_dim, dim_symbols, evaluate_dim, format_dims
from .variants import ModelVariant

PLACEHOLDER = -1  # what a symbolic entry of a size attribute holds before binding

SymbolicShape = tuple  # of Dim


class DimError(RlxError, ValueError):
    """A dynamic function, or a binding of it, that is invalid; `location` is where."""

    def __init__(self, message: str, location: Optional[ir.Location] = None):
        super().__init__(message)
        self.message = message
        self.location = location


# --- reading and writing the attributes ---------------------------------------------------


def dims_attr(dims: Sequence[Dim]) -> ir.ArrayAttr:
    """`[BATCH, SEQ, 512]` as the attribute `["BATCH", "SEQ", 512]` (needs a Context)."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get(
        [ir.IntegerAttr.get(i64, d) if isinstance(d, int) else ir.StringAttr.get(str(d)) for d in dims]
    )


def dims_from_attr(attr: ir.Attribute, what: str) -> SymbolicShape:
    """The symbolic shape an `rlx.dims`-style array holds; DimError when it is malformed."""
    if not isinstance(attr, ir.ArrayAttr):
        raise DimError(f"{what} must be an array of integers and symbol expressions, got {attr}")
    return tuple(_dim_from_attr(element, what) for element in attr)


def _dim_from_attr(attr: ir.Attribute, what: str) -> Dim:
    try:
        if isinstance(attr, ir.IntegerAttr):
            value = ir.IntegerAttr(attr).value
            if value < 0:
                raise DimError(f"{what}: size {value} is negative")
            return value
        if isinstance(attr, ir.StringAttr):
            return as_dim(ir.StringAttr(attr).value)
    except DimExprError as error:
        raise DimError(f"{what}: {error}") from None
    raise DimError(f"{what}: {attr} is neither an integer nor a symbol expression")


def _sym_entries(op: ir.Operation) -> dict[str, Union[Dim, tuple]]:
    """`rlx.sym` as {attribute name: Dim or tuple of Dims}."""
    if SYM_ATTR not in op.attributes:
        return {}
    attr = op.attributes[SYM_ATTR]
    if not isinstance(attr, ir.DictAttr):
        raise DimError(f"'{SYM_ATTR}' must be a dictionary from attribute names to expressions, got {attr}")
    entries = {}
    for named in ir.DictAttr(attr):
        what = f"'{SYM_ATTR}' entry '{named.name}'"
        if isinstance(named.attr, ir.ArrayAttr):
            entries[named.name] = dims_from_attr(named.attr, what)
        else:
            entries[named.name] = _dim_from_attr(named.attr, what)
    return entries


def _result_dims(op: ir.Operation) -> Optional[SymbolicShape]:
    if DIMS_ATTR not in op.attributes:
        return None
    return dims_from_attr(op.attributes[DIMS_ATTR], f"'{DIMS_ATTR}'")


def _arg_attr_dicts(func: ir.Operation) -> list[ir.DictAttr]:
    count = len(func.regions[0].blocks[0].arguments)
    if "arg_attrs" not in func.attributes:
        return [ir.DictAttr.get({}) for _ in range(count)]
    return [ir.DictAttr(a) for a in ir.ArrayAttr(func.attributes["arg_attrs"])]


def argument_dims(func: ir.Operation) -> list[SymbolicShape]:
    """Each argument's symbolic shape: its `rlx.dims`, or its static type's shape."""
    arguments = func.regions[0].blocks[0].arguments
    shapes = []
    for index, (argument, attrs) in enumerate(zip(arguments, _arg_attr_dicts(func))):
        what = f"argument #{index}"
        type_ = argument.type
        if not isinstance(type_, ir.RankedTensorType):
            shapes.append(())
            continue
        shape = tuple(ir.RankedTensorType(type_).shape)
        if DIMS_ATTR not in attrs:
            if DYNAMIC in shape:
                raise DimError(f"{what} has dynamic dimensions but no '{DIMS_ATTR}' naming them", argument.location)
            shapes.append(shape)
            continue
        try:
            dims = dims_from_attr(attrs[DIMS_ATTR], f"{what} '{DIMS_ATTR}'")
        except DimError as error:
            raise DimError(error.message, argument.location) from None
        if len(dims) != len(shape):
            raise DimError(
                f"{what} '{DIMS_ATTR}' {format_dims(dims)} has rank {len(dims)}, but its type {type_} has rank {len(shape)}",
                argument.location,
            )
        for axis, (dim, size) in enumerate(zip(dims, shape)):
            expected = DYNAMIC if isinstance(dim, DimExpr) else dim
            if size != expected:
                raise DimError(
                    f"{what}: dimension {axis} of {type_} must be {'?' if expected == DYNAMIC else expected} "
                    f"for '{DIMS_ATTR}' {format_dims(dims)}",
                    argument.location,
                )
        shapes.append(dims)
    return shapes


def is_dynamic(func: ir.Operation) -> bool:
    """True for a `func.func` with symbolic dimensions: `rlx.dims` on an argument or op, or `rlx.sym` on an op.

    `?` alone (no symbols anywhere) keeps its plain MLIR meaning, an unknown
    size that each op's verifier treats as such.
    """
    if not is_op(func, FuncOp) or not func.regions[0].blocks:
        return False
    if any(DIMS_ATTR in attrs for attrs in _arg_attr_dicts(func)):
        return True
    return any(SYM_ATTR in op.attributes or DIMS_ATTR in op.attributes for op in body_ops(func))


def dynamic_functions(root: ir.Operation) -> list[ir.Operation]:
    """The dynamic `func.func`s at the top level of a module (or `root` itself)."""
    if is_op(root, FuncOp):
        return [root] if is_dynamic(root) else []
    candidates = [op for region in root.regions for block in region.blocks for op in block.operations]
    return [op.operation for op in candidates if isinstance(op, FuncOp) and is_dynamic(op.operation)]


def function_symbols(func: ir.Operation) -> list[str]:
    """Every symbol the function mentions (arguments, `rlx.sym`, `rlx.dims`), sorted."""
    found = set()
    for dims in argument_dims(func):
        found |= dim_symbols(dims)
    for op in body_ops(func):
        try:
            for entry in _sym_entries(op).values():
                found |= dim_symbols(entry if isinstance(entry, tuple) else (entry,))
            dims = _result_dims(op)
        except DimError as error:
            raise DimError(f"'{op.name}' op {error.message}", op.location) from None
        if dims:
            found |= dim_symbols(dims)
    return sorted(found)


def body_ops(func: ir.Operation) -> list[ir.Operation]:
    """The ops of the function's entry block, in order."""
    return [op.operation for op in func.regions[0].blocks[0].operations]


# --- specialising one copy at one binding ----------------------------------------------------


@dataclass
class _Outcome:
    """What one op became at one binding: result types, or the error, or poisoned (an operand failed)."""

    types: Optional[list] = None
    error: Optional[str] = None


def _attribute_def(view, name: str):
    for attr_def in getattr(view, "_attribute_defs", ()):
        if attr_def.name == name:
            return attr_def
    return None


def _specialise_function(func: ir.Operation, arg_dims: list, binding: Mapping[str, int]) -> list[Optional[_Outcome]]:
    """Binds `func` (a copy: this rewrites it) op by op; one outcome per body op (None: poisoned)."""
    with func.context, func.location:
        return _specialise_ops(func, arg_dims, binding)


class _ArgumentSizeError(DimError):
    """An argument's symbolic shape has no valid size under a binding (negative, or beyond int64)."""


MAX_SIZE = 2**62  # sizes beyond this are rejected before MLIR sees them


def _size(dim: Dim, binding: Mapping[str, int]) -> int:
    """`dim` under `binding`; VerifyError when it is negative, too large for a tensor type, or undefined."""
    try:
        value = evaluate_dim(dim, binding)
    except DimExprError as error:  # e.g. a division by a symbolic expression that is zero here
        raise VerifyError(str(error)) from None
    if not 0 <= value < MAX_SIZE:
        raise VerifyError(f"size {dim} = {value} is {'negative' if value < 0 else 'too large'}")
    return value


def _specialise_ops(func: ir.Operation, arg_dims: list, binding: Mapping[str, int]) -> list[Optional[_Outcome]]:
    for index, (argument, dims) in enumerate(zip(func.regions[0].blocks[0].arguments, arg_dims)):
        if isinstance(argument.type, ir.RankedTensorType):
            try:
                shape = [_size(d, binding) for d in dims]
            except VerifyError as error:
                raise _ArgumentSizeError(f"argument #{index}: {error}", argument.location) from None
            argument.set_type(ir.RankedTensorType.get(shape, ir.RankedTensorType(argument.type).element_type))
    poisoned: set = set()
    outcomes: list[Optional[_Outcome]] = []
    for op in body_ops(func):
        if is_op(op, ReturnOp):
            outcomes.append(_Outcome(types=[]))
            continue
        if any(operand in poisoned for operand in op.operands):
            poisoned.update(op.results)
            outcomes.append(None)
            continue
        try:
            with op.location:
                types = _specialise_op(op, binding)
        except DimError as error:
            raise DimError(error.message, op.location) from None
        except DimExprError as error:
            raise DimError(f"'{op.name}' op {error}", op.location) from None
        except VerifyError as error:
            poisoned.update(op.results)
            outcomes.append(_Outcome(error=str(error)))
            continue
        outcomes.append(_Outcome(types=types))
    return outcomes


def _specialise_op(op: ir.Operation, binding: Mapping[str, int]) -> list:
    """Evaluates the op's symbolic attributes, re-infers and sets its result types, verifies it."""
    view = op.opview
    for name, entry in _sym_entries(op).items():
        attr_def = _attribute_def(view, name)
        if attr_def is None:
            raise DimError(f"'{op.name}' op '{SYM_ATTR}' names '{name}', which is not an attribute of the op")
        if attr_def.constraint is I64Attr and not isinstance(entry, tuple):
            value = evaluate_dim(entry, binding)  # a negative one is the op's to reject
            if abs(value) >= MAX_SIZE:
                raise VerifyError(f"attribute '{name}' = {entry} = {value} is too large")
        elif attr_def.constraint is DenseI64ArrayAttr and isinstance(entry, tuple):
            value = [_size(d, binding) for d in entry]
        else:
            raise DimError(f"'{op.name}' op '{SYM_ATTR}' entry '{name}' does not fit the attribute's kind")
        op.attributes[name] = attr_def.constraint.from_python(value)
    declared = [r.type for r in op.results]
    annotated = _result_dims(op)
    if isinstance(view, Operation) and hasattr(type(view), "infer_result_type") and len(declared) == 1:
        types = [type(view).infer_result_type(*_operand_types(view), **view.attribute_values())]
    elif isinstance(view, Operation) and hasattr(type(view), "infer_result_types"):
        types = list(type(view).infer_result_types(*_operand_types(view), **view.attribute_values()))
    elif annotated is not None and len(declared) == 1:
        element = ir.RankedTensorType(declared[0]).element_type
        types = [ir.RankedTensorType.get([_size(d, binding) for d in annotated], element)]
    else:
        for index, type_ in enumerate(declared):
            if isinstance(type_, ir.RankedTensorType) and DYNAMIC in ir.RankedTensorType(type_).shape:
                raise DimError(
                    f"'{op.name}' op result #{index} is dynamic, but the op has no shape inference: "
                    f"give it '{DIMS_ATTR}'"
                )
        types = declared
    if annotated is not None and len(types) == 1:
        shape = list(ir.RankedTensorType(types[0]).shape)
        wanted = [_size(d, binding) for d in annotated]
        if shape != wanted:
            raise VerifyError(f"result shape {shape} differs from its '{DIMS_ATTR}' {format_dims(annotated)} = {wanted}")
    for result, type_ in zip(op.results, types):
        result.set_type(type_)
    if isinstance(view, Operation):
        view.verify_invariants()
    return types


def _operand_types(view: Operation) -> list:
    return [
        [v.type for v in g] if isinstance(g, list) else None if g is None else g.type for g in view.operand_groups()
    ]


def _copy_of(func: ir.Operation) -> tuple[ir.Operation, ir.Operation]:
    """A detached copy of the function's module (bodies of scans and ifs included) and the copied function."""
    parent = func.parent
    if parent is None:
        copy = func.clone()
        return copy, copy
    module = parent.clone()
    index = [op.operation for op in parent.regions[0].blocks[0].operations].index(func)
    return module, list(module.regions[0].blocks[0].operations)[index].operation


# --- probes: verifying and reading symbolic shapes -------------------------------------------


def _primes(start: int, count: int) -> list[int]:
    found, n = [], max(start, 2)
    while len(found) < count:
        if all(n % p for p in range(2, int(n**0.5) + 1)):
            found.append(n)
        n += 1
    return found


def probe_bindings(symbols: Sequence[str]) -> list[dict[str, int]]:
    """Four bindings giving each symbol a distinct size: primes from 1009, from 2003, from 2, from 3.

    Each symbol's size differs between any two bindings, so a size that moves
    with the probes depends on a symbol and one that does not is static.
    """
    count = len(symbols)
    sets = [_primes(1009, count), _primes(2003, count), _primes(2, count), _primes(3, count)]
    return [dict(zip(symbols, values)) for values in sets]


def _translate(message: str, binding: Mapping[str, int]) -> str:
    """Writes the probe sizes in `message` as the symbols (and products of two) they stand for."""
    names = {value: name for name, value in binding.items()}
    for (a, x), (b, y) in itertools.combinations(sorted(binding.items()), 2):
        names.setdefault(x * y, f"{a}*{b}")
    return re.sub(r"\b\d+\b", lambda m: names.get(int(m.group(0)), m.group(0)), message)


def _candidates(dims_seen: Iterable[Dim]) -> list[Dim]:
    """Expressions a symbolic result dimension may be: the ones seen, then their sums and products
    with each other and with the static sizes seen."""
    seen: dict[str, DimExpr] = {}
    sizes: set[int] = set()
    for d in dims_seen:
        if isinstance(d, DimExpr):
            seen.setdefault(str(d), d)
        elif d > 1:
            sizes.add(d)
    exprs = list(seen.values())
    combined = []
    for a, b in itertools.combinations_with_replacement(exprs, 2):
        combined += [DimExpr("+", lhs=a, rhs=b), DimExpr("*", lhs=a, rhs=b)]
    for a in exprs:
        for size in sorted(sizes):
            k = DimExpr(None, size)
            combined += [DimExpr("+", lhs=a, rhs=k), DimExpr("*", lhs=a, rhs=k)]
    return exprs + combined


def derive_dims(
    samples: Sequence[Sequence[int]], bindings: Sequence[Mapping[str, int]], candidates: Sequence[Dim]
) -> SymbolicShape:
    """The symbolic shape whose value at `bindings[k]` is `samples[k]` (one shape per binding).

    A dimension equal at every binding is static; otherwise it is the first
    candidate expression matching every sample.  ValueError when none does.
    """
    dims = []
    for axis, values in enumerate(zip(*samples)):
        if all(v == values[0] for v in values):
            dims.append(values[0])
            continue
        for candidate in candidates:
            if all(evaluate_dim(candidate, b) == v for b, v in zip(bindings, values)):
                dims.append(candidate)
                break
        else:
            raise ValueError(f"dimension {axis} (sizes {list(values)} at the probe sizes) is not an expression of the symbols")
    return tuple(dims)


def symbolic_shapes(func: ir.Operation) -> dict:
    """{value: symbolic shape} for the arguments and every op result of a dynamic function.

    Raises DimError at the first op that is invalid at every probe binding,
    whose result has no symbolic form, or whose declared type disagrees with
    its symbolic shape (a static size where a symbol belongs, or the reverse).
    """
    with func.context, func.location:
        return _symbolic_shapes(func)


def _symbolic_shapes(func: ir.Operation) -> dict:
    arg_dims = argument_dims(func)
    symbols = function_symbols(func)
    bindings = probe_bindings(symbols)
    runs, valid, size_errors = [], [], []
    for binding in bindings:
        module, copy = _copy_of(func)
        try:
            runs.append(_specialise_function(copy, arg_dims, binding))
            valid.append(binding)
        except _ArgumentSizeError as error:
            size_errors.append((binding, error))  # sizes this binding cannot give: try the others
        except DimError as error:
            raise DimError(error.message, error.location or func.location) from None
        finally:
            del module
    if len(valid) < 2:
        binding, error = size_errors[0]
        raise DimError(_translate(error.message, binding), error.location)
    bindings = valid
    shapes: dict = {a: d for a, d in zip(func.regions[0].blocks[0].arguments, arg_dims)}
    for index, op in enumerate(body_ops(func)):
        if is_op(op, ReturnOp):
            continue
        outcomes = [(b, run[index]) for b, run in zip(bindings, runs) if run[index] is not None]
        passed = [(b, o.types) for b, o in outcomes if o.types is not None]
        if len(passed) < 2:
            failed = [(b, o.error) for b, o in outcomes if o.error is not None]
            binding, message = failed[0] if failed else (bindings[0], "is invalid at every probe size")
            raise DimError(f"'{op.name}' op {_translate(message, binding)}", op.location)
        seen = [d for operand in op.operands for d in shapes.get(operand, ())]
        for entry in _sym_entries(op).values():
            seen += list(entry) if isinstance(entry, tuple) else [entry]
        seen += list(_result_dims(op) or ())
        candidates = _candidates(seen)
        for number, result in enumerate(op.results):
            if not isinstance(result.type, ir.RankedTensorType):
                continue
            samples = [tuple(ir.RankedTensorType(types[number]).shape) for _, types in passed]
            try:
                dims = derive_dims(samples, [b for b, _ in passed], candidates)
            except ValueError as error:
                raise DimError(f"'{op.name}' op result #{number}: {error}", op.location) from None
            _check_declared(op, number, result.type, passed[0][1][number], dims)
            shapes[result] = dims
    return shapes


def _check_declared(op: ir.Operation, number: int, declared: ir.Type, inferred: ir.Type, dims: SymbolicShape) -> None:
    element = ir.RankedTensorType(inferred).element_type
    expected = ir.RankedTensorType.get([DYNAMIC if isinstance(d, DimExpr) else d for d in dims], element)
    if declared != expected:
        raise DimError(
            f"'{op.name}' op result #{number} has type {declared}, but its shape is {format_dims(dims)} "
            f"(type {expected})",
            op.location,
        )


def verify_function(func: ir.Operation) -> None:
    """Raises DimError (with a location) when the dynamic function `func` is invalid."""
    symbolic_shapes(func)


def result_dims(func: ir.Operation) -> list[SymbolicShape]:
    """The symbolic shapes of the function's results."""
    shapes = symbolic_shapes(func)
    terminator = body_ops(func)[-1]
    return [shapes.get(v, tuple(ir.RankedTensorType(v.type).shape)) for v in terminator.operands]


# --- binding ------------------------------------------------------------------------------------


def format_binding(binding: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(binding.items()))


def check_binding(func: ir.Operation, binding: Mapping[str, int]) -> dict[str, int]:
    """The binding as {symbol: int}, after checking it names exactly the function's symbols with positive sizes."""
    symbols = function_symbols(func)
    name = ir.StringAttr(func.attributes["sym_name"]).value
    known = ", ".join(symbols) or "none"
    checked = {}
    for symbol, size in binding.items():
        if symbol not in symbols:
            raise DimError(f"@{name} has no symbol '{symbol}' (its symbols: {known})", func.location)
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise DimError(f"symbol '{symbol}' must be bound to a positive integer, got {size!r}", func.location)
        checked[symbol] = int(size)
    missing = [s for s in symbols if s not in checked]
    if missing:
        raise DimError(
            f"symbol{'s' if len(missing) > 1 else ''} {', '.join(repr(s) for s in missing)} of @{name} "
            f"{'are' if len(missing) > 1 else 'is'} not bound",
            func.location,
        )
    return checked


def bind_function(func: ir.Operation, binding: Mapping[str, int]) -> None:
    """Makes the dynamic function `func` static under `binding` (every symbol to a positive size).

    Raises DimError, leaving `func` unchanged, for an unknown or unbound
    symbol, a non-positive size, or a size that makes an op invalid.
    """
    binding = check_binding(func, binding)
    arg_dims = argument_dims(func)
    module, copy = _copy_of(func)
    try:
        outcomes = _specialise_function(copy, arg_dims, binding)
    except DimError as error:
        raise DimError(error.message, error.location or func.location) from None
    for op, outcome in zip(body_ops(func), outcomes):
        if outcome is None:
            continue
        if outcome.error is not None:
            raise DimError(f"'{op.name}' op is invalid for {format_binding(binding)}: {outcome.error}", op.location)
    # Everything is valid: move the copy's types and attributes over.
    with func.context, func.location:
        _adopt(func, copy)
    del module


def _adopt(func: ir.Operation, copy: ir.Operation) -> None:
    """Gives `func` the argument and result types and the bound attributes of its specialised `copy`."""
    originals, copies = body_ops(func), body_ops(copy)
    for argument, copied in zip(func.regions[0].blocks[0].arguments, copy.regions[0].blocks[0].arguments):
        argument.set_type(copied.type)
    for op, copied in zip(originals, copies):
        for name in _sym_entries(op):
            op.attributes[name] = copied.attributes[name]
        for discard in (SYM_ATTR, DIMS_ATTR):
            if discard in op.attributes:
                del op.attributes[discard]
        for result, copied_result in zip(op.results, copied.results):
            result.set_type(copied_result.type)
    attrs = []
    for entry in _arg_attr_dicts(func):
        attrs.append(ir.DictAttr.get({n.name: n.attr for n in entry if n.name != DIMS_ATTR}))
    if "arg_attrs" in func.attributes:
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
    inputs = [a.type for a in func.regions[0].blocks[0].arguments]
    results = [v.type for v in originals[-1].operands]
    func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))


def bind_module(module: ir.Operation, binding: Mapping[str, int]) -> list[ir.Operation]:
    """Binds every dynamic function of `module` (each takes the symbols it mentions); returns them.

    DimError for a symbol no function mentions, and as `bind_function`.
    """
    functions = dynamic_functions(module)
    symbols = [set(function_symbols(f)) for f in functions]
    known = sorted(set().union(*symbols)) if symbols else []
    for symbol in binding:
        if symbol not in known:
            raise DimError(
                f"the module has no symbol '{symbol}' (its symbols: {', '.join(known) or 'none'})",
                functions[0].location if functions else module.location,
            )
    for func, own in zip(functions, symbols):
        bind_function(func, {k: v for k, v in binding.items() if k in own})
    return functions


def bind_dims(module, binding) -> "ir.Module":
    """Binds the symbols of `module` (an `ir.Module` or its operation) in place and returns it.

    `binding` is `{symbol: size}` or a `ModelVariant` (its sizes for the
    module's symbols).  Raises DimError (a ValueError) naming the symbol for an
    unknown or unbound symbol, a size that is not a positive integer, or a size
    that makes an op invalid; the module is then unchanged.
    """
    operation = module.operation if isinstance(module, ir.Module) else module
    if isinstance(binding, ModelVariant):
        symbols = set().union(*(function_symbols(f) for f in dynamic_functions(operation)))
        binding = binding.binding_for(sorted(symbols))
    with operation.context, operation.location:
        bind_module(operation, dict(binding))
    return module
