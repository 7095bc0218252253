"""Running compiled RLX functions on numpy arrays."""
