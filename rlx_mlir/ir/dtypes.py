"""The element types RLX tensors have: the one table of their names, sizes and numpy dtypes.

Importing this module needs neither MLIR nor numpy (the AOT loader uses it where MLIR is not
installed); `mlir_type` imports MLIR when it is called.

Bytes: `i8` is a signed byte (numpy int8) and `ui8` an unsigned one (numpy uint8, the storage of
packed quantised weights such as GGUF blocks; the builder also accepts the name `u8`).  MIR keeps
the signedness in the type, so `rlx.cast` knows to zero- or sign-extend and the numpy boundary
knows which array to take; linalg and arith compute on signless integers only, so
`rlx-mir-to-linalg` retypes `ui8` as `i8` holding the same bits once the ops that read the bytes
are lowered (they treat them as unsigned).

`f8E4M3FN` is an 8-bit float (1 sign bit, 4 exponent bits with bias 7, 3 mantissa bits; no
infinities, the NaN `S.1111.111`; largest finite 448; OCP FP8 E4M3, numpy's `float8_e4m3fn` of
the ml_dtypes package): a storage type, converted to and from the other types by `rlx.cast`
(through f32, rounding to nearest even; what overflows 448 becomes NaN, as ml_dtypes converts).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class ElementType:
    name: str  # the MLIR spelling: "f32", "i1"
    numpy: Optional[str]  # the numpy dtype name (bfloat16: numpy's once the ml_dtypes package is imported)
    bytes: int
    is_float: bool
    buildable: bool  # a dtype name the builder and `rlx.constant` accept


ELEMENT_TYPES: dict[str, ElementType] = {
    t.name: t
    for t in (
        ElementType("f32", "float32", 4, True, True),
        ElementType("f16", "float16", 2, True, True),
        ElementType("bf16", "bfloat16", 2, True, True),
        ElementType("f64", "float64", 8, True, True),
        ElementType("f8E4M3FN", "float8_e4m3fn", 1, True, True),
        ElementType("i1", "bool", 1, False, True),
        ElementType("i8", "int8", 1, False, True),
        ElementType("ui8", "uint8", 1, False, True),
        ElementType("i16", "int16", 2, False, False),
        ElementType("i32", "int32", 4, False, True),
        ElementType("i64", "int64", 8, False, True),
    )
}

# Other names the builder accepts for an element type.
ALIASES = {"u8": "ui8"}

BUILDABLE = tuple(name for name, t in ELEMENT_TYPES.items() if t.buildable)
# numpy dtypes that a package defines (registering the name with numpy when imported).
NUMPY_EXTENSIONS = {"bfloat16": "ml_dtypes", "float8_e4m3fn": "ml_dtypes"}

# numpy dtype names of the element types arrays can carry across the ABI.
NUMPY_NAMES = tuple(t.numpy for t in ELEMENT_TYPES.values() if t.numpy)
_BY_NUMPY = {t.numpy: t for t in ELEMENT_TYPES.values() if t.numpy}


def element_type(name: str) -> Optional[ElementType]:
    """The entry for an MLIR spelling such as "f32" (or an alias such as "u8"), or None."""
    return ELEMENT_TYPES.get(ALIASES.get(name, name))


def from_numpy(dtype_name: str) -> Optional[ElementType]:
    """The entry for a numpy dtype name such as "float32", or None."""
    return _BY_NUMPY.get(dtype_name)


def numpy_name(name: str, where: str) -> str:
    """The numpy dtype name of the element type spelled `name`, known to numpy when this returns
    (bf16: `bfloat16` of the ml_dtypes package); ValueError naming `where` if numpy has none."""
    entry = ELEMENT_TYPES.get(name)
    if entry is None or entry.numpy is None:
        raise ValueError(f"{where}: element type {name} has no numpy equivalent")
    return load_numpy_dtype(entry.numpy, where)


def load_numpy_dtype(numpy_name: str, where: str) -> str:
    """`numpy_name`, after importing the package that defines it for numpy (ml_dtypes for bfloat16);
    ValueError naming `where` and the package when it is not installed."""
    package = NUMPY_EXTENSIONS.get(numpy_name)
    if package is not None:
        try:
            importlib.import_module(package)
        except ImportError:
            raise ValueError(f"{where}: {numpy_name} arrays need the {package} package "
                             f"(pip install {package}), which defines numpy's {numpy_name}") from None
    return numpy_name


def byte_width(name: str) -> int:
    """Bytes per element of an element type spelled `name` (KeyError if RLX has no such type)."""
    return ELEMENT_TYPES[name].bytes


def mlir_type(name: str):
    """The MLIR type for a buildable dtype name such as "f32" (needs a Context)."""
    from mlir import ir  # only here: the rest of this module is MLIR-free

    entry = element_type(name)
    if entry is None or not entry.buildable:
        raise ValueError(f"unknown dtype '{name}'; expected one of {', '.join(BUILDABLE)}")
    if entry.is_float:
        return {"f32": ir.F32Type, "f16": ir.F16Type, "bf16": ir.BF16Type, "f64": ir.F64Type,
                "f8E4M3FN": ir.Float8E4M3FNType}[entry.name].get()
    if entry.name == "ui8":
        return ir.IntegerType.get_unsigned(8)
    return ir.IntegerType.get_signless(8 * entry.bytes if entry.name != "i1" else 1)
