"""The C interface of a compiled function, seen from numpy: numpy and ctypes only, no MLIR.

Every function rlx-mlir compiles (JIT on the CPU or the GPU, or AOT into a shared object) is
called through MLIR's C interface `_mlir_ciface_<name>`, after `rlx-lower-to-llvm` turned its
results into caller-provided buffers: it takes one pointer to a ranked memref descriptor per
argument, then (when the planned code needs one, `rlx.arena`) one for the caller's arena, then
one per result, except results tied to an argument (`rlx.tied = N`, a KV cache), which the
function writes into that argument's own buffer.  The caller's array is that result.

This module is that boundary, written once for `runtime/jit.py`, `runtime/cuda.py`,
`runtime/specialize.py` and `aot/loader.py`:

- `Parameters.arrange`: positional and keyword arguments, in parameter order;
- `Interface.prepare`: the arguments checked against their specs and made readable by compiled
  code (C-contiguous, aligned, native byte order), arguments updated in place checked to be
  the caller's own writable arrays, and the result arrays (fresh, `out=`, or the tied argument);
- `CFunction`: the memref descriptors of one C interface and the call; each `CallContext` owns
  its descriptors and its arena, so calls in two contexts run at once.

A spec is any object with `name`, `shape` (a tuple of ints), `dtype` (a numpy dtype) and
`describe()` (how messages name what was expected).  The AOT loader runs where MLIR is not
installed and imports this module, so it imports nothing but numpy and ctypes.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from typing import Optional, Sequence

import numpy as np

from ..errors import ArgumentError

# How a message says what an argument updated in place must be: the JIT's wording, and the AOT
# loader's (each is part of its API's documented error messages).
IN_PLACE_JIT = "a writable array, C-contiguous and aligned"
IN_PLACE_LOADER = "a writable C-contiguous numpy array"


# --- memref descriptors ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def descriptor_class(rank: int) -> type:
    """MLIR's ranked memref descriptor; its layout does not depend on the element type."""
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64)]
    if rank:
        fields += [("shape", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRefDescriptor{rank}D", (ctypes.Structure,), {"_fields_": fields})


def contiguous_descriptor(shape: Sequence[int]) -> ctypes.Structure:
    """The descriptor of a C-contiguous buffer of `shape` (offset 0); its data pointers are set per call."""
    rank = len(shape)
    descriptor = descriptor_class(rank)()
    if rank:
        strides, running = [], 1
        for size in reversed(shape):
            strides.append(running)
            running *= size
        descriptor.shape[:] = list(shape)
        descriptor.strides[:] = list(reversed(strides))
    descriptor.offset = 0
    return descriptor


class ArenaSpec:
    """The caller's arena a C interface takes (`rlx.arena`): the buffer's `position` among the
    descriptors (after the inputs, before the out-params), its size in bytes and its alignment."""

    __slots__ = ("position", "size", "alignment")

    def __init__(self, position: int, size: int, alignment: int):
        self.position, self.size, self.alignment = position, size, alignment


class CallContext:
    """One caller's state for a C interface: its own memref descriptors and its own arena.

    Calls through one context run one at a time (`lock`); calls through two contexts share
    nothing and run at once (ctypes releases the GIL during the call).
    """

    def __init__(self, address: int, shapes: Sequence[Sequence[int]], packed: bool, arena: Optional[ArenaSpec]):
        shapes = [tuple(shape) for shape in shapes]
        self._arena_position = None
        if arena is not None:
            shapes.insert(arena.position, (arena.size,))
            self._arena_position = arena.position
        self.descriptors = [contiguous_descriptor(shape) for shape in shapes]
        self._bound = list(self.descriptors)  # the descriptors a call's addresses go to, in order
        if arena is not None:
            # Over-allocated by the alignment and sliced: numpy guarantees only the element size.
            raw = np.zeros(arena.size + arena.alignment, np.uint8)
            start = -raw.ctypes.data % arena.alignment
            self.arena = raw[start:start + arena.size]
            self.descriptors[arena.position].allocated = raw.ctypes.data
            self.descriptors[arena.position].aligned = self.arena.ctypes.data
            del self._bound[arena.position]
        addresses = [ctypes.addressof(d) for d in self.descriptors]
        if packed:
            self._cells = [ctypes.c_void_p(a) for a in addresses]
            self._packed = (ctypes.c_void_p * len(addresses))(*[ctypes.addressof(c) for c in self._cells])
            self._pointers = [ctypes.addressof(self._packed)]
            self._function = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        else:
            self._pointers = addresses
            self._function = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(addresses)))(address)
        self.lock = threading.Lock()

    def bind(self, addresses: Sequence[int]) -> None:
        """Points the descriptors at these buffers (host or device addresses), in order (the arena,
        the context's own, is not among them)."""
        for descriptor, address in zip(self._bound, addresses):
            descriptor.allocated = descriptor.aligned = address

    def bind_at(self, positions: Sequence[int], addresses: Sequence[int]) -> None:
        """Points the descriptors at these `positions` (in `bind`'s order) at these buffers; the others
        keep the buffers they were last bound to."""
        bound = self._bound
        for position, address in zip(positions, addresses):
            descriptor = bound[position]
            descriptor.allocated = descriptor.aligned = address

    def call(self) -> None:
        """Calls the function on the buffers last bound (the caller holds `lock`)."""
        self._function(*self._pointers)

    def run(self, addresses: Sequence[int]) -> None:
        """Binds `addresses` and calls the function, one call at a time per context."""
        with self.lock:
            self.bind(addresses)
            self._function(*self._pointers)


