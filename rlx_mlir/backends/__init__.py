"""Target descriptions for code generation backends (no MLIR imports here)."""
