"""Field specifiers: how an op class declares its operands, attributes and results.

    class TransposeOp(Rlx.Operation, name="transpose"):
        input = operand(AnyTensor, "the tensor to permute")
        perm = attribute(DenseI64ArrayAttr, "permutation of the dimensions")
        result = result(AnyTensor, "the permuted tensor")

Fields keep their declaration order, which is the order of the op's operands
(and of its builder's parameters).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .constraints import AnyTensor, AttrConstraint, TypeConstraint

_NO_DEFAULT = object()


@dataclass
class FieldDef:
    doc: str = ""
    name: str = field(default="", init=False)


@dataclass
class OperandDef(FieldDef):
    constraint: TypeConstraint = AnyTensor


@dataclass
class ResultDef(FieldDef):
    constraint: TypeConstraint = AnyTensor


@dataclass
class AttributeDef(FieldDef):
    constraint: AttrConstraint = None  # type: ignore[assignment]
    default: Any = _NO_DEFAULT

    @property
    def required(self) -> bool:
        return self.default is _NO_DEFAULT


def operand(constraint: TypeConstraint = AnyTensor, doc: str = "") -> Any:
    """Declares an operand (one SSA value) of the op."""
    return OperandDef(doc=doc, constraint=constraint)


def result(constraint: TypeConstraint = AnyTensor, doc: str = "") -> Any:
    """Declares a result of the op."""
    return ResultDef(doc=doc, constraint=constraint)


def attribute(constraint: AttrConstraint, doc: str = "", default: Any = _NO_DEFAULT) -> Any:
    """Declares an inherent attribute; with `default` the builder parameter is optional."""
    return AttributeDef(doc=doc, constraint=constraint, default=default)