class CFunction:
    """A C interface at `address`, with one descriptor per buffer it takes (`shapes`, in order),
    and, when `arena` is given, the caller's arena (which the compiled code needs; one per context).

    Without `packed`, the function takes one descriptor pointer per buffer (a shared object's
    `_mlir_ciface_<name>`); with `packed`, one array of pointers to cells holding them (what
    MLIR's ExecutionEngine's `raw_lookup` returns).  `context()` gives a caller state of its own;
    `run` takes an idle one from a pool (making one when all are busy), so threads that call
    one function at once each run in a context (an arena) of their own.  `lock`, `bind` and
    `call` act on the function's first context (the CUDA path's).
    """

    def __init__(self, address: int, shapes: Sequence[Sequence[int]], packed: bool,
                 arena: Optional[ArenaSpec] = None):
        self._address, self._shapes, self._packed, self.arena = address, list(shapes), packed, arena
        self._first = self.context()
        self.descriptors = self._first.descriptors
        self.lock = self._first.lock
        self._idle = [self._first]
        self._pool_lock = threading.Lock()

    def context(self) -> CallContext:
        """A new caller state: descriptors and an arena of its own."""
        return CallContext(self._address, self._shapes, self._packed, self.arena)

    def bind(self, addresses: Sequence[int]) -> None:
        self._first.bind(addresses)

    def call(self) -> None:
        self._first.call()

    def run(self, addresses: Sequence[int]) -> None:
        """Binds `addresses` and calls the function in an idle context."""
        with self._pool_lock:
            context = self._idle.pop() if self._idle else None
        if context is None:
            context = self.context()
        try:
            context.run(addresses)
        finally:
            with self._pool_lock:
                self._idle.append(context)


# --- arguments ------------------------------------------------------------------------------------


class Parameters:
    """A function's parameter names; `label` names the function in messages ("@mlp" or "mlp")."""

    def __init__(self, label: str, names: Sequence[str]):
        self.label = label
        self.names = tuple(names)
        self._positions: dict[str, int] = {}  # name -> index (the first, should two share a name)
        for index, name in enumerate(self.names):
            self._positions.setdefault(name, index)

    def arrange(self, args: Sequence, kwargs: dict) -> list:
        """The arguments in parameter order; TypeError for too many, unknown, repeated or missing ones."""
        if len(args) > len(self.names):
            raise TypeError(f"{self.label} takes {len(self.names)} arguments, got {len(args)}")
        arranged = list(args) + [None] * (len(self.names) - len(args))
        for key, value in kwargs.items():
            position = self._positions.get(key)
            if position is None:
                raise TypeError(f"{self.label} has no argument named '{key}' (arguments: {', '.join(self.names)})")
            if arranged[position] is not None:
                raise TypeError(f"argument '{key}' of {self.label} given twice")
            arranged[position] = value
        missing = [name for name, value in zip(self.names, arranged) if value is None]
        if missing:
            raise TypeError(f"{self.label} is missing arguments: {', '.join(missing)}")
        return arranged


