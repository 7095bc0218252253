"""rlx-bind-dims: give the symbolic dimensions sizes, making dynamic functions static.

    rlx-opt model.mlir --rlx-bind-dims=BATCH=1,SEQ=7
    rlx-opt model.mlir --pass-pipeline='builtin.module(rlx-bind-dims{BATCH=1 SEQ=7},rlx-hir-to-mir)'

The options are the binding itself, `SYMBOL=size` pairs separated by commas or
spaces.  Every dynamic function of the module is bound to the symbols it
mentions (see `rlx_mlir.dims.dynamic`); static functions are left alone.  An
unknown symbol, a symbol left unbound, a size that is not a positive integer
or a size that makes an op invalid is an error naming the symbol.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Mapping

from mlir import ir

from ...dims.dynamic import DimError, bind_module
from ...passmanager.base import PassFailure, PassOptionError, RlxPass

_PAIR = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def parse_binding(options: Mapping[str, str]) -> tuple[tuple[str, int], ...]:
    """`{SYMBOL: text}` as parsed from `rlx-bind-dims{...}` into sorted (symbol, size) pairs.

    The generic option parser splits at spaces only, so `BATCH=1,SEQ=7` arrives
    as `{"BATCH": "1,SEQ=7"}`: pairs are re-joined and split at commas too.
    """
    text = ",".join(f"{key}={value}" for key, value in options.items())
    pairs: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _PAIR.match(item)
        if not match:
            raise PassOptionError(f"'rlx-bind-dims' option '{item}' is not SYMBOL=size")
        symbol, raw = match.groups()
        try:
            size = int(raw)
        except ValueError:
            raise PassOptionError(f"'rlx-bind-dims': the size of symbol '{symbol}' must be an integer, got '{raw}'") from None
        if symbol in pairs:
            raise PassOptionError(f"'rlx-bind-dims': symbol '{symbol}' is bound twice")
        pairs[symbol] = size
    return tuple(sorted(pairs.items()))


@dataclasses.dataclass(frozen=True)
class BindDims(RlxPass):
    name = "rlx-bind-dims"
    summary = "Bind symbolic dimensions to sizes (SYMBOL=size,...): dynamic functions become static"

    binding: tuple = ()

    @classmethod
    def from_options(cls, options: dict[str, str]) -> "BindDims":
        return cls(binding=parse_binding(options))

    @classmethod
    def describe_options(cls) -> list[tuple[str, str, object]]:
        return [("SYMBOL", "the size of SYMBOL, e.g. BATCH=1,SEQ=7 (any symbol of the module)", "size")]

    def spelled(self) -> str:
        return f"{self.name}{{{','.join(f'{k}={v}' for k, v in self.binding)}}}"

    def run(self, module: ir.Operation) -> None:
        try:
            bind_module(module, dict(self.binding))
        except DimError as error:
            (error.location or module.location).emit_error(error.message)
            raise PassFailure(error.message) from None
