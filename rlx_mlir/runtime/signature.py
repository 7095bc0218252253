"""The numpy-facing signature of a function: names, shapes and dtypes of its
arguments and results, read from the `func.func` before lowering."""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np
from mlir import ir
from mlir.dialects import func

from ..ir import dtypes
from ..ir.attrs import ARENA_ATTR, NAME_ATTR, PACKED_PARAMS_ATTR, PARAM_ATTR, TIED_ATTR
from ..ir.diagnostics import CompileError, position_of
from .specs import PackedParam, Signature, TensorSpec


def numpy_dtype(element: ir.Type, where: str) -> np.dtype:
    """The numpy dtype of arrays of `element` (see `numpy_dtype_named`)."""
    return numpy_dtype_named(str(element), where)


def numpy_dtype_named(name: str, where: str) -> np.dtype:
    """The numpy dtype of arrays of the element type spelled `name`; bf16 is ml_dtypes' `bfloat16`
    (the dtype JAX uses: numpy has none), a CompileError saying what to do where ml_dtypes is not
    installed."""
    if name == "bf16":
        try:
            return np.dtype(dtypes.numpy_name(name, where))
        except ValueError:
            raise CompileError(
                f"{where}: bf16 arrays need the ml_dtypes package (numpy has no bf16): pip install ml_dtypes; "
                "or take f32 at the function boundary and rlx.cast to bf16 inside the function"
            ) from None
    return np.dtype(dtypes.numpy_name(name, where))


def _spec(
    type_: ir.Type, name: str, where: str, location: Optional[ir.Location] = None, is_param: bool = False
) -> TensorSpec:
    if not isinstance(type_, ir.RankedTensorType):
        raise ValueError(f"{where}: only ranked tensors cross the numpy boundary, got {type_}")
    if not type_.has_static_shape:
        raise ValueError(
            f"{where}: {type_} has dynamic sizes, and a compiled function takes static shapes: bind them first "
            "(rlx-opt --rlx-bind-dims=BATCH=1,SEQ=7, GraphModule.bind_dims, rlx_mlir.dims.dynamic.bind_module; "
            "rlx-run --bind), one compiled function per binding; or name them with rlx.dims "
            '(e.g. {rlx.dims = ["BATCH", 8]}) and compile() specialises on the sizes of each call'
        )
    position = position_of(location) if location is not None else None
    return TensorSpec(
        name, tuple(type_.shape), numpy_dtype(type_.element_type, where), str(type_), position, is_param
    )


def find_function(module: ir.Module, entry: Optional[str]):
    """The `func.func` named `entry`, or the only public function when entry is None."""
    functions = [op for op in module.body.operations if isinstance(op, func.FuncOp)]
    if entry is None:
        public = [f for f in functions if not f.is_external and "sym_visibility" not in f.attributes]
        if len(public) != 1:
            names = ", ".join(ir.StringAttr(f.sym_name).value for f in public) or "none"
            raise ValueError(f"name the entry function (public functions: {names})")
        return public[0]
    for f in functions:
        if ir.StringAttr(f.sym_name).value == entry:
            if f.is_external:
                raise ValueError(f"entry function '@{entry}' is only a declaration")
            return f
    names = ", ".join(ir.StringAttr(f.sym_name).value for f in functions) or "none"
    raise ValueError(f"no function '@{entry}' in the module (functions: {names})")


def signature_of(function) -> Signature:
    entry = ir.StringAttr(function.sym_name).value
    function_type = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    arg_attrs = list(function.arg_attrs) if "arg_attrs" in function.attributes else []
    names, params, named = [], [], True
    for index in range(len(function_type.inputs)):
        attrs = ir.DictAttr(arg_attrs[index]) if index < len(arg_attrs) else None
        if attrs is not None and NAME_ATTR in attrs:
            names.append(ir.StringAttr(attrs[NAME_ATTR]).value)
        else:
            names.append(f"arg{index}")
            named = False
        params.append(attrs is not None and PARAM_ATTR in attrs)
    arguments = function.regions[0].blocks[0].arguments
    inputs = tuple(
        _spec(t, names[i], f"@{entry} argument #{i}", arguments[i].location, params[i])
        for i, t in enumerate(function_type.inputs)
    )
    outputs = tuple(
        _tied(_spec(t, f"result{i}", f"@{entry} result #{i}"), function, i, function_type)
        for i, t in enumerate(function_type.results)
    )
    return Signature(entry, inputs, outputs, named and bool(inputs))


def _tied(spec: TensorSpec, function, index: int, function_type: ir.FunctionType) -> TensorSpec:
    """`spec` with `tied_input` set when result #index carries `rlx.tied = N`: argument #N updated in place."""
    if "res_attrs" not in function.attributes:
        return spec
    attrs = ir.DictAttr(ir.ArrayAttr(function.attributes["res_attrs"])[index])
    if TIED_ATTR not in attrs:
        return spec
    where = f"@{ir.StringAttr(function.sym_name).value} result #{index}"
    attr = attrs[TIED_ATTR]
    if not isinstance(attr, ir.IntegerAttr) or not 0 <= ir.IntegerAttr(attr).value < len(function_type.inputs):
        raise ValueError(f"{where}: {TIED_ATTR} must name an argument index below {len(function_type.inputs)}, got {attr}")
    argument = ir.IntegerAttr(attr).value
    if function_type.inputs[argument] != function_type.results[index]:
        raise ValueError(
            f"{where}: tied to argument #{argument} of type {function_type.inputs[argument]}, "
            f"but the result is {function_type.results[index]}"
        )
    return dataclasses.replace(spec, tied_input=argument)


def arena_of(lowered: ir.Module, entry: str) -> Optional[tuple[int, int]]:
    """(bytes, alignment) of the arena the lowered function `entry` takes (`rlx.arena`), or None."""
    for op in lowered.body.operations:
        if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value == entry:
            if ARENA_ATTR in op.attributes:
                size, alignment = list(ir.DenseI64ArrayAttr(op.attributes[ARENA_ATTR]))
                return size, alignment
    return None


def packed_params_of(lowered: ir.Module, entry: str) -> list[PackedParam]:
    """The parameter panels the lowered function `entry` takes after its source's arguments
    (`rlx.packed_params`, written by rlx-hoist-param-packing), in order."""
    for op in lowered.body.operations:
        if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value == entry:
            if PACKED_PARAMS_ATTR not in op.attributes:
                return []
            packed = []
            for index, attr in enumerate(ir.ArrayAttr(op.attributes[PACKED_PARAMS_ATTR])):
                entry_attrs = ir.DictAttr(attr)
                param = ir.StringAttr(entry_attrs["param"]).value
                panels = ir.RankedTensorType(ir.TypeAttr(entry_attrs["type"]).value)
                spec = _spec(panels, f"{param}:panels{index}", f"@{entry} panels of '{param}'")
                packed.append(PackedParam(param, ir.StringAttr(entry_attrs["function"]).value, spec))
            return packed
    return []
