"""A compiled CPU function called with numpy arrays: `Executable` and its call contexts.

An executable is the address of the function's packed C interface (`_mlir__mlir_ciface_<entry>`:
one pointer per argument, runtime/abi.py) in code that something keeps loaded (the JIT's
ExecutionEngine, or a shared object from the on-disk compile cache), and its `Signature`.  Calling
it checks every argument against the signature, fills preallocated memref descriptors with the
arrays' data pointers and calls the function; outputs are numpy arrays allocated per call (or the
caller's `out=` arrays).  The compiled code keeps no state between calls: the planned intermediates
live in an arena the caller passes, one per call context (`Executable.context()`; plain calls take
an idle one from a pool), so threads call one executable at once.  MLIR-free.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

import numpy as np

from .abi import ArenaSpec, CallContext, CFunction, Interface
from .specs import Signature

PACKED_PREFIX = "_mlir__mlir_ciface_"  # the packed wrapper MLIR's ExecutionEngine adds to each C interface


class Executable:
    """A compiled function: call it with numpy arrays, get a numpy array (or a tuple)."""

    def __init__(self, address: int, signature: Signature, arena: Optional[tuple[int, int]], *, keep_alive: object,
                 llvm_ir: Union[str, Callable[[], str]]):
        """`address`: the packed C interface of `signature.entry`; `arena`: (bytes, alignment) of the
        arena each call context holds, or None; `keep_alive`: what keeps the code loaded; `llvm_ir`:
        the module in the LLVM dialect, or a function that produces it on demand."""
        self.signature = signature
        self._keep_alive = keep_alive
        self._llvm_ir = llvm_ir
        self._interface = Interface(f"@{signature.entry}", signature.inputs, signature.outputs,
                                    [spec.tied_input for spec in signature.outputs])
        self.arena = arena
        spec = ArenaSpec(len(signature.inputs), *arena) if arena else None
        self._function = CFunction(address, self._interface.buffer_shapes, packed=True, arena=spec)

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
        call = self._interface.prepare(args, kwargs, out)
        self._function.run(call.addresses)
        return call.finish()

    def context(self) -> "ExecutionContext":
        """A call context of its own (its own arena): calls in different contexts run concurrently."""
        return ExecutionContext(self._interface, self._function.context())


class ExecutionContext:
    """One caller's state of an `Executable` (its arena): call it as the executable itself."""

    def __init__(self, interface: Interface, context: CallContext):
        self._interface = interface
        self._context = context

    def __call__(self, *args: np.ndarray, out=None, **kwargs: np.ndarray):
        call = self._interface.prepare(args, kwargs, out)
        self._context.run(call.addresses)
        return call.finish()
