"""The calling convention of generated functions: tied results updated in place,
read-only arguments, a buffer per returned tensor, the C interface."""
