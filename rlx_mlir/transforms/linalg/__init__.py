"""Transforms on linalg / memref / scf code for the CPU: elementwise fusion, reduction
reassociation, polynomial math, GEMM packing and tiling, parallelization, bool and bf16 storage,
splitting huge functions."""
