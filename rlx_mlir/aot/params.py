"""Weights shipped beside a compiled model: safetensors files: their headers read and checked.

A safetensors file is an 8-byte little-endian header size, a JSON header naming each tensor's
dtype, shape and `data_offsets` ([begin, end) bytes into the data that follows), then the data.
`rlx-compile --params weights.safetensors` checks the file against the model's weights (`rlx.param`
inputs: every one present, with its dtype and shape) and copies it beside the library; the manifest
names it (`params`), the C runtime binds it to every context (mapped), and `aot.load` passes its
tensors (mapped: `loader.load_params`) for the weights a call leaves out. No numpy here: `rlx-compile`
checks a file without importing it.
"""

from __future__ import annotations

import json
import math
import os
import struct

from ..errors import RlxError
from ..ir.dtypes import from_numpy

SUFFIX = ".safetensors"
_MAX_HEADER_BYTES = 100 << 20
DTYPES = {"F32": "float32", "F16": "float16", "F64": "float64", "BOOL": "bool", "I8": "int8", "U8": "uint8",
          "I16": "int16", "I32": "int32", "I64": "int64", "BF16": "bfloat16", "F8_E4M3": "float8_e4m3fn"}


class ParamsError(RlxError, ValueError):
    """A parameter file that cannot be read, or that does not hold a model's weights."""


def read_header(path: str) -> tuple[dict, int]:
    """({tensor name: (numpy dtype name, shape, begin, end)}, the offset of the data) of a safetensors file."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as file:
            head = file.read(8)
            if len(head) < 8:
                raise ParamsError(f"{path}: not a safetensors file (shorter than its header size)")
            (length,) = struct.unpack("<Q", head)
            if length > min(_MAX_HEADER_BYTES, size - 8):
                raise ParamsError(f"{path}: not a safetensors file (a header of {length} bytes in a file of {size})")
            header = json.loads(file.read(length).decode("utf-8"))
    except FileNotFoundError:
        raise ParamsError(f"{path}: no such parameter file") from None
    except OSError as error:
        raise ParamsError(f"{path}: cannot read the parameter file: {error.strerror or error}") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise ParamsError(f"{path}: its header is not valid JSON: {error}") from None
    if not isinstance(header, dict):
        raise ParamsError(f"{path}: its header is not a JSON object")
    data_bytes, tensors = size - 8 - length, {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, end) = DTYPES[spec["dtype"]], tuple(spec["shape"]), spec["data_offsets"]
            count = math.prod(shape)
            width = from_numpy(dtype).bytes
            valid = (all(isinstance(n, int) and n >= 0 for n in shape) and isinstance(begin, int)
                     and isinstance(end, int) and 0 <= begin <= end <= data_bytes and end - begin == count * width)
        except (KeyError, TypeError, ValueError):
            valid = False
        if not valid:
            raise ParamsError(f"{path}: tensor '{name}' has no valid dtype, shape and data_offsets within the "
                              f"{data_bytes} bytes of data")
        tensors[name] = (dtype, shape, begin, end)
    return tensors, 8 + length


def check_params(path: str, functions: list) -> None:
    """ParamsError unless the file holds every weight of the function records, each with its dtype and shape."""
    tensors, _ = read_header(path)
    for function in functions:
        for spec in function["inputs"]:
            if not spec["param"]:
                continue
            found = tensors.get(spec["name"])
            expected = f"{spec['dtype']}{list(spec['shape'])}"
            if found is None:
                raise ParamsError(f"{path}: has no tensor '{spec['name']}' (a weight of @{function['name']}, "
                                  f"{expected})")
            if (found[0], list(found[1])) != (spec["dtype"], list(spec["shape"])):
                raise ParamsError(f"{path}: tensor '{spec['name']}' is {found[0]}{list(found[1])}; "
                                  f"@{function['name']} takes {expected}")
