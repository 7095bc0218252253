"""Type and attribute constraints of the definition layer.

A constraint has two halves: the part IRDL can state (emitted into the dialect's
IRDL module, so plain `mlir-opt --irdl-file=...` checks it too) and a Python
check for what IRDL in LLVM 22 cannot say (element types of builtin tensors,
enumerated string values).  Each constraint also renders a one-line summary for
the op reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from mlir import ir
from mlir.dialects import irdl

from ..ir import dtypes

# --- types -----------------------------------------------------------------


class TypeConstraint:
    """Base of type constraints on operands and results."""

    summary = "any type"

    def emit_irdl(self) -> ir.Value:
        return irdl.any()

    def check(self, type_: ir.Type) -> Optional[str]:
        """Returns an error message when `type_` violates the constraint."""
        return None


@dataclass(frozen=True)
class TensorOf(TypeConstraint):
    """A ranked tensor whose element type is one of `element_types` (any if empty)."""

    element_types: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        if not self.element_types:
            return "ranked tensor"
        names = list(self.element_types)
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
        return f"ranked tensor of {listed}"

    def emit_irdl(self) -> ir.Value:
        return irdl.base(base_name="!builtin.tensor")

    def check(self, type_: ir.Type) -> Optional[str]:
        if not isinstance(type_, ir.RankedTensorType):
            return f"must be a {self.summary}, but got {type_}"
        if self.element_types:
            element = str(ir.RankedTensorType(type_).element_type)
            if element not in self.element_types:
                return f"must be a {self.summary}, but got {type_}"
        return None


AnyTensor = TensorOf()
FloatTensor = TensorOf(("f32", "f16", "bf16"))
IntTensor = TensorOf(("i32", "i64"))
BoolTensor = TensorOf(("i1",))
ByteTensor = TensorOf(("ui8",))  # raw bytes, e.g. packed quantised weight blocks


# --- attributes ------------------------------------------------------------


@dataclass(frozen=True)
class AttrConstraint:
    """An attribute kind: its IRDL base, Python conversions and a summary.

    `value_type` names the type an integer or float attribute must carry (`i64`,
    `f32`): IRDL's `irdl.base` admits any width, so the Python check enforces it.
    """

    summary: str
    irdl_base: str
    to_python: Callable[[ir.Attribute], Any]
    from_python: Callable[[Any], ir.Attribute]
    allowed: tuple[Any, ...] = ()
    value_type: Optional[str] = None

    def emit_irdl(self) -> ir.Value:
        return irdl.base(base_name=self.irdl_base)

    def check(self, attr: ir.Attribute) -> Optional[str]:
        try:
            value = self.to_python(attr)
        except (ValueError, TypeError):
            return f"must be {self.summary}, but got {attr}"
        if self.value_type is not None and str(attr.type) != self.value_type:
            return f"must be {self.summary} ({self.value_type}), but got {attr}"
        if self.allowed and value not in self.allowed:
            choices = ", ".join(repr(v) for v in self.allowed)
            return f"must be one of {choices}, but got {value!r}"
        return None


I64Attr = AttrConstraint(
    "a 64-bit integer attribute",
    "#builtin.integer",
    lambda a: ir.IntegerAttr(a).value,
    lambda v: ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(v)),
    value_type="i64",
)

F64Attr = AttrConstraint(
    "a 64-bit float attribute",
    "#builtin.float",
    lambda a: ir.FloatAttr(a).value,
    lambda v: ir.FloatAttr.get_f64(float(v)),
    value_type="f64",
)

F32Attr = AttrConstraint(
    "a 32-bit float attribute",
    "#builtin.float",
    lambda a: ir.FloatAttr(a).value,
    lambda v: ir.FloatAttr.get_f32(float(v)),
    value_type="f32",
)

BoolAttr = AttrConstraint(
    "a bool attribute",
    "#builtin.integer",
    lambda a: ir.BoolAttr(a).value,
    lambda v: ir.BoolAttr.get(bool(v)),
)

DenseElementsAttr = AttrConstraint(
    "a dense elements attribute",
    "#builtin.dense_int_or_fp_elements",
    lambda a: ir.DenseElementsAttr(a),
    lambda v: v,
)

DenseI64ArrayAttr = AttrConstraint(
    "a dense i64 array attribute",
    "#builtin.dense_array",
    lambda a: list(ir.DenseI64ArrayAttr(a)),
    lambda v: ir.DenseI64ArrayAttr.get([int(x) for x in v]),
)


StrAttr = AttrConstraint(
    "a string attribute",
    "#builtin.string",
    lambda a: ir.StringAttr(a).value,
    lambda v: ir.StringAttr.get(str(v)),
)

StrArrayAttr = AttrConstraint(
    "an array of string attributes",
    "#builtin.array",
    lambda a: [ir.StringAttr(x).value for x in ir.ArrayAttr(a)],
    lambda v: ir.ArrayAttr.get([ir.StringAttr.get(str(x)) for x in v]),
)


def StrEnumAttr(*values: str) -> AttrConstraint:
    """A string attribute restricted to `values`."""
    return AttrConstraint(
        "a string attribute, one of " + ", ".join(f'"{v}"' for v in values),
        "#builtin.string",
        lambda a: ir.StringAttr(a).value,
        lambda v: ir.StringAttr.get(str(v)),
        allowed=tuple(values),
    )


def element_type_from_name(name: str) -> ir.Type:
    """The MLIR element type for a dtype name such as "f32" (needs a Context).

    ValueError for a name that is not one of `ir.dtypes.BUILDABLE`."""
    return dtypes.mlir_type(name)
