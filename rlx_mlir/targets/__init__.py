"""What compiled code runs on: the CPU (`cpu`: OpenMP thread counts), NVIDIA GPUs (`cuda`: chips
and the PTX versions each accepts) and `toolchain` (where the pinned MLIR and LLVM wheels put their
tools and runtime libraries).

Layer: just above `errors`; MLIR-free, so any layer may ask about a target, and the AOT loader reads
`TARGETS` where MLIR is not installed.
"""

# The targets `compile()`, `aot.export` and the AOT loader know.
TARGETS = ("cpu", "cuda")
