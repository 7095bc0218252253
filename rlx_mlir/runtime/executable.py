"""A compiled CPU function called with numpy arrays: `Executable` and its call contexts.

An executable is the address of the function's packed C interface (`_mlir__mlir_ciface_<entry>`:
one pointer per argument, runtime/abi.py) in code that something keeps loaded (the JIT's
ExecutionEngine, or a shared object from the on-disk compile cache), and its `Signature`.  Calling
it checks every argument against the signature, fills preallocated memref descriptors with the
arrays' data pointers and calls the function; outputs are numpy arrays allocated per call (or the
caller's `out=` arrays).  The compiled code keeps no state between calls: the planned intermediates
live in an arena the caller passes, one per call context (`Executable.context()`; plain calls take
an idle one from a pool), so threads call one executable at once.

An executable compiled with `prepack_params` (`compile()`) takes, after its source's arguments, the
GEMM B panels of its parameters (`packed_params`), each computed by a companion C interface of the
same code (`pack_param`); an unbound call packs them from the weights it is given, and
`bind_params` (runtime/bound_params.py) packs them once.  MLIR-free.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence, Union

import numpy as np

from .abi import ArenaSpec, CallContext, CFunction, Interface, Parameters
from .bound_params import BoundExecutable
from .freed_memory import keep_freed_memory
from .pinned import PinnedExecutable
from .specs import PackedParam, Signature

PACKED_PREFIX = "_mlir__mlir_ciface_"  # the packed wrapper MLIR's ExecutionEngine adds to each C interface


class Executable:
    """A compiled function: call it with numpy arrays, get a numpy array (or a tuple)."""

    def __init__(self, address: int, signature: Signature, arena: Optional[tuple[int, int]], *, keep_alive: object,
                 llvm_ir: Union[str, Callable[[], str]], packed_params: Sequence[PackedParam] = (),
                 pack_addresses: Sequence[int] = ()):
        """`address`: the packed C interface of `signature.entry`; `arena`: (bytes, alignment) of the
        arena each call context holds, or None; `keep_alive`: what keeps the code loaded; `llvm_ir`:
        the module in the LLVM dialect, or a function that produces it on demand; `packed_params`:
        the panels the function takes after the signature's inputs, and `pack_addresses` the packed
        C interface of the function computing each."""
        self.signature = signature
        self.packed_params = tuple(packed_params)
        self._keep_alive = keep_alive
        self._llvm_ir = llvm_ir
        inputs = (*signature.inputs, *[packed.spec for packed in self.packed_params])
        self._interface = Interface(f"@{signature.entry}", inputs, signature.outputs,
                                    [spec.tied_input for spec in signature.outputs])
        self._parameters = Parameters(f"@{signature.entry}", [spec.name for spec in signature.inputs])
        self.arena = arena
        spec = ArenaSpec(len(inputs), *arena) if arena else None
        self._function = CFunction(address, self._interface.buffer_shapes, packed=True, arena=spec)
        self._packers = [_Packer(packed, address, self._param_spec(packed.param))
                         for packed, address in zip(self.packed_params, pack_addresses)]
        self._param_positions = [self.input_names.index(packed.param) for packed in self.packed_params]
        # Set by compile(): compiles this module again with `prepack_params`, for `bind_params`.
        self.prepacked_variant: Optional[Callable[[], "Executable"]] = None

    def _param_spec(self, name: str):
        return next(spec for spec in self.signature.inputs if spec.name == name)

    @property
    def llvm_ir(self) -> str:
        """The compiled module in the LLVM dialect (printed on demand; lowered again for an
        executable loaded from the on-disk cache)."""
        if callable(self._llvm_ir):
            self._llvm_ir = self._llvm_ir()
        return self._llvm_ir

    @property
    def input_names(self) -> list[str]:
        return [spec.name for spec in self.signature.inputs]

    def __repr__(self) -> str:
        return f"Executable({self.signature}, target='cpu')"

    def __call__(self, *args: np.ndarray, out=None, **kwargs: np.ndarray):
        """Runs the function; `out` (an array, or a tuple with one per result) receives the results
        instead of fresh arrays: C-contiguous, of the result's shape and dtype. An `out` array may
        overlap an input (`exe(x, w, out=x)`): the result is computed into a temporary and copied."""
        if not self.packed_params:
            call = self._interface.prepare(args, kwargs, out)
            self._function.run(call.addresses)
            return call.finish()
        return self.run_arranged(self._parameters.arrange(args, kwargs), out)

    def run_arranged(self, values: list, out=None, panels: Optional[dict] = None, runner=None):
        """Runs the function on its inputs in order (`values`), the parameter panels taken from
        `panels` (by index in `packed_params`) or packed now, in `runner` (a call context) or an
        idle context."""
        panels = panels or {}
        packed = [panels[index] if index in panels else packer(values[position])
                  for index, (packer, position) in enumerate(zip(self._packers, self._param_positions))]
        call = self._interface.prepare([*values, *packed], {}, out)
        (runner or self._function).run(call.addresses)
        return call.finish()

    def pack_param(self, index: int, array: np.ndarray) -> np.ndarray:
        """The panels `packed_params[index]` of this parameter array (checked), as the function takes them."""
        return self._packers[index](array)

    def new_context_runner(self) -> CallContext:
        return self._function.context()

    def bind_params(self, **weights: np.ndarray) -> BoundExecutable:
        """This function with these parameters bound: a `BoundExecutable`, called with the other inputs.

        Each weight is checked (ValueError for a name that is not a parameter, or a wrong shape or
        dtype) and kept; those the GEMM kernels read as B are packed into the kernels' panel layout
        now, once, and every call passes the packed panels.  For that, an executable compiled
        without `prepack_params` is compiled again with it (once: the compile caches keep it).
        This executable stays unbound; binding the result again replaces what it binds.  Binding
        also asks malloc to keep freed memory (runtime/freed_memory.py): a bound model is called
        again and again, and each call reuses the last one's temporaries instead of faulting them in.
        """
        keep_freed_memory()
        target = self
        if not self.packed_params and self.prepacked_variant is not None:
            target = self.prepacked_variant()
        return BoundExecutable(target, {}, {}).bind_params(**weights)

    def pin(self, **arrays: np.ndarray) -> PinnedExecutable:
        """This function with these arguments pinned for repeated calls (a decode step's caches and
        weights): a `PinnedExecutable`, called with the others; see runtime/pinned.py."""
        return PinnedExecutable(self, arrays)

    def context(self) -> "ExecutionContext":
        """A call context of its own (its own arena): calls in different contexts run concurrently."""
        return ExecutionContext(self, self._function.context())


class _Packer:
    """The companion C interface computing one parameter's panels (`PackedParam`)."""

    def __init__(self, packed: PackedParam, address: int, param_spec):
        self._interface = Interface(f"@{packed.function}", [param_spec], [packed.spec], [None])
        self._function = CFunction(address, self._interface.buffer_shapes, packed=True)

    def __call__(self, array: np.ndarray) -> np.ndarray:
        call = self._interface.prepare([array], {})
        self._function.run(call.addresses)
        return call.finish()


class ExecutionContext:
    """One caller's state of an `Executable` (its arena): call it as the executable itself."""

    def __init__(self, executable: Executable, context: CallContext):
        self._executable = executable
        self._context = context

    def __call__(self, *args: np.ndarray, out=None, **kwargs: np.ndarray):
        executable = self._executable
        if not executable.packed_params:
            call = executable._interface.prepare(args, kwargs, out)
            self._context.run(call.addresses)
            return call.finish()
        return executable.run_arranged(executable._parameters.arrange(args, kwargs), out, runner=self._context)
