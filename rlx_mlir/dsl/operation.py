"""`Operation`: the base of every op class defined in Python.

Subclassing with a `name=` keyword turns a class into an MLIR op: its field
specifiers become accessors, a builder `__init__` with a real signature is
synthesised, and the class is registered with the MLIR Python bindings so that
IR walks hand back instances of it.  A subclass without `name=` is an abstract
base that contributes fields, traits and checks to its subclasses.

Operands are single, optional (a Value or None) or variadic (a list).  When an
op has more than one non-single operand, the IR carries MLIR's
`operandSegmentSizes` attribute, as ODS-defined ops do.

Verification has three layers, run in this order by `verify_invariants()`:
the field constraints, then result-type inference (`infer_result_type`, when the
op defines it, must agree with the result types in the IR), then the op's own
`verify()` for anything else.  Each raises `VerifyError`; the verifier driver
turns it into an MLIR diagnostic at the op's location.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar, Optional, Sequence

from mlir import ir
from mlir._mlir_libs._mlir import register_operation

from ..errors import RlxError
from .fields import OPTIONAL, SINGLE, VARIADIC, AttributeDef, FieldAccessor, FieldDef, OperandDef, ResultDef
from .traits import Trait

SEGMENT_SIZES = "operandSegmentSizes"


class VerifyError(RlxError):
    """An op violates its semantics; the message reads after "'<op name>' op "."""


class Operation(ir.OpView):
    DIALECT: ClassVar[Any] = None
    OPERATION_NAME: ClassVar[str]
    _ODS_REGIONS = (0, True)
    _ODS_OPERAND_SEGMENTS = None
    _ODS_RESULT_SEGMENTS = None

    _operand_defs: ClassVar[tuple[OperandDef, ...]] = ()
    _attribute_defs: ClassVar[tuple[AttributeDef, ...]] = ()
    _result_defs: ClassVar[tuple[ResultDef, ...]] = ()
    traits: ClassVar[frozenset[Trait]] = frozenset()

    def __init_subclass__(cls, name: Optional[str] = None, traits: Sequence[Trait] = (), **kwargs):
        super().__init_subclass__(**kwargs)
        _collect_fields(cls)
        cls.traits = cls.traits | frozenset(traits)
        if name is None:
            return  # an abstract base: fields and checks only
        if cls.DIALECT is None:
            raise TypeError(f"{cls.__name__} must derive from a dialect's Operation base")
        cls.OPERATION_NAME = f"{cls.DIALECT.name}.{name}"
        cls.__init__ = _make_builder(cls)
        register_operation(cls.DIALECT.python_dialect)(cls)
        cls.DIALECT.ops.append(cls)

    @classmethod
    def has_trait(cls, trait: Trait) -> bool:
        return trait in cls.traits

    @classmethod
    def uses_segment_sizes(cls) -> bool:
        return sum(d.variadicity != SINGLE for d in cls._operand_defs) > 1

    # -- hooks for op classes ---------------------------------------------

    # An op that can infer its result type defines
    #     @classmethod
    #     def infer_result_type(cls, *operand_types, **attributes) -> ir.Type
    # (an op with several results: `infer_result_types(...) -> list[ir.Type]`)
    # with one argument per operand field (a type; None for an absent optional
    # operand; a list of types for a variadic one) and attributes as Python
    # values, raising VerifyError when they do not fit together.

    def verify(self) -> None:
        """Checks beyond constraints and inference; raise VerifyError."""

    # -- structured access ----------------------------------------------------

    def operand_groups(self) -> list:
        """Operands per field: a Value, None (absent optional) or a list (variadic)."""
        operands = list(self.operation.operands)
        groups, start = [], 0
        for field_def, size in zip(self._operand_defs, self._segment_sizes(len(operands))):
            chunk = operands[start : start + size]
            start += size
            if field_def.variadicity == VARIADIC:
                groups.append(chunk)
            elif field_def.variadicity == OPTIONAL:
                groups.append(chunk[0] if chunk else None)
            else:
                groups.append(chunk[0])
        return groups

    def _segment_sizes(self, count: int) -> list[int]:
        if self.uses_segment_sizes():
            return list(ir.DenseI32ArrayAttr(self.operation.attributes[SEGMENT_SIZES]))
        singles = sum(d.variadicity == SINGLE for d in self._operand_defs)
        return [1 if d.variadicity == SINGLE else count - singles for d in self._operand_defs]

    def attribute_values(self) -> dict[str, Any]:
        """The op's declared attributes as Python values (None for an absent optional one)."""
        attrs = self.operation.attributes
        return {
            d.name: d.constraint.to_python(attrs[d.name]) if d.name in attrs else None
            for d in self._attribute_defs
        }

    # -- verification ------------------------------------------------------

    @classmethod
    def attribute_problem(cls, attributes: dict) -> Optional[str]:
        """Why one of `attributes` (name -> ir.Attribute) does not fit its declaration, naming it; None when all fit."""
        for d in cls._attribute_defs:
            if d.name in attributes:
                problem = d.constraint.check(attributes[d.name])
                if problem:
                    return f"attribute '{d.name}' {problem}"
        return None

    def verify_invariants(self, *, check_inference: bool = True) -> None:
        """Runs every check of this op; raises VerifyError on the first failure.

        `check_inference=False` skips the comparison with the inferred result types: for an op
        whose builder has just inferred them, it holds by construction (the GraphModule builder,
        which verifies every op it builds, passes it)."""
        operation = self.operation
        groups = self.operand_groups()
        for operand_def, group in zip(self._operand_defs, groups):
            values = group if isinstance(group, list) else [] if group is None else [group]
            for value in values:
                problem = operand_def.constraint.check(value.type)
                if problem:
                    raise VerifyError(f"operand '{operand_def.name}' {problem}")
        for index, result_def in enumerate(self._result_defs):
            problem = result_def.constraint.check(operation.results[index].type)
            if problem:
                raise VerifyError(f"result #{index} ('{result_def.name}') {problem}")
        for attr_def in self._attribute_defs:
            if attr_def.name not in operation.attributes:
                if attr_def.optional:
                    continue
                raise VerifyError(f"requires attribute '{attr_def.name}'")
            problem = attr_def.constraint.check(operation.attributes[attr_def.name])
            if problem:
                raise VerifyError(f"attribute '{attr_def.name}' {problem}")
        infer = getattr(type(self), "infer_result_type", None) if check_inference else None
        if infer is not None:
            expected = infer(*_types_of(groups), **self.attribute_values())
            actual = operation.results[0].type
            if expected != actual:
                raise VerifyError(f"result type {actual} does not match the inferred type {expected}")
        infer_all = getattr(type(self), "infer_result_types", None) if check_inference else None
        if infer_all is not None:
            expected_types = list(infer_all(*_types_of(groups), **self.attribute_values()))
            for index, (result_def, expected, result) in enumerate(zip(self._result_defs, expected_types, operation.results)):
                if expected != result.type:
                    raise VerifyError(
                        f"result #{index} ('{result_def.name}') type {result.type} does not match the inferred type {expected}"
                    )
        self.verify()


