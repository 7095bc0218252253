"""`rlx.dequant_matmul` with the side-tensor schemes `int8/B`, `int8_asym/B`, `int4/B`, `nvfp4`.

The reference is written plainly from dialect/rlx.md's semantics: the codes are unpacked (low
nibble: even column), `W[k, n] = (code - zp) * scale` per block of B along K (nvfp4: the E2M1
table times the E4M3 byte's value times the global scale, decoded here from the bit fields), and
numpy computes `x @ W` in float64.  Each run is also checked against the quantiser module's own
reference dequantiser (`rlx_mlir.quant.dequantize`).
"""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir import GraphModule, quant
from rlx_mlir.frontend.builder import BuildError

SCHEMES = ["int8/32", "int8_asym/16", "int4/32", "int4/64", "nvfp4"]
M_SIZES = (1, 3, 17, 48)  # 48 = GEMM_ROWS: the decode-once path
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def _block(scheme: str) -> int:
    return 16 if scheme == "nvfp4" else int(scheme.split("/")[1])


def _e4m3(byte) -> float:
    byte = int(byte)
    sign = -1.0 if byte & 0x80 else 1.0
    e, m = (byte >> 3) & 15, byte & 7
    if byte & 0x7F == 0x7F:
        return float("nan")
    return sign * (m / 8 * 2.0**-6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))


def _unpack(w: np.ndarray) -> np.ndarray:
    """[K, N/2] bytes -> [K, N] codes: byte j holds column 2j (low nibble) and 2j + 1 (high)."""
    codes = np.empty((w.shape[0], 2 * w.shape[1]), np.int64)
    codes[:, 0::2], codes[:, 1::2] = w & 15, w >> 4
    return codes


def plain_weight(scheme: str, w, side, global_scale=None) -> np.ndarray:
    """`W [K, N]` in float64, from the documented layout."""
    block = _block(scheme)
    per_k = [np.repeat(np.asarray(t, np.float64) if t.dtype != np.uint8 else t, block, axis=0) for t in side]
    if scheme == "nvfp4":
        codes = _unpack(w)
        values = np.array([E2M1[c & 7] * (-1 if c & 8 else 1) for c in codes.ravel()]).reshape(codes.shape)
        scales = np.vectorize(_e4m3)(per_k[0])
        return values * scales * global_scale
    if scheme.startswith("int8/"):
        return w.astype(np.float64) * per_k[0]
    codes = _unpack(w) if scheme.startswith("int4") else w.astype(np.float64)
    return (codes - per_k[1]) * per_k[0]


def quantised(scheme: str, n: int, k: int, rng):
    """(w, side, global_scale) from the quantiser, for a random float weight [N, K]."""
    stored = quant.quantize(rng.standard_normal((n, k)).astype(np.float32), scheme)
    if scheme == "nvfp4":
        return stored.codes, [stored.scales], float(stored.global_scale[0]), stored
    if scheme.startswith("int8/"):
        return stored.w_q, [stored.scale], None, stored
    return stored.w_q, [stored.scale, stored.zp], None, stored


