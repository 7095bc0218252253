"""`compile(..., isolate=True)`: compile in a child process first, so a crash in LLVM is a CompileError.

LLVM reports some internal failures by aborting the process (`LLVM ERROR: ...`,
an UNREACHABLE, an assertion) and some bugs crash it; in-process, that ends
the user's Python. With `isolate`, `compile_in_child` runs the same
`compile()` (parse, verify, every pass, and the ExecutionEngine, where LLVM
generates code) in a child Python (`python -m rlx_mlir.runtime.isolated_child`,
the module text and options on stdin) and waits for it:

- the child compiled the module: the caller compiles it in-process as usual,
  now known not to crash;
- the child raised a Python error (a CompileError, a bad entry): the caller's
  own compile raises the same error, with its diagnostics;
- the child died (a signal, or LLVM's exit code after a fatal error): CompileError
  with the child's stderr (LLVM's message), and this process carries on.

The cost is one more compile plus starting Python (about 1.5 s), on
compiles that miss the compile cache only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from ..ir.diagnostics import CompileError

PYTHON_ERROR_EXIT = 3  # the child raised an ordinary exception: the caller's own compile reports it
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding `rlx_mlir`
_STDERR_LINES = 40  # of the child's stderr, kept in the CompileError


def child_command() -> list[str]:
    """The command that runs one isolated compile (stdin: the JSON request)."""
    return [sys.executable, "-m", "rlx_mlir.runtime.isolated_child"]


def compile_in_child(text: str, settings: dict) -> None:
    """Compiles `text` with `compile(text, **settings)` in a child process; CompileError if the child dies."""
    environment = dict(os.environ)
    # The child imports this very rlx_mlir, wherever the caller's sys.path found it.
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_ROOT, environment.get("PYTHONPATH")]))
    request = json.dumps({"text": text, "settings": settings})
    try:
        done = subprocess.run(child_command(), input=request, capture_output=True, text=True, env=environment)
    except OSError as error:
        raise CompileError(f"isolate=True: could not start the compiler process: {error}") from None
    if done.returncode in (0, PYTHON_ERROR_EXIT):
        return
    raise CompileError(f"compiling the module crashed the compiler process ({_describe_exit(done.returncode)}); "
                       f"this process is unaffected. Its error output:\n{_message(done.stderr)}")


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _message(stderr: str) -> str:
    """The child's stderr up to LLVM's crash report (its stack dump says nothing to the user)."""
    lines = stderr.rstrip().splitlines()
    for marker in ("PLEASE submit a bug report", "Stack dump:"):
        cut = next((i for i, line in enumerate(lines) if line.startswith(marker)), None)
        if cut:
            lines = lines[:cut]
    lines = lines[-_STDERR_LINES:]
    return "\n".join(lines) if lines else "(no error output)"
