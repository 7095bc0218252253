"""Helpers shared by the op tests: MLIR text for one-op functions, cached
compiles, deterministic inputs, and placeholders for builder tests."""

from __future__ import annotations

import functools
import zlib

import numpy as np
from mlir import ir

from rlx_mlir import compile as rlx_compile


def tensor_type(shape, dtype: str) -> str:
    """`tensor<2x3xf32>`, or `tensor<f32>` for rank 0."""
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{dtype}>"


def op_module(op: str, operands, result, attrs: str = "", fn: str = "f") -> str:
    """A function `@fn` applying `"rlx.<op>"` to its arguments.

    `operands` are (shape, dtype) pairs, `result` one pair, `attrs` the text
    inside the attribute dictionary.
    """
    in_types = [tensor_type(*o) for o in operands]
    out_type = tensor_type(*result)
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(in_types))
    args = ", ".join(f"%a{i}" for i in range(len(in_types)))
    attr_text = f" {{{attrs}}}" if attrs else ""
    return (
        f"func.func @{fn}({params}) -> {out_type} {{\n"
        f'  %0 = "rlx.{op}"({args}){attr_text} : ({", ".join(in_types)}) -> {out_type}\n'
        f"  return %0 : {out_type}\n"
        f"}}\n"
    )


def one_op_module(op_name: str, input_shapes, dtype: str, result_shape, attrs: str = "", fn: str = "f") -> str:
    """`op_module` where every operand and the result share one dtype."""
    return op_module(op_name, [(s, dtype) for s in input_shapes], (result_shape, dtype), attrs, fn)


@functools.lru_cache(maxsize=None)
def compiled(text: str, entry: str = "f"):
    """Each distinct module is compiled once per test session."""
    return rlx_compile(text, entry=entry)


def rng_for(*key) -> np.random.Generator:
    """A generator seeded deterministically from the test case's identity."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def uniform(rng, shape, low, high, dtype) -> np.ndarray:
    return np.asarray(rng.uniform(low, high, size=shape)).astype(dtype)


def shape_id(shape) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"


def mlir_tensor(shape, element: str = "f32") -> ir.Type:
    """An ir.RankedTensorType (needs an active Context)."""
    return ir.RankedTensorType.get(list(shape), ir.Type.parse(element))


def placeholder(type_: ir.Type) -> ir.Value:
    """A value of any type, for building ops in isolation."""
    return ir.Operation.create("builtin.unrealized_conversion_cast", results=[type_]).result
