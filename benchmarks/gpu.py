"""rlx on a CUDA GPU versus PyTorch, one table with ratios from the same run.

    python benchmarks/gpu.py                 # on a machine with a CUDA GPU, rlx_mlir and PyTorch
    python benchmarks/gpu.py --repeat 50

Workloads: f32 and f16 matmul 4096^3 (PyTorch with TF32 off), softmax 8192 x 8192,
causal attention (batch 8, 16 heads, seq 1024, head_dim 64; PyTorch's
scaled_dot_product_attention) and a 12-layer Llama-style model (rlx only: no
PyTorch model of it here).  rlx is compiled with `rlx_mlir.compile(target="cuda")`
and timed with every operand already on the device (`time_on_device`: the
compiled function alone, kernels + its arena allocation + stream synchronisation);
PyTorch on device tensors, synchronised after each call.  Medians of `--repeat` calls
after one warm-up.  "torch/rlx" > 1 means rlx is faster.

Where no GPU (or no PyTorch) is found, it says so and exits with status 0 (rlx-only
times are still printed when a GPU exists without PyTorch).  A GPU machine without
MLIR runs the same workloads from the deployment bundle: `python check.py --bench`
(scripts/gpu_bundle.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def workloads():
    import gpu_bundle

    return gpu_bundle.bench_models()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="rlx vs PyTorch on a CUDA GPU")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    from rlx_mlir.aot import cuda_device_error

    problem = cuda_device_error()
    if problem:
        print(f"benchmarks/gpu.py: skipped, no CUDA GPU here ({problem})")
        return 0
    try:
        import torch

        if not torch.cuda.is_available():
            raise ImportError("torch.cuda.is_available() is False")
    except ImportError as error:
        print(f"PyTorch with CUDA not available ({error}): rlx times only")
        torch = None
    import gpu_check

    import rlx_mlir

    rows = []
    for name, (text, info) in workloads().items():
        start = time.perf_counter()
        exe = rlx_mlir.compile(text, target="cuda")
        compile_s = time.perf_counter() - start
        function = exe._function
        inputs = gpu_check.make_inputs(function, 0, info["args"].get("vocab"))
        rlx_ms = 1e3 * float(np.median(function.time_on_device(**inputs, repeat=args.repeat)))
        torch_ms = gpu_check.torch_time(torch, info, inputs, args.repeat) if torch else None
        rows.append((name, compile_s, rlx_ms, torch_ms))
    device = torch.cuda.get_device_name() if torch else "CUDA device 0"
    print(f"\n{device}; medians of {args.repeat} calls, operands on the device")
    print(f"{'workload':32} {'compile s':>10} {'rlx ms':>10} {'torch ms':>10} {'torch/rlx':>10}")
    for name, compile_s, rlx_ms, torch_ms in rows:
        torch_text = f"{torch_ms:10.3f}" if torch_ms else f"{'-':>10}"
        ratio = f"{torch_ms / rlx_ms:10.3f}" if torch_ms else f"{'-':>10}"
        print(f"{name:32} {compile_s:10.1f} {rlx_ms:10.3f} {torch_text} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
