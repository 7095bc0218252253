"""`compile(..., target="cuda")`: JIT compilation for NVIDIA GPUs.

The module is lowered with `rlx-lower-to-nvvm` (kernels as PTX for the chip
of device 0, host code calling MLIR's CUDA runtime wrappers) and JIT-compiled
by MLIR's ExecutionEngine with `libmlir_cuda_runtime.so`.  The compiled
function takes device buffers; the returned `CudaExecutable` uploads weights
(`rlx.param` arguments) on first use and keeps them on the device across calls
(a different array, or one at another address, is uploaded again; an array
changed in place is not), copies the other inputs in and the results out on
every call, and returns numpy arrays.

Before anything is loaded, the CUDA driver is asked whether a device exists
(`cuInit`, `cuDeviceGetCount` through ctypes): without one, `compile` raises
`CudaUnavailableError` instead of letting a runtime library abort the process.
"""

from __future__ import annotations

import ctypes
from typing import Optional, Union

import numpy as np
from mlir import ir
from mlir.execution_engine import ExecutionEngine

from ..driver import Compilation
from ..errors import RlxError
from ..ir.diagnostics import CompileError
from ..pipelines.lower_to_nvvm import LowerToNVVM
from ..targets.cuda import MIN_PTX, check_target
from ..targets.toolchain import runtime_library
from .abi import CFunction, Interface
from .cuda_driver import CudaRuntime, DeviceFunction, cuda_device_error, device_chip
from .signature import Signature, find_function, signature_of


class CudaUnavailableError(RlxError, RuntimeError):
    """target="cuda" on a machine without a usable CUDA driver and device."""


class CudaExecutable:
    """A function compiled for the GPU: numpy in, numpy out; weights stay on the device."""

    def __init__(self, engine: ExecutionEngine, signature: Signature, module: ir.Module, context: ir.Context,
                 chip: str):
        self.signature = signature
        self.chip = chip
        self._engine, self._module, self._context = engine, module, context  # keep them alive
        address = engine.raw_lookup("_mlir_ciface_" + signature.entry)
        if not address:
            raise CompileError(f"compiled module has no C interface for '@{signature.entry}'")
        runtime = CudaRuntime(ctypes.CDLL(runtime_library("mlir_cuda_runtime"), mode=ctypes.RTLD_GLOBAL))
        interface = Interface(f"@{signature.entry}", signature.inputs, signature.outputs,
                              [spec.tied_input for spec in signature.outputs])
        self._function = DeviceFunction(interface, CFunction(address, interface.buffer_shapes, packed=True), runtime)

    @property
    def input_names(self) -> list[str]:
        return [spec.name for spec in self.signature.inputs]

    def __call__(self, *args: np.ndarray, **kwargs: np.ndarray):
        return self._function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"CudaExecutable({self.signature}, target='cuda', chip='{self.chip}')"


def compile_cuda(
    module: Union[str, ir.Module],
    entry: Optional[str] = None,
    *,
    chip: Optional[str] = None,
    features: Optional[str] = None,
    opt_level: int = 3,
    filename: str = "<string>",
    plan: bool = True,
) -> CudaExecutable:
    """Compiles `entry` for CUDA device 0 (or `chip` / `features`); see the module docstring."""
    problem = cuda_device_error()
    if problem:
        raise CudaUnavailableError(f"target 'cuda' needs a CUDA GPU: {problem}")
    chip = chip or device_chip()
    features = features or (f"+ptx{MIN_PTX[chip]}" if chip in MIN_PTX else "+ptx80")
    check_target(chip, features)
    text = module.operation.get_asm(enable_debug_info=True) if isinstance(module, ir.Module) else module
    with Compilation(filename=filename) as job:
        parsed = job.parse(text)
        signature = signature_of(find_function(parsed, entry))
        tied = [spec.name for spec in signature.outputs if spec.tied_input is not None]
        if tied:  # the NVVM pipeline would return a copy: the caller's array (a KV cache) would never change
            raise CompileError(f"@{signature.entry}: target 'cuda' does not update results tied to an argument "
                               f"(rlx.tied: {', '.join(tied)}) in place yet; compile it for target 'cpu'")
        job.run(parsed, LowerToNVVM(chip=chip, features=features, plan=plan), "lowering to NVVM failed")
        try:
            engine = ExecutionEngine(
                parsed,
                opt_level=opt_level,
                shared_libs=[runtime_library("mlir_cuda_runtime"), runtime_library("mlir_c_runner_utils")],
            )
        except RuntimeError as error:
            raise CompileError(f"the LLVM JIT could not compile the module: {error}") from None
        # Run the global constructors, which load the kernels' modules (mgpuModuleLoadJIT):
        # calling the function through raw_lookup would not run them.
        engine.initialize()
        return CudaExecutable(engine, signature, parsed, job.context, chip)
