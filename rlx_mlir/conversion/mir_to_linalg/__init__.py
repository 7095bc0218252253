"""MIR to linalg."""
