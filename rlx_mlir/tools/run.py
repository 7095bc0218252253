"""rlx-run: JIT-compile a function of an MLIR file and run it on .npy or inline inputs.

    rlx-run mlp.mlir --entry mlp --input x=x.npy --input w=w.npy --input b=b.npy --output out.npy
    rlx-run mlp.mlir --input=4x8xf32=1.0 --input=@w.npy --input b=16xf32=0 --repeat 20
    rlx-run mlp.mlir --random-inputs --seed 0

Inputs go by position (`--input x.npy`, in argument order) or by name
(`--input x=x.npy`) where the function names its arguments with `rlx.name`. A value is a .npy
file (`FILE.npy` or `@FILE.npy`) or, as in iree-run-module, a typed literal `SHAPExTYPE=VALUES`
(`4x8xf32=1.0` fills every element, `2x2xi32=1,2,3,4` or `"2x2xi32=1 2 3 4"` gives each;
`f32=3` is a scalar). The symbolic sizes of a dynamic function come from its inputs' shapes
(or `--bind`).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import sys
import time
from typing import Optional

import numpy as np
from numpy.lib import format as npy_format

from ..ir import dtypes
from ..ir.diagnostics import CompileError
from ..passmanager.base import PassOptionError
from ..runtime.abi import ArgumentError
from ..runtime.compiler import compile as jit_compile
from ..runtime.signature import TensorSpec, numpy_dtype_named
from ..runtime.specialize import SpecializingExecutable
from ..targets import TARGETS
from ..transforms.mir.bind_dims import parse_binding
from .cli import ArgumentParser, ToolError, guarded, read_source


def _parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="rlx-run",
        description="JIT-compile (MLIR ExecutionEngine) and run a function of an RLX MLIR file.",
    )
    parser.add_argument("input_file", metavar="FILE", help="MLIR file, '-' for standard input")
    parser.add_argument("--entry", help="function to run (default: the only public function)")
    parser.add_argument(
        "--input", action="append", default=[], metavar="[NAME=]FILE.npy",
        help="an argument, by position or by name (NAME=...), from a .npy file (FILE.npy or @FILE.npy) or a "
             "typed literal SHAPExTYPE=VALUES as in iree-run-module (4x8xf32=1.0 fills every element, "
             "2x2xi32=1,2,3,4 gives each); repeat per argument",
    )
    parser.add_argument("--random-inputs", action="store_true", help="generate the arguments not given with --input")
    parser.add_argument("--seed", type=_non_negative, default=0, help="seed for --random-inputs (default 0)")
    parser.add_argument(
        "--bind", default=None, metavar="SYMBOL=SIZE,...",
        help="sizes of the symbolic dimensions of a dynamic function, e.g. BATCH=1,SEQ=7 "
             "(default: read off the --input shapes)",
    )
    parser.add_argument(
        "--output", action="append", default=[], metavar="FILE.npy",
        help="write a result to a .npy file; repeat per result, in result order",
    )
    parser.add_argument("--print", dest="print_results", action="store_true", help="print results even with --output")
    parser.add_argument("--repeat", type=_positive, default=None, metavar="N",
                        help="run N times and print the time of a call, min and median (to stderr; the last "
                             "results are kept)")
    parser.add_argument("--threads", type=_positive, default=None, metavar="N",
                        help="OpenMP threads of the compiled code (default: RLX_NUM_THREADS, else every core)")
    parser.add_argument("--target", default="cpu", choices=list(TARGETS),
                        help="where the code runs: cpu (default) or cuda (an NVIDIA GPU)")
    parser.add_argument(
        "--isolate", action="store_true",
        help="generate code in a child process first, so an LLVM fatal error is reported as an error "
             "(costs about one more compile)",
    )
    return parser


def _non_negative(text: str) -> int:
    """argparse type of --seed: numpy seeds are non-negative integers."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {value}")
    return value


