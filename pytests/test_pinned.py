"""Arguments pinned for repeated calls (`Executable.pin`, runtime/pinned.py): the same results, in-place
updates and errors as plain calls, with only the free arguments checked and bound per call."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir.models.generate import CachedLlama, generate
from rlx_mlir.models.llama import LlamaConfig, random_weights
from rlx_mlir.runtime import abi

STEP = """
func.func @step(%cache: tensor<1x6x4xf32> {rlx.name = "cache"}, %new: tensor<1x1x4xf32> {rlx.name = "new"},
                %pos: tensor<i64> {rlx.name = "pos"}, %w: tensor<1x1x4xf32> {rlx.name = "w", rlx.param})
    -> (tensor<1x1x4xf32>, tensor<1x6x4xf32> {rlx.tied = 0 : i64}) {
  %y = "rlx.mul"(%new, %w) : (tensor<1x1x4xf32>, tensor<1x1x4xf32>) -> tensor<1x1x4xf32>
  %c = "rlx.kv_cache_write"(%cache, %new, %pos) : (tensor<1x6x4xf32>, tensor<1x1x4xf32>, tensor<i64>) -> tensor<1x6x4xf32>
  return %y, %c : tensor<1x1x4xf32>, tensor<1x6x4xf32>
}
"""


@pytest.fixture(scope="module")
def exe():
    return rlx_mlir.compile(STEP, entry="step")


def rows(count: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, 1, 1, 4)).astype(np.float32)


def test_pinned_calls_equal_plain_calls_and_update_the_pinned_cache(exe):
    w = np.array([[[1.0, -2.0, 0.5, 3.0]]], np.float32)
    plain_cache, pinned_cache = np.zeros((1, 6, 4), np.float32), np.zeros((1, 6, 4), np.float32)
    pinned = exe.pin(cache=pinned_cache, w=w)
    assert pinned.input_names == ["new", "pos"]
    new = rows(6)
    for position in range(6):
        y, cache = pinned(new[position], np.array(position))
        assert cache is pinned_cache  # the tied result is the pinned array itself
        np.testing.assert_array_equal(y, new[position] * w)  # numpy reference: y = new * w
        plain_y, _ = exe(plain_cache, new[position], np.array(position), w)
        np.testing.assert_array_equal(y, plain_y)
    np.testing.assert_array_equal(pinned_cache[0], new[:, 0, 0])  # row p written at position p
    np.testing.assert_array_equal(pinned_cache, plain_cache)
    w[...] = 2.0  # a pinned array is read through its address: its new contents count
    y, _ = pinned(new=new[0], pos=np.array(0))
    np.testing.assert_array_equal(y, new[0] * 2.0)


def test_free_arguments_are_checked_as_in_a_plain_call(exe):
    cache, w = np.zeros((1, 6, 4), np.float32), np.ones((1, 1, 4), np.float32)
    pinned = exe.pin(cache=cache, w=w)
    with pytest.raises(ValueError, match=r"argument 'new' of @step: expected .*got numpy float64 \[1, 1, 4\]"):
        pinned(np.zeros((1, 1, 4)), np.array(0))
    with pytest.raises(ValueError, match=r"argument 'pos' of @step: expected .*got numpy int64 \[1\]"):
        pinned(np.zeros((1, 1, 4), np.float32), np.array([0]))
    with pytest.raises(TypeError, match="@step has no argument named 'cache' \\(arguments: new, pos\\)"):
        pinned(new=np.zeros((1, 1, 4), np.float32), pos=np.array(0), cache=cache)
    with pytest.raises(TypeError, match="@step is missing arguments: pos"):
        pinned(np.zeros((1, 1, 4), np.float32))
    # A wrong pinned array is refused when it is pinned, with the plain call's message.
    with pytest.raises(ValueError, match=r"argument 'w' of @step: expected .*got numpy float32 \[4\]"):
        exe.pin(cache=cache, w=np.ones(4, np.float32))
    cache.flags.writeable = False
    with pytest.raises(ValueError, match="argument 'cache' of @step is updated in place .* it is read-only"):
        exe.pin(cache=cache)
    with pytest.raises(TypeError, match="@step has no argument named 'kv'"):
        exe.pin(kv=cache)
    # The pinned call still works after the errors: nothing was left half bound.
    y, _ = pinned(np.full((1, 1, 4), 3.0, np.float32), np.array(2))
    np.testing.assert_array_equal(y, np.full((1, 1, 4), 3.0))


def test_a_free_input_that_shares_the_pinned_cache_is_read_before_the_update(exe):
    cache = np.arange(24, dtype=np.float32).reshape(1, 6, 4)
    before = cache.copy()
    pinned = exe.pin(cache=cache, w=np.ones((1, 1, 4), np.float32))
    y, _ = pinned(cache[:, 5:6], np.array(5))  # a view of the very row written
    np.testing.assert_array_equal(y, before[:, 5:6])
    np.testing.assert_array_equal(cache, before)
    y, _ = pinned(cache[:, 0:1], np.array(3))  # row 0 copied to position 3
    expected = before.copy()
    expected[:, 3] = before[:, 0]
    np.testing.assert_array_equal(cache, expected)
    fresh = np.full((1, 1, 4), 7.0, np.float32)
    pinned(fresh, np.array(1))  # the next call writes the pinned cache again, not the copy
    expected[:, 1] = 7.0
    np.testing.assert_array_equal(cache, expected)


def test_pinned_inputs_sharing_the_pinned_cache_take_the_plain_path():
    module = STEP.replace("tensor<1x1x4xf32> {rlx.name = \"w\", rlx.param}", "tensor<1x6x4xf32> {rlx.name = \"w\"}")
    module = module.replace('"rlx.mul"(%new, %w) : (tensor<1x1x4xf32>, tensor<1x1x4xf32>) -> tensor<1x1x4xf32>',
                            '"rlx.reduce"(%w) {axes = array<i64: 1>, keep_dim = false, kind = "sum"} : (tensor<1x6x4xf32>) -> tensor<1x4xf32>')
    module = module.replace("-> (tensor<1x1x4xf32>,", "-> (tensor<1x4xf32>,").replace(
        "return %y, %c : tensor<1x1x4xf32>,", "return %y, %c : tensor<1x4xf32>,")
    exe = rlx_mlir.compile(module, entry="step")
    cache = np.arange(24, dtype=np.float32).reshape(1, 6, 4)
    pinned = exe.pin(cache=cache, w=cache)  # w is read while cache is written: a copy before each call
    assert not pinned._call.fast
    for position in range(3):
        before = cache.copy()
        new = np.full((1, 1, 4), 10.0 * position, np.float32)
        y, _ = pinned(new, np.array(position))
        np.testing.assert_array_equal(y, before.sum(axis=1))  # the sum of the cache before the write
        before[:, position] = new[:, 0]
        np.testing.assert_array_equal(cache, before)


def test_cached_llama_checks_only_the_tokens_and_position_per_decode_step(monkeypatch):
    config = LlamaConfig(layers=2, hidden=32, heads=2, kv_heads=2, head_dim=16, ffn=64, vocab=50)
    weights = random_weights(config, seed=1)
    model = CachedLlama(config, weights, capacity=16)
    prompt = np.array([3, 1, 4, 1])
    expected = generate(model, prompt, 5)
    # The same tokens as plain calls of the steps, position by position.
    caches = {name: np.zeros_like(cache) for name, cache in model.caches.items()}
    logits = model.step(4)(tokens=prompt[None], pos=np.array(0), **caches, **weights)[0][:, -1]
    plain = []
    for position in range(4, 9):
        plain.append(int(np.argmax(logits)))
        logits = model.step(1)(tokens=np.array([[plain[-1]]]), pos=np.array(position), **caches, **weights)[0][:, -1]
    np.testing.assert_array_equal(expected, plain)
    checked = []
    original = abi.Interface.check_argument
    monkeypatch.setattr(abi.Interface, "check_argument",
                        lambda self, index, value: checked.append(self.inputs[index].name) or original(self, index, value))
    model.forward(np.array([[expected[-1]]]))
    assert checked == ["tokens", "pos"]


def test_a_pinned_input_copied_for_one_call_is_read_in_place_again_at_the_next(exe):
    first, second = np.zeros((1, 6, 4), np.float32), np.zeros((1, 6, 4), np.float32)
    first[:, 2] = 5.0
    pinned = exe.pin(w=first[:, 2:3])  # w is row 2 of a cache that a call updates
    new = rows(2)
    y, _ = pinned(first, new[0], np.array(2))  # w read before row 2 is overwritten: a copy, for this call
    first_y = y.copy()
    y, _ = pinned(second, new[1], np.array(0))  # w is the pinned view again: row 2 as written above
    np.testing.assert_array_equal(first_y, new[0] * 5.0)
    np.testing.assert_array_equal(first[:, 2], new[0][:, 0])
    np.testing.assert_array_equal(y, new[1] * new[0])
