"""The parent/child protocol of the benchmarks that measure each thread count in its own process
(cpu.py, lora.py, moe.py, quant.py): the child prints one `ROW <json>` line per result, the
parent runs the child with the thread settings and reads the rows back."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def emit(**row) -> None:
    """One result row, for the parent (`run_child`)."""
    print("ROW " + json.dumps(row), flush=True)


def run_child(script: str, threads: int, arguments: list) -> list[dict]:
    """The rows `script --child --threads N *arguments` emits; with one thread, numpy's BLAS and
    OpenMP pinned to one thread as well.  Exits with the child's output when it fails."""
    env = dict(os.environ)
    if threads == 1:
        env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    command = [sys.executable, script, "--child", "--threads", str(threads), *arguments]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"benchmark child with {threads} thread(s) failed")
    return [json.loads(line[4:]) for line in result.stdout.splitlines() if line.startswith("ROW ")]
