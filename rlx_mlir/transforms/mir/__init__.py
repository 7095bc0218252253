"""Transforms on MIR (dialect rlx): CSE, DCE, constant folding, the fusions (and what they
report), splitting concatenated weights, binding symbolic dimensions."""
