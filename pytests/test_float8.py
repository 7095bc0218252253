"""The `f8E4M3FN` storage type (8-bit float, OCP FP8 E4M3): `rlx.cast` to and from it against
ml_dtypes' own `float8_e4m3fn` conversions, bit for bit; the numpy boundary (`float8_e4m3fn`
arrays in and out, wrong dtypes named), an f8 intermediate in the LIR arena, the builder's
dtype name and the AOT manifest."""

import json

import ml_dtypes
import numpy as np
import pytest

import rlx_mlir
from rlx_mlir import GraphModule
from rlx_mlir.dialects import rlx
from rlx_mlir.ir import dtypes

F8 = ml_dtypes.float8_e4m3fn
ALL_CODES = np.arange(256, dtype=np.uint8).view(F8)  # every f8 value, NaNs (0x7F, 0xFF) included


def _cast_module(source: str, target: str, size: int) -> str:
    return (
        f'func.func @f(%a: tensor<{size}x{source}> {{rlx.name = "a"}}) -> tensor<{size}x{target}> {{\n'
        f'  %0 = "rlx.cast"(%a) : (tensor<{size}x{source}>) -> tensor<{size}x{target}>\n'
        f"  return %0 : tensor<{size}x{target}>\n}}\n"
    )


def _f32_probes() -> np.ndarray:
    """f32 values around every f8 value and rounding boundary, the overflow edge, specials, random ones."""
    exact = ALL_CODES.astype(np.float32)
    exact = exact[np.isfinite(exact)]
    ordered = np.unique(np.abs(exact))
    midpoints = (ordered[:-1] + ordered[1:]) / 2  # ties: to even
    ulp = np.spacing(midpoints.astype(np.float32))
    near = np.concatenate([midpoints, midpoints - ulp, midpoints + ulp, ordered * np.float32(1.0001)])
    special = np.array([448, 460, 463.99, 464, 464.01, 465, 480, 1e4, 3e38, np.inf, np.nan, 2.0**-6, 2.0**-6 * 0.999,
                        2.0**-10, 2.0**-11, 1e-30, 1e-45, 0.0], np.float32)
    rng = np.random.default_rng(0)
    scattered = (rng.standard_normal(4000) * np.exp(rng.uniform(-12, 7, 4000))).astype(np.float32)
    values = np.concatenate([exact, near.astype(np.float32), special, scattered])
    return np.concatenate([values, -values]).astype(np.float32)


def test_f8_to_f32_is_ml_dtypes_value_of_every_code():
    out = rlx_mlir.compile(_cast_module("f8E4M3FN", "f32", 256), entry="f")(ALL_CODES)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, ALL_CODES.astype(np.float32))  # NaN where ml_dtypes has NaN
    finite = np.isfinite(out)
    np.testing.assert_array_equal(np.signbit(out[finite]), np.signbit(ALL_CODES.astype(np.float32)[finite]))  # -0


def test_f32_to_f8_rounds_as_ml_dtypes():
    """Round to nearest even, NaN from 464 up (no infinities), subnormals, signed zeros: same bytes."""
    values = _f32_probes()
    out = rlx_mlir.compile(_cast_module("f32", "f8E4M3FN", values.size), entry="f")(values)
    assert out.dtype == F8
    np.testing.assert_array_equal(out.view(np.uint8), values.astype(F8).view(np.uint8))


@pytest.mark.parametrize("source", ["f16", "bf16", "i32", "i8"])
def test_other_types_to_f8_and_back(source):
    """Other types convert through f32: the same bytes as ml_dtypes from the f32 value, and back."""
    numpy_dtype = np.dtype(dtypes.numpy_name(source, "test"))
    if numpy_dtype.kind == "f":
        values = _f32_probes()[:600].astype(numpy_dtype)
    else:
        values = np.arange(-100, 100, dtype=numpy_dtype)
    to_f8 = rlx_mlir.compile(_cast_module(source, "f8E4M3FN", values.size), entry="f")(values)
    np.testing.assert_array_equal(to_f8.view(np.uint8), values.astype(np.float32).astype(F8).view(np.uint8))
    back = rlx_mlir.compile(_cast_module("f8E4M3FN", source, values.size), entry="f")(to_f8)
    expected = to_f8.astype(np.float32)
    if numpy_dtype.kind == "f":
        np.testing.assert_array_equal(back, expected.astype(numpy_dtype))
    else:  # integers: truncated toward zero (NaN gives no defined value: not among these)
        np.testing.assert_array_equal(back, np.trunc(expected).astype(numpy_dtype))


def test_builder_f8_parameter_and_planned_intermediate():
    """`g.param(..., "f8E4M3FN")` takes float8_e4m3fn arrays; an f8 value between two casts is a
    one-byte-per-element slot of the planned arena; a wrong dtype is named."""
    g = GraphModule.mir("f8")
    x, w = g.input("x", (4, 32)), g.param("w", (32, 8), "f8E4M3FN")
    narrowed = g.op(rlx.CastOp, x, out_dtype="f8E4M3FN")  # rounded to f8 in the arena
    widened = g.op(rlx.CastOp, narrowed, out_dtype="f32")
    g.set_outputs(g.op(rlx.MatmulOp, widened, g.op(rlx.CastOp, w, out_dtype="f32")))
    g.plan()
    assert "f8E4M3FN" in g.inspect()
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((4, 32)).astype(np.float32)
    wv = (rng.standard_normal((32, 8)) * 4).astype(F8)
    out = g.compile()(x=xv, w=wv)
    expected = xv.astype(F8).astype(np.float64) @ wv.astype(np.float64)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="'w'.*f8E4M3FN.*float32"):
        g.compile()(x=xv, w=wv.astype(np.float32))


def test_aot_manifest_names_float8(tmp_path):
    from rlx_mlir import aot

    path = tmp_path / "f8.so"
    aot.export(_cast_module("f32", "f8E4M3FN", 16), str(path), target="cpu")
    (function,) = json.loads(path.with_suffix(".json").read_text())["functions"]
    assert [o["dtype"] for o in function["outputs"]] == ["float8_e4m3fn"]
    values = np.linspace(-500, 500, 16).astype(np.float32)
    out = aot.load(str(path))(a=values)
    assert out.dtype == F8
    np.testing.assert_array_equal(out.view(np.uint8), values.astype(F8).view(np.uint8))


def test_f8_slot_size():
    assert dtypes.byte_width("f8E4M3FN") == 1
    assert dtypes.from_numpy("float8_e4m3fn").name == "f8E4M3FN"
