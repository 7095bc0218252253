"""The CUDA driver and MLIR's CUDA runtime wrappers through ctypes: numpy and ctypes only, no MLIR.

Used by `compile(..., target="cuda")` (runtime/cuda.py) and by the AOT loader (aot/loader.py),
which runs where MLIR is not installed.

- `cuda_device_error`: whether CUDA code can run here, asked of the driver (`libcuda.so.1`)
  before any MLIR CUDA runtime library is loaded (those print errors or abort without a device);
- `device_chip`: `sm_XY` of device 0;
- `CudaRuntime`: the entry points of `libmlir_cuda_runtime.so` that move buffers;
- `DeviceFunction`: a compiled function called with numpy arrays, its buffers on the device.
  Weights (`rlx.param` arguments) are uploaded on first use and stay on the device across calls
  (uploaded again when a different array, or one at another address, is passed; an array
  changed in place is not); other inputs are copied in and results copied out on every call.
"""

from __future__ import annotations

import ctypes
import time
from typing import Any, Optional

import numpy as np

from .abi import CFunction, Interface


def cuda_device_error() -> Optional[str]:
    """Why CUDA code cannot run here (no driver library, no device), or None when it can.

    Asks the driver API directly (`cuInit`, `cuDeviceGetCount`) before any MLIR
    CUDA runtime library is loaded: those print errors or abort without a device.
    """
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no CUDA driver (libcuda.so.1 not found)"
    if driver.cuInit(0) != 0:
        return "the CUDA driver failed to initialise (cuInit returned an error; is a GPU present?)"
    count = ctypes.c_int(0)
    if driver.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return "no CUDA device found"
    return None


def device_chip() -> str:
    """`sm_XY` of CUDA device 0, from its compute capability."""
    driver = ctypes.CDLL("libcuda.so.1")
    device, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    driver.cuDeviceGet(ctypes.byref(device), 0)
    driver.cuDeviceGetAttribute(ctypes.byref(major), 75, device)  # COMPUTE_CAPABILITY_MAJOR
    driver.cuDeviceGetAttribute(ctypes.byref(minor), 76, device)  # COMPUTE_CAPABILITY_MINOR
    return f"sm_{major.value}{minor.value}"


class CudaRuntime:
    """The few entry points of libmlir_cuda_runtime.so that allocate, copy and synchronise, on one stream."""

    def __init__(self, library: ctypes.CDLL):
        self.alloc = library.mgpuMemAlloc
        self.alloc.restype, self.alloc.argtypes = ctypes.c_void_p, [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_bool]
        self.free = library.mgpuMemFree
        self.free.restype, self.free.argtypes = None, [ctypes.c_void_p, ctypes.c_void_p]
        self.memcpy = library.mgpuMemcpy
        self.memcpy.restype, self.memcpy.argtypes = None, [ctypes.c_void_p] * 2 + [ctypes.c_size_t, ctypes.c_void_p]
        create = library.mgpuStreamCreate
        create.restype, create.argtypes = ctypes.c_void_p, []
        self.synchronize = library.mgpuStreamSynchronize
        self.synchronize.restype, self.synchronize.argtypes = None, [ctypes.c_void_p]
        self.stream = create()

    def device_buffer(self, nbytes: int) -> int:
        pointer = self.alloc(max(nbytes, 1), self.stream, False)
        if not pointer:
            raise MemoryError(f"cannot allocate {nbytes} bytes of device memory")
        return pointer


def _nbytes(spec) -> int:
    return int(np.prod(spec.shape, dtype=np.int64)) * spec.dtype.itemsize


class DeviceFunction:
    """A compiled function whose C interface takes device buffers: call it with numpy arrays.

    `interface` describes its arguments and results (specs with an `is_param` too), `function` is
    its C interface, `runtime` moves the buffers.  See the module docstring for what stays on the device.
    """

    def __init__(self, interface: Interface, function: CFunction, runtime: CudaRuntime):
        self.interface = interface
        self.inputs = interface.inputs
        self.outputs = interface.outputs
        self._function = function
        self._runtime = runtime
        self._input_bytes = [_nbytes(spec) for spec in interface.inputs]
        self._output_bytes = [_nbytes(spec) for spec in interface.fresh_outputs]
        # A weight is kept on the device, unless it is updated in place (it changes every call).
        self._kept = [spec.is_param and position not in interface.tied
                      for position, spec in enumerate(interface.inputs)]
        self._device: dict[int, tuple[Any, int]] = {}  # input position -> (source key, device pointer)
        self._pinned: dict[int, np.ndarray] = {}  # the kept weights' arrays, so that their ids stay unique

    def __call__(self, *args, **kwargs):
        call = self.interface.prepare(args, kwargs)
        cuda = self._runtime
        with self._function.lock:
            temporaries, copied_back, addresses = [], [], []
            for position, (array, nbytes) in enumerate(zip(call.arrays, self._input_bytes)):
                key = (id(array), array.ctypes.data)
                cached = self._device.get(position)
                if self._kept[position] and cached is not None and cached[0] == key:
                    pointer = cached[1]  # weight already on the device
                else:
                    pointer = cuda.device_buffer(nbytes)
                    cuda.memcpy(pointer, array.ctypes.data, nbytes, cuda.stream)
                    if self._kept[position]:
                        if cached is not None:
                            cuda.free(cached[1], cuda.stream)
                        self._device[position] = (key, pointer)
                        self._pinned[position] = array
                    else:
                        temporaries.append(pointer)
                if position in self.interface.tied:
                    copied_back.append((array, pointer))  # updated in place on the device
                addresses.append(pointer)
            result_buffers = [cuda.device_buffer(nbytes) for nbytes in self._output_bytes]
            self._function.bind([*addresses, *result_buffers])
            cuda.synchronize(cuda.stream)  # inputs are on the device before the function's own stream runs
            self._function.call()
            for array, pointer in (*zip(call.fresh, result_buffers), *copied_back):
                cuda.memcpy(array.ctypes.data, pointer, array.nbytes, cuda.stream)
            cuda.synchronize(cuda.stream)
            for pointer in (*temporaries, *result_buffers):
                cuda.free(pointer, cuda.stream)
        return call.finish()

    def time_on_device(self, *args, repeat: int = 10, **kwargs) -> list[float]:
        """Seconds per call with every argument already on the device.

        Uploads the arguments once, then times `repeat` calls of the compiled
        function alone (kernels, its arena allocation and its stream
        synchronisation; no host copies), after one warm-up call.  A tied
        argument is updated on the device only: the caller's array is left alone.
        """
        arrays = self.interface.check_arguments(self.interface.parameters.arrange(args, kwargs))
        cuda = self._runtime
        buffers = []
        with self._function.lock:
            for array, nbytes in zip((*arrays, *[None] * len(self._output_bytes)),
                                     (*self._input_bytes, *self._output_bytes)):
                pointer = cuda.device_buffer(nbytes)
                if array is not None:
                    cuda.memcpy(pointer, array.ctypes.data, nbytes, cuda.stream)
                buffers.append(pointer)
            self._function.bind(buffers)
            cuda.synchronize(cuda.stream)
            for _, pointer in self._device.values():  # cached weights: uploaded again on the next call
                cuda.free(pointer, cuda.stream)
            self._device.clear()
            self._function.call()
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                self._function.call()  # synchronises its own stream before returning
                times.append(time.perf_counter() - start)
            for pointer in buffers:
                cuda.free(pointer, cuda.stream)
        return times
