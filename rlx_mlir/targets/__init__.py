"""Targets: what compiled code runs on.

`cpu` (OpenMP thread counts), `cuda` (chips, PTX versions), `toolchain` (where the pinned MLIR
and LLVM tools and runtime libraries are). This package file is MLIR-free: the AOT loader reads
`TARGETS` where MLIR is not installed.
"""

# The targets `compile()`, `aot.export` and the AOT loader know.
TARGETS = ("cpu", "cuda")