def random_codes(scheme: str, n: int, k: int, rng):
    """Random valid stored arrays: every code, scales of both signs, any zero point (nvfp4: every
    E4M3 byte but the NaNs, subnormals included)."""
    block = _block(scheme)
    if scheme == "nvfp4":
        scales = rng.integers(0, 256, size=(k // 16, n), dtype=np.uint8)
        scales[(scales & 0x7F) == 0x7F] = 0x3C
        return rng.integers(0, 256, size=(k, n // 2), dtype=np.uint8), [scales], 0.75
    scale = rng.standard_normal((k // block, n)).astype(np.float32)
    if scheme.startswith("int8/"):
        return rng.integers(-128, 128, size=(k, n), dtype=np.int8), [scale], None
    top = 256 if scheme.startswith("int8_asym") else 16
    zp = rng.integers(0, top, size=(k // block, n)).astype(np.float32)
    cols = n if top == 256 else n // 2
    return rng.integers(0, 256, size=(k, cols), dtype=np.uint8), [scale, zp], None


def _dtype(a: np.ndarray) -> str:
    return {"int8": "i8", "uint8": "u8", "float32": "f32"}[a.dtype.name]


def _run(scheme, w, side, global_scale, x_shape, x):
    g = GraphModule.mir("q")
    xt = g.input("x", x_shape)
    wt = g.param("w", w.shape, _dtype(w))
    ts = [g.param(f"s{i}", t.shape, _dtype(t)) for i, t in enumerate(side)]
    g.set_outputs(g.dequant_matmul(xt, wt, scheme, side=ts, global_scale=global_scale))
    return g.compile()(x, w, *side)


def _check(out, x, weight):
    x64 = x.astype(np.float64)
    expected = x64 @ weight
    bound = (np.abs(x64) @ np.abs(weight)) * (x.shape[-1] * np.finfo(np.float32).eps) + 1e-30
    assert out.dtype == np.float32 and out.shape == expected.shape
    np.testing.assert_array_less(np.abs(out - expected), bound)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_quantised_weights_match_the_reference(scheme):
    """The quantiser's arrays, M = 1, 3, 17: equal to x @ W with W from the plain formula, which
    is itself the quantiser module's reference dequantiser."""
    rng = np.random.default_rng([len(scheme), *scheme.encode()])
    k, n = 128, 48
    w, side, global_scale, stored = quantised(scheme, n, k, rng)
    weight = plain_weight(scheme, w, side, global_scale)
    np.testing.assert_allclose(weight, quant.dequantize(stored, scheme, (n, k)).T, rtol=1e-6, atol=0)
    for m in M_SIZES:
        x = rng.standard_normal((m, k)).astype(np.float32)
        _check(_run(scheme, w, side, global_scale, (m, k), x), x, weight)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("m", (1, 3, 17))
def test_random_codes(scheme, m):
    """Every code, any zero point, signed scales, E4M3 subnormals; N = 96 spans several panels."""
    rng = np.random.default_rng([m, *scheme.encode()])
    k, n = 256, 96
    w, side, global_scale = random_codes(scheme, n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    _check(_run(scheme, w, side, global_scale, (m, k), x), x, plain_weight(scheme, w, side, global_scale))


@pytest.mark.parametrize("batch", [(2, 3), (2, 24)])
def test_batched_x(batch):
    """x [2, 3, K] (6 rows, the decoding kernel) and [2, 24, K] (48 rows, decode once + GEMM)."""
    rng = np.random.default_rng(batch[1])
    k, n = 64, 32
    w, side, _ = random_codes("int4/32", n, k, rng)
    x = rng.standard_normal((*batch, k)).astype(np.float32)
    out = _run("int4/32", w, side, None, x.shape, x)
    assert out.shape == (*batch, n)
    _check(out.reshape(-1, n), x.reshape(-1, k), plain_weight("int4/32", w, side))


def test_known_nvfp4_values():
    """Hand-made: one column per E2M1 code, E4M3 scales 1.0 (0x38), 2^-9 (0x01, subnormal) and
    -448 (0xFE); x one-hot on k = 0 and k = 16 picks the weights out exactly."""
    k, n = 32, 16
    codes = np.zeros((k, n), np.uint8)
    codes[0] = np.arange(16)
    codes[16] = np.arange(16)
    w = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    scales = np.full((2, n), 0x38, np.uint8)
    scales[1, :8], scales[1, 8:] = 0x01, 0xFE
    x = np.zeros((2, k), np.float32)
    x[0, 0], x[1, 16] = 1.0, 1.0
    out = _run("nvfp4", w, [scales], 2.0, (2, k), x)
    values = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6])
    np.testing.assert_array_equal(out[0], values * 2.0)
    np.testing.assert_array_equal(out[1], values * np.r_[[2.0**-9] * 8, [-448.0] * 8] * 2.0)


def test_int4_nibble_order():
    """Byte 0x21 in row k = 0: column 0 gets code 1, column 1 code 2 (low nibble first)."""
    w = np.zeros((32, 1), np.uint8)
    w[0, 0] = 0x21
    scale, zp = np.ones((1, 2), np.float32), np.zeros((1, 2), np.float32)
    x = np.zeros((1, 32), np.float32)
    x[0, 0] = 1.0
    np.testing.assert_array_equal(_run("int4/32", w, [scale, zp], None, (1, 32), x), [[1.0, 2.0]])


def test_hir_dequant_linear_bias_and_activation():
    """HIR: int8_asym without a bias (one HIR block) and int4 with a bias (the block, then rlx.add)."""
    rng = np.random.default_rng(7)
    k, n = 64, 16
    g = GraphModule.hir("lin")
    x = g.input("x", (2, 5, k))
    wa, sa, _ = random_codes("int8_asym/32", n, k, rng)
    w4, s4, _ = random_codes("int4/32", n, k, rng)
    bias = rng.standard_normal(n).astype(np.float32)
    ta = [g.param("wa", wa.shape, "u8"), g.param("sa", sa[0].shape), g.param("za", sa[1].shape)]
    t4 = [g.param("w4", w4.shape, "u8"), g.param("s4", s4[0].shape), g.param("z4", s4[1].shape)]
    tb = g.param("b", (n,))
    y = g.dequant_linear(x, ta[0], "int8_asym/32", activation="relu", side=ta[1:])
    z = g.dequant_linear(x, t4[0], "int4/32", bias=tb, activation="silu", side=t4[1:])
    g.set_outputs([y, z])
    xv = rng.standard_normal((2, 5, k)).astype(np.float32)
    yo, zo = g.compile()(x=xv, wa=wa, sa=sa[0], za=sa[1], w4=w4, s4=s4[0], z4=s4[1], b=bias)
    x64 = xv.astype(np.float64)
    expected_y = np.maximum(x64 @ plain_weight("int8_asym/32", wa, sa), 0)
    pre = x64 @ plain_weight("int4/32", w4, s4) + bias
    expected_z = pre / (1 + np.exp(-pre))
    np.testing.assert_allclose(yo, expected_y, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(zo, expected_z, rtol=1e-4, atol=1e-3)


def test_symbolic_batch():
    rng = np.random.default_rng(3)
    k, n = 64, 8
    w, side, _ = random_codes("int8/32", n, k, rng)
    g = GraphModule.hir("sym")
    g.set_outputs(g.dequant_linear(g.input("x", ("B", k)), g.param("w", w.shape, "i8"), "int8/32",
                                   side=[g.param("s", side[0].shape)]))
    exe = g.compile()
    for batch in (1, 9, 48):
        x = rng.standard_normal((batch, k)).astype(np.float32)
        _check(exe(x=x, w=w, s=side[0]), x, plain_weight("int8/32", w, side))


def test_weight_split_between_threads():
    """N = 512 columns of int4 (16 panels), K = 256 (a weight above rlx-parallelize-linalg's
    minimum size): the lowered code forks threads, which share the panels."""
    rng = np.random.default_rng(5)
    k, n = 256, 512
    w, side, _ = random_codes("int4/32", n, k, rng)
    g = GraphModule.mir("threads")
    xt = g.input("x", (1, k))
    ts = [g.param("w", w.shape, "u8"), g.param("s", side[0].shape), g.param("z", side[1].shape)]
    g.set_outputs(g.dequant_matmul(xt, ts[0], "int4/32", side=ts[1:]))
    x = rng.standard_normal((1, k)).astype(np.float32)
    _check(g.compile(threads=2)(x, w, *side), x, plain_weight("int4/32", w, side))
    from mlir import ir

    from rlx_mlir.passmanager.pipeline import run_pipeline

    text = (
        f"func.func @f(%x: tensor<1x{k}xf32>, %w: tensor<{k}x{n // 2}xui8>, %s: tensor<8x{n}xf32>) -> tensor<1x{n}xf32> {{\n"
        f'  %0 = "rlx.dequant_matmul"(%x, %w, %s, %s) {{scheme = "int4/32"}} : (tensor<1x{k}xf32>, tensor<{k}x{n // 2}xui8>, '
        f"tensor<8x{n}xf32>, tensor<8x{n}xf32>) -> tensor<1x{n}xf32>\n  return %0 : tensor<1x{n}xf32>\n}}\n"
    )
    with rlx_mlir.make_context() as context, ir.Location.unknown(context):
        module = ir.Module.parse(text)
        run_pipeline(module.operation, "builtin.module(rlx-lower-to-llvm{threads=2})")
        assert "omp.parallel" in str(module)


def _builder(shapes):
    g = GraphModule.mir("bad")
    return g, [g.param(name, shape, dtype) for name, shape, dtype in shapes]


def test_builder_errors_name_the_scheme():
    g, (x, w8, s, s4, u8) = _builder(
        [("x", (2, 64), "f32"), ("w8", (64, 6), "i8"), ("s", (2, 6), "f32"), ("s4", (4, 6), "f32"), ("u8", (64, 6), "u8")]
    )
    with pytest.raises(BuildError, match=r"scheme 'int8_asym/32' takes 2 tensors after w \(scale \[K / 32, N\] f32, zp \[K / 32, N\] f32\), but 1 was given"):
        g.dequant_matmul(x, u8, "int8_asym/32", side=[s])
    with pytest.raises(BuildError, match=r"scheme 'int8/32' needs scale of shape \[K / 32, N\] = \[2, 6\], but got \[4, 6\]"):
        g.dequant_matmul(x, w8, "int8/32", side=[s4])
    with pytest.raises(BuildError, match=r"scheme 'int8/48' has blocks of 48 along K, but K = 64 is not a multiple of 48"):
        g.dequant_matmul(x, w8, "int8/48", side=[s])
    with pytest.raises(BuildError, match=r"bad scheme 'int4/x': expected 'int4/B' with B, the block size along K, a positive integer"):
        g.dequant_matmul(x, u8, "int4/x", side=[s, s])
    with pytest.raises(BuildError, match=r"scheme 'nvfp4' requires the attribute 'global_scale'"):
        g.dequant_matmul(x, u8, "nvfp4", side=[g.param("e", (4, 12), "u8")])
    with pytest.raises(BuildError, match=r"side must be a list of Tensors"):
        g.dequant_matmul(x, w8, "int8/32", side=5)


def test_wrong_code_dtype_is_a_build_error():
    """Element types are the verifier's (as for GGUF), which the builder runs on each op it builds:
    a BuildError at the call, naming the op and the scheme; the op is not left in the module."""
    g, (x, u8, s) = _builder([("x", (2, 64), "f32"), ("w", (64, 6), "u8"), ("s", (2, 6), "f32")])
    with pytest.raises(BuildError, match=r"^'rlx.dequant_matmul' op operand 'w' must be a ranked tensor of i8 for scheme "
                                         r"'int8/32', but got tensor<64x6xui8>$"):
        g.dequant_matmul(x, u8, "int8/32", side=[s])
    assert "rlx.dequant_matmul" not in str(g)


def test_hir_rejects_a_bias_after_side_tensors():
    text = """
func.func @f(%x: tensor<2x64xf32>, %w: tensor<64x6xi8>, %s: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %0 = "rlx_hir.dequant_linear"(%x, %w, %s, %s) {scheme = "int8/32", activation = "none"} : (tensor<2x64xf32>, tensor<64x6xi8>, tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}
"""
    with pytest.raises(rlx_mlir.CompileError, match=r"scheme 'int8/32' takes its 1 side tensor after w and no bias"):
        rlx_mlir.compile(text, entry="f")


@pytest.mark.parametrize(
    "scheme, w_type, side_types, attrs, n",
    [
        ("int8/32", "tensor<64x6xi8>", ["tensor<2x6xf32>"], "", 6),
        ("int4/32", "tensor<64x6xui8>", ["tensor<2x12xf32>", "tensor<2x12xf32>"], "", 12),
        ("nvfp4", "tensor<64x6xui8>", ["tensor<4x12xui8>"], ", global_scale = 0.5 : f32", 12),
    ],
)
def test_cuda_export_compiles_the_kernel(scheme, w_type, side_types, attrs, n, tmp_path):
    """Everywhere, GPU or not: the CUDA chain maps the decoding kernel to a GPU kernel (PTX embedded)."""
    from rlx_mlir import aot

    args = ", ".join(f"%s{i}: {t}" for i, t in enumerate(side_types))
    names = ", ".join(f"%s{i}" for i in range(len(side_types)))
    text = (
        f"func.func @f(%x: tensor<2x64xf32>, %w: {w_type}, {args}) -> tensor<2x{n}xf32> {{\n"
        f'  %0 = "rlx.dequant_matmul"(%x, %w, {names}) {{scheme = "{scheme}"{attrs}}} : '
        f"(tensor<2x64xf32>, {w_type}, {', '.join(side_types)}) -> tensor<2x{n}xf32>\n"
        f"  return %0 : tensor<2x{n}xf32>\n}}\n"
    )
    aot.export(text, str(tmp_path / "q.so"), target="cuda")
    assert b".visible .entry f_kernel" in (tmp_path / "q.so").read_bytes()
