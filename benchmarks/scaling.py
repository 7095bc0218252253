"""Compile time against program size: long chains of elementwise ops through the full pipeline.

Each program is one function over `tensor<16xf32>` values `x` and `s`:

- chain:  x -> neg -> add s -> mul s -> tanh -> exp -> neg -> ...  (every value used once);
- fanout: the chain, where every fifth value is also read a second time:
          y -> (tanh y) + (y * s)  (a value with two uses, two branches joined again).

For each size it times `rlx_mlir.compile(text, cache=False)` and the first call (the
time a user waits for the first result) and checks that result against numpy in
float64. With `--stages` it also runs the same steps one by one (parse and verify,
every pass of `rlx-lower-to-llvm`, LLVM code generation in the JIT, the first call)
and prints the slowest of them. The target: 50k ops in under 60 s (compile and first call).

With `--repeat N` each program is compiled N times, the sizes interleaved, and the table
gives the best and the median of the runs. On a shared machine compare CPU seconds (user +
system, all threads): wall time includes waiting for the cores.

    python benchmarks/scaling.py [--sizes 1000 10000 50000] [--shapes chain fanout] [--stages] [--repeat N]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import time

import numpy as np

import rlx_mlir

TYPE = "tensor<16xf32>"
CYCLE = ("neg", "add", "mul", "tanh", "exp")  # bounded: tanh maps into (-1, 1), exp of that into (1/e, e)
TARGET_OPS, TARGET_SECONDS = 50_000, 60.0


def program(ops: int, shape: str = "chain") -> str:
    """MLIR text of a function with `ops` rlx elementwise ops (see the module docstring)."""
    lines = [f"func.func @main(%x: {TYPE}, %s: {TYPE}) -> {TYPE} {{"]
    value, count = "%x", 0

    def emit(op: str, *operands: str) -> str:
        nonlocal count
        name = f"%v{count}"
        count += 1
        types = ", ".join([TYPE] * len(operands))
        lines.append(f'  {name} = "rlx.{op}"({", ".join(operands)}) : ({types}) -> {TYPE}')
        return name

    while count < ops:
        if shape == "fanout" and count % 5 == 4 and ops - count >= 3:
            value = emit("add", emit("tanh", value), emit("mul", value, "%s"))
            continue
        op = CYCLE[count % len(CYCLE)]
        value = emit(op, value, "%s") if op in ("add", "mul") else emit(op, value)
    lines += [f"  return {value} : {TYPE}", "}"]
    return "\n".join(lines) + "\n"


def reference(ops: int, shape: str, x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The program computed in float64 with numpy, op by op as `program` emits them."""
    y, s, count = x.astype(np.float64), s.astype(np.float64), 0
    apply = {"neg": np.negative, "tanh": np.tanh, "exp": np.exp}
    while count < ops:
        if shape == "fanout" and count % 5 == 4 and ops - count >= 3:
            y, count = np.tanh(y) + y * s, count + 3
            continue
        op = CYCLE[count % len(CYCLE)]
        y = y + s if op == "add" else y * s if op == "mul" else apply[op](y)
        count += 1
    return y


def inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.uniform(-1, 1, 16).astype(np.float32), rng.uniform(0.25, 0.75, 16).astype(np.float32)


def check(result: np.ndarray, ops: int, shape: str) -> float:
    """Largest relative error against the float64 reference; raises when it is too large."""
    x, s = inputs()
    expected = reference(ops, shape, x, s)
    error = float(np.max(np.abs(result - expected) / np.maximum(np.abs(expected), 1e-3)))
    if not error < 1e-3:
        raise AssertionError(f"{shape} of {ops} ops: relative error {error:.2e} against numpy")
    return error


def time_compile(ops: int, shape: str) -> tuple[float, float, float, float]:
    """(compile seconds, first-call seconds, CPU seconds of both, relative error) of `compile()`
    on the program. CPU time (all threads) is less disturbed by other work on a shared machine."""
    text = program(ops, shape)
    start, cpu = time.perf_counter(), time.process_time()
    exe = rlx_mlir.compile(text, "main", cache=False)
    compiled = time.perf_counter()
    result = exe(*inputs())
    called = time.perf_counter()
    return compiled - start, called - compiled, time.process_time() - cpu, check(result, ops, shape)


