"""An on-disk cache of compiled code, shared by every process of the machine (and user).

`rlx-compile` / `aot.export` keep the object file each compile produced, its function records and,
for a shared library, the library linked from it, so compiling the same module with the same
options again only copies files (or links, after an object-only export).  An entry is a
directory named by the SHA-256 of its key: the module text, every option that changes the
generated code, and the versions of the tools (this package's own sources, the MLIR bindings and
LLVM's `llc`: see `tool_versions`), so a changed compiler never returns stale code.

The directory is `RLX_CACHE_DIR`, else `$XDG_CACHE_HOME/rlx-mlir`, else `~/.cache/rlx-mlir`;
`RLX_CACHE_DIR=off` (or an empty value) turns the cache off.  Writers never collide: an entry is
written into a temporary directory beside it and renamed into place in one step (a second writer
of the same entry finds it there and drops its own copy); readers see whole entries or none.
A cache that cannot be written (read-only, full disk) is skipped, never an error.  Each entry
records the SHA-256 of its files (`intact`): an entry damaged on disk is discarded and compiled
again, never used.

`compile()` keeps its executables here too (`jit_disk_cache.py`); a hit on either path computes its
key without importing MLIR or running a tool.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import tempfile
from pathlib import Path
from typing import Mapping, Optional, Union

ENV = "RLX_CACHE_DIR"
DIGESTS = "digests.json"  # in each entry: the SHA-256 of each of its files
_OFF = ("", "off", "0", "none")
PACKAGE = Path(__file__).resolve().parents[1]  # rlx_mlir/


def cache_dir() -> Optional[Path]:
    """Where entries live, or None when the cache is off."""
    named = os.environ.get(ENV)
    if named is not None:
        return None if named.strip().lower() in _OFF else Path(named).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rlx-mlir"


@functools.lru_cache(maxsize=None)
def tool_versions(llc: Optional[str]) -> str:
    """A digest of everything besides the module and options that decides the generated code:
    this package's sources, the MLIR bindings' libraries (which hold the JIT's LLVM) and the `llc`
    binary (path, size, modification time).  Nothing is imported or run: a cache hit needs no MLIR."""
    digest = hashlib.sha256()
    # This package's compiler: every source file's path, size and modification time (as Python's
    # own bytecode cache checks its sources; reading them all would cost a warm start 20 ms).
    # Paths are taken relative by slicing (os.path.relpath would cost a warm start 5 ms).
    root = str(PACKAGE)
    sources = []
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = [name for name in subdirectories if name != "__pycache__"]
        sources += [os.path.join(directory, name) for name in files if name.endswith((".py", ".c", ".h"))]
    for path in sorted(sources):
        stat = os.stat(path)
        digest.update(f"{path[len(root) + 1:]}:{stat.st_size}:{stat.st_mtime_ns}\0".encode())
    bindings = _package_dir("mlir")  # their shared libraries' names, sizes and modification times
    if bindings is not None:
        for library in sorted((bindings / "_mlir_libs").glob("*.so*")):
            stat = library.stat()
            digest.update(f"{library.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    if llc:  # the binary itself (running `llc --version` would cost a warm start 30 ms)
        try:
            stat = os.stat(llc)
            digest.update(f"{os.path.realpath(llc)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
        except OSError:
            pass
    return digest.hexdigest()


def _package_dir(name: str) -> Optional[Path]:
    """Where the installed package `name` lives, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


@functools.lru_cache(maxsize=None)
def host_cpu() -> str:
    """This machine's CPU as the JIT sees it (model and instruction-set flags): JIT code is
    generated for the host's instructions, so a cache shared across machines keeps one per CPU."""
    try:
        with open("/proc/cpuinfo") as info:
            fields = {}
            for line in info:
                if not line.strip():
                    break  # the first processor's block
                name, _, value = line.partition(":")
                fields[name.strip()] = value.strip()
        return f"{fields.get('model name') or fields.get('CPU part', '')}|{fields.get('flags') or fields.get('Features', '')}"
    except OSError:
        return f"{platform.machine()}|{platform.processor()}"


def key(kind: str, text: str, options: Mapping, llc: Optional[str]) -> str:
    """The entry name for compiling `text` as `kind` with `options` (JSON-serialisable values)."""
    record = {"kind": kind, "module": hashlib.sha256(text.encode()).hexdigest(), "options": options,
              "tools": tool_versions(llc)}
    return hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()


def lookup(name: str) -> Optional[Path]:
    """The directory of entry `name`, when the cache is on and holds it."""
    root = cache_dir()
    if root is None:
        return None
    entry = root / name[:2] / name
    return entry if (entry / "complete").is_file() else None


def intact(entry: Path) -> bool:
    """Whether every file of an entry still has the SHA-256 it was stored with (a file truncated or
    altered on disk is never handed to a linker or loaded)."""
    try:
        digests = json.loads((entry / DIGESTS).read_text())
        return all(hashlib.sha256((entry / name).read_bytes()).hexdigest() == digest
                   for name, digest in digests.items())
    except (OSError, ValueError, TypeError, AttributeError):
        return False


def store(name: str, files: Mapping[str, Union[bytes, str, Path]]) -> Optional[Path]:
    """Writes entry `name` (file name -> bytes, text, or a file to copy) atomically; None where the
    cache is off or cannot be written."""
    root = cache_dir()
    if root is None:
        return None
    final = root / name[:2] / name
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{name[:16]}-", dir=final.parent))
        try:
            digests = {}
            for file_name, content in files.items():
                if isinstance(content, Path):
                    shutil.copyfile(content, scratch / file_name)
                else:
                    (scratch / file_name).write_bytes(content.encode() if isinstance(content, str) else content)
                digests[file_name] = hashlib.sha256((scratch / file_name).read_bytes()).hexdigest()
            (scratch / DIGESTS).write_text(json.dumps(digests))
            (scratch / "complete").write_bytes(b"")
            os.rename(scratch, final)  # atomic; fails when another writer got there first
        except OSError:
            shutil.rmtree(scratch, ignore_errors=True)
            return final if (final / "complete").is_file() else None
        return final
    except OSError:
        return None


def discard(name: str) -> None:
    """Removes entry `name` (one that does not load): renamed aside in one step, then deleted."""
    root = cache_dir()
    if root is None:
        return
    entry = root / name[:2] / name
    try:
        aside = Path(tempfile.mkdtemp(prefix=f".discarded-{name[:16]}-", dir=entry.parent))
        os.rename(entry, aside / name)
    except OSError:
        return  # gone already, or another process discarded it
    shutil.rmtree(aside, ignore_errors=True)
