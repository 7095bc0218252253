"""Compiles fuzzed programs under pipeline configurations, checks them against the reference,
and shrinks failures to a minimal program.

Programs are compiled and run in a worker process (`Worker`), so an
LLVM abort or a segfault is reported as a `crash` outcome instead of taking pytest down; the
worker is restarted after it. Outcomes: `ok`, `mismatch` (a result outside the reference's
bound), `compile_error` (a valid program rejected with a CompileError), `internal_error` (any
other exception), `crash` (the process died), `timeout`. The worker is this module run as
`python -m fuzz.runner` (with `pytests/` on the path).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import pickle
import re
import select
import struct
import subprocess
import sys
import tempfile
import traceback
import zlib
from pathlib import Path
from typing import Optional
from unittest import mock

import numpy as np
from gpu_interpreter import Interpreter, numpy_dtype
from mlir import ir

import rlx_mlir
from rlx_mlir import CompileError
from rlx_mlir.passmanager.pipeline import run_pipeline
from rlx_mlir.pipelines.lower_to_llvm import LowerToLLVM
from rlx_mlir.runtime import jit

from . import reference
from .generator import BOUNDARY_TYPES, NUMPY_TYPES, Arg, Op, Program, input_array, prune

# Keyword arguments of rlx_mlir.compile, and options of the rlx-lower-to-llvm pipeline that
# compile() does not take (`fuse_elementwise`, `reassociate`, see `compile_with`).
CONFIGS = {
    "default": {},
    "plan=False": {"plan": False},
    "matmul_kernels=False": {"matmul_kernels": False},
    "threads=1": {"threads": 1},
    "fusion off": {"fuse_elementwise": False, "reassociate": False},
}
# Not a compile() configuration: the program lowered by rlx-lower-to-gpu and its kernels executed by
# pytests/gpu_interpreter.py (a Python thread per GPU thread, barriers and shared memory included), so the
# GPU backend is fuzzed on machines without a GPU.  Opt-in (--fuzz-gpu): slow, and only for programs
# the interpreter can hold (GPU_MAX_ELEMENTS per value, no bf16).
GPU = "gpu interpreter"
CONFIGS[GPU] = {"gpu_interpreter": True}
GPU_MAX_ELEMENTS = 4096
PIPELINE_OPTIONS = ("fuse_elementwise", "reassociate")
# A result passes when |got - expected| <= TOLERANCE * bound + ABSOLUTE (reference.py's bound).
TOLERANCE = 2.0
ABSOLUTE = 1e-6
SHRINK_ATTEMPTS = 150
TIMEOUT_S = 120


def configs_for(seed: int, everything: bool, gpu: bool = False) -> list[str]:
    """Every compile() configuration, or (the CI profile) the default and one other chosen by the seed;
    with `gpu`, also the GPU interpreter's."""
    others = [name for name in CONFIGS if name not in ("default", GPU)]
    chosen = ["default", *others] if everything else ["default", others[seed % len(others)]]
    return chosen + [GPU] * gpu


def runs_on(program, config: str) -> bool:
    """Whether `config` applies to `program` (the GPU interpreter: small values, no bf16)."""
    if config != GPU:
        return True
    values = [*program.inputs, *program.ops]
    return all(v.dtype != "bf16" and int(np.prod(v.shape)) <= GPU_MAX_ELEMENTS for v in values)


# ------------------------------------------------------------------------------- in the worker

def compile_with(text: str, config: dict):
    """rlx_mlir.compile with `config`; pipeline-only options go to the pipeline compile() builds."""
    options = dict(config)
    pipeline = {key: options.pop(key) for key in PIPELINE_OPTIONS if key in options}
    if not pipeline:
        return rlx_mlir.compile(text, "f", cache=False, **options)
    with mock.patch.object(jit, "LowerToLLVM", functools.partial(LowerToLLVM, **pipeline)):
        return rlx_mlir.compile(text, "f", cache=False, **options)


