"""Compile once, specialise at run time: the executable of a module with symbolic dimensions.

`rlx_mlir.compile` of a dynamic module (see `rlx_mlir.dims.dynamic`) returns a
`SpecializingExecutable`.  Each call reads the symbols' sizes off the
arguments' shapes (an argument `["BATCH", "SEQ", 512]` given a `(2, 7, 512)`
array binds `BATCH=2`, `SEQ=7`), and runs the static executable of that
binding: the first call with a new binding binds a copy of the module
(`rlx-bind-dims`), plans, lowers and JIT-compiles it (a *miss*); later calls
with the same sizes reuse it (a *hit*).  The cache is keyed by the binding and
holds at most `capacity` variants (`compile(..., max_variants=N)`, default
32): a new one past that evicts the least recently used, which a later call
compiles again (a decode loop over a growing `PAST_SEQ` would otherwise keep
one compiled variant per length forever).  `cache_info()` shows hits, misses, evictions
and the variants held.  `bind_params(**weights)` returns a `BoundSpecializingExecutable`: each
specialisation binds the weights (`Executable.bind_params`) the first time it runs, and a call
passes the runtime inputs only.

    exe = rlx_mlir.compile(dynamic_module)
    exe(tokens=np.zeros((1, 7), np.int64), **weights)     # compiles SEQ=7
    exe(tokens=np.zeros((1, 7), np.int64), **weights)     # reuses it
    exe.specialize(ModelVariant.prefill(1, 32))            # compiles ahead of time
    exe.cache_info()                                       # SpecializationInfo(hits=1, misses=2, ...)
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import re
import threading
from typing import Callable, Mapping, Optional, Sequence, Union

import numpy as np
from mlir import ir
from mlir.dialects import func

from ..dims.dynamic import DimError, argument_dims, bind_function, check_binding, function_symbols, is_dynamic
from ..dims.expr import DimExpr, format_dims
from ..dims.variants import ModelVariant
from ..driver import Compilation
from ..ir.attrs import NAME_ATTR
from ..ir.diagnostics import CompileError
from ..ir.walk import is_op
from .abi import Parameters
from .signature import find_function

_MAYBE_DYNAMIC = re.compile(r"rlx\.(dims|sym)\b")


def is_dynamic_source(text: str, entry: Optional[str], filename: str = "<string>") -> bool:
    """True when function `entry` of the module text has symbolic dimensions.

    A textual pre-check keeps static modules from being parsed twice.
    """
    if not _MAYBE_DYNAMIC.search(text):
        return False
    with Compilation(filename=filename) as job:
        try:
            module = job.parse(text, verify=False)
            return is_dynamic(find_function(module, entry).operation)
        except (CompileError, ValueError):
            return False  # let the static path report it


@dataclasses.dataclass(frozen=True)
class SpecializationInfo:
    """Counters of a SpecializingExecutable's variant cache."""

    hits: int
    misses: int
    variants: tuple  # each binding held, as a tuple of (symbol, size) pairs, in the order they were compiled
    capacity: int = 0  # the most variants held at once
    evictions: int = 0  # variants dropped to stay within capacity


