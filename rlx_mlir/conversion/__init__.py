"""Conversions between levels, one package or module per arrow:
HIR -> MIR (`hir_to_mir/`), MIR -> LIR (`mir_to_lir`: planning), LIR -> linalg (`lir_to_linalg`:
executing the plan) and MIR -> linalg/tensor/arith/math (`mir_to_linalg/`, one module per op family).

Layer: with `transforms`, above `passmanager`; imports `dialects`, `lir`, `dims`, `ir` and below."""
