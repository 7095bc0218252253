"""What a compiled function takes and returns at the numpy boundary: `TensorSpec` (a name, static
shape, numpy dtype, whether it is a weight, the input a result is tied to) and `Signature`.

MLIR-free: `signature.py` reads them from a `func.func`; an executable loaded from the on-disk
compile cache (`jit_disk_cache.py`) rebuilds them from its JSON record without importing MLIR.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..ir.dtypes import load_numpy_dtype
from ..ir.positions import SourcePosition


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    mlir_type: str
    position: Optional[SourcePosition] = field(default=None, compare=False)
    is_param: bool = False  # a weight (`rlx.param`) rather than a runtime input
    tied_input: Optional[int] = None  # a result that is this input, updated in place (`rlx.tied`)

    def describe(self) -> str:
        return f"{self.mlir_type} (numpy {self.dtype.name} {list(self.shape)})"

    def __str__(self) -> str:
        """`name: float32[4, 8]`, with ` (param)` for a weight and ` (= input #i, updated in place)` for a tied result."""
        text = f"{self.name}: {self.dtype.name}{list(self.shape)}"
        if self.is_param:
            text += " (param)"
        if self.tied_input is not None:
            text += f" (= input #{self.tied_input}, updated in place)"
        return text


@dataclass(frozen=True)
class Signature:
    entry: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    named_inputs: bool  # True when every argument carries an `rlx.name`

    def __str__(self) -> str:
        """`@mlp(x: float32[4, 8], w: float32[8, 16] (param)) -> (result0: float32[4, 16])`."""
        inputs = ", ".join(str(spec) for spec in self.inputs)
        outputs = ", ".join(str(spec) for spec in self.outputs)
        return f"@{self.entry}({inputs}) -> ({outputs})"

    def __repr__(self) -> str:
        return f"Signature({self})"

    def to_json(self) -> dict:
        """The signature as JSON values (`from_json` reads it back)."""
        return {"entry": self.entry, "inputs": [spec_to_json(s) for s in self.inputs],
                "outputs": [spec_to_json(s) for s in self.outputs], "named_inputs": self.named_inputs}

    @staticmethod
    def from_json(record: dict) -> "Signature":
        """The signature `to_json` wrote; KeyError / TypeError / ValueError for a malformed record."""
        return Signature(str(record["entry"]), tuple(spec_from_json(s) for s in record["inputs"]),
                         tuple(spec_from_json(s) for s in record["outputs"]), bool(record["named_inputs"]))


@dataclass(frozen=True)
class PackedParam:
    """An argument a compiled function takes after its source's (`rlx.packed_params`): the GEMM B
    panels of parameter `param`, which the public function `function` computes from it."""
    param: str
    function: str
    spec: TensorSpec  # the panels: a name of their own ("w:panels0"), shape and dtype

    def to_json(self) -> dict:
        return {"param": self.param, "function": self.function, "spec": spec_to_json(self.spec)}

    @staticmethod
    def from_json(record: dict) -> "PackedParam":
        return PackedParam(str(record["param"]), str(record["function"]), spec_from_json(record["spec"]))


def spec_to_json(s: TensorSpec) -> dict:
    position = s.position and [s.position.filename, s.position.line, s.position.column]
    return {"name": s.name, "shape": list(s.shape), "dtype": s.dtype.name, "mlir_type": s.mlir_type,
            "param": s.is_param, "tied": s.tied_input, "position": position}


def spec_from_json(s: dict) -> TensorSpec:
    position = s["position"] and SourcePosition(str(s["position"][0]), int(s["position"][1]),
                                                int(s["position"][2]))
    return TensorSpec(str(s["name"]), tuple(int(n) for n in s["shape"]),
                      np.dtype(load_numpy_dtype(s["dtype"], "a cached executable")), str(s["mlir_type"]),
                      position, bool(s["param"]), None if s["tied"] is None else int(s["tied"]))