class SpecializingExecutable:
    """A dynamic function compiled once per binding of its symbols, on demand.

    `compile_static(text, entry)` compiles one static specialisation (it is
    `rlx_mlir.compile` with the caller's options); the `capacity` most recently
    used variants are kept.
    """

    def __init__(self, text: str, entry: Optional[str], compile_static: Callable, filename: str = "<string>",
                 capacity: int = 32):
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"the variant cache capacity must be a positive integer, got {capacity!r}")
        self.capacity = capacity
        self._compile_static = compile_static
        job = Compilation(filename=filename)
        self._context = job.context
        with job:
            module = job.parse(text)
            function = find_function(module, entry).operation
            self.entry = ir.StringAttr(function.attributes["sym_name"]).value
            self.symbols = tuple(function_symbols(function))
            self.input_dims = tuple(argument_dims(function))
            self.input_names = tuple(_argument_names(function))
        self._module = module
        self._parameters = Parameters(f"@{self.entry}", self.input_names)
        # Only arguments with symbols are read here; the static executable checks the others.
        self._symbolic_inputs = [
            (index, name, dims)
            for index, (name, dims) in enumerate(zip(self.input_names, self.input_dims))
            if any(isinstance(d, DimExpr) for d in dims)
        ]
        self.fingerprint = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
        # binding -> (compile number, executable), least recently used first
        self._cache: "collections.OrderedDict[tuple, tuple[int, object]]" = collections.OrderedDict()
        self._hits = self._misses = self._evictions = 0
        self._lock = threading.Lock()

    # -- calling -------------------------------------------------------------------------------

    def __call__(self, *args, out=None, **kwargs):
        """Runs the specialisation for the arguments' sizes; `out` as for `Executable`."""
        arrays = self._parameters.arrange(args, kwargs)
        binding = self.binding_from_inputs(arrays)
        executable = self._get(binding)
        return executable(*arrays, out=out)

    def specialize(self, binding: Union[Mapping[str, int], ModelVariant]):
        """The static executable for `binding` (or a ModelVariant's sizes for this function's symbols)."""
        if isinstance(binding, ModelVariant):
            binding = binding.binding_for(self.symbols)
        return self._get(dict(binding))

    def bind_params(self, **weights: np.ndarray) -> "BoundSpecializingExecutable":
        """This function with these parameters bound to every specialisation: a
        `BoundSpecializingExecutable`, called with the other inputs.

        Each specialisation binds them the first time it runs (`Executable.bind_params`: the weights
        checked against its signature, those the GEMM kernels read packed into panels once), so a
        weight's shape or dtype, or a name that is a runtime input, is reported at the first call.
        A name that is no input at all is a ValueError now.  The weights must stay unchanged.
        """
        return BoundSpecializingExecutable(self, weights)

    def pin(self, **arrays):
        """Not for a dynamic function: TypeError pointing at `specialize(binding).pin(...)`."""
        raise TypeError(
            f"@{self.entry} has symbolic dimensions ({', '.join(self.symbols)}): pin a specialisation, "
            f"specialize(binding).pin(...)"
        )

    def context(self):
        """Not for a dynamic function: TypeError pointing at `specialize(binding).context()`."""
        raise TypeError(
            f"@{self.entry} has symbolic dimensions ({', '.join(self.symbols)}): a call context belongs to a "
            f"specialisation, specialize(binding).context()"
        )

    @property
    def signature(self):
        """There is none until the sizes are known: AttributeError pointing at `specialize()`."""
        raise AttributeError(
            f"@{self.entry} has symbolic dimensions ({', '.join(self.symbols)}): its numpy signature exists per "
            f"binding; use specialize(binding).signature"
        )

    def cache_info(self) -> SpecializationInfo:
        with self._lock:
            held = sorted(self._cache.items(), key=lambda item: item[1][0])
            return SpecializationInfo(self._hits, self._misses, tuple(variant for variant, _ in held), self.capacity,
                                      self._evictions)

    def binding_from_inputs(self, arrays: Sequence, *, partial: bool = False) -> dict[str, int]:
        """The symbols' sizes read off the shapes of the arguments that have symbols.

        With `partial`, an argument given as None is skipped and the symbols no argument
        determines are left out of the binding (rlx-run completes it with `--bind`).

        ValueError naming the argument and the symbol for a rank or static
        size that does not match, a symbol given two sizes, a symbol no
        argument determines, or an expression dimension that disagrees.
        (Arguments without symbols are checked by the static executable.)
        """
        binding: dict[str, int] = {}
        origin: dict[str, str] = {}
        shapes = []
        present = [(i, n, d) for i, n, d in self._symbolic_inputs if not (partial and arrays[i] is None)]
        for index, name, dims in present:
            shape = np.shape(arrays[index])
            if len(shape) != len(dims):
                raise ValueError(
                    f"argument '{name}' of @{self.entry}: expected rank {len(dims)} {format_dims(dims)}, "
                    f"got shape {list(shape)}"
                )
            shapes.append(shape)
            for axis, (dim, size) in enumerate(zip(dims, shape)):
                if isinstance(dim, int):
                    if dim != size:
                        raise ValueError(
                            f"argument '{name}' of @{self.entry}: dimension {axis} must be {dim} "
                            f"({format_dims(dims)}), got shape {list(shape)}"
                        )
                elif dim.op is None:  # a bare symbol fixes its size
                    symbol = dim.value
                    if symbol in binding and binding[symbol] != size:
                        raise ValueError(
                            f"symbol {symbol} is {size} in argument '{name}' (dimension {axis}), "
                            f"but {binding[symbol]} in {origin[symbol]}"
                        )
                    if size < 1:
                        raise ValueError(f"symbol {symbol} must be positive, got {size} in argument '{name}'")
                    binding.setdefault(symbol, size)
                    origin.setdefault(symbol, f"argument '{name}' (dimension {axis})")
        unknown = [s for s in self.symbols if s not in binding]
        if unknown and not partial:
            raise ValueError(
                f"the inputs of @{self.entry} do not determine {', '.join(unknown)}: "
                f"call specialize() with a binding"
            )
        for (_, name, dims), shape in zip(present, shapes):
            for axis, (dim, size) in enumerate(zip(dims, shape)):
                if isinstance(dim, DimExpr) and dim.op is not None and not (dim.symbols - binding.keys()) \
                        and dim.evaluate(binding) != size:
                    raise ValueError(
                        f"argument '{name}' of @{self.entry}: dimension {axis} is {dim} = {dim.evaluate(binding)}, "
                        f"got {size}"
                    )
        return binding

    # -- the variant cache ---------------------------------------------------------------------------

    def _get(self, binding: dict[str, int]):
        variant = tuple(sorted(binding.items()))
        with self._lock:
            if variant in self._cache:
                self._hits += 1
                self._cache.move_to_end(variant)
                return self._cache[variant][1]
            executable = self._compile_static(self.bound_text(binding), self.entry)
            self._misses += 1
            self._cache[variant] = (self._misses, executable)
            while len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
                self._evictions += 1
            return executable

    def bound_text(self, binding: Mapping[str, int]) -> str:
        """The module with `binding` applied (what one specialisation compiles); ValueError for a bad binding."""
        with Compilation(self._context):  # errors of binding are raised as DimError, not printed
            copy = self._module.operation.clone()
            try:
                function = _function_named(copy, self.entry)
                check_binding(function, binding)
                bind_function(function, binding)
            except DimError as error:
                raise ValueError(f"@{self.entry}: {error.message}") from None
            return copy.get_asm(enable_debug_info=True)

    def __repr__(self) -> str:
        return f"SpecializingExecutable(@{self.entry}, symbols={list(self.symbols)}, {self.cache_info()})"


