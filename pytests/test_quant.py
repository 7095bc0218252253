"""Quantised weights: `rlx.dequant_matmul` over GGUF blocks against `gguf`'s own decoder, the byte
storage types (`i8`, `ui8`) at the numpy boundary and through `rlx.cast`, and the builder's methods.

The reference is independent of the lowering: `gguf.quants.dequantize` (llama.cpp's Python
decoder) turns the bytes into the f32 weight `W [N, K]`, and numpy computes `x @ W.T` in float64.
"""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir import GraphModule
from rlx_mlir.frontend.builder import BuildError

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as QT  # noqa: E402

GGUF_TYPES = {"q4_0": QT.Q4_0, "q8_0": QT.Q8_0, "q2_k": QT.Q2_K, "q3_k": QT.Q3_K, "q4_k": QT.Q4_K, "q5_k": QT.Q5_K, "q6_k": QT.Q6_K}
# Byte offsets of the f16 fields of each block (ggml-common.h).
F16_FIELDS = {"q4_0": (0,), "q8_0": (0,), "q2_k": (80, 82), "q3_k": (108,), "q4_k": (0, 2), "q5_k": (0, 2), "q6_k": (208,)}
M_SIZES = (1, 3, 8, 32)


def test_every_scheme_has_gguf_block_sizes():
    """The op's schemes are the ones tested here, with the block sizes of llama.cpp's own table."""
    from rlx_mlir.dialects.rlx.quant import GGUF_SCHEMES

    assert set(GGUF_SCHEMES) == set(GGUF_TYPES)
    for name, scheme in GGUF_SCHEMES.items():
        assert (scheme.block, scheme.block_bytes) == gguf.GGML_QUANT_SIZES[GGUF_TYPES[name]], name


