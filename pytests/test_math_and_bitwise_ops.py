"""softplus, sin, cos, floor, round, clamp and the integer bitwise ops against numpy.

The references are numpy's own functions (float64 for the transcendental ones), not the lowering's
formulas: softplus is `np.logaddexp(0, x)`, round is `np.round` (halves to even), clamp is `np.clip`,
the shifts are numpy's `>>` and `<<` (which define out-of-range amounts).
"""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir.dialects import rlx
from rlx_mlir.frontend.builder import GraphModule


def _unary(op: str, x: np.ndarray, attrs: str = "") -> np.ndarray:
    t = f"tensor<{'x'.join(map(str, x.shape))}x{ {'float32': 'f32', 'float16': 'f16'}[x.dtype.name] }>"
    text = (f'func.func @f(%x: {t}) -> {t} {{\n  %0 = "rlx.{op}"(%x) {attrs} : ({t}) -> {t}\n'
            f"  return %0 : {t}\n}}")
    return rlx_mlir.compile(text.replace("  : (", " : ("), cache=False)(x)


def _f32_of(reference: np.ndarray) -> np.ndarray:
    return reference.astype(np.float32)


EDGES = np.array([-1e4, -200, -104, -100, -88, -20, -1, -1e-3, -1e-30, 0.0, 1e-30, 1e-3, 1, 20, 88, 89, 100,
                  1e4, np.inf, -np.inf, np.nan], np.float32)


def test_softplus_never_overflows_and_keeps_tiny_values():
    x = np.concatenate([EDGES, np.random.default_rng(0).uniform(-30, 30, 203).astype(np.float32)])
    got = _unary("softplus", x)
    with np.errstate(invalid="ignore"):
        want = _f32_of(np.logaddexp(0.0, x.astype(np.float64)))
    assert np.all(np.isfinite(got[np.isfinite(x)]))  # log(1 + exp(x)) overflows from x = 89
    np.testing.assert_allclose(got, want, rtol=3e-7, atol=1e-45)
    assert got[list(EDGES).index(np.float32(-100))] > 0  # exp(-100) = 3.7e-44, a subnormal, not 0


@pytest.mark.parametrize("op, reference", [("sin", np.sin), ("cos", np.cos)])
def test_sin_cos(op, reference):
    x = np.concatenate([np.linspace(-20, 20, 401), [0.0, np.pi, -np.pi / 2, 1e4]]).astype(np.float32)
    np.testing.assert_allclose(_unary(op, x), reference(x.astype(np.float64)), atol=2e-7 * 4)


@pytest.mark.parametrize("op, reference", [("floor", np.floor), ("round", np.round)])
def test_floor_and_round_to_even(op, reference):
    x = np.array([-2.5, -1.5, -0.5, -0.49, 0.0, 0.5, 1.5, 2.5, 2.51, 3.7, -3.7, 1e8 + 0.0, 7e-39, np.inf, np.nan],
                 np.float32)
    np.testing.assert_array_equal(_unary(op, x), reference(x))


def test_round_in_f16():
    x = np.array([0.5, 1.5, 2.5, -2.5, 1000.5], np.float16)
    np.testing.assert_array_equal(_unary("round", x), np.round(x))


@pytest.mark.parametrize("attrs, low, high", [
    ("{min = -1.5 : f32, max = 2.0 : f32}", -1.5, 2.0),
    ("{min = 0.0 : f32}", 0.0, None),
    ("{max = 6.0 : f32}", None, 6.0),
])
def test_clamp_is_numpy_clip(attrs, low, high):
    x = np.concatenate([EDGES, np.linspace(-8, 8, 33, dtype=np.float32)])
    np.testing.assert_array_equal(_unary("clamp", x, attrs), np.clip(x, low, high))


def _binary(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    element = {"int8": "i8", "uint8": "ui8", "int32": "i32", "int64": "i64"}[a.dtype.name]

    def t(x):
        return f"tensor<{''.join(f'{d}x' for d in x.shape)}{element}>"

    out = np.broadcast_shapes(a.shape, b.shape)
    to = f"tensor<{''.join(f'{d}x' for d in out)}{element}>"
    text = (f'func.func @f(%a: {t(a)}, %b: {t(b)}) -> {to} {{\n'
            f'  %0 = "rlx.{op}"(%a, %b) : ({t(a)}, {t(b)}) -> {to}\n  return %0 : {to}\n}}')
    return rlx_mlir.compile(text, cache=False)(a, b)


NUMPY_BITWISE = {
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "shift_left": np.left_shift,
    "shift_right": np.right_shift,
}


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64])
@pytest.mark.parametrize("op", sorted(NUMPY_BITWISE))
def test_bitwise_ops_match_numpy(op, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    a = rng.integers(info.min, info.max, size=(3, 40), dtype=dtype, endpoint=True)
    a[0, :4] = [info.min, info.max, 0, 1 if info.min == 0 else -1]
    if op.startswith("shift"):
        bits = info.bits
        amounts = np.arange(-3 if info.min < 0 else 0, bits + 4)  # negative and >= width included
        b = np.resize(amounts, 40).astype(dtype)[None, :]  # broadcast over the rows
    else:
        b = rng.integers(info.min, info.max, size=(3, 40), dtype=dtype, endpoint=True)
    np.testing.assert_array_equal(_binary(op, a, b), NUMPY_BITWISE[op](a, b))


def test_unpacking_nibbles_through_the_builder():
    packed = np.random.default_rng(3).integers(0, 256, size=(4, 16), dtype=np.uint8)
    g = GraphModule.mir("unpack")
    x = g.input("packed", (4, 16), "ui8")
    four = g.constant(np.array(4, np.uint8))
    mask = g.constant(np.array(15, np.uint8))
    low = g.op(rlx.BitwiseAndOp, x, mask)
    high = g.op(rlx.ShiftRightOp, x, four)
    g.set_outputs([low, high])
    got_low, got_high = g.compile()(packed)
    np.testing.assert_array_equal(got_low, packed & 15)
    np.testing.assert_array_equal(got_high, packed >> 4)
