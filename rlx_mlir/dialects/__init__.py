"""The RLX dialects, `rlx` (MIR), `rlx_hir` (HIR) and `rlx_lir` (LIR), defined with `dsl`;
`context` makes Contexts that know them, `verifier` runs every op's Python checks.

Each dialect module is importable through MLIR's dialect search prefix (`rlx_mlir.dialects`), so IR
walks return the typed op classes.

Layer: above `dsl`, `dims` and `lir`; everything that reads or writes RLX IR builds on it."""
