"""Parameters bound once: `Executable.bind_params(**weights)` and what it returns, `BoundExecutable`.

Binding checks each weight against the signature (a parameter, `rlx.param`, of its shape and
dtype: ValueError otherwise) and keeps it; a weight that feeds the GEMM kernels as B is packed
there and then into the kernel's column panels (the companion functions `rlx-hoist-param-packing`
compiled beside the entry: one call each, at bind time), and every call passes the packed panels,
so no per-call work depends on the size of a bound weight.  A call takes the remaining inputs
(runtime inputs and parameters left unbound) by position or by name.

Binding returns a new `BoundExecutable` and changes nothing else: the executable `compile()`
returned (which its compile cache may hand to other callers) stays unbound, and binding a bound
executable again returns one whose new weights replace the old.  The bound arrays are the caller's
(not copied where they are already C-contiguous and aligned): modify a weight after binding and
bind it again.

A call binds only its own inputs: the bound arrays and panels are pinned (runtime/pinned.py: checked
and bound to a call context of the executable's, once, at the first call), as `pin()` does, so its
cost outside the compiled code does not grow with the number of weights (a 12-layer model's ~200
arrays: 0.65 ms a call when each was checked and bound again).  A call made while another is
running in that context (another thread's) takes the plain path, in an idle context of its own.
MLIR-free.
"""

from __future__ import annotations

import threading
from typing import Mapping, Optional

import numpy as np

from .abi import Interface, Parameters
from .pinned import PinnedExecutable


class BoundExecutable:
    """A compiled function with some parameters bound: call it with the other inputs."""

    def __init__(self, executable, bound: Mapping[str, np.ndarray], panels: Mapping[int, np.ndarray],
                 runner=None):
        """`executable`: an `Executable`; `bound`: the bound parameters by name, checked; `panels`:
        the packed panels of the bound ones, by index in `executable.packed_params`."""
        self.executable = executable
        self._bound = dict(bound)
        self._panels = dict(panels)
        self._runner = runner
        signature = executable.signature
        self._positions = {spec.name: index for index, spec in enumerate(signature.inputs)}
        self._free = [index for index, spec in enumerate(signature.inputs) if spec.name not in self._bound]
        label = f"@{signature.entry}" + (f" with {len(self._bound)} bound parameters" if self._bound else "")
        self._parameters = Parameters(label, [signature.inputs[index].name for index in self._free])
        self._pinned: Optional[PinnedExecutable] = None  # the bound arrays pinned, made at the first call
        self._pinned_busy = threading.Lock()  # held while a call runs through `_pinned`

    @property
    def signature(self):
        """The signature of the compiled function (every input, bound or not)."""
        return self.executable.signature

    @property
    def input_names(self) -> list[str]:
        """What a call takes: the inputs that are not bound, in order."""
        return list(self._parameters.names)

    @property
    def bound_names(self) -> list[str]:
        return list(self._bound)

    @property
    def llvm_ir(self) -> str:
        return self.executable.llvm_ir

    def __repr__(self) -> str:
        return f"BoundExecutable({self.signature}, bound: {', '.join(self._bound) or 'none'})"

    def bind_params(self, **weights: np.ndarray) -> "BoundExecutable":
        """These parameters bound as well (replacing those bound under the same names); see the module doc."""
        checked = {name: self._check(name, value) for name, value in weights.items()}
        panels = {index: panel for index, panel in self._panels.items()
                  if self.executable.packed_params[index].param not in checked}
        for index, packed in enumerate(self.executable.packed_params):
            if packed.param in checked:
                panels[index] = self.executable.pack_param(index, checked[packed.param])
        return BoundExecutable(self.executable, {**self._bound, **checked}, panels, self._runner)

    def _check(self, name: str, value) -> np.ndarray:
        signature = self.executable.signature
        position = self._positions.get(name)
        if position is None:
            params = ", ".join(spec.name for spec in signature.inputs if spec.is_param) or "none"
            raise ValueError(f"bind_params: @{signature.entry} has no parameter named '{name}' (parameters: {params})")
        spec = signature.inputs[position]
        if not spec.is_param:
            raise ValueError(f"bind_params: '{name}' is a runtime input of @{signature.entry}, not a parameter "
                             "(rlx.param): pass it at each call")
        return Interface(f"bind_params: @{signature.entry}", [spec], [], []).check_arguments([value])[0]

    def __call__(self, *args: np.ndarray, out=None, **kwargs: np.ndarray):
        """Runs the function on the bound parameters and these inputs (`out` as `Executable.__call__`)."""
        if self._runner is None and self._pinned_busy.acquire(blocking=False):
            try:
                if self._pinned is None:
                    self._pinned = self.pin()
                return self._pinned(*args, out=out, **kwargs)
            finally:
                self._pinned_busy.release()
        given = self._parameters.arrange(args, kwargs)
        values: list[Optional[np.ndarray]] = [None] * len(self.signature.inputs)
        for index, value in zip(self._free, given):
            values[index] = value
        for name, array in self._bound.items():
            values[self._positions[name]] = array
        return self.executable.run_arranged(values, out, self._panels, self._runner)

    def pin(self, **arrays: np.ndarray) -> PinnedExecutable:
        """This function with these inputs pinned as well as the bound parameters, for repeated calls
        (runtime/pinned.py); a bound name is not an argument."""
        bound = [name for name in arrays if name in self._bound]
        if bound:
            raise TypeError(f"{self._parameters.label}: '{bound[0]}' is bound, not an argument")
        return PinnedExecutable(self.executable, {**self._bound, **arrays}, self._panels, self._parameters.label)

    def context(self) -> "BoundExecutable":
        """The same bound function with a call context of its own (its own arena): calls in
        different contexts run concurrently."""
        return BoundExecutable(self.executable, self._bound, self._panels, self.executable.new_context_runner())
