"""The Python boundary made visible: one call of the 2-layer Llama from C and from Python.

The model of examples/c/make_llama.py (2 layers, hidden 64, seq 7) compiled once by rlx-compile
(`--cpu native`, as the JIT compiles) into a library; then, interleaved `--rounds` times,
`--calls` calls each of
  - the C runtime: examples/c/run_model.c (`rlx_invoke`, weights bound once), timed in C;
  - the Python AOT loader (`rlx_mlir.aot.load`) on the same library, every weight passed per call;
  - the Python JIT (`rlx_mlir.compile`, one thread like the library).
Best and median microseconds per call, and each one's ratio to the C runtime's best.

Then the warm start: the 12-layer Llama of benchmarks/cpu.py (hidden 512, seq 128) compiled once into
a fresh on-disk cache (`RLX_CACHE_DIR`), then `--starts` times each (interleaved) a new Python process
that compiles it again and gets its executable from the cache:
  - `rlx_mlir.compile(text)` (the JIT's shared object, loaded without MLIR);
  - `rlx-compile model.mlir -o lib.so` (the object file from the cache, then linked).
Best and median milliseconds: the whole process (interpreter start to exit, as a shell sees it), the
part in the process from `import rlx_mlir` to the executable (or the library) in hand, and the compile
call alone (`compile()`, rlx-compile's `main`); beside them, the floors: a process that runs no code and
one that only imports numpy (which an executable needs; rlx-compile does not), in the same rounds.

    python benchmarks/deploy.py [--calls 2000] [--rounds 3] [--starts 5] [--skip-calls]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import rlx_mlir
from rlx_mlir import aot

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "c"
NATIVE = ROOT / "rlx_mlir" / "native"


def python_per_call(function, arguments: dict, calls: int) -> list[float]:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        function(**arguments)
        times.append((time.perf_counter() - start) * 1e6)
    return times


# A new process that compiles the model in argv[1]; it prints the milliseconds from `import rlx_mlir` to
# the executable in hand, those of the compile call alone, and whether MLIR / numpy were imported.
JIT_START = """
import sys, time
start = time.perf_counter()
from rlx_mlir import compile  # its modules (and numpy) imported here, the call timed alone
text = open(sys.argv[1]).read()
call = time.perf_counter()
exe = compile(text)
end = time.perf_counter()
print((end - start) * 1e3, (end - call) * 1e3, "mlir" in sys.modules, "numpy" in sys.modules)
"""
FLOOR = """
import sys, time
start = time.perf_counter()
import numpy
end = time.perf_counter()
print((end - start) * 1e3, 0.0, "mlir" in sys.modules, "numpy" in sys.modules)
"""
AOT_START = """
import sys, time
start = time.perf_counter()
from rlx_mlir.tools.compile import main
call = time.perf_counter()
assert main([sys.argv[1], "-o", sys.argv[2]]) == 0
end = time.perf_counter()
print((end - start) * 1e3, (end - call) * 1e3, "mlir" in sys.modules, "numpy" in sys.modules)
"""
BARE = """
import sys
print(0.0, 0.0, "mlir" in sys.modules, "numpy" in sys.modules)
"""


def warm_starts(starts: int) -> None:
    """The new-process cache-hit rows: the 12-layer model compiled once, then `starts` new processes each."""
    from rlx_mlir.models.llama import LlamaConfig, build_llama

    config = LlamaConfig(layers=12, hidden=512, heads=8, kv_heads=8, head_dim=64, ffn=1408, vocab=1000, seq=128)
    with tempfile.TemporaryDirectory(prefix="rlx-deploy-cache-") as scratch:
        work = Path(scratch)
        (work / "llama12.mlir").write_text(str(build_llama(config)))
        env = {**os.environ, "RLX_CACHE_DIR": str(work / "cache"), "PYTHONPATH": str(ROOT)}
        commands = {"floor: Python only": [sys.executable, "-c", BARE],
                    "floor: Python importing numpy only": [sys.executable, "-c", FLOOR],
                    "compile() (JIT)": [sys.executable, "-c", JIT_START, str(work / "llama12.mlir")],
                    "rlx-compile (AOT)": [sys.executable, "-c", AOT_START, str(work / "llama12.mlir"),
                                          str(work / "libllama12.so")]}
        cold = {}
        for name, command in commands.items():  # fills the cache
            start = time.perf_counter()
            subprocess.run(command, check=True, env=env, capture_output=True)
            cold[name] = time.perf_counter() - start
        samples = {name: ([], [], []) for name in commands}
        imported = {}
        for _ in range(starts):
            for name, command in commands.items():
                start = time.perf_counter()
                out = subprocess.run(command, check=True, env=env, capture_output=True, text=True).stdout.split()
                samples[name][0].append((time.perf_counter() - start) * 1e3)
                samples[name][1].append(float(out[0]))
                samples[name][2].append(float(out[1]))
                imported[name] = (out[2] == "True", out[3] == "True")
    print()
    print(f"# warm start: a new process compiling the 12-layer Llama (hidden 512, seq 128) again, its cache on "
          f"disk; {starts} interleaved starts")
    print("| model | new process | process ms (best / median) | import + compile ms (best / median) | "
          "the compile call ms (best / median) | first (cold) s | MLIR / numpy imported |")
    print("|---|---|---|---|---|---|---|")
    for name, (process, inside, call) in samples.items():
        case = name if name.startswith("floor") else f"{name}, cache hit"
        calls = "" if name.startswith("floor") else f"{min(call):.1f} / {statistics.median(call):.1f}"
        mlir, numpy = imported[name]
        print(f"| llama 12 layers | {case} | {min(process):.0f} / {statistics.median(process):.0f} | "
              f"{min(inside):.0f} / {statistics.median(inside):.0f} | {calls} | {cold[name]:.1f} | "
              f"{'yes' if mlir else 'no'} / {'yes' if numpy else 'no'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--starts", type=int, default=5, help="new processes per warm-start row")
    parser.add_argument("--skip-calls", action="store_true", help="only the warm-start rows")
    args = parser.parse_args()
    if not args.skip_calls:
        per_call(args)
    warm_starts(args.starts)


def per_call(args) -> None:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        sys.exit("no C compiler (cc or gcc): the C row needs one")
    with tempfile.TemporaryDirectory(prefix="rlx-deploy-") as scratch:
        work = Path(scratch)
        subprocess.run([sys.executable, str(EXAMPLES / "make_llama.py"), str(work)], check=True)
        subprocess.run([sys.executable, "-m", "rlx_mlir.tools.compile", str(work / "llama.mlir"), "-o",
                        str(work / "libllama.so"), "--cpu", "native"], check=True)
        program = work / "run_model"
        subprocess.run([compiler, "-O2", "-std=c11", f"-I{NATIVE / 'include'}", str(EXAMPLES / "run_model.c"),
                        str(NATIVE / "src" / "runtime.c"), "-o", str(program), "-ldl", "-lm"], check=True)
        model = aot.load(str(work / "libllama.so"))
        text = (work / "llama.mlir").read_text()
        jit = rlx_mlir.compile(text, threads=1)  # serial, as the library (rlx-compile's default --threads 1)
        arguments = {spec.name: np.fromfile(work / f"{spec.name}.bin", spec.dtype).reshape(spec.shape)
                     for spec in model.llama.inputs}
        samples = {"C runtime (rlx_invoke)": [], "Python AOT loader": [], "Python JIT (compile)": []}
        for _ in range(args.rounds):
            out = subprocess.run([str(program), str(work / "libllama.so"), str(work), str(args.calls)],
                                 capture_output=True, text=True, check=True).stdout
            best, median = map(float, re.search(r"best ([\d.]+) median ([\d.]+)", out).groups())
            samples["C runtime (rlx_invoke)"].append((best, median))
            for name, function in (("Python AOT loader", model), ("Python JIT (compile)", jit)):
                times = python_per_call(function, arguments, args.calls)
                samples[name].append((min(times), statistics.median(times)))
    c_best = min(best for best, _ in samples["C runtime (rlx_invoke)"])
    print(f"# rlx-mlir deployment: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"{args.rounds} interleaved rounds of {args.calls} calls; the machine may be loaded")
    print("| model | caller | us per call (best / median) | vs C (best) |")
    print("|---|---|---|---|")
    for name, rounds in samples.items():
        best = min(b for b, _ in rounds)
        median = statistics.median(m for _, m in rounds)
        print(f"| llama 2 layers (hidden 64, seq 7) | {name} | {best:.1f} / {median:.1f} | {best / c_best:.2f}x |")


if __name__ == "__main__":
    main()
