"""Running compiled RLX functions on numpy arrays.

`abi` (the numpy <-> C-interface boundary) and `cuda_driver` (the CUDA driver and device buffers)
import numpy and ctypes only: the AOT loader uses them where MLIR is not installed, so importing
this package imports nothing.  `jit`, `cuda` and `specialize` compile through MLIR.
"""