class Call:
    """One call's buffers: the input arrays the compiled code reads, the results it returns, and
    where it writes each result (the result itself, or a temporary when an `out=` array shares
    memory with an input)."""

    __slots__ = ("arrays", "addresses", "outputs", "targets", "fresh")

    def __init__(self, arrays: list, input_addresses: list, outputs: list, targets: list, fresh: list):
        self.arrays = arrays  # one per argument, readable by compiled code
        self.outputs = outputs  # one per result: what the call returns
        self.targets = targets  # one per result: where the compiled code writes it
        self.fresh = fresh  # the targets of the results that are not tied, in C-interface order
        # The host address of every buffer the C interface takes, in order.
        self.addresses = input_addresses + [array.ctypes.data for array in fresh]

    def finish(self):
        """The results (copied from their temporaries where there are some): one array or a tuple."""
        if self.targets is not self.outputs:
            for target, array in zip(self.targets, self.outputs):
                if target is not array:
                    np.copyto(array, target)
        return self.outputs[0] if len(self.outputs) == 1 else tuple(self.outputs)


class Interface:
    """The numpy side of a function's C interface: its argument and result specs, and for each
    result the argument it is tied to (`rlx.tied`), or None.

    `in_place` says, in messages, what an argument updated in place must be (`IN_PLACE_JIT` or
    `IN_PLACE_LOADER`).
    """

    def __init__(self, label: str, inputs: Sequence, outputs: Sequence, tied_inputs: Sequence[Optional[int]],
                 in_place: str = IN_PLACE_JIT):
        self.label = label
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.tied_inputs = tuple(tied_inputs)  # one per result
        # A result tied to an input is updated in that input's buffer: the compiled function has
        # no output parameter for it, and the caller's array is that result.
        self.tied = {index: spec for spec, index in zip(self.outputs, self.tied_inputs) if index is not None}
        self.fresh_outputs = tuple(spec for spec, index in zip(self.outputs, self.tied_inputs) if index is None)
        self.parameters = Parameters(label, [spec.name for spec in self.inputs])
        self._in_place = in_place

    @property
    def buffer_shapes(self) -> list[tuple[int, ...]]:
        """The shape of every buffer the C interface takes: the arguments, then the untied results."""
        return [tuple(spec.shape) for spec in (*self.inputs, *self.fresh_outputs)]

    def prepare(self, args: Sequence, kwargs: dict, out=None) -> Call:
        """The buffers of one call: arguments arranged and checked, result arrays chosen.

        `out` (an array, or a sequence with one per result) receives the results instead of
        fresh arrays: C-contiguous, of the result's shape and dtype.  An `out` array may overlap
        an input: the result is then computed into a temporary, copied by `Call.finish`.
        """
        arrays = self.check_arguments(self.parameters.arrange(args, kwargs))
        extents = _extents(arrays)
        if self.tied:
            self._read_before_update(arrays, extents)
        return self.call(arrays, extents, out)

    def call(self, arrays: list, extents: np.ndarray, out=None) -> Call:
        """The buffers of one call on checked `arrays` whose byte ranges are `extents` (inputs that
        share memory with an argument updated in place already replaced by copies)."""
        given = self._check_out(out)
        outputs = [arrays[index] if index is not None
                   else given[position] if given else np.empty(spec.shape, spec.dtype)
                   for position, (spec, index) in enumerate(zip(self.outputs, self.tied_inputs))]
        # Where the compiled code writes each result: it reads its inputs while it writes, so an
        # `out` array that shares memory with an input gets a temporary, copied after the call.
        targets = outputs if not given else [
            np.empty_like(array) if _sharing(_extents([array]), extents).any() else array for array in outputs]
        fresh = [target for target, index in zip(targets, self.tied_inputs) if index is None]
        return Call(arrays, extents[:, 0].tolist(), outputs, targets, fresh)

    def check_arguments(self, values: Sequence) -> list[np.ndarray]:
        """The arguments as arrays the compiled code can read: C-contiguous and aligned (copied where
        they are not), except those a result is tied to, which are updated in place and so must
        already be such arrays (a copy would leave the caller's array, a KV cache, unchanged)."""
        return [self.check_argument(index, value) for index, value in enumerate(values)]

    def check_argument(self, index: int, value) -> np.ndarray:
        """Argument `index` as an array the compiled code can read (`check_arguments`)."""
        spec = self.inputs[index]
        if index in self.tied:
            self._check_in_place(value, spec, self.tied[index])
        array = np.asarray(value)
        if not array.dtype.isnative:  # e.g. big-endian '>f4': the same values, copied into native order
            array = array.astype(array.dtype.newbyteorder("="))
        if array.dtype != spec.dtype or array.shape != spec.shape:
            raise ArgumentError(
                f"argument '{spec.name}' of {self.label}: expected {spec.describe()}, "
                f"got numpy {array.dtype.name} {list(array.shape)}",
                spec,
            )
        if not (array.flags.c_contiguous and array.flags.aligned):
            array = np.array(array, order="C")  # a fresh copy is aligned
        return array

    def _check_in_place(self, value, spec, result) -> None:
        """ArgumentError unless `value` is an array that the compiled code can update in place."""
        if not isinstance(value, np.ndarray):
            problem = f"got a {type(value).__name__}, not a numpy array"
        elif not value.flags.writeable:
            problem = "it is read-only"
        elif not value.flags.c_contiguous:
            order = "Fortran order" if value.flags.f_contiguous else "a strided view"
            problem = f"it is not C-contiguous ({order}); pass np.ascontiguousarray(...) and keep that array"
        elif not value.flags.aligned:
            problem = "its data is not aligned to its element size"
        elif not value.dtype.isnative:
            problem = "its byte order is not this machine's (a converted copy would be updated, not it)"
        else:
            return
        raise ArgumentError(
            f"argument '{spec.name}' of {self.label} is updated in place ({result.name} is tied "
            f"to it) and must be {self._in_place}: {problem}",
            spec,
        )

    def _read_before_update(self, arrays: list[np.ndarray], extents: np.ndarray) -> list[int]:
        """Replaces each input that shares memory with an argument updated in place by a copy (so it
        is read as it was before the update); two in-place arguments that share memory are an error.
        Returns the positions of the inputs replaced."""
        tied_inputs = list(self.tied)
        copied = []
        sharing = _sharing(extents[tied_inputs, None, :], extents[None, :, :])  # [tied, every input]
        sharing[range(len(tied_inputs)), tied_inputs] = False
        for row, index in np.argwhere(sharing).tolist():
            if index in self.tied:
                raise ArgumentError(
                    f"arguments '{self.inputs[tied_inputs[row]].name}' and '{self.inputs[index].name}' of "
                    f"{self.label} are both updated in place and share memory",
                    self.inputs[index],
                )
            arrays[index] = arrays[index].copy()  # a fresh array: it shares nothing
            extents[index] = _extents([arrays[index]])[0]  # the address the call binds
            copied.append(index)
        return copied

    def _check_out(self, out) -> list[np.ndarray]:
        if out is None:
            return []
        given = list(out) if isinstance(out, (tuple, list)) else [out]
        specs = self.outputs
        if len(given) != len(specs) or self.tied:
            raise TypeError(f"{self.label}: out= takes {len(specs)} array(s), one per result, got {len(given)}")
        for index, (spec, array) in enumerate(zip(specs, given)):
            if (not isinstance(array, np.ndarray) or array.dtype != spec.dtype or array.shape != spec.shape
                    or not array.flags.c_contiguous or not array.flags.writeable or not array.flags.aligned):
                raise ArgumentError(
                    f"out[{index}] of {self.label}: expected a writable C-contiguous {spec.describe()}", spec
                )
            for other in range(index):
                if np.may_share_memory(given[other], array):
                    raise ArgumentError(
                        f"out[{other}] and out[{index}] of {self.label} share memory: each result needs "
                        f"an array of its own", spec
                    )
        return given