def _types_of(groups: list) -> list:
    return [
        [v.type for v in g] if isinstance(g, list) else None if g is None else g.type for g in groups
    ]


def _collect_fields(cls) -> None:
    operands = list(cls._operand_defs)
    attributes = list(cls._attribute_defs)
    results = list(cls._result_defs)
    for attr_name, value in list(vars(cls).items()):
        if not isinstance(value, FieldDef):
            continue
        value.name = attr_name
        if isinstance(value, OperandDef):
            index = len(operands)
            operands.append(value)
            setattr(cls, attr_name, FieldAccessor(lambda self, i=index: self.operand_groups()[i], value))
        elif isinstance(value, ResultDef):
            index = len(results)
            results.append(value)
            setattr(cls, attr_name, FieldAccessor(lambda self, i=index: self.operation.results[i], value))
        else:
            attributes.append(value)
            setattr(cls, attr_name, FieldAccessor(lambda self, d=value: self.attribute_values()[d.name], value))
    cls._operand_defs = tuple(operands)
    cls._attribute_defs = tuple(attributes)
    cls._result_defs = tuple(results)


def _make_builder(cls):
    """A builder `__init__(operands..., attributes..., *, optional ones, result_type, loc, ip)`."""
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    params += [P(d.name, P.POSITIONAL_OR_KEYWORD) for d in cls._operand_defs if d.variadicity != OPTIONAL]
    params += [P(d.name, P.POSITIONAL_OR_KEYWORD) for d in cls._attribute_defs if d.required]
    params += [P(d.name, P.KEYWORD_ONLY, default=None) for d in cls._operand_defs if d.variadicity == OPTIONAL]
    params += [
        P(d.name, P.KEYWORD_ONLY, default=None if d.optional else d.default)
        for d in cls._attribute_defs
        if not d.required
    ]
    infers = (hasattr(cls, "infer_result_type") and len(cls._result_defs) == 1) or (
        hasattr(cls, "infer_result_types") and len(cls._result_defs) > 1
    )
    result_param = {0: None, 1: "result_type"}.get(len(cls._result_defs), "result_types")
    if result_param:
        params.append(P(result_param, P.KEYWORD_ONLY, **({"default": None} if infers else {})))
    params += [P("loc", P.KEYWORD_ONLY, default=None), P("ip", P.KEYWORD_ONLY, default=None)]
    signature = inspect.Signature(params)

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        values = bound.arguments
        groups = [_as_group(values[d.name], d, cls) for d in cls._operand_defs]
        operands, sizes = [], []
        for group in groups:
            chunk = group if isinstance(group, list) else [] if group is None else [group]
            operands += chunk
            sizes.append(len(chunk))
        attributes = {}
        attr_values = {}
        for d in cls._attribute_defs:
            value = values[d.name]
            if value is None and d.optional:
                attr_values[d.name] = None
                continue
            attributes[d.name] = value if isinstance(value, ir.Attribute) else d.constraint.from_python(value)
            problem = d.constraint.check(attributes[d.name])
            if problem:
                raise ValueError(f"'{cls.OPERATION_NAME}' op attribute '{d.name}' {problem}")
            attr_values[d.name] = d.constraint.to_python(attributes[d.name])
        if cls.uses_segment_sizes():
            attributes[SEGMENT_SIZES] = ir.DenseI32ArrayAttr.get(sizes)
        if result_param is None:
            results = []
        elif result_param == "result_type":
            result_type = values["result_type"]
            if result_type is None:
                try:
                    result_type = cls.infer_result_type(*_types_of(groups), **attr_values)
                except VerifyError as error:
                    raise ValueError(f"'{cls.OPERATION_NAME}' op {error}") from None
            results = [result_type]
        elif values["result_types"] is None:
            try:
                results = list(cls.infer_result_types(*_types_of(groups), **attr_values))
            except VerifyError as error:
                raise ValueError(f"'{cls.OPERATION_NAME}' op {error}") from None
        else:
            results = list(values["result_types"])
        super(cls, self).__init__(
            self.OPERATION_NAME,
            self._ODS_REGIONS,
            None,
            None,
            attributes=attributes,
            results=results,
            operands=operands,
            successors=None,
            regions=None,
            loc=values["loc"],
            ip=values["ip"],
        )

    __init__.__signature__ = signature
    __init__.__doc__ = f"Builds '{cls.OPERATION_NAME}'."
    return __init__


def _as_group(value, field_def: OperandDef, cls):
    if field_def.variadicity == VARIADIC:
        return [_as_value(v, field_def.name, cls) for v in value]
    if field_def.variadicity == OPTIONAL and value is None:
        return None
    return _as_value(value, field_def.name, cls)


def _as_value(value, name: str, cls) -> ir.Value:
    if isinstance(value, ir.Value):
        return value
    if isinstance(value, (ir.OpView, ir.Operation)):
        return value.result
    raise TypeError(f"{cls.__name__}: operand '{name}' must be an MLIR Value, got {type(value).__name__}")