def time_stages(ops: int, shape: str) -> list[tuple[str, float, float]]:
    """(name, wall seconds, CPU seconds) of each step compile() takes, run one by one: parse and
    verify, each element of `rlx-lower-to-llvm` (an RLX pass or an upstream pass), LLVM code
    generation, the first call."""
    from mlir.execution_engine import ExecutionEngine

    from rlx_mlir import driver
    from rlx_mlir.dialects.context import make_context
    from rlx_mlir.ir.diagnostics import DiagnosticCollector
    from rlx_mlir.passmanager.pipeline import VerificationState, build_pass_manager, expand
    from rlx_mlir.pipelines.lower_to_llvm import LowerToLLVM
    from rlx_mlir.runtime.jit import Executable
    from rlx_mlir.runtime.signature import arena_of, find_function, signature_of
    from rlx_mlir.targets.cpu import default_threads
    from rlx_mlir.targets.toolchain import openmp_library, runtime_library

    text, threads, stages = program(ops, shape), default_threads(), []

    @contextlib.contextmanager
    def timed(name: str):
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        stages.append((name, time.perf_counter() - wall, time.process_time() - cpu))

    context = make_context()
    with context, DiagnosticCollector(context) as diagnostics:
        with timed("parse + verify"):
            module = driver.parse_verified(text, "<scaling>", context, diagnostics)
            signature = signature_of(find_function(module, "main"))
        verification = VerificationState()  # one pass manager per step: share what the verifier learnt, as one would
        for element in expand(LowerToLLVM(threads=threads)):
            with timed(element if isinstance(element, str) else element.name):
                build_pass_manager([element], context, verification=verification).run(module.operation)
        libraries = [runtime_library("mlir_c_runner_utils")] + ([openmp_library()] if threads > 1 else [])
        with timed("LLVM: translation and -O3 (ExecutionEngine)"):
            engine = ExecutionEngine(module, opt_level=3, shared_libs=libraries)
        with timed("LLVM: machine code (first lookup)"):
            address = engine.raw_lookup("_mlir_ciface_main")  # looks the function up: machine code
            exe = Executable(address, signature, arena_of(module, "main"), keep_alive=engine, llvm_ir="")
        with timed("first call"):
            check(exe(*inputs()), ops, shape)
    return stages


def _numbers(text: list[str]) -> list[str]:
    """`--sizes 1000 10000` and `--sizes 1000,10000` alike."""
    return [item for chunk in text for item in chunk.split(",") if item]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["1000", "10000", "50000"], help="op counts (spaces or commas)")
    parser.add_argument("--shapes", nargs="+", default=["chain", "fanout"], help="program shapes: chain, fanout")
    parser.add_argument("--stages", action="store_true", help="also time each pipeline step (once per program)")
    parser.add_argument("--repeat", type=int, default=1, help="compiles per program, interleaved (best and median)")
    args = parser.parse_args()
    sizes = [int(size) for size in _numbers(args.sizes)]
    shapes = _numbers(args.shapes)
    print(f"# {platform.processor() or platform.machine()}, python {platform.python_version()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {args.repeat} run(s) per program")
    runs: dict = {(shape, ops): [] for shape in shapes for ops in sizes}
    for _ in range(args.repeat):  # interleaved: a burst of load on the machine spreads over all sizes
        for key in runs:
            runs[key].append(time_compile(key[1], key[0]))
    print(f"{'program':>8} {'ops':>7} {'compile s':>10} {'1st call s':>10} {'total s':>8} {'cpu s':>8} "
          f"{'median s':>8} {'med. cpu':>8} {'rel. error':>10}")
    for (shape, ops), results in runs.items():
        best = min(results, key=lambda r: r[2])  # the run with the least CPU time
        totals = sorted(r[0] + r[1] for r in results)
        cpus = sorted(r[2] for r in results)
        total = best[0] + best[1]
        limit = TARGET_SECONDS * ops / TARGET_OPS
        mark = "" if ops < TARGET_OPS else " (over target)" if best[2] > limit else " (within target)"
        print(f"{shape:>8} {ops:>7} {best[0]:>10.2f} {best[1]:>10.3f} {total:>8.2f} {best[2]:>8.2f} "
              f"{statistics.median(totals):>8.2f} {statistics.median(cpus):>8.2f} {best[3]:>10.1e}{mark}", flush=True)
    print(f"# target: {TARGET_OPS} elementwise ops through the full pipeline (compile() and the first call) "
          f"in under {TARGET_SECONDS:.0f} s, judged on CPU seconds (the wall time of an unloaded machine)")
    if args.stages:
        for shape in shapes:
            for ops in sizes:
                stages = time_stages(ops, shape)
                wall, cpu = sum(item[1] for item in stages), sum(item[2] for item in stages)
                print(f"{shape} {ops}: stages {wall:.2f} s wall, {cpu:.2f} s cpu; the slowest (wall, cpu):", flush=True)
                for name, seconds, cpu_seconds in sorted(stages, key=lambda item: -item[2])[:12]:
                    print(f"{'':>4} {seconds:>8.2f} s {cpu_seconds:>8.2f} s  {name}", flush=True)


if __name__ == "__main__":
    main()