def _extents(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """The bytes [start, end) that each C-contiguous array occupies, one row per array."""
    rows = [(address, address + array.nbytes) for array in arrays for address in (array.ctypes.data,)]
    return np.array(rows, dtype=np.int64).reshape(len(rows), 2)


def _sharing(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Whether the byte ranges `first[..., :]` and `second[..., :]` ([start, end) in the last axis,
    broadcast against each other) share a byte: numpy's bounds test, vectorized, so one call checks
    every in-place argument against a model's hundred weights. Empty ranges share nothing."""
    start, end = np.maximum(first[..., 0], second[..., 0]), np.minimum(first[..., 1], second[..., 1])
    return start < end


class PinnedCall:
    """Repeated calls of a C interface with some arguments pinned: the same arrays at every call (a
    decode step's KV caches and weights), checked, and bound to descriptors of a call context of
    its own, once; each call checks and binds only the other arguments and the fresh results.

    The compiled code reads and writes the pinned arrays through their addresses: their contents
    may change between calls (the caches are updated in place, as they would be by a plain call),
    but each must stay the same buffer (not resized; pin again to replace one); an input that the
    compiled code cannot read in place (not C-contiguous, say) is copied once, when pinned.  Calls give what
    a plain call (`Interface.prepare`) gives for the same arguments, errors included; where a
    pinned input shares memory with a pinned argument updated in place (so it must be copied
    before each call), every call takes the plain path, through `function`'s pool.
    """

    def __init__(self, interface: Interface, function: CFunction, pinned: dict):
        """`pinned`: the pinned arguments by position in `interface.inputs`."""
        self.interface = interface
        self._function = function
        count = len(interface.inputs)
        self._values: list = [None] * count
        for index, value in pinned.items():
            self._values[index] = interface.check_argument(index, value)
        self.free = [index for index in range(count) if index not in pinned]
        pinned_positions = sorted(pinned)
        self._extents = np.zeros((count, 2), np.int64)
        if pinned_positions:
            self._extents[pinned_positions] = _extents([self._values[index] for index in pinned_positions])
        # A pinned input read while a pinned in-place argument that shares its memory is updated
        # would need a copy at every call: such a function takes the plain path.
        tied_pinned = [index for index in interface.tied if index in pinned]
        sharing = _sharing(self._extents[tied_pinned, None, :], self._extents[None, pinned_positions, :])
        sharing[range(len(tied_pinned)), [pinned_positions.index(index) for index in tied_pinned]] = False
        self.fast = not sharing.any()
        # What a call must test for shared memory: the pinned in-place arguments against the free
        # inputs (pinned against pinned was tested here); a free in-place argument against everything.
        self._tied_extents = self._extents[tied_pinned, None, :]
        self._tied_free = any(index not in pinned for index in interface.tied)
        self._context = function.context()
        self._context.bind_at(pinned_positions, self._extents[pinned_positions, 0].tolist())
        self._fresh_positions = list(range(count, count + len(interface.fresh_outputs)))  # after the inputs
        self._rebind: list[int] = []  # pinned positions bound to a copy by the last call, to restore

    def run(self, values: Sequence, out=None):
        """Calls the function on the free arguments `values` (in the order of `free`) and the pinned
        ones; the results as `Call.finish` gives them."""
        interface = self.interface
        arrays = list(self._values)
        for index, value in zip(self.free, values):
            arrays[index] = value
        if not self.fast:
            call = interface.prepare(arrays, {}, out)
            self._function.run(call.addresses)
            return call.finish()
        free = self.free
        for index in free:
            arrays[index] = interface.check_argument(index, arrays[index])
        extents = self._extents.copy()
        if free:
            extents[free] = _extents([arrays[index] for index in free])
        shared = self._tied_free or (free and _sharing(self._tied_extents, extents[None, free, :]).any())
        copied = interface._read_before_update(arrays, extents) if shared else []
        call = interface.call(arrays, extents, out)
        with self._context.lock:
            positions = [*free, *copied, *self._rebind]
            addresses = extents[positions, 0].tolist() + call.addresses[len(arrays):]
            self._rebind = [index for index in copied if index not in free]
            self._context.bind_at([*positions, *self._fresh_positions], addresses)
            self._context.call()
        return call.finish()
