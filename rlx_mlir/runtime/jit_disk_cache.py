"""JIT executables on disk, shared across processes: what `compile()` keeps in `disk_cache.py`.

On a miss, the JIT's ExecutionEngine (built with position-independent code) dumps the object it
generated; it is linked into a shared object that exports only the entry's packed C interface
(`_mlir__mlir_ciface_<entry>`: the other functions stay local, so a function named like a symbol
of the process is still ours) and names the runtime libraries it calls into (the OpenMP runtime of
threaded code) as dependencies by absolute path; it is stored with a JSON record of the signature
and the arena (and, compiled with `prepack_params`, of the parameter panels it takes and the exported
companion functions that pack them).  A later `compile()` of the same module with the same options, by this process or
another, loads that shared object with ctypes and imports no MLIR: no parsing, no passes, no LLVM.

The entry's key is the module text's SHA-256, every option of the compile, the tools' versions
(`disk_cache.tool_versions`) and this machine's CPU (the JIT generates code for the host's
instructions).  An entry that does not load (a truncated or altered shared object, a malformed
record, a missing runtime library) is discarded and the module compiled again, never a crash: the
entry's digests (`disk_cache.intact`) are checked before the shared object is mapped.  Storing
needs a C compiler to link (`$CC`, else cc or gcc); without one, or with the cache off
(`RLX_CACHE_DIR=off`), nothing is stored.
"""

from __future__ import annotations

import ctypes
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from . import disk_cache
from .executable import PACKED_PREFIX, Executable
from .specs import PackedParam, Signature

KIND = "jit-shared-object"
LIBRARY = "jit.so"
RECORD = "record.json"
FORMAT = 2  # the signature's inputs carry their source positions


def entry_name(text: str, settings: Mapping) -> Optional[str]:
    """The cache entry of compiling `text` with `settings`, or None when the cache is off."""
    if disk_cache.cache_dir() is None:
        return None
    return disk_cache.key(KIND, text, {**settings, "host_cpu": disk_cache.host_cpu()}, None)


def load(name: str, llvm_ir: Callable[[], str]) -> Optional[Executable]:
    """The executable of entry `name`, or None when there is none or it does not load (then it is
    discarded, so that the compile that follows stores a good one)."""
    entry = disk_cache.lookup(name)
    if entry is None:
        return None
    try:
        record = json.loads((entry / RECORD).read_text())
        if record.get("format") != FORMAT:
            raise ValueError("another record format")
        library = entry / LIBRARY
        if not disk_cache.intact(entry):
            raise ValueError("the entry is damaged")  # checked before the shared object is mapped
        signature = Signature.from_json(record["signature"])
        arena = record["arena"]
        arena = None if arena is None else (int(arena[0]), int(arena[1]))
        packed = [PackedParam.from_json(p) for p in record.get("packed_params", [])]
        handle = ctypes.CDLL(str(library))  # and the runtime libraries it needs
        address, *pack_addresses = [ctypes.cast(getattr(handle, PACKED_PREFIX + function), ctypes.c_void_p).value
                                    for function in [signature.entry, *[p.function for p in packed]]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        disk_cache.discard(name)
        return None
    return Executable(address, signature, arena, keep_alive=handle, llvm_ir=llvm_ir, packed_params=packed,
                      pack_addresses=pack_addresses)


def store(name: str, dump_object: Callable[[str], None], signature: Signature, arena: Optional[tuple[int, int]],
          runtime_libraries: Sequence[str], packed: Sequence[PackedParam] = ()) -> None:
    """Stores entry `name`: the object `dump_object(path)` writes, linked into a shared object, and
    its record. Quietly does nothing when the cache cannot be written or nothing can link."""
    compiler = _c_compiler()
    if compiler is None:
        return
    with tempfile.TemporaryDirectory(prefix="rlx-jit-") as scratch:
        scratch = Path(scratch)
        try:
            dump_object(str(scratch / "jit.o"))
            exported = "".join(f"{PACKED_PREFIX}{function}; "
                               for function in [signature.entry, *[p.function for p in packed]])
            (scratch / "exports.map").write_text(f"{{\n  global: {exported}\n  local: *;\n}};\n")
            # The runtime libraries the code calls into become its dependencies (found by their absolute
            # directories); --as-needed drops the others (MLIR's runner utilities load all of LLVM).
            directories = sorted({str(Path(library).parent) for library in runtime_libraries})
            done = subprocess.run([*compiler, "-shared", "-o", str(scratch / LIBRARY), str(scratch / "jit.o"),
                                   f"-Wl,--version-script={scratch / 'exports.map'}", "-Wl,--as-needed",
                                   *runtime_libraries, "-lm", *[f"-Wl,-rpath,{d}" for d in directories]],
                                  capture_output=True)
        except (OSError, RuntimeError):
            return
        if done.returncode != 0:
            return
        record = {"format": FORMAT, "signature": signature.to_json(), "arena": list(arena) if arena else None}
        if packed:
            record["packed_params"] = [p.to_json() for p in packed]
        disk_cache.store(name, {LIBRARY: scratch / LIBRARY, RECORD: json.dumps(record)})


def _c_compiler() -> Optional[list[str]]:
    """`$CC` (which may carry flags), else cc or gcc; None when there is none."""
    named = os.environ.get("CC", "").strip()
    if named:
        try:
            command = shlex.split(named)
        except ValueError:
            return None
        return command if command and shutil.which(command[0]) else None
    found = shutil.which("cc") or shutil.which("gcc")
    return [found] if found else None
