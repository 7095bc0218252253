"""runtime/abi.py without MLIR: the memref descriptors and the two calling conventions of a C
interface (one descriptor pointer per buffer, or MLIR's packed array of them), checked against a
ctypes callback standing in for compiled code, and the argument arrangement."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from rlx_mlir.runtime.abi import ArgumentError, CFunction, Interface, Parameters, descriptor_class


class Spec:
    def __init__(self, name, shape, dtype="float32"):
        self.name, self.shape, self.dtype = name, tuple(shape), np.dtype(dtype)

    def describe(self):
        return f"numpy {self.dtype.name} {list(self.shape)}"


def _read(pointer: int, rank: int) -> dict:
    descriptor = ctypes.cast(pointer, ctypes.POINTER(descriptor_class(rank))).contents
    fields = {"allocated": descriptor.allocated, "aligned": descriptor.aligned, "offset": descriptor.offset}
    if rank:
        fields.update(shape=list(descriptor.shape), strides=list(descriptor.strides))
    return fields


@pytest.mark.parametrize("packed", [False, True], ids=["ciface", "packed"])
def test_c_function_passes_one_descriptor_per_buffer(packed):
    # MLIR's ranked memref descriptor: {allocated, aligned, offset, shape[rank], strides[rank]}, strides
    # in elements, row-major for a C-contiguous array; rank 0 has no shape or strides.
    seen = []
    if packed:
        def body(cells):
            cells = ctypes.cast(cells, ctypes.POINTER(ctypes.c_void_p))
            pointers = [ctypes.cast(cells[i], ctypes.POINTER(ctypes.c_void_p))[0] for i in range(2)]
            seen.extend([_read(pointers[0], 3), _read(pointers[1], 0)])
        callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(body)
    else:
        def body(first, second):
            seen.extend([_read(first, 3), _read(second, 0)])
        callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(body)
    function = CFunction(ctypes.cast(callback, ctypes.c_void_p).value, [(2, 3, 4), ()], packed)
    a, b = np.zeros((2, 3, 4), np.float32), np.zeros((), np.int64)
    function.run([a.ctypes.data, b.ctypes.data])
    assert seen[0] == {"allocated": a.ctypes.data, "aligned": a.ctypes.data, "offset": 0,
                       "shape": [2, 3, 4], "strides": [12, 4, 1]}
    assert seen[1] == {"allocated": b.ctypes.data, "aligned": b.ctypes.data, "offset": 0}


def test_parameters_arrange_positional_and_keyword_arguments():
    parameters = Parameters("@f", ["x", "w", "b"])
    assert parameters.arrange((1,), {"b": 3, "w": 2}) == [1, 2, 3]
    with pytest.raises(TypeError, match="@f takes 3 arguments, got 4"):
        parameters.arrange((1, 2, 3, 4), {})
    with pytest.raises(TypeError, match=r"@f has no argument named 'y' \(arguments: x, w, b\)"):
        parameters.arrange((), {"y": 1})
    with pytest.raises(TypeError, match="argument 'x' of @f given twice"):
        parameters.arrange((1,), {"x": 1})
    with pytest.raises(TypeError, match="@f is missing arguments: w, b"):
        parameters.arrange((1,), {})


def test_interface_prepares_readable_arrays_and_result_buffers():
    interface = Interface("f", [Spec("cache", (2, 3)), Spec("x", (3,))], [Spec("r0", (2, 3)), Spec("r1", (3,))],
                          [0, None])
    assert interface.buffer_shapes == [(2, 3), (3,), (3,)]  # the tied result has no buffer of its own
    cache = np.zeros((2, 3), np.float32)
    x = np.arange(6, dtype=">f4")[::2]  # big-endian and strided: copied into a native, contiguous array
    call = interface.prepare((cache, x), {})
    assert call.arrays[0] is cache and call.arrays[1].dtype == np.float32 and call.arrays[1].flags.c_contiguous
    np.testing.assert_array_equal(call.arrays[1], [0, 2, 4])
    assert call.outputs[0] is cache and call.fresh == [call.outputs[1]]
    assert call.addresses == [cache.ctypes.data, call.arrays[1].ctypes.data, call.outputs[1].ctypes.data]
    shared = interface.prepare((cache, cache[0]), {})  # an input that aliases the argument updated in place
    assert not np.shares_memory(shared.arrays[1], cache)
    with pytest.raises(ArgumentError, match=r"argument 'x' of f: expected numpy float32 \[3\], got numpy float64 \[3\]"):
        interface.prepare((cache, np.zeros(3)), {})
    with pytest.raises(ArgumentError, match=r"argument 'cache' of f is updated in place \(r0 is tied to it\) and "
                                            r"must be a writable array, C-contiguous and aligned: it is not C-contiguous"):
        interface.prepare((np.zeros((3, 2), np.float32).T, x), {})
