"""RLX dialects.  Each module here is importable through MLIR's dialect search
prefix (`rlx_mlir.dialects`), so IR walks return the typed op classes."""
