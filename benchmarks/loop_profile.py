"""Where the long prefill's time goes, per loop nest, in the whole model (issue 19): the 12-layer
benchmark model (hidden 512, 8 heads of 64, SwiGLU 1408, vocab 1000) exported ahead of time at each
length with every loop nest a function of its own (`rlx-lower-to-llvm{split-max-ops=1
split-loops}`; on two threads the OpenMP regions are functions already), run under `perf record`,
and the samples of each function turned into CPU ms per token, side by side for the lengths.

Unlike ops compiled alone, each loop nest runs with the caches as the model leaves them.  The
library packs the weights' GEMM panels per call (`aot` has no `bind_params`): those packs are
the `linalg.transpose` parts whose time per token falls with the length.  Each part's first op
(and how many top-level ops it holds) is printed beside it; parts are numbered in program order
within the outlined decoder layer (`__rlx_block_...`) and the model function (`llama`).

    python benchmarks/loop_profile.py [--seqs 512,2048] [--threads 1] [--tokens 6144]

Needs `perf` (linux-tools) and permission to sample the process (perf_event_paranoid <= 2).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

HZ = 2000


def export(seq: int, threads: int, directory: str) -> dict:
    """The model's library at `seq` tokens, every loop nest its own function; returns the first op
    and the op count of each part, by the part's name less the layer's hash."""
    from unittest import mock

    from rlx_mlir import aot
    from rlx_mlir.aot import lowering
    from rlx_mlir.models.llama import LlamaConfig, build_llama
    from rlx_mlir.pipelines.lower_to_llvm import LowerToLLVM
    from rlx_mlir.transforms.linalg import split_functions

    parts = {}
    runs = split_functions._runs

    def recorded(body, max_ops, loops=False):
        found = runs(body, max_ops, loops)
        name = _unhashed(str(body.owner.attributes["sym_name"]).strip('"'))
        for index, run in enumerate(found):
            parts[f"{name}_part{index}"] = f"{run[0].name} ({len(run)} ops)"
        return found

    config = LlamaConfig(layers=12, hidden=512, heads=8, kv_heads=8, head_dim=64, ffn=1408, vocab=1000, seq=seq)
    pipeline = LowerToLLVM(threads=threads, split_max_ops=1, split_loops=True)
    with mock.patch.object(lowering, "pipeline_for", lambda *args: pipeline), \
            mock.patch.object(split_functions, "_runs", recorded):
        aot.export(str(build_llama(config)), os.path.join(directory, f"model{seq}.so"), cpu="native", threads=threads)
    return parts


def run(library: str, seq: int, calls: int) -> None:
    """Child process: `calls` calls of the library on random weights, after one warm-up call."""
    import numpy as np

    from rlx_mlir import aot
    from rlx_mlir.models.llama import LlamaConfig, random_weights

    config = LlamaConfig(layers=12, hidden=512, heads=8, kv_heads=8, head_dim=64, ffn=1408, vocab=1000, seq=seq)
    weights = random_weights(config, seed=0)
    model = aot.load(library)
    tokens = np.random.default_rng(seq).integers(0, config.vocab, (1, seq)).astype(np.int64)
    for _ in range(calls + 1):
        model.llama(tokens=tokens, **weights)


def _unhashed(symbol: str) -> str:
    return re.sub(r"_[0-9a-f]{12}", "", symbol)


def profile(library: str, seq: int, calls: int, directory: str) -> dict[str, float]:
    """CPU ms per token of each symbol of the model's library (others summed as `other`)."""
    data = os.path.join(directory, f"perf{seq}.data")
    subprocess.run(["perf", "record", "-q", "-F", str(HZ), "-o", data, sys.executable, __file__, "--child", library,
                    str(seq), str(calls)], check=True)
    report = subprocess.run(["perf", "report", "-i", data, "--sort", "dso,sym", "-F", "sample,dso,sym", "--stdio"],
                            capture_output=True, text=True, check=True).stdout
    tokens = seq * (calls + 1)
    times = collections.Counter()
    for line in report.splitlines():
        fields = line.split()
        if not fields or line.startswith("#"):
            continue
        dso, symbol = fields[1], " ".join(fields[3:])
        name = _unhashed(symbol) if dso == os.path.basename(library) else "other"
        if dso == "libiomp5.so":
            name = "OpenMP runtime (barrier waits)"
        times[name] += int(fields[0]) / HZ / tokens * 1e3
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seqs", default="512,2048")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tokens", type=int, default=6144, help="tokens run per length (calls = tokens / seq)")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run(args.child[0], int(args.child[1]), int(args.child[2]))
        return
    seqs = [int(s) for s in args.seqs.split(",")]
    if shutil.which("perf") is None:
        print("loop_profile: `perf` (linux-tools) is not on PATH; nothing measured")
        return
    with tempfile.TemporaryDirectory() as directory:
        parts, times = {}, []
        for seq in seqs:
            parts.update(export(seq, args.threads, directory))
            library = os.path.join(directory, f"model{seq}.so")
            try:
                times.append(profile(library, seq, max(1, args.tokens // seq), directory))
            except subprocess.CalledProcessError as error:
                print(f"loop_profile: `{' '.join(error.cmd[:2])}` failed (exit {error.returncode}; "
                      "perf_event_paranoid may forbid sampling); nothing measured")
                return
    names = sorted(set().union(*times), key=lambda n: -times[-1].get(n, 0.0))[:args.top]
    print(f"CPU ms per token, {args.threads} thread(s), perf at {HZ} Hz")
    print(f"{'function':58s} " + " ".join(f"{s:>8d}" for s in seqs) + "   change  first op")
    for name in names:
        row = [t.get(name, 0.0) for t in times]
        print(f"{name[:58]:58s} " + " ".join(f"{v:8.4f}" for v in row) + f" {row[-1] - row[0]:+8.4f}  "
              + parts.get(name, ""))
    totals = [sum(v for n, v in t.items() if n != "other") for t in times]
    print(f"{'model and OpenMP runtime':58s} " + " ".join(f"{v:8.4f}" for v in totals))


if __name__ == "__main__":
    main()
