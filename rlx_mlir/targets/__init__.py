"""What the code is generated for: the CPU (threads), NVIDIA GPUs (chips and the PTX versions each
accepts) and where the pinned toolchain wheels put their binaries and runtime libraries.

Layer: just above `errors`; MLIR-free, so any layer may ask about a target.
"""
