"""The dialect-definition layer: ops as Python classes, IRDL underneath."""

from .constraints import (
    AnyTensor,
    AttrConstraint,
    BoolAttr,
    BoolTensor,
    ByteTensor,
    DenseElementsAttr,
    DenseI64ArrayAttr,
    F32Attr,
    F64Attr,
    FloatTensor,
    I64Attr,
    IntTensor,
    StrArrayAttr,
    StrAttr,
    StrEnumAttr,
    TensorOf,
    TypeConstraint,
    element_type_from_name,
)
from .dialect import Dialect
from .fields import attribute, operand, result, same_as
from .operation import Operation, VerifyError
from .traits import Elementwise, Pure, Trait

__all__ = [
    "AnyTensor",
    "AttrConstraint",
    "BoolAttr",
    "BoolTensor",
    "ByteTensor",
    "DenseElementsAttr",
    "DenseI64ArrayAttr",
    "Dialect",
    "Elementwise",
    "F32Attr",
    "F64Attr",
    "FloatTensor",
    "I64Attr",
    "IntTensor",
    "Operation",
    "Pure",
    "StrArrayAttr",
    "StrAttr",
    "StrEnumAttr",
    "TensorOf",
    "Trait",
    "TypeConstraint",
    "VerifyError",
    "attribute",
    "element_type_from_name",
    "operand",
    "result",
    "same_as",
]