def _positive(text: str) -> int:
    """argparse type of --repeat."""
    value = _non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def main(argv: Optional[list[str]] = None) -> int:
    return guarded("rlx-run", _main, sys.argv[1:] if argv is None else argv)


def _main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    text, filename = read_source(args.input_file)
    options = {"threads": args.threads} if args.threads is not None else {}
    try:
        executable = jit_compile(text, entry=args.entry, filename=filename, isolate=args.isolate,
                                 target=args.target, **options)
    except CompileError as error:
        print(error.render_diagnostics() or f"{filename}: error: {error.summary}", file=sys.stderr)
        return 1
    except ValueError as error:
        raise ToolError(_explain_compile_error(str(error), text, filename)) from None
    dynamic = isinstance(executable, SpecializingExecutable)
    names = executable.input_names if dynamic else tuple(s.name for s in executable.signature.inputs)
    named = any(not re.fullmatch(r"arg\d+", n) for n in names) if dynamic else executable.signature.named_inputs
    given = _given_inputs(args.input, names, named)
    executable = _specialised(executable, args.bind, given)
    arguments = _gather_inputs(args, executable.signature.inputs, given)
    outputs = executable.signature.outputs
    if args.output and len(args.output) != len(outputs):
        raise ToolError(f"@{executable.signature.entry} has {len(outputs)} results but {len(args.output)} --output files were given")
    for path in args.output:
        if os.path.isdir(path):
            raise ToolError(f"--output {path}: is a directory; give the path of a .npy file")
    times = []
    try:
        for _ in range(args.repeat or 1):
            started = time.perf_counter()
            results = executable(*arguments)
            times.append(time.perf_counter() - started)
    except ArgumentError as error:
        position = error.spec.position
        if position is None:
            raise ToolError(str(error)) from None
        print(f"{position.filename}:{position.line}:{position.column}: error: {error}", file=sys.stderr)
        return 1
    results = results if isinstance(results, tuple) else (results,)
    for path, value in zip(args.output, results):
        _save(path, value)
    if args.print_results or not args.output:
        with np.printoptions(threshold=200, edgeitems=4):
            for spec, value in zip(outputs, results):
                print(f"{spec.name}: {spec.mlir_type}\n{value}")
    if args.repeat is not None:
        print(f"@{executable.signature.entry}: {len(times)} runs, min {min(times) * 1e3:.3f} ms, "
              f"median {statistics.median(times) * 1e3:.3f} ms", file=sys.stderr)
    return 0


def _explain_compile_error(message: str, text: str, filename: str) -> str:
    """`message`, or what to do instead where the module is past what rlx-run compiles (LLVM dialect)."""
    if re.search(r"^\s*llvm\.func\b", text, re.M) and not re.search(r"^\s*func\.func\b", text, re.M):
        return (f"{filename} holds LLVM-dialect IR (llvm.func): rlx-run compiles RLX (rlx_hir, rlx) or linalg "
                "input; give it the module from before rlx-lower-to-llvm (mlir-runner runs LLVM-dialect IR)")
    return message


def _specialised(executable, bind: Optional[str], given: dict[int, np.ndarray]):
    """The static executable of a dynamic function, its symbols' sizes read off the given inputs'
    shapes and `--bind`; `executable` itself when static."""
    if not isinstance(executable, SpecializingExecutable):
        if bind:
            raise ToolError(f"--bind: @{executable.signature.entry} has no symbolic dimensions")
        return executable
    arrays = [given.get(i) for i in range(len(executable.input_names))]
    try:
        binding = executable.binding_from_inputs(arrays, partial=True)
    except ValueError as error:
        raise ToolError(f"--input: {error}") from None
    if bind:
        try:
            pairs = _pairs(bind)
        except (PassOptionError, ValueError) as error:
            raise ToolError(f"--bind: {error}") from None
        for symbol, size in pairs:
            if symbol in binding and binding[symbol] != size:
                raise ToolError(f"--bind: {symbol}={size}, but the inputs give {symbol}={binding[symbol]}")
            binding[symbol] = size
    unknown = [s for s in executable.symbols if s not in binding]
    if unknown:
        example = ",".join(f"{s}=..." for s in unknown)
        raise ToolError(f"@{executable.entry} has symbolic dimensions ({', '.join(executable.symbols)}): "
                        f"give their sizes with --bind {example}, or --input arguments that determine them")
    try:
        return executable.specialize(binding)
    except (PassOptionError, ValueError) as error:
        raise ToolError(f"--bind: {error}") from None


