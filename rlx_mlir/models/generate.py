"""Text generation with a KV cache: one prefill, then one decode step per new token.

    from rlx_mlir.models.generate import CachedLlama, generate
    model = CachedLlama(config, weights, capacity=256)
    tokens = generate(model, prompt_ids, max_new_tokens=20)                           # greedy
    tokens = generate(model, prompt_ids, 20, temperature=0.8, top_k=40, top_p=0.95, seed=0)

`CachedLlama` holds the weights, the caches (numpy arrays of `capacity`
positions per layer, updated in place by the compiled code) and the compiled
steps: the decode step (one token) is compiled once and serves every position;
a prefill is compiled per prompt length (`build_llama_step(config, seq, ...)`
with a static `seq`) and kept.  With `dynamic=True` one step with a symbolic
`SEQ` is compiled once instead (`rlx_mlir.dims.variants`: each new length is
specialised on first use).  With `prefill_buckets=(32, 128, 512)` a prompt of
S tokens runs in the step of the smallest bucket >= S (padded with copies of
its last token, the padding's logits dropped), so at most one compile per
bucket serves every prompt length up to the largest bucket; the cost is the
padding's compute (below 4x the prompt with buckets a factor 4 apart).  The
padding's keys and values land in cache positions past the prompt, which the
next step overwrites before any query can attend to them (attention reads
positions up to the query's own only).  The weights are bound to each static step of at least
`BIND_MIN_TOKENS` (256) new tokens when it is compiled (`Executable.bind_params`; the
`bind_params` argument moves the threshold): those the GEMM kernels read are packed into their
panel layout then, once, and such a step is called with the tokens, the position and the caches
only.  A static step is called through `Executable.pin`, the caches and the weights it takes
pinned once: each call checks and binds only the tokens and the position (runtime/pinned.py; for a
12-layer model that is about 0.3 ms less CPU per token).  Sampling runs in numpy on the last
position's logits.  A config with `quant` (`rlx_mlir.models.llama`) takes its quantised
projections as packed `uint8` weights, as `load_gguf(path, keep_quantized=True)`
returns them.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np

from .. import progress as progress_log
from .llama import LlamaConfig
from .llama_cached import build_llama_step, cache_names, cache_shape

# Binding prepacks the weights' GEMM panels once, and compiling the prepacked form costs more (its
# packing functions; about 2.5 to 3 s more CPU for the 12-layer benchmark model's step).  It pays
# where an unbound step would pack the weights on every call, from rlx-pack-matmul's `pack-rows`
# (256) rows on: prefill 512, 11% less CPU per call; at 128 rows (where B is read in place) 3%,
# and a decode step's GEMV kernels read B as it is (measured in the fix-bindparams work, 1 thread).
BIND_MIN_TOKENS = 256


def _bind_min_tokens(bind_params) -> Optional[int]:
    """`bind_params` as the fewest new tokens of a step that binds (None: no step binds)."""
    if bind_params is True:
        return 1
    if bind_params is False or bind_params is None:
        return None
    if not isinstance(bind_params, int) or bind_params < 1:
        raise ValueError(f"bind_params must be True, False or a positive number of tokens, got {bind_params!r}")
    return bind_params



class CachedLlama:
    """A Llama-style model (`rlx_mlir.models.llama`) ready for cached generation.

    `forward(tokens)` runs the new tokens `[batch, S]` at the current position
    (`position`, the number of tokens already in the caches), writes their keys
    and values into the caches and returns their logits `[batch, S, vocab]`;
    `reset()` empties the caches.  `dynamic` compiles one step for every
    number of new tokens (symbolic `SEQ`); `compile_options` go to
    `rlx_mlir.compile`.  `prefill_buckets` (ascending sizes) pads a run of
    several tokens to the smallest bucket it fits (see the module doc); a run
    longer than every bucket, or whose bucket would pass the capacity, runs at
    its own length.  `build_step` builds a step, `build_llama_step`'s
    signature (another model with the same caches: `rlx_mlir.models.moe`).  A static step of at
    least `bind_params` new tokens (default `BIND_MIN_TOKENS`; `True`: every static step, `False`:
    none) is compiled with `prepack_params` and the weights are bound to it once (the module doc);
    the weights must then stay unchanged (make a new model for others).  Other steps, and a
    dynamic one, take them at every call.
    """

    def __init__(self, config: LlamaConfig, weights: dict[str, np.ndarray], capacity: int, *,
                 dynamic: bool = False, prefill_buckets=None, build_step=build_llama_step,
                 bind_params: Union[bool, int] = BIND_MIN_TOKENS, **compile_options):
        if capacity <= 0:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.prefill_buckets = _check_buckets(prefill_buckets)
        self.config = config
        self.weights = weights
        self.capacity = capacity
        self.dynamic = dynamic
        self.compile_options = compile_options
        self.build_step = build_step
        self.bind_min_tokens = None if dynamic else _bind_min_tokens(bind_params)
        self.caches = {name: np.zeros(cache_shape(config, capacity), np.float32) for name in cache_names(config)}
        self.position = 0
        self._steps: dict = {}  # compiled step by number of new tokens ("SEQ" when dynamic)
        self._pinned: dict = {}  # static step by number of new tokens, caches and weights pinned

    @property
    def binds_params(self) -> bool:
        """Whether some static step gets the weights bound (see the class doc)."""
        return self.bind_min_tokens is not None

    def _binds(self, seq: int) -> bool:
        return self.bind_min_tokens is not None and seq >= self.bind_min_tokens

    def step(self, seq: int):
        """The compiled step for `seq` new tokens (compiled on first use; one for all when dynamic), with
        the weights bound when it has at least `bind_min_tokens`."""
        key = "SEQ" if self.dynamic else seq
        if key not in self._steps:
            name = "llama_step" if self.dynamic else f"llama_step{seq}"
            graph = self.build_step(self.config, key, self.capacity, name=name)
            if self._binds(seq):
                compiled = graph.compile(**{"prepack_params": True, **self.compile_options})
                self._steps[key] = compiled.bind_params(**self.weights)
            else:
                self._steps[key] = graph.compile(**self.compile_options)
        return self._steps[key]

    def _pinned_step(self, seq: int):
        """The static step for `seq` new tokens with the caches and the weights pinned
        (`Executable.pin`): a call takes the tokens and the position only."""
        if seq not in self._pinned:
            step = self.step(seq)
            weights = {} if self._binds(seq) else self.weights
            self._pinned[seq] = step.pin(**self.caches, **weights)
        return self._pinned[seq]

    @property
    def compiled_lengths(self) -> list:
        """What steps were compiled for: numbers of new tokens ascending, or ["SEQ"] when dynamic."""
        return list(self._steps) if self.dynamic else sorted(self._steps)

    def reset(self) -> None:
        """Forgets every cached token (positions past `position` are never read, so nothing is cleared)."""
        self.position = 0

    def forward(self, tokens: np.ndarray) -> np.ndarray:
        """Logits `[batch, S, vocab]` of `tokens` `[batch, S]` at positions `position .. position + S - 1`.

        Their keys and values go into the caches; `position` advances by `S`.
        """
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.ndim != 2 or tokens.shape[0] != self.config.batch or tokens.shape[1] == 0:
            raise ValueError(f"tokens must be [batch = {self.config.batch}, S >= 1], got {list(tokens.shape)}")
        seq = tokens.shape[1]
        if self.position + seq > self.capacity:
            raise ValueError(
                f"{seq} new tokens at position {self.position} exceed the cache capacity {self.capacity}"
            )
        run = self._bucket(seq)
        if run > seq:  # pad with the last token; its keys and values go past the prompt, its logits are dropped
            tokens = np.concatenate([tokens, np.repeat(tokens[:, -1:], run - seq, axis=1)], axis=1)
        pos = np.array(self.position, np.int64)
        if self.dynamic:
            outputs = self.step(run)(tokens=tokens, pos=pos, **self.caches, **self.weights)
        else:
            outputs = self._pinned_step(run)(tokens=tokens, pos=pos)
        self.position += seq
        return outputs[0][:, :seq] if run > seq else outputs[0]

    def _bucket(self, seq: int) -> int:
        """How many tokens a run of `seq` new ones is computed as: the smallest prefill bucket that
        holds it and fits the cache, else `seq` itself."""
        if seq == 1 or self.dynamic:
            return seq
        room = self.capacity - self.position
        return next((b for b in self.prefill_buckets if seq <= b <= room), seq)


def _check_buckets(buckets) -> tuple[int, ...]:
    if buckets is None:
        return ()
    try:
        sizes = tuple(buckets)
    except TypeError:
        raise ValueError(f"prefill_buckets must be a sequence of positive integers, got {buckets!r}") from None
    if not all(isinstance(b, (int, np.integer)) and not isinstance(b, bool) and b > 0 for b in sizes):
        raise ValueError(f"prefill_buckets must be a sequence of positive integers, got {buckets!r}")
    if list(sizes) != sorted(set(sizes)):
        raise ValueError(f"prefill_buckets must be strictly ascending, got {list(sizes)}")
    return tuple(int(b) for b in sizes)


def sample(logits: np.ndarray, rng: Optional[np.random.Generator], *, temperature: float = 0.0,
           top_k: Optional[int] = None, top_p: Optional[float] = None) -> np.ndarray:
    """One token per row of `logits` `[batch, vocab]`.

    `temperature == 0`: the argmax (greedy; the lowest index among ties).
    Otherwise softmax(logits / temperature) restricted to the `top_k` most
    likely tokens (when given), then to the smallest set of most likely tokens
    whose probability reaches `top_p` (nucleus, when given; the most likely
    token always stays), renormalised and sampled with `rng`.  A row whose
    softmax is not finite (a NaN or +inf logit, all logits -inf, or
    `logits / temperature` overflowing) gets the greedy choice, NaN counting as
    the largest value: `rlx.sample`'s rule (numpy's sampler raised "Probabilities
    contain NaN").
    """
    if temperature == 0.0:
        return np.argmax(logits, axis=-1)
    tokens = []
    for row in np.asarray(logits, np.float64):
        with np.errstate(over="ignore"):
            finite = np.isfinite((row / temperature).max())  # NaN, +inf, all -inf, overflow: not finite
        if not finite:
            tokens.append(np.argmax(row))  # the first NaN, else the first largest
            continue
        order = np.argsort(-row, kind="stable")  # most likely first
        if top_k is not None:
            order = order[:top_k]
        scaled = row[order] / temperature
        probs = np.exp(scaled - scaled[0])
        probs /= probs.sum()
        if top_p is not None:
            keep = int(np.searchsorted(np.cumsum(probs), top_p)) + 1  # the first prefix reaching top_p
            order, probs = order[:keep], probs[:keep] / probs[:keep].sum()
        tokens.append(order[rng.choice(len(order), p=probs)])
    return np.array(tokens, np.int64)


def generate(model: CachedLlama, prompt_ids, max_new_tokens: int, *, temperature: float = 0.0,
             top_k: Optional[int] = None, top_p: Optional[float] = None, seed: Optional[int] = None,
             progress: bool = False) -> np.ndarray:
    """The `max_new_tokens` tokens generated after `prompt_ids` (`[S]` or `[batch, S]`, same rank back).

    Empties the model's caches, runs the prompt as one prefill, then one decode
    step per further token, each fed the token just chosen by `sample`
    (greedy by default; `temperature > 0` samples, with `top_k` / `top_p`
    filtering and a generator seeded by `seed`). With `progress`, the compile stages of the
    steps compiled on the way (the first call's prefill and decode steps) and their times are
    printed on stderr (rlx_mlir/progress.py).
    """
    with progress_log.reporting(progress):
        return _generate(model, prompt_ids, max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                         seed=seed)


def _generate(model: CachedLlama, prompt_ids, max_new_tokens: int, *, temperature: float,
              top_k: Optional[int], top_p: Optional[float], seed: Optional[int]) -> np.ndarray:
    prompt = np.asarray(prompt_ids, dtype=np.int64)
    flat = prompt.ndim == 1
    prompt = prompt[None, :] if flat else prompt
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    if temperature < 0.0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    needed = prompt.shape[1] + max_new_tokens - 1  # the last new token is never run
    if needed > model.capacity:
        raise ValueError(
            f"a prompt of {prompt.shape[1]} tokens and {max_new_tokens} new tokens need {needed} cache positions; "
            f"the capacity is {model.capacity}"
        )
    rng = np.random.default_rng(seed) if temperature > 0.0 else None
    model.reset()
    logits = model.forward(prompt)[:, -1]
    generated = []
    for step in range(max_new_tokens):
        token = sample(logits, rng, temperature=temperature, top_k=top_k, top_p=top_p)
        generated.append(token)
        if step + 1 < max_new_tokens:
            logits = model.forward(token[:, None])[:, -1]
    out = np.stack(generated, axis=1)
    return out[0] if flat else out


__all__ = ["CachedLlama", "generate", "sample"]
