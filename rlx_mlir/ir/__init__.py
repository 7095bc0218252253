"""MLIR plumbing shared by every layer."""