def _pairs(text: str) -> tuple:
    """`BATCH=1,SEQ=7` as sorted (symbol, size) pairs, parsed as rlx-bind-dims options are."""
    key, _, value = text.partition("=")
    return parse_binding({key: value})


_TYPED_LITERAL = re.compile(r"^(?:\d+x)*([a-z]+\d+)$")


def _given_inputs(items: list[str], names: tuple[str, ...], named: bool) -> dict[int, np.ndarray]:
    """Argument index -> array of each `--input`: `[NAME=]VALUE`, VALUE a .npy file or a typed literal."""
    values: dict[int, np.ndarray] = {}
    position = 0
    for item in items:
        head, sep, rest = item.partition("=")
        if sep and head in names:
            index, value = names.index(head), rest
        elif sep and not item.startswith("@") and not _is_type(head):
            hint = "" if named else " (the function does not name its arguments; give inputs by position)"
            raise ToolError(f"--input {item}: no argument named '{head}' (arguments: {', '.join(names)}){hint}")
        else:
            while position in values:
                position += 1
            if position >= len(names):
                raise ToolError(f"--input {item}: the function takes only {len(names)} arguments")
            index, value = position, item
        if index in values:
            raise ToolError(f"argument '{names[index]}' given twice")
        values[index] = _value(value, names[index], item)
    return values


def _is_type(text: str) -> bool:
    """Whether `text` is the SHAPExTYPE of a typed literal (`4x8xf32`, `f32`)."""
    match = _TYPED_LITERAL.match(text)
    return bool(match) and dtypes.element_type(match.group(1)) is not None


def _value(text: str, name: str, item: str) -> np.ndarray:
    """The array a VALUE stands for: `@FILE`, `SHAPExTYPE=VALUES` or a .npy file's path."""
    if text.startswith("@"):
        return _load(text[1:], name)
    head, sep, values = text.partition("=")
    if sep and _is_type(head):
        return _literal(head, values, item)
    return _load(text, name)


def _literal(type_text: str, values: str, item: str) -> np.ndarray:
    """`SHAPExTYPE=VALUES` as an array: one value fills it, else exactly one value per element."""
    *sizes, element = type_text.split("x")
    shape = tuple(int(size) for size in sizes)
    entry = dtypes.element_type(element)
    try:
        numpy_type = numpy_dtype_named(entry.name, f"--input {item}")
    except (CompileError, ValueError) as error:
        raise ToolError(str(error)) from None
    tokens = [t for t in re.split(r"[\s,\[\]]+", values) if t]
    if not tokens:
        raise ToolError(f"--input {item}: no values after '='")
    try:
        if entry.name == "i1":
            data = np.array([{"true": 1, "false": 0}.get(t.lower(), None) if not t.lstrip("-").isdigit() else int(t)
                             for t in tokens], dtype=np.int64) != 0
        else:
            parsed = [float(t) if entry.is_float else int(t) for t in tokens]
            if not entry.is_float:  # numpy would wrap 300 to 44 as i8, or fail on 2**64 as an internal error
                bounds = np.iinfo(numpy_type)
                outside = next((v for v in parsed if not bounds.min <= v <= bounds.max), None)
                if outside is not None:
                    raise ToolError(f"--input {item}: {outside} is out of range for {element} "
                                    f"({bounds.min} to {bounds.max})")
            data = np.array(parsed).astype(numpy_type)
    except (ValueError, TypeError):
        raise ToolError(f"--input {item}: cannot read the values as {element}") from None
    count = math.prod(shape)
    if len(tokens) == 1:
        return np.full(shape, data[0], dtype=data.dtype)
    if len(tokens) != count:
        raise ToolError(f"--input {item}: {type_text} has {count} elements but {len(tokens)} values were given "
                        "(give one value to fill them all)")
    return data.reshape(shape)


