"""An in-process cache of compiled executables.

Compiling the same module again with the same options returns the executable
compiled the first time. The key is a SHA-256 of the module text together with
every option that changes the generated code (entry, target, optimisation
level, plan, thread count, matmul kernels). Executables are safe to share:
each call runs in a call context of its own (its own arena) and outputs are fresh arrays.
CPU executables and ahead-of-time compiles are also cached on disk, across processes
(`jit_disk_cache.py`, `disk_cache.py`).
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import threading
from typing import Callable, Hashable


@dataclasses.dataclass(frozen=True)
class CacheInfo:
    hits: int
    misses: int
    size: int
    capacity: int


class CompileCache:
    """A bounded LRU map from (module fingerprint, options) to executables."""

    def __init__(self, capacity: int = 64):
        self.capacity = capacity
        self._entries: "collections.OrderedDict[tuple, object]" = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def fingerprint(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, text: str, options: tuple[Hashable, ...]):
        """The executable compiled from `text` with `options` (counted as a hit), or None."""
        key = (self.fingerprint(text), options)
        with self._lock:
            if key in self._entries:
                self.hits += 1
                self._entries.move_to_end(key)
                return self._entries[key]
        return None

    def get_or_compile(self, text: str, options: tuple[Hashable, ...], build: Callable[[], object]):
        key = (self.fingerprint(text), options)
        with self._lock:
            if key in self._entries:
                self.hits += 1
                self._entries.move_to_end(key)
                return self._entries[key]
        executable = build()  # outside the lock: compiling takes a while and may raise
        with self._lock:
            self.misses += 1
            self._entries[key] = executable
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return executable

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self.hits, self.misses, len(self._entries), self.capacity)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0


COMPILE_CACHE = CompileCache()
