"""Named pipelines, sequences of RLX and upstream passes: `rlx-optimize-mir`, `rlx-lower-to-llvm`
(CPU), `rlx-lower-to-nvvm` / `rlx-lower-to-gpu` (NVIDIA GPUs).

Layer: above `conversion` and `transforms`, whose passes they sequence, and `targets`."""