def _gather_inputs(args, specs: tuple[TensorSpec, ...], given: dict[int, np.ndarray]) -> list[np.ndarray]:
    values: list = [given.get(i) for i in range(len(specs))]
    missing = [s for s, v in zip(specs, values) if v is None]
    if missing and not args.random_inputs:
        listed = ", ".join(f"{s.name}: {s.mlir_type}" for s in missing)
        raise ToolError(f"missing inputs ({listed}); pass --input for each or use --random-inputs")
    _check_random_size(missing)
    rng = np.random.default_rng(args.seed)
    return [v if v is not None else _random(s, rng) for s, v in zip(specs, values)]


def _check_random_size(specs: list[TensorSpec]) -> None:
    """Refuses to generate arguments larger than half of this machine's memory (numpy would swap or fail late)."""
    sizes = {s.name: math.prod(s.shape) * max(s.dtype.itemsize, 8) for s in specs}  # drawn as 64-bit, then cast
    total = sum(sizes.values())
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return
    if total > memory // 2:
        largest = max(sizes, key=sizes.get)
        raise ToolError(f"--random-inputs: generating the arguments takes {total} bytes (largest: '{largest}'), "
                        f"more than half of this machine's memory ({memory} bytes)")


def _save(path: str, value: np.ndarray) -> None:
    """Writes `value` in .npy format to exactly `path` (np.save given a name would append `.npy`)."""
    try:
        with open(path, "wb") as handle:
            np.save(handle, value)
    except OSError as error:
        raise ToolError(f"could not write '{path}': {error.strerror}") from None


def _load(path: str, name: str) -> np.ndarray:
    """The array of a .npy file, in native byte order; its header is checked against the file's size first."""
    try:
        with open(path, "rb") as handle:
            _check_data_size(handle, path, name)
            handle.seek(0)
            array = np.load(handle, allow_pickle=False)
    except FileNotFoundError:
        raise ToolError(f"input '{name}': no such file '{path}'") from None
    except (OSError, ValueError) as error:
        raise ToolError(f"input '{name}': cannot read '{path}' as a .npy array ({error})") from None
    if not array.dtype.isnative:  # e.g. big-endian float32 ('>f4'): the same values, in this machine's order
        array = array.astype(array.dtype.newbyteorder("="))
    return array


def _check_data_size(handle, path: str, name: str) -> None:
    """Refuses a .npy file whose header claims more data than the file holds, before allocating it."""
    version = npy_format.read_magic(handle)
    # Versions 2.0 and 3.0 share the header layout (a 4-byte length); 3.0 only allows UTF-8 names.
    read_header = npy_format.read_array_header_1_0 if version == (1, 0) else npy_format.read_array_header_2_0
    shape, _fortran_order, dtype = read_header(handle)
    if dtype.hasobject:
        return  # np.load refuses it (allow_pickle=False)
    claimed = math.prod(shape) * dtype.itemsize
    available = os.fstat(handle.fileno()).st_size - handle.tell()
    if claimed > available:
        raise ToolError(
            f"input '{name}': '{path}' is truncated or corrupt: its header claims {dtype.name} "
            f"{list(shape)} ({claimed} bytes) but the file holds {available} bytes of data"
        )


def _random(spec: TensorSpec, rng: np.random.Generator) -> np.ndarray:
    if spec.dtype == np.bool_:
        return rng.integers(0, 2, spec.shape).astype(np.bool_)
    if np.issubdtype(spec.dtype, np.integer):
        return rng.integers(0, 10, spec.shape).astype(spec.dtype)
    return rng.standard_normal(spec.shape).astype(spec.dtype)


if __name__ == "__main__":
    sys.exit(main())