def execute_on_gpu_interpreter(text: str, arrays: list) -> list:
    """The outputs of `text`'s @f lowered by rlx-lower-to-gpu, its kernels run by the GPU interpreter."""
    with rlx_mlir.make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        function = next(op for op in module.body.operations if op.operation.name == "func.func")
        booleans = [str(ir.ShapedType(t).element_type) == "i1" for t in function.type.results]
        run_pipeline(module.operation, "builtin.module(rlx-lower-to-gpu)")
        machine = Interpreter(module)
        parameters = machine.functions["f"].regions[0].blocks[0].arguments
        outputs = []
        for parameter in list(parameters)[len(arrays):]:
            type_ = ir.MemRefType(parameter.type)
            dtype = numpy_dtype(type_.element_type)
            outputs.append(np.full(type_.shape, np.nan if dtype.kind == "f" else 99, dtype))  # unwritten: wrong
        machine.call("f", *[np.array(a, copy=True) for a in arrays], *outputs)
    # i1 results are stored as bytes on the GPU (rlx-bool-tensors-to-i8); the runtime reads them back as bool.
    return [out.astype(bool) if boolean else out for out, boolean in zip(outputs, booleans)]


def execute(text: str, config: dict, arrays: list) -> tuple:
    """("ok", outputs) or the kind of failure and its message."""
    if config.get("gpu_interpreter"):
        try:
            return "ok", execute_on_gpu_interpreter(text, arrays)
        except Exception as error:  # noqa: BLE001 - a pass failure is the MLIRError of run_pipeline
            if "Failure while executing pass pipeline" in str(error):
                return "compile_error", str(error)
            return "internal_error", traceback.format_exc(limit=6)
    try:
        executable = compile_with(text, config)
    except CompileError as error:
        return "compile_error", str(error)
    except Exception:  # noqa: BLE001 - anything but a CompileError is a defect to report
        return "internal_error", traceback.format_exc(limit=6)
    try:
        outputs = executable(*arrays)
    except Exception:  # noqa: BLE001
        return "internal_error", traceback.format_exc(limit=6)
    return "ok", list(outputs) if isinstance(outputs, tuple) else [outputs]


def _read_message(stream):
    header = stream.read(8)
    if len(header) < 8:
        return None
    (size,) = struct.unpack("<Q", header)
    return pickle.loads(stream.read(size))


