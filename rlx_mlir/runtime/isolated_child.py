"""The child process of `compile(..., isolate=True)` (see `isolation`): one compile, its outcome as an exit code.

Run as `python -m rlx_mlir.runtime.isolated_child` with a JSON request `{"text", "settings"}` on
stdin.  Exit 0: compiled; `PYTHON_ERROR_EXIT`: an ordinary Python error (printed to stderr); any
other status or a signal: the compiler crashed.
"""

from __future__ import annotations

import json
import sys

from .compiler import compile
from .isolation import PYTHON_ERROR_EXIT


def main() -> int:
    try:  # a crash here is expected now and then: leave no core file behind
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass
    request = json.load(sys.stdin)
    try:
        compile(request["text"], **request["settings"], cache=False, isolate=False)
    except Exception as error:  # an ordinary error: the caller's compile raises it again, with diagnostics
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        return PYTHON_ERROR_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main())
