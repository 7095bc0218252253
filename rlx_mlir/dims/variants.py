"""Model variants: one object names a shape bucket, its symbol binding and its cache key (RLX's `ModelVariant`).

    ModelVariant.prefill(batch=1, seq=128).dim_binding()       # {"BATCH": 1, "SEQ": 128}
    ModelVariant.decode(batch=1, past_seq=64, new_tokens=1).dim_binding()
                                                               # {"BATCH": 1, "PAST_SEQ": 64, "SEQ": 1}
    ModelVariant.prefill(2, 16).with_extra("EXPERTS", 8).cache_key()

`dim_binding()` follows RLX: a decode variant binds `BATCH`, `PAST_SEQ` and
`SEQ` (the new tokens); every other phase binds `BATCH` and `SEQ`, plus
`ROWS = BATCH * SEQ` when `BATCH > 1` (RLX's `DimBinding::batch_seq`); extra
symbols come last and override.  Bind a module with the symbols it mentions:
`bind_dims` and compiled dynamic modules ignore nothing and accept nothing
else, so pass `variant.binding_for(symbols)` where a module mentions fewer.

`cache_key()` is stable across processes and machines (RLX hashes with Rust's
`DefaultHasher`, which is not): the SHA-256 of the canonical text
`canonical()`, e.g. `phase=prefill;batch=1;seq=128;past_seq=-;extra=`.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field, replace
from typing import Iterable, Optional

from .expr import BATCH, PAST_SEQ, ROWS, SEQ, symbol


class ModelPhase(enum.Enum):
    """Coarse execution phase."""

    PREFILL = "prefill"
    DECODE = "decode"
    ENCODER = "encoder"
    INFERENCE = "inference"


@dataclass(frozen=True)
class ModelVariant:
    """A concrete shape bucket for compile-once / specialise-at-run-time."""

    batch: int
    seq: int
    past_seq: Optional[int] = None
    phase: ModelPhase = ModelPhase.INFERENCE
    extra: tuple[tuple[str, int], ...] = field(default=())

    def __post_init__(self):
        for name, size in (("batch", self.batch), ("seq", self.seq), ("past_seq", self.past_seq)):
            if size is None and name == "past_seq":
                continue
            if isinstance(size, bool) or not isinstance(size, int) or size < (0 if name == "past_seq" else 1):
                low = "non-negative" if name == "past_seq" else "positive"
                raise ValueError(f"ModelVariant {name} must be a {low} integer, got {size!r}")

    @classmethod
    def prefill(cls, batch: int, seq: int) -> "ModelVariant":
        """The whole prompt at once: `seq` tokens per sequence."""
        return cls(batch, seq, None, ModelPhase.PREFILL)

    @classmethod
    def decode(cls, batch: int, past_seq: int, new_tokens: int = 1) -> "ModelVariant":
        """One decode step: `new_tokens` (often 1) after `past_seq` cached positions."""
        return cls(batch, new_tokens, past_seq, ModelPhase.DECODE)

    @classmethod
    def encoder(cls, batch: int, seq: int) -> "ModelVariant":
        return cls(batch, seq, None, ModelPhase.ENCODER)

    def with_extra(self, name: str, size: int) -> "ModelVariant":
        """This variant with one more symbol bound (a user symbol such as a ragged axis)."""
        symbol(name)  # checks the spelling
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"extra symbol '{name}' must have a positive integer size, got {size!r}")
        return replace(self, extra=self.extra + ((name, size),))

    def dim_binding(self) -> dict[str, int]:
        """{symbol: size}, as RLX's `ModelVariant::dim_binding`."""
        if self.phase is ModelPhase.DECODE and self.past_seq is not None:
            binding = {BATCH: self.batch, PAST_SEQ: self.past_seq, SEQ: self.seq}
        else:
            binding = {BATCH: self.batch, SEQ: self.seq}
            if self.batch > 1:
                binding[ROWS] = self.batch * self.seq
        for name, size in self.extra:
            binding[name] = size
        return binding

    def binding_for(self, symbols: Iterable[str]) -> dict[str, int]:
        """`dim_binding()` restricted to `symbols`; KeyError naming a symbol the variant does not bind."""
        binding = self.dim_binding()
        missing = [s for s in symbols if s not in binding]
        if missing:
            raise KeyError(f"{self} binds no size for {', '.join(missing)}")
        return {s: binding[s] for s in symbols}

    def canonical(self) -> str:
        """The text `cache_key()` hashes: phase, sizes and extras in a fixed spelling."""
        past = "-" if self.past_seq is None else str(self.past_seq)
        extra = ",".join(f"{name}={size}" for name, size in self.extra)
        return f"phase={self.phase.value};batch={self.batch};seq={self.seq};past_seq={past};extra={extra}"

    def cache_key(self) -> str:
        """SHA-256 (hex) of `canonical()`: equal for equal variants, in any process."""
        return hashlib.sha256(self.canonical().encode()).hexdigest()

    def __str__(self) -> str:
        return f"ModelVariant({self.canonical()})"


__all__ = ["ModelPhase", "ModelVariant"]