class BoundSpecializingExecutable:
    """A SpecializingExecutable with some parameters bound: call it with the other inputs.

    A call reads the symbols' sizes off all the arguments, bound ones included, runs that
    specialisation (compiled on its first use, as for the unbound executable) with the weights bound
    to it, and keeps the bound specialisation while the executable keeps the specialisation itself.
    """

    def __init__(self, dynamic: SpecializingExecutable, weights: Mapping[str, np.ndarray]):
        unknown = [name for name in weights if name not in dynamic.input_names]
        if unknown:
            raise ValueError(f"bind_params: @{dynamic.entry} has no input named '{unknown[0]}' "
                             f"(inputs: {', '.join(dynamic.input_names)})")
        self.dynamic = dynamic
        self._weights = dict(weights)
        self._free = [name for name in dynamic.input_names if name not in self._weights]
        self._parameters = Parameters(f"@{dynamic.entry} with {len(self._weights)} bound parameters", self._free)
        self._bound: "collections.OrderedDict[tuple, tuple[object, object]]" = collections.OrderedDict()
        self._lock = threading.Lock()

    @property
    def input_names(self) -> list[str]:
        """What a call takes: the inputs that are not bound, in order."""
        return list(self._free)

    @property
    def bound_names(self) -> list[str]:
        return list(self._weights)

    def __repr__(self) -> str:
        return f"BoundSpecializingExecutable(@{self.dynamic.entry}, bound: {', '.join(self._weights) or 'none'})"

    def __call__(self, *args: np.ndarray, out=None, **kwargs: np.ndarray):
        """Runs the specialisation for the arguments' sizes on the bound parameters and these inputs."""
        given = dict(zip(self._free, self._parameters.arrange(args, kwargs)))
        arrays = [given[name] if name in given else self._weights[name] for name in self.dynamic.input_names]
        binding = self.dynamic.binding_from_inputs(arrays)
        return self._specialisation(binding)(**given, out=out)

    def specialize(self, binding: Union[Mapping[str, int], ModelVariant]):
        """The bound static executable for `binding` (or a ModelVariant's sizes); the symbols that
        the bound weights' shapes determine may be left out of it (a call reads them there too)."""
        arrays = [self._weights.get(name) for name in self.dynamic.input_names]
        from_weights = self.dynamic.binding_from_inputs(arrays, partial=True)
        if isinstance(binding, ModelVariant):
            binding = binding.binding_for([s for s in self.dynamic.symbols if s not in from_weights])
        return self._specialisation({**from_weights, **dict(binding)})

    def _specialisation(self, binding: dict[str, int]):
        executable = self.dynamic.specialize(binding)
        variant = tuple(sorted(binding.items()))
        with self._lock:
            held = self._bound.get(variant)
            if held is not None and held[0] is executable:
                self._bound.move_to_end(variant)
                return held[1]
        bound = executable.bind_params(**self._weights)  # outside the lock: it packs
        with self._lock:
            self._bound[variant] = (executable, bound)
            self._bound.move_to_end(variant)
            while len(self._bound) > self.dynamic.capacity:  # the executable's own cache is no larger
                self._bound.popitem(last=False)
        return bound


def _function_named(module: ir.Operation, name: str) -> ir.Operation:
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if is_op(op, func.FuncOp) and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op
    raise ValueError(f"no function '@{name}' in the module")


def _argument_names(function) -> list[str]:
    names = []
    attrs = list(ir.ArrayAttr(function.attributes["arg_attrs"])) if "arg_attrs" in function.attributes else []
    for index, _ in enumerate(function.regions[0].blocks[0].arguments):
        entry = ir.DictAttr(attrs[index]) if index < len(attrs) else None
        names.append(ir.StringAttr(entry[NAME_ATTR]).value if entry is not None and NAME_ATTR in entry else f"arg{index}")
    return names
