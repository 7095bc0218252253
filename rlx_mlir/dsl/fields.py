"""Field specifiers: how an op class declares its operands, attributes and results.

    class TransposeOp(Rlx.Operation, name="transpose"):
        input = operand(AnyTensor, "the tensor to permute")
        perm = attribute(DenseI64ArrayAttr, "permutation of the dimensions")
        result = result(AnyTensor, "the permuted tensor")

Fields keep their declaration order, which is the order of the op's operands
(and of its builder's parameters).

An op may declare a field another op already declares with `same_as`: an HIR
block passing `q` on to the MIR op it expands to declares it as
`q = same_as(rlx.AttentionOp.q)` (the same constraint, optionality and
default; the same description unless it gives its own).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .constraints import AnyTensor, AttrConstraint, TypeConstraint

_NO_DEFAULT = object()


@dataclass
class FieldDef:
    doc: str = ""
    name: str = field(default="", init=False)


SINGLE, OPTIONAL, VARIADIC = "single", "optional", "variadic"


@dataclass
class OperandDef(FieldDef):
    constraint: TypeConstraint = AnyTensor
    variadicity: str = SINGLE


@dataclass
class ResultDef(FieldDef):
    constraint: TypeConstraint = AnyTensor


@dataclass
class AttributeDef(FieldDef):
    constraint: AttrConstraint = None  # type: ignore[assignment]
    default: Any = _NO_DEFAULT
    optional: bool = False

    @property
    def required(self) -> bool:
        """The builder needs a value (no default, not optional)."""
        return self.default is _NO_DEFAULT and not self.optional


def operand(
    constraint: TypeConstraint = AnyTensor, doc: str = "", *, optional: bool = False, variadic: bool = False
) -> Any:
    """Declares an operand: one SSA value, or with `optional` zero or one, with `variadic` any number."""
    if optional and variadic:
        raise TypeError("an operand is optional or variadic, not both")
    variadicity = OPTIONAL if optional else VARIADIC if variadic else SINGLE
    return OperandDef(doc=doc, constraint=constraint, variadicity=variadicity)


def result(constraint: TypeConstraint = AnyTensor, doc: str = "") -> Any:
    """Declares a result of the op."""
    return ResultDef(doc=doc, constraint=constraint)


def attribute(
    constraint: AttrConstraint, doc: str = "", default: Any = _NO_DEFAULT, *, optional: bool = False
) -> Any:
    """Declares an inherent attribute.

    With `default` the builder parameter may be left out (the IR always holds
    the attribute).  With `optional` the attribute may be absent from the IR
    (its Python value is then None); IRDL in LLVM 22 cannot say "optional", so
    such attributes are checked by the Python verifier only.
    """
    if optional and default is not _NO_DEFAULT:
        raise TypeError("an optional attribute has no default: absent means None")
    return AttributeDef(doc=doc, constraint=constraint, default=default, optional=optional)


class FieldAccessor(property):
    """The accessor an op class gets for each declared field (`rlx.AttentionOp.q` on the
    class); `definition` is the field's declaration, for `same_as`."""

    def __init__(self, getter, definition: FieldDef):
        super().__init__(getter, doc=definition.doc)
        self.definition = definition


def same_as(accessor: FieldAccessor, *, doc: str | None = None, default: Any = _NO_DEFAULT) -> Any:
    """Declares again the field of another op class (`same_as(rlx.AttentionOp.mask)`): the same
    kind, constraint, optionality and default; `doc` replaces its description and `default`
    (an attribute's) its default, where this op's differ."""
    if not isinstance(accessor, FieldAccessor):
        raise TypeError(f"same_as takes a declared field of an op class (e.g. rlx.AttentionOp.q), got {accessor!r}")
    changes: dict[str, Any] = {} if doc is None else {"doc": doc}
    if default is not _NO_DEFAULT:
        if not isinstance(accessor.definition, AttributeDef) or accessor.definition.optional:
            raise TypeError("only a non-optional attribute has a default")
        changes["default"] = default
    return dataclasses.replace(accessor.definition, **changes)
