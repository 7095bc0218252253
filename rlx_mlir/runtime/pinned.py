"""Arguments pinned for repeated calls: `Executable.pin(**arrays)` and what it returns, `PinnedExecutable`.

A decode loop calls one compiled step once per token with the same KV caches and weights (over a
hundred arrays for a 12-layer model) and a new token and position.  A plain call checks every
argument, reads every array's address and points a memref descriptor at it, which for a small
model costs more than the compiled code.  Pinning does that once for the pinned arrays
(`abi.PinnedCall`: a call context of its own whose descriptors keep pointing at them); each call
then checks and binds only what it is given.  The results are those of a plain call on the same
arguments, errors and in-place updates included.

The pinned arrays are used through their addresses: their contents may change between calls (a
cache updated in place by the compiled code, or by the caller), but each must stay the same
buffer: pin again to use another array.  A parameter the function takes as packed GEMM panels
(`prepack_params`) is packed when it is pinned (`BoundExecutable`'s panels are reused), so
pinning it freezes its values as binding does.  MLIR-free.
"""

from __future__ import annotations

from typing import Mapping, Optional

from .abi import Parameters, PinnedCall


class PinnedExecutable:
    """A compiled function with some arguments pinned: call it with the others, by position or name."""

    def __init__(self, executable, pinned: Mapping[str, object], panels: Optional[Mapping[int, object]] = None,
                 label: Optional[str] = None):
        """`executable`: an `Executable`; `pinned`: arrays by input name (bound parameters among them);
        `panels`: packed panels already computed, by index in `executable.packed_params`."""
        self.executable = executable
        signature = executable.signature
        label = label or f"@{signature.entry}"
        positions = {spec.name: index for index, spec in enumerate(signature.inputs)}
        for name in pinned:
            if name not in positions:
                raise TypeError(f"{label} has no argument named '{name}' (arguments: {', '.join(positions)})")
        count = len(signature.inputs)
        by_position = {positions[name]: value for name, value in pinned.items()}
        self._free = [index for index in range(count) if index not in by_position]
        self._parameters = Parameters(label, [signature.inputs[index].name for index in self._free])
        panels = dict(panels or {})
        # Panels of pinned parameters: packed now (from the checked array); the others at each call,
        # from the parameter given (its place among the free inputs).
        self._free_panels = []
        for index, packed in enumerate(executable.packed_params):
            position = positions[packed.param]
            if index in panels:
                by_position[count + index] = panels[index]
            elif position in by_position:
                by_position[count + index] = executable.pack_param(index, by_position[position])
            else:
                self._free_panels.append((index, self._free.index(position)))
        self._call = PinnedCall(executable._interface, executable._function, by_position)

    @property
    def input_names(self) -> list[str]:
        """What a call takes: the inputs that are not pinned, in order."""
        return list(self._parameters.names)

    def __call__(self, *args, out=None, **kwargs):
        """Runs the function on the pinned arrays and these inputs (`out` as `Executable.__call__`)."""
        values = self._parameters.arrange(args, kwargs)
        if self._free_panels:
            values += [self.executable.pack_param(index, values[place]) for index, place in self._free_panels]
        return self._call.run(values, out)
