"""Transforms within one level, by the level they work on:
`hir/` (HIR blocks), `mir/` (clean-up, folding and fusion of MIR, the fusion report, binding dims),
`linalg/` (linalg-level fusion, reassociation, math approximation, GEMM packing and tiling,
parallelization, memory representations of bool and bf16, function splitting), `abi/` (the calling
convention: tied, read-only and distinct results, the C interface) and `gpu/` (GPU code generation).

Layer: with `conversion`, above `passmanager`; no transform imports a conversion."""
