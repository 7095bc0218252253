"""RLX passes, one per module, and the registry from command-line name to pass."""
