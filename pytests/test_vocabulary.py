"""The shared vocabularies: one element-type table (ir/dtypes), one set of attribute names (ir/attrs)."""

import ast
import pathlib

import numpy as np
import pytest
from mlir import ir

import rlx_mlir
from rlx_mlir.dsl import element_type_from_name
from rlx_mlir.ir import attrs, dtypes

PACKAGE = pathlib.Path(rlx_mlir.__file__).parent


@pytest.mark.parametrize("name", sorted(dtypes.ELEMENT_TYPES))
def test_element_type_table_agrees_with_numpy_and_mlir(name):
    entry = dtypes.ELEMENT_TYPES[name]
    with ir.Context():
        parsed = ir.Type.parse(name)
        assert isinstance(parsed, ir.FloatType) == entry.is_float
        if entry.buildable:
            assert str(element_type_from_name(name)) == name
    if entry.numpy is not None:
        assert np.dtype(dtypes.load_numpy_dtype(entry.numpy, name)).itemsize == entry.bytes  # i1 is stored as one byte, like numpy's bool
        assert dtypes.from_numpy(entry.numpy) is entry
    else:
        with pytest.raises(ValueError, match=f"^constant: element type {name} has no numpy equivalent$"):
            dtypes.numpy_name(name, "constant")


def test_element_type_from_name_rejects_unknown_names():
    with ir.Context(), pytest.raises(ValueError, match=r"^unknown dtype 'i16'; expected one of f32, f16, bf16, f64, f8E4M3FN, i1, i8, ui8, i32, i64$"):
        element_type_from_name("i16")


def _attribute_names() -> dict[str, str]:
    return {value: name for name, value in vars(attrs).items() if name.isupper() and isinstance(value, str)}


def test_attribute_names_are_distinct_and_namespaced():
    names = [value for name, value in vars(attrs).items() if name.isupper() and isinstance(value, str)]
    assert len(names) == len(set(names)) >= 14
    assert all(value.split(".")[0] in ("rlx", "rlx_hir", "rlx_lir") for value in names)


def test_attribute_names_are_spelled_only_in_ir_attrs():
    """Every module names an attribute through the constant, never by a literal of its own."""
    names = _attribute_names()
    literals = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "ir" / "attrs.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in names:
                literals.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r} (use attrs.{names[node.value]})")
    assert literals == []
