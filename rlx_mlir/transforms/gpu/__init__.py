"""GPU code generation on loops and linalg: tiled matmuls, block reductions, grid mapping,
hoisting parallel loops, device memory, and the check that every loop nest runs on the device."""