def _write_message(stream, message) -> None:
    data = pickle.dumps(message)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def serve() -> None:
    """The worker's loop: (text, config, arrays) in on stdin, the outcome out on the original stdout."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the compiler prints goes to stderr, not into the replies
    requests = sys.stdin.buffer
    while (request := _read_message(requests)) is not None:
        _write_message(replies, execute(*request))


# ----------------------------------------------------------------------------- in the parent

class Worker:
    """A child process that compiles and runs programs; restarted after a crash or a timeout."""

    def __init__(self, command=(sys.executable, "-m", "fuzz.runner")):
        self.command = list(command)
        self.process = None
        self.stderr = None

    def _start(self):
        root = str(Path(rlx_mlir.__file__).resolve().parent.parent)
        tests = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, tests, os.environ.get("PYTHONPATH", "")]))
        self.stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.stderr, env=env)

    def run(self, text: str, config: dict, arrays: list) -> tuple:
        if self.process is None or self.process.poll() is not None:
            self._start()
        try:
            _write_message(self.process.stdin, (text, config, arrays))
            ready, _, _ = select.select([self.process.stdout], [], [], TIMEOUT_S)
            reply = _read_message(self.process.stdout) if ready else "timeout"
        except BrokenPipeError:
            reply = None
        if reply == "timeout":
            self.close()
            return "timeout", f"no answer in {TIMEOUT_S} s"
        if reply is None:
            status = self.process.wait()
            self.stderr.seek(0)
            tail = self.stderr.read().decode(errors="replace").strip().splitlines()[-6:]
            self.process = None
            reason = f"signal {-status}" if status < 0 else f"exit status {status}"
            return "crash", f"the process died ({reason}): " + "\n".join(tail)
        return reply

    def close(self):
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


# ------------------------------------------------------------------------------------- checks

@dataclasses.dataclass
class Outcome:
    kind: str  # ok, mismatch, compile_error, internal_error, crash, timeout
    config: str
    detail: str = ""
    max_error: float = 0.0

    @property
    def signature(self) -> tuple:
        """What must stay the same while shrinking: the kind, and the gist of an error message."""
        if self.kind == "mismatch":
            return (self.kind,)
        gist = re.sub(r"<[^>]*>|%\w+|\d+|\S+:\d+:\d+:", "", self.detail)
        lines = [line.strip() for line in gist.splitlines() if "error" in line.lower()] or [gist.strip()]
        return self.kind, lines[-1][:60] if self.kind == "compile_error" else lines[-1][:30]


def compare(program, values: dict, outputs: list, config: str) -> Outcome:
    """Checks each output against the reference values (reference.evaluate) within their bounds."""
    worst = None
    for index, (name, got) in enumerate(zip(program.outputs, outputs)):
        expected = values[name]
        if got.shape != expected.value.shape or got.dtype != NUMPY_TYPES[expected.dtype]:
            return Outcome("mismatch", config, f"output {index} (%{name}): got {got.dtype} {got.shape}, expected "
                           f"{expected.dtype} {expected.value.shape}", float("inf"))
        difference = np.abs(got.astype(np.float64) - expected.value.astype(np.float64))
        bad = ~(difference <= TOLERANCE * expected.err + ABSOLUTE)
        if not np.any(bad):
            continue
        where = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(difference, nan=np.inf), -1)), got.shape)
        error = float(difference[where]) if np.isfinite(difference[where]) else float("inf")
        if worst is None or error > worst.max_error:
            detail = (f"output {index} (%{name}) at {tuple(int(i) for i in where)}: got {got[where]!r}, expected "
                      f"{expected.value[where]!r} (allowed error {float(TOLERANCE * expected.err[where]):.3g}); "
                      f"{int(bad.sum())} of {bad.size} elements wrong")
            worst = Outcome("mismatch", config, detail, error)
    return worst or Outcome("ok", config)


def run_config(worker: Worker, program, config: str, values: Optional[dict] = None) -> Outcome:
    values = values if values is not None else reference.evaluate(program)
    arrays = [program.arrays[arg.name] for arg in program.inputs]
    kind, result = worker.run(program.text(), CONFIGS[config], arrays)
    if kind != "ok":
        return Outcome(kind, config, result, float("inf"))
    return compare(program, values, result, config)


# ----------------------------------------------------------------------------------- shrinking

def _replace(program, old: str, new: str, drop: str):
    """`program` with uses of `old` read from `new`, the op `drop` removed, then pruned."""
    ops = [dataclasses.replace(op, operands=tuple(new if n == old else n for n in op.operands))
           for op in program.ops if op.name != drop]
    outputs = [new if n == old else n for n in program.outputs]
    return prune(Program(program.seed, list(program.inputs), dict(program.arrays), ops, outputs))


def _with_fresh_input(program, op):
    """`program` with `op` replaced by a new argument of its type (bf16: a cast of an f32 one)."""
    name = f"a{1 + max([int(a.name[1:]) for a in program.inputs] + [-1])}"
    rng = np.random.default_rng(zlib.crc32(f"{program.seed}/{op.name}".encode()))
    dtype = "f32" if op.dtype == "bf16" else op.dtype
    inputs = [*program.inputs, Arg(name, op.shape, dtype)]
    arrays = dict(program.arrays, **{name: input_array(rng, op.shape, dtype)})
    if op.dtype == "bf16":
        ops = [Op(op.name, "cast", (name,), {}, op.shape, "bf16") if o is op else o for o in program.ops]
        return prune(Program(program.seed, inputs, arrays, ops, list(program.outputs)))
    candidate = Program(program.seed, inputs, arrays, list(program.ops), list(program.outputs))
    return _replace(candidate, op.name, name, op.name)


def _candidates(program):
    """Smaller programs, the likeliest to help first."""
    for index in range(len(program.outputs)):
        if len(program.outputs) > 1:
            outputs = program.outputs[:index] + program.outputs[index + 1:]
            yield prune(Program(program.seed, program.inputs, program.arrays, list(program.ops), outputs))
    for op in reversed(program.ops):
        for operand in op.operands:  # bypass the op: its users read an operand of its type instead
            if program.type_of(operand) == (op.shape, op.dtype):
                yield _replace(program, op.name, operand, op.name)
        if op.name in program.outputs:  # return an operand instead (drops the op)
            for operand in op.operands:
                if program.type_of(operand)[1] in BOUNDARY_TYPES and operand not in program.outputs:
                    outputs = [operand if n == op.name else n for n in program.outputs]
                    yield prune(Program(program.seed, program.inputs, program.arrays, list(program.ops), outputs))
    for op in program.ops:
        if op.kind != "constant" and not (op.kind == "cast" and all(n.startswith("a") for n in op.operands)):
            yield _with_fresh_input(program, op)


def _size(program) -> tuple:
    return len(program.ops) + sum(op.kind != "cast" for op in program.ops), len(program.outputs)


def shrink(worker: Worker, program, failure: Outcome, attempts: int = SHRINK_ATTEMPTS):
    """Greedily removes ops and outputs while the program still fails the same way."""
    tried = 0
    improved = True
    while improved and tried < attempts:
        improved = False
        for candidate in _candidates(program):
            if tried >= attempts:
                break
            if not candidate.ops or _size(candidate) >= _size(program):
                continue
            try:
                with np.errstate(all="ignore"):
                    values = reference.evaluate(candidate)
            except reference.OutOfDomain:
                continue
            tried += 1
            outcome = run_config(worker, candidate, failure.config, values)
            if outcome.kind != "ok" and outcome.signature == failure.signature:
                program, failure, improved = candidate, outcome, True
                break
    return program, failure


@dataclasses.dataclass
class Failure:
    seed: int
    original_ops: int
    program: object  # the shrunk generator.Program
    outcome: Outcome
    others: list  # [Outcome] of the other configurations

    def report(self) -> str:
        error = f" (max error {self.outcome.max_error:.3g})" if self.outcome.kind == "mismatch" else ""
        lines = [f"fuzz seed {self.seed}: {self.outcome.kind} under config '{self.outcome.config}'{error};"
                 f" shrunk from {self.original_ops} ops to {len(self.program.ops)}:", self.program.text().rstrip()]
        small = all(np.size(a) <= 16 for a in self.program.arrays.values())
        if small:
            lines += [f"  %{name} = {np.array2string(np.asarray(a), separator=', ')}"
                      for name, a in self.program.arrays.items()]
        detail = self.outcome.detail.strip().splitlines()
        lines += detail[:8] + ["..."] * (len(detail) > 8)
        lines += [f"config '{o.config}': {o.kind}" for o in self.others]
        flag = "--fuzz-gpu" if self.outcome.config == GPU else "[--fuzz-long]"
        lines.append(f"reproduce: pytest pytests/fuzz --fuzz-seed {self.seed} --fuzz-count 1 {flag}")
        return "\n".join(lines)


def check_program(worker: Worker, program, configs: list[str]) -> Optional[Failure]:
    """None when every configuration computes the reference's results; else the shrunk failure."""
    with np.errstate(all="ignore"):
        values = reference.evaluate(program)
    outcomes = [run_config(worker, program, config, values) for config in configs if runs_on(program, config)]
    failed = [o for o in outcomes if o.kind != "ok"]
    if not failed:
        return None
    shrunk, outcome = shrink(worker, program, failed[0])
    return Failure(program.seed, len(program.ops), shrunk, outcome, [o for o in outcomes if o is not failed[0]])


if __name__ == "__main__":
    serve()