def random_blocks(scheme: str, n: int, k: int, rng) -> np.ndarray:
    """Random valid blocks `u8 [N, K/block * block_bytes]`: every byte random, the f16 scales any finite half."""
    block, block_bytes = gguf.GGML_QUANT_SIZES[GGUF_TYPES[scheme]]
    raw = rng.integers(0, 256, size=(n, k // block, block_bytes), dtype=np.uint8)
    for offset in F16_FIELDS[scheme]:
        bits = rng.integers(0, 1 << 16, size=(n, k // block), dtype=np.uint16)
        bits[(bits & 0x7C00) == 0x7C00] &= 0xBBFF  # exponent all ones (inf, NaN): clear one exponent bit
        raw[:, :, offset : offset + 2] = bits.view(np.uint8).reshape(n, k // block, 2)
    weights = gguf.quants.dequantize(raw.reshape(n, -1), GGUF_TYPES[scheme])
    assert np.isfinite(weights).all()
    return raw.reshape(n, -1)


def reference(x: np.ndarray, w_bytes: np.ndarray, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """`x @ W.T` in float64 and a bound on f32 rounding: `|x| @ |W|.T` scaled by f32 epsilon * K."""
    w = gguf.quants.dequantize(w_bytes, GGUF_TYPES[scheme]).astype(np.float64)
    x64 = x.astype(np.float64)
    k = x.shape[-1]
    bound = (np.abs(x64) @ np.abs(w).T) * (k * np.finfo(np.float32).eps) + 1e-30
    return x64 @ w.T, bound


def _tensor(shape, dtype):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def _module(scheme: str, k: int, n: int, row_bytes: int) -> str:
    """`@f(x_1, x_3, x_8, x_32, w)`: one dequant_matmul per row count, all on one weight."""
    w = _tensor((n, row_bytes), "ui8")
    args = ", ".join(f"%x{m}: {_tensor((m, k), 'f32')}" for m in M_SIZES)
    results = ", ".join(_tensor((m, n), "f32") for m in M_SIZES)
    body = "".join(
        f'  %r{m} = "rlx.dequant_matmul"(%x{m}, %w) {{scheme = "{scheme}"}} : ({_tensor((m, k), "f32")}, {w}) -> {_tensor((m, n), "f32")}\n'
        for m in M_SIZES
    )
    values = ", ".join(f"%r{m}" for m in M_SIZES)
    return f"func.func @f({args}, %w: {w}) -> ({results}) {{\n{body}  return {values} : {results}\n}}\n"


@pytest.mark.parametrize("k, n", [(256, 7), (512, 13)])
@pytest.mark.parametrize("scheme", sorted(GGUF_TYPES))
def test_dequant_matmul_matches_gguf(scheme, k, n):
    rng = np.random.default_rng([k, n, *scheme.encode()])
    w = random_blocks(scheme, n, k, rng)
    exe = rlx_mlir.compile(_module(scheme, k, n, w.shape[1]), entry="f")
    xs = [rng.standard_normal((m, k)).astype(np.float32) for m in M_SIZES]
    outs = exe(*xs, w)
    for x, out in zip(xs, outs):
        expected, bound = reference(x, w, scheme)
        assert out.dtype == np.float32 and out.shape == expected.shape
        np.testing.assert_array_less(np.abs(out - expected), bound, err_msg=f"{scheme} M={x.shape[0]} K={k} N={n}")


@pytest.mark.parametrize("n", [7, 6, 8])
@pytest.mark.parametrize("scale", [2.0**-120, 2.0**-60, 1.0, 2.0**60])
def test_q4_k_gemv_keeps_f32_accuracy_at_extreme_magnitudes(n, scale):
    """The Q4_K GEMV (1, 2 or 4 weight rows per body: N = 7, 6, 8) scales x and the block scales by
    powers of two inside the kernel; the result stays within f32 rounding of the float64 product
    (relative: no absolute slack) for x from 2^-120 (products near the f32 subnormals) to 2^60."""
    from rlx_mlir import quant

    k = 512
    rng = np.random.default_rng([n, int(np.log2(scale)) + 200])
    w = quant.quantize(rng.standard_normal((n, k)).astype(np.float32), "q4_k")
    x = (rng.standard_normal((1, k)) * scale).astype(np.float32)
    g = GraphModule.mir("gemv")
    g.set_outputs(g.dequant_matmul(g.input("x", (1, k)), g.param("w", w.shape, "u8"), "q4_k"))
    out = g.compile()(x=x, w=w)
    expected, _ = reference(x, w, "q4_k")
    weights = gguf.quants.dequantize(w, GGUF_TYPES["q4_k"]).astype(np.float64)
    bound = (np.abs(x.astype(np.float64)) @ np.abs(weights).T) * (k * np.finfo(np.float32).eps)
    np.testing.assert_array_less(np.abs(out - expected), bound, err_msg=f"N={n} scale={scale}")


@pytest.mark.parametrize("m", [12, 16])
@pytest.mark.parametrize("scheme", ["q8_0", "q4_k", "q6_k"])
def test_dequant_matmul_blocked_rows_and_k(scheme, m):
    """Shapes that make the kernel tile x's rows (4 or 8 per step, several tiles), cut K into chunks
    whose partial sums add up (K = 1024: 2 chunks for Q8_0 and Q4_K with 8-row tiles) and the
    weight's rows into panels (N = 72: 2 panels of 36)."""
    k, n = 1024, 72
    rng = np.random.default_rng([m, *scheme.encode()])
    w = random_blocks(scheme, n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    g = GraphModule.mir("blocked")
    g.set_outputs(g.dequant_matmul(g.input("x", (m, k)), g.param("w", w.shape, "u8"), scheme))
    out = g.compile()(x=x, w=w)
    expected, bound = reference(x, w, scheme)
    np.testing.assert_array_less(np.abs(out - expected), bound, err_msg=f"{scheme} M={m}")


def test_dequant_matmul_known_block():
    """One hand-made Q8_0 block: d = 0.5 and codes -3, 0, 1, ..., so the weight row is known exactly."""
    codes = np.arange(-3, 29, dtype=np.int8)
    block = np.concatenate([np.array([0.5], np.float16).view(np.uint8), codes.view(np.uint8)])
    w = block.reshape(1, 34)
    g = GraphModule.mir("known")
    x = g.input("x", (1, 32))
    g.set_outputs(g.dequant_matmul(x, g.param("w", (1, 34), "u8"), "q8_0"))
    xv = np.zeros((1, 32), np.float32)
    xv[0, 0], xv[0, 5] = 1.0, 2.0  # weights -1.5 and 1.0
    np.testing.assert_array_equal(g.compile()(x=xv, w=w), [[-1.5 + 2.0]])


def test_builder_dequant_linear_and_matmul():
    """HIR `dequant_linear` (bias, activation) and MIR `dequant_matmul` on a rank-3 and a rank-1 x."""
    rng = np.random.default_rng(5)
    k, n = 256, 9
    w = random_blocks("q4_k", n, k, rng)
    g = GraphModule.hir("qlinear")
    x = g.input("x", (2, 3, k))
    v = g.input("v", (k,))
    wq = g.param("w", w.shape, "u8")
    b = g.param("b", (n,))
    y = g.dequant_linear(x, wq, "q4_k", bias=b, activation="relu")
    z = g.dequant_matmul(v, wq, "q4_k")
    assert y.shape == (2, 3, n) and z.shape == (n,) and wq.dtype == "ui8"
    g.set_outputs([y, z])
    exe = g.compile()
    xv = rng.standard_normal((2, 3, k)).astype(np.float32)
    vv = rng.standard_normal(k).astype(np.float32)
    bv = rng.standard_normal(n).astype(np.float32)
    yo, zo = exe(x=xv, v=vv, w=w, b=bv)
    expected, bound = reference(xv.reshape(-1, k), w, "q4_k")
    relu = np.maximum(expected + bv, 0).reshape(2, 3, n)
    np.testing.assert_array_less(np.abs(yo - relu), bound.reshape(2, 3, n) + 1e-6)
    expected, bound = reference(vv[None], w, "q4_k")
    np.testing.assert_array_less(np.abs(zo - expected[0]), bound[0])


def test_builder_rejects_bad_byte_count():
    g = GraphModule.hir("bad")
    x = g.input("x", (2, 512))
    w = g.param("w", (4, 290), "u8")
    with pytest.raises(BuildError, match=r"scheme 'q4_k' needs 288 bytes per weight row for K = 512 \(2 blocks of 144 bytes\), but w has 290"):
        g.dequant_matmul(x, w, "q4_k")
    with pytest.raises(BuildError, match=r"scheme 'q8_0' packs blocks of 32 weights, but K = 48 is not a multiple of 32"):
        g.dequant_linear(g.input("x48", (48,)), w, "q8_0")
    with pytest.raises(BuildError, match=r"must be one of 'q4_0', 'q8_0', 'q2_k', 'q3_k', 'q4_k', 'q5_k', 'q6_k', but got 'q3_x'"):
        g.dequant_matmul(x, g.param("w2", (4, 288), "u8"), "q3_x")


def test_wrong_weight_dtype_is_a_build_error():
    """The builder verifies each op as it builds it: a weight of the wrong dtype is a BuildError at the
    call that built the op, inside its named block, and the rejected op is not left in the module.
    The same op read as text (rlx-opt, compile of a string) is still the compiler's located diagnostic."""
    g = GraphModule.hir("signed")
    x, w = g.input("x", (2, 512)), g.param("w", (4, 288), "i8")
    with pytest.raises(BuildError, match=r"^block 'proj': 'rlx.dequant_matmul' op operand 'w' must be a ranked tensor "
                                         r"of ui8, but got tensor<4x288xi8>$"):
        g.named("proj", lambda: g.dequant_matmul(x, w, "q4_k"))
    assert "rlx.dequant_matmul" not in str(g)

    good = GraphModule.hir("signed")
    good.set_outputs(good.dequant_matmul(good.input("x", (2, 512)), good.param("w", (4, 288), "u8"), "q4_k"))
    text = str(good).replace("x288xui8>", "x288xi8>")
    with pytest.raises(rlx_mlir.CompileError, match=r"<string>:3:\d+: error: 'rlx.dequant_matmul' op operand 'w' must be "
                                                    r"a ranked tensor of ui8, but got tensor<4x288xi8>"):
        rlx_mlir.compile(text, entry="signed")


def test_byte_arguments_at_the_numpy_boundary():
    """A ui8 argument takes numpy uint8 and rejects int8 (and the reverse for i8), naming the argument;
    ui8 and i8 results come back as uint8 and int8 arrays."""
    text = """
func.func @f(%u: tensor<4xui8> {rlx.name = "u"}, %s: tensor<4xi8> {rlx.name = "s"}) -> (tensor<4xi8>, tensor<4xui8>) {
  %0 = "rlx.cast"(%u) : (tensor<4xui8>) -> tensor<4xi8>
  %1 = "rlx.cast"(%s) : (tensor<4xi8>) -> tensor<4xui8>
  return %0, %1 : tensor<4xi8>, tensor<4xui8>
}
"""
    exe = rlx_mlir.compile(text, entry="f")
    uv = np.array([0, 1, 200, 255], np.uint8)
    sv = np.array([-128, -1, 0, 127], np.int8)
    as_signed, as_unsigned = exe(u=uv, s=sv)
    assert as_signed.dtype == np.int8 and as_unsigned.dtype == np.uint8
    np.testing.assert_array_equal(as_signed, uv.view(np.int8))
    np.testing.assert_array_equal(as_unsigned, sv.view(np.uint8))
    with pytest.raises(ValueError, match="'u'.*ui8.*int8"):
        exe(u=uv.view(np.int8), s=sv)
    with pytest.raises(ValueError, match="'s'.*i8.*uint8"):
        exe(u=uv, s=sv.view(np.uint8))


CAST_SOURCE = np.array([0, 1, 127, 128, 200, 255], np.uint8)


@pytest.mark.parametrize(
    "source, target, expected",
    [
        ("ui8", "f32", CAST_SOURCE.astype(np.float32)),  # zero-extends
        ("i8", "f32", CAST_SOURCE.view(np.int8).astype(np.float32)),  # sign-extends
        ("ui8", "i32", CAST_SOURCE.astype(np.int32)),
        ("i8", "i64", CAST_SOURCE.view(np.int8).astype(np.int64)),
        ("ui8", "i8", CAST_SOURCE.view(np.int8)),  # same bits
        ("ui8", "i1", CAST_SOURCE != 0),
    ],
)
def test_cast_from_bytes(source, target, expected):
    text = (
        f"func.func @f(%a: tensor<6x{source}>) -> tensor<6x{target}> {{\n"
        f'  %0 = "rlx.cast"(%a) : (tensor<6x{source}>) -> tensor<6x{target}>\n'
        f"  return %0 : tensor<6x{target}>\n}}\n"
    )
    value = CAST_SOURCE if source == "ui8" else CAST_SOURCE.view(np.int8)
    out = rlx_mlir.compile(text, entry="f")(value)
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(
    "source, target, values, expected",
    [
        ("f32", "ui8", np.array([0, 1.9, 127.5, 200.2, 255], np.float32), np.array([0, 1, 127, 200, 255], np.uint8)),
        ("f32", "i8", np.array([-128, -1.9, 0.5, 100.7, 127], np.float32), np.array([-128, -1, 0, 100, 127], np.int8)),
        ("i32", "ui8", np.array([0, 255, 256, 257, -1], np.int32), np.array([0, 255, 0, 1, 255], np.uint8)),  # low bits
    ],
)
def test_cast_to_bytes(source, target, values, expected):
    text = (
        f"func.func @f(%a: tensor<5x{source}>) -> tensor<5x{target}> {{\n"
        f'  %0 = "rlx.cast"(%a) : (tensor<5x{source}>) -> tensor<5x{target}>\n'
        f"  return %0 : tensor<5x{target}>\n}}\n"
    )
    out = rlx_mlir.compile(text, entry="f")(values)
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


def test_aot_export_with_a_quantised_weight(tmp_path):
    """The AOT manifest lists the ui8 weight as uint8; the loaded library runs it and checks its dtype."""
    import json

    from rlx_mlir import aot

    rng = np.random.default_rng(11)
    k, n = 64, 5
    w = random_blocks("q8_0", n, k, rng)
    text = f"""
func.func @q(%x: tensor<2x{k}xf32> {{rlx.name = "x"}}, %w: tensor<{n}x{w.shape[1]}xui8> {{rlx.name = "w", rlx.param}}) -> tensor<2x{n}xf32> {{
  %0 = "rlx.dequant_matmul"(%x, %w) {{scheme = "q8_0"}} : (tensor<2x{k}xf32>, tensor<{n}x{w.shape[1]}xui8>) -> tensor<2x{n}xf32>
  return %0 : tensor<2x{n}xf32>
}}
"""
    path = tmp_path / "q.so"
    aot.export(text, str(path), target="cpu")
    (function,) = json.loads(path.with_suffix(".json").read_text())["functions"]
    assert [(i["name"], i["dtype"]) for i in function["inputs"]] == [("x", "float32"), ("w", "uint8")]
    model = aot.load(str(path))
    x = rng.standard_normal((2, k)).astype(np.float32)
    expected, bound = reference(x, w, "q8_0")
    np.testing.assert_array_less(np.abs(model(x=x, w=w) - expected), bound)
    with pytest.raises(ValueError, match="uint8"):
        model(x=x, w=w.view(np.int8))


def test_symbolic_batch():
    """A symbolic batch dimension: one module, compiled per bound size, each against the reference."""
    rng = np.random.default_rng(13)
    k, n = 256, 5
    w = random_blocks("q6_k", n, k, rng)
    g = GraphModule.hir("sym")
    g.set_outputs(g.dequant_linear(g.input("x", ("B", k)), g.param("w", w.shape, "u8"), "q6_k"))
    exe = g.compile()
    for batch in (1, 4):
        x = rng.standard_normal((batch, k)).astype(np.float32)
        expected, bound = reference(x, w, "q6_k")
        np.testing.assert_array_less(np.abs(exe(x=x, w=w) - expected), bound)


@pytest.mark.parametrize("scheme", ["q4_0", "q3_k", "q4_k", "q6_k"])
def test_cuda_export_compiles_the_kernel(scheme, tmp_path):
    """Everywhere, GPU or not: the CUDA chain maps the decoding contraction to a kernel (PTX embedded)."""
    from rlx_mlir import aot

    k, n = 256, 3
    block, block_bytes = gguf.GGML_QUANT_SIZES[GGUF_TYPES[scheme]]
    w = _tensor((n, k // block * block_bytes), "ui8")
    text = (
        f"func.func @f(%x: tensor<2x{k}xf32>, %w: {w}) -> tensor<2x{n}xf32> {{\n"
        f'  %0 = "rlx.dequant_matmul"(%x, %w) {{scheme = "{scheme}"}} : (tensor<2x{k}xf32>, {w}) -> tensor<2x{n}xf32>\n'
        f"  return %0 : tensor<2x{n}xf32>\n}}\n"
    )
    manifest = aot.export(text, str(tmp_path / "q.so"), target="cuda")
    assert [i["dtype"] for i in manifest["functions"][0]["inputs"]] == ["float32", "uint8"]
    assert b".visible .entry f_kernel" in (tmp_path / "q.so").read_bytes()


def test_unsigned_byte_constants():
    """ui8 constants (dense and splat) keep their values above 127 through lowering."""
    text = """
func.func @f(%a: tensor<3xf32>) -> (tensor<3xf32>, tensor<2x2xf32>) {
  %c = "rlx.constant"() {value = dense<[0, 200, 255]> : tensor<3xui8>} : () -> tensor<3xui8>
  %s = "rlx.constant"() {value = dense<250> : tensor<2x2xui8>} : () -> tensor<2x2xui8>
  %0 = "rlx.cast"(%c) : (tensor<3xui8>) -> tensor<3xf32>
  %1 = "rlx.add"(%0, %a) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = "rlx.cast"(%s) : (tensor<2x2xui8>) -> tensor<2x2xf32>
  return %1, %2 : tensor<3xf32>, tensor<2x2xf32>
}
"""
    dense, splat = rlx_mlir.compile(text, entry="f")(np.array([1, 2, 3], np.float32))
    np.testing.assert_array_equal(dense, [1, 202, 258])
    np.testing.assert_array_equal(splat, np.full((2, 2), 250))


@pytest.mark.parametrize("m", [1, 3])
def test_rows_of_the_weight_split_between_threads(m):
    """A weight large enough to be split between 2 threads (N = 257 rows of Q4_K): the lowered
    code forks threads, and each chunk of rows decodes its own rows (odd N: unequal chunks)."""
    from mlir import ir

    from rlx_mlir.passmanager.pipeline import run_pipeline

    rng = np.random.default_rng(m)
    k, n = 256, 257
    w = random_blocks("q4_k", n, k, rng)
    text = (
        f"func.func @f(%x: tensor<{m}x{k}xf32>, %w: tensor<{n}x{w.shape[1]}xui8>) -> tensor<{m}x{n}xf32> {{\n"
        f'  %0 = "rlx.dequant_matmul"(%x, %w) {{scheme = "q4_k"}} : (tensor<{m}x{k}xf32>, tensor<{n}x{w.shape[1]}xui8>) -> tensor<{m}x{n}xf32>\n'
        f"  return %0 : tensor<{m}x{n}xf32>\n}}\n"
    )
    with rlx_mlir.make_context() as context, ir.Location.unknown(context):
        module = ir.Module.parse(text)
        run_pipeline(module.operation, "builtin.module(rlx-lower-to-llvm{threads=2})")
        assert "omp.parallel" in str(module)
    x = rng.standard_normal((m, k)).astype(np.float32)
    out = rlx_mlir.compile(text, entry="f", threads=2)(x, w)
    expected, bound = reference(x, w, "q4_k")
    np.testing.assert_array_less(np.abs(out - expected), bound)


@pytest.mark.parametrize("scheme", sorted(GGUF_TYPES))
def test_dequant_gather_decodes_the_picked_rows_like_gguf(scheme):
    """`rlx.dequant_gather` = `gguf`'s decode of the table, rows picked as `numpy.take(mode="clip")`."""
    rng = np.random.default_rng([7, *scheme.encode()])
    table = random_blocks(scheme, 9, 512, rng)
    indices = np.array([[3, 0, 8], [-4, 12, 3]], dtype=np.int64)  # repeats and out-of-range rows
    g = GraphModule("lookup")
    t, i = g.param("table", table.shape, "u8"), g.input("indices", indices.shape, "i64")
    g.set_outputs(g.dequant_gather(t, i, scheme))
    got = g.compile()(table=table, indices=indices)
    expected = np.take(gguf.quants.dequantize(table, GGUF_TYPES[scheme]), indices, axis=0, mode="clip")
    assert got.dtype == np.float32 and got.shape == (2, 3, 512)
    np.testing.assert_array_equal(got, expected)


def test_dequant_gather_rejects_a_partial_block():
    g = GraphModule("lookup")
    with pytest.raises(BuildError, match=r"scheme 'q8_0' packs blocks of 34 bytes, but a row of table has 35 bytes"):
        g.dequant_gather(g.param("table", (4, 35), "u8"), g.input("i", (2,), "i64"), "q8_0")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m", [16, 1])
@pytest.mark.parametrize("scheme", ["q8_0", "q4_k", "q6_k"])
def test_dequant_matmul_prime_n(scheme, m, threads):
    """N = 67 (prime, no divisor near the 64-row panels): with two row tiles of x (M = 16) the first
    64 weight rows and the last 3 are two products side by side (it was 67 panels of one row); with
    one row, one product of 1-row panels (lit_tests/linalg/odd-shape-tails.mlir)."""
    k, n = 512, 67
    rng = np.random.default_rng([m, threads, *scheme.encode()])
    w = random_blocks(scheme, n, k, rng)
    x = rng.standard_normal((m, k)).astype(np.float32)
    g = GraphModule.mir("prime")
    g.set_outputs(g.dequant_matmul(g.input("x", (m, k)), g.param("w", w.shape, "u8"), scheme))
    out = g.compile(threads=threads)(x=x, w=w)
    expected, bound = reference(x, w, scheme)
    assert out.shape == (m, n)
    np.testing.assert_array_less(np.abs(out - expected), bound, err_msg=f"{scheme} M={m} threads={threads}")
