"""rlx-run: JIT-compile a function of an MLIR file and run it on .npy inputs.

    rlx-run mlp.mlir --entry mlp --input x=x.npy --input w=w.npy --input b=b.npy --output out.npy
    rlx-run mlp.mlir --random-inputs --seed 0

Inputs go by position (`--input x.npy`, in argument order) or by name
(`--input x=x.npy`) where the function names its arguments with `rlx.name`.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Optional

import numpy as np
from numpy.lib import format as npy_format

from ..ir.diagnostics import CompileError
from ..passmanager.base import PassOptionError
from ..runtime.abi import ArgumentError
from ..runtime.jit import compile as jit_compile
from ..runtime.signature import TensorSpec
from ..runtime.specialize import SpecializingExecutable
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
        help="an argument from a .npy file, by position or by name; repeat per argument",
    )
    parser.add_argument("--random-inputs", action="store_true", help="generate the arguments not given with --input")
    parser.add_argument("--seed", type=_non_negative, default=0, help="seed for --random-inputs (default 0)")
    parser.add_argument(
        "--bind", default=None, metavar="SYMBOL=SIZE,...",
        help="sizes of the symbolic dimensions of a dynamic function, e.g. BATCH=1,SEQ=7",
    )
    parser.add_argument(
        "--output", action="append", default=[], metavar="FILE.npy",
        help="write a result to a .npy file; repeat per result, in result order",
    )
    parser.add_argument("--print", dest="print_results", action="store_true", help="print results even with --output")
    parser.add_argument("--repeat", type=_positive, default=1, metavar="N", help="run N times (the last results are kept)")
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
    try:
        executable = jit_compile(text, entry=args.entry, filename=filename, isolate=args.isolate)
    except CompileError as error:
        print(error.render_diagnostics() or f"{filename}: error: {error.summary}", file=sys.stderr)
        return 1
    except ValueError as error:
        raise ToolError(str(error)) from None
    executable = _specialised(executable, args.bind)
    specs = executable.signature.inputs
    arguments = _gather_inputs(args, specs, executable.signature.named_inputs)
    outputs = executable.signature.outputs
    if args.output and len(args.output) != len(outputs):
        raise ToolError(f"@{executable.signature.entry} has {len(outputs)} results but {len(args.output)} --output files were given")
    if args.repeat < 1:
        raise ToolError("--repeat must be at least 1")
    for path in args.output:
        if os.path.isdir(path):
            raise ToolError(f"--output {path}: is a directory; give the path of a .npy file")
    try:
        for _ in range(args.repeat):
            results = executable(*arguments)
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
    return 0


def _specialised(executable, bind: Optional[str]):
    """The static executable of a dynamic function for `--bind`; `executable` itself when static."""
    if not isinstance(executable, SpecializingExecutable):
        if bind:
            raise ToolError(f"--bind: @{executable.signature.entry} has no symbolic dimensions")
        return executable
    if not bind:
        example = ",".join(f"{s}=..." for s in executable.symbols)
        raise ToolError(f"@{executable.entry} has symbolic dimensions ({', '.join(executable.symbols)}): "
                        f"give their sizes with --bind {example}")
    try:
        return executable.specialize(dict(_pairs(bind)))
    except (PassOptionError, ValueError) as error:
        raise ToolError(f"--bind: {error}") from None


def _pairs(text: str) -> tuple:
    """`BATCH=1,SEQ=7` as sorted (symbol, size) pairs, parsed as rlx-bind-dims options are."""
    key, _, value = text.partition("=")
    return parse_binding({key: value})


def _gather_inputs(args, specs: tuple[TensorSpec, ...], named: bool) -> list[np.ndarray]:
    values: list = [None] * len(specs)
    position = 0
    for item in args.input:
        name, sep, path = item.partition("=")
        if sep:
            index = next((i for i, s in enumerate(specs) if s.name == name), None)
            if index is None:
                known = ", ".join(s.name for s in specs)
                hint = "" if named else " (the function does not name its arguments; give inputs by position)"
                raise ToolError(f"--input {item}: no argument named '{name}' (arguments: {known}){hint}")
        else:
            path = item
            while position < len(specs) and values[position] is not None:
                position += 1
            index = position
            if index >= len(specs):
                raise ToolError(f"--input {item}: the function takes only {len(specs)} arguments")
        if values[index] is not None:
            raise ToolError(f"argument '{specs[index].name}' given twice")
        values[index] = _load(path, specs[index])
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


def _load(path: str, spec: TensorSpec) -> np.ndarray:
    """The array of a .npy file, in native byte order; its header is checked against the file's size first."""
    try:
        with open(path, "rb") as handle:
            _check_data_size(handle, path, spec)
            handle.seek(0)
            array = np.load(handle, allow_pickle=False)
    except FileNotFoundError:
        raise ToolError(f"input '{spec.name}': no such file '{path}'") from None
    except (OSError, ValueError) as error:
        raise ToolError(f"input '{spec.name}': cannot read '{path}' as a .npy array ({error})") from None
    if not array.dtype.isnative:  # e.g. big-endian float32 ('>f4'): the same values, in this machine's order
        array = array.astype(array.dtype.newbyteorder("="))
    return array


def _check_data_size(handle, path: str, spec: TensorSpec) -> None:
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
            f"input '{spec.name}': '{path}' is truncated or corrupt: its header claims {dtype.name} "
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
