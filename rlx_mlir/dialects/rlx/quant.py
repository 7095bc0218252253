"""Quantised weights: matmuls whose weight is stored as packed blocks of bytes."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ...dsl import ByteTensor, F32Attr, IntTensor, Pure, StrEnumAttr, TensorOf, VerifyError, attribute, operand, result
from ...ir.shapes import DYNAMIC, format_shape, shape_of
from .dialect import Rlx
from .quant_affine import affine_scheme, check_affine_operands, check_global_scale, scheme_attr


@dataclass(frozen=True)
class BlockScheme:
    """A quantisation scheme that stores a row of weights as blocks of `block` weights in `block_bytes` bytes."""

    name: str
    block: int  # weights per block
    block_bytes: int  # bytes per block

    def row_bytes(self, k: int) -> int:
        """Bytes of one weight row of `k` weights (`k` a multiple of `block`)."""
        return k // self.block * self.block_bytes


# GGUF's block formats (ggml-common.h), the sizes of gguf.GGML_QUANT_SIZES.
GGUF_SCHEMES: dict[str, BlockScheme] = {
    s.name: s
    for s in (
        BlockScheme("q4_0", 32, 18),
        BlockScheme("q8_0", 32, 34),
        BlockScheme("q2_k", 256, 84),
        BlockScheme("q3_k", 256, 110),
        BlockScheme("q4_k", 256, 144),
        BlockScheme("q5_k", 256, 176),
        BlockScheme("q6_k", 256, 210),
    )
}


# `activations`: the f32 default, and the schemes that can multiply 8-bit activations instead.
ACTIVATION_MODES = ("f32", "q8")
Q8_ACTIVATION_SCHEMES = ("q4_k",)


class DequantMatmulOp(Rlx.Operation, name="dequant_matmul", traits=[Pure]):
    """Matrix product with a quantised weight: GGUF blocks (`x @ dequant(w).T`) or codes with side tensors.

    `x` is `[..., K]` f32 (rank 1 or more; leading dimensions are batch).  With
    a GGUF scheme, `w` holds the weight `W [N, K]` (GGUF's orientation: one row per output) as raw
    bytes, `ui8 [N, K / block * block_bytes]`: each row is its `K / block` blocks
    back to back, the rows back to back, exactly as a GGUF file stores the
    tensor.  The result is `[..., N]` f32, `result[..., n] = sum_k x[..., k] *
    W[n, k]` with `W` decoded as below and products accumulated in f32.  K must
    be a multiple of the scheme's block size and `w` must have exactly the
    bytes the scheme needs (the verifier says how many).

    Block layouts (`scheme`), as ggml defines them (ggml-common.h, decoded as
    `dequantize_row_*` in ggml-quants.c).  All multi-byte fields are little
    endian; `f16` is an IEEE half; `e` is the weight's index in its block:

    - `q4_0`: 32 weights in 18 bytes.  Bytes 0-1: f16 scale `d`; bytes 2-17:
      `qs[16]`, two 4-bit codes per byte.  Weight `e < 16` is the low nibble
      of `qs[e]`, weight `e >= 16` the high nibble of `qs[e - 16]`; its value
      is `d * (code - 8)`.
    - `q8_0`: 32 weights in 34 bytes.  Bytes 0-1: f16 scale `d`; bytes 2-33:
      `qs[32]`, signed bytes.  Weight `e` is `d * qs[e]`.
    - `q2_k`: 256 weights in 84 bytes, sixteen sub-blocks of 16.  Bytes 0-15:
      `scales[16]`, a 4-bit scale (low nibble) and a 4-bit min (high nibble)
      per sub-block; bytes 16-79: `qs[64]`, 2-bit codes; bytes 80-81: f16 `d`;
      bytes 82-83: f16 `dmin`.  With `e = 128 h + 32 g + 16 t + l` (`h < 2`,
      `g < 4`, `t < 2`, `l < 16`; sub-block `s = e / 16`), the code is bits
      `2 g`, `2 g + 1` of `qs[32 h + 16 t + l]` and the weight is `d *
      (scales[s] & 15) * code - dmin * (scales[s] >> 4)`.
    - `q3_k`: 256 weights in 110 bytes, sixteen sub-blocks of 16.  Bytes 0-31:
      `hmask[32]`, the third bits; bytes 32-95: `qs[64]`, the low 2 bits;
      bytes 96-107: `scales[12]`, sixteen 6-bit scales; bytes 108-109: f16 `d`.
      With `e`, `h`, `g`, `t`, `l`, `s` as `q2_k`: the low bits are bits `2 g`,
      `2 g + 1` of `qs[32 h + 16 t + l]`; the code is `low - 4` when bit `4 h
      + g` of `hmask[16 t + l]` is clear and `low` when it is set; the 6-bit
      scale is `(scales[s % 8] >> 4 (s / 8)) & 15 | ((scales[8 + s % 4] >> 2
      (s / 4)) & 3) << 4` and the weight is `d * (scale - 32) * code`.
    - `q4_k`: 256 weights in 144 bytes, eight sub-blocks of 32.  Bytes 0-1: f16
      `d`; bytes 2-3: f16 `dmin`; bytes 4-15: `scales[12]`, eight 6-bit scales
      and eight 6-bit mins; bytes 16-143: `qs[128]`, 4-bit codes.  Sub-block
      `s = e / 32` has scale `sc` and min `m` (ggml's `get_scale_min_k4`): for
      `s < 4`, `sc = scales[s] & 63`, `m = scales[s + 4] & 63`; for `s >= 4`,
      `sc = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4`, `m = (scales[s +
      4] >> 4) | (scales[s] >> 6) << 4`.  Its code is the low nibble (`s`
      even) or the high nibble (`s` odd) of `qs[32 * (s / 2) + e % 32]`.  The
      weight is `d * sc * code - dmin * m`.
    - `q5_k`: 256 weights in 176 bytes.  Bytes 0-1: f16 `d`; bytes 2-3: f16
      `dmin`; bytes 4-15: `scales[12]` as `q4_k`; bytes 16-47: `qh[32]`, the
      fifth bits; bytes 48-175: `qs[128]`, the low 4 bits as `q4_k`.  The code
      of weight `e` (sub-block `s = e / 32`) is its `q4_k` nibble plus 16 *
      bit `s` of `qh[e % 32]`; the weight is `d * sc * code - dmin * m`.
    - `q6_k`: 256 weights in 210 bytes, sixteen sub-blocks of 16.  Bytes
      0-127: `ql[128]`, the low 4 bits; bytes 128-191: `qh[64]`, the high 2
      bits; bytes 192-207: `scales[16]`, signed bytes; bytes 208-209: f16 `d`
      (last).  With `e = 128 h + 32 g + l` (`h < 2`, `g < 4`, `l < 32`): the
      low bits are the low nibble (`g < 2`) or high nibble (`g >= 2`) of
      `ql[64 h + 32 (g % 2) + l]`, the high bits are bits `2 g`, `2 g + 1` of
      `qh[32 h + l]`; the code is `low | high << 4` (0..63) and the weight is
      `d * scales[e / 16] * (code - 32)`.

    Activations (`activations`, optional): absent or `"f32"`, the product is
    the exact one above.  `"q8"` (opt-in, `q4_k` only) computes it as
    llama.cpp does: each row of x is cut into blocks of 256 (the weight's
    blocks), each block rounded to `q = roundeven(x * 127 / amax)` (`amax`
    its largest `|x|`; `q = 0` where `amax = 0`), and the codes' part of the
    product uses `q * amax / 127` for x: `result[..., n] = sum_s (d * sc_s *
    amax / 127) * sum_e code_e * q_e - sum_s dmin * m_s * sum_e x_e` (sums of
    integer products, the mins against the exact f32 x).  The result differs
    from the exact one by about 1% of its range; the kernel multiplies bytes
    (AVX-512 VNNI where the CPU has it).

    Side-tensor schemes (`rlx_mlir.quant.blockwise` and `rlx_mlir.quant.nvfp4`
    write them).  The weight is `W [K, N]` (K-major, the orientation of
    `rlx.matmul`'s weight: a row of codes per input feature), blocks of `B`
    consecutive k share a scale per column, and `result[..., n] = sum_k x[...,
    k] * W[k, n]`, accumulated in f32.  `w` holds the codes; the side tensors
    follow it as the operands `side`, in the order below.  `B` is any positive
    integer dividing K.  4-bit codes are packed two per byte along N: byte
    `w[k, j]` holds column `2 j` in its low nibble (`w[k, j] & 15`) and column
    `2 j + 1` in its high nibble (`w[k, j] >> 4`), so N is even and `w` is
    `[K, N / 2]`:

    - `int8/B`: `w` `i8 [K, N]`, codes -128..127; `scale` `f32 [K / B, N]`.
      `W[k, n] = w[k, n] * scale[k / B, n]` (symmetric: no zero point).
    - `int8_asym/B`: `w` `ui8 [K, N]`, codes 0..255; `scale` and `zp` `f32
      [K / B, N]`.  `W[k, n] = (w[k, n] - zp[k / B, n]) * scale[k / B, n]`.
    - `int4/B`: `w` `ui8 [K, N / 2]`, codes 0..15 packed as above; `scale` and
      `zp` `f32 [K / B, N]`; `W[k, n] = (code[k, n] - zp[k / B, n]) * scale[k /
      B, n]`.  The zero point is f32 (an integer value in code units, as the
      quantiser writes it; any value works): a symmetric int4 weight has `zp =
      8`, an asymmetric (GPTQ / AWQ style) one its own zero points.
    - `nvfp4`: `w` `ui8 [K, N / 2]`, 4-bit E2M1 codes packed as above (bit 3
      sign, bits 2-1 exponent, bit 0 mantissa: `code & 7` is 0, 0.5, 1, 1.5, 2,
      3, 4, 6 for 0..7, negated when `code & 8`); `scales` `ui8 [K / 16, N]`,
      one FP8 E4M3FN byte per 16 consecutive k per column (bit 7 sign, bits 6-3
      exponent `e`, bits 2-0 mantissa `m`, bias 7: `(m / 8) 2^-6` for `e = 0`,
      `(1 + m / 8) 2^(e - 7)` otherwise, NaN for `0x7F` / `0xFF`); and the
      attribute `global_scale` (f32).  `W[k, n] = e2m1(code[k, n]) *
      e4m3(scales[k / 16, n]) * global_scale`.  The scales are bytes, not
      MLIR's `f8E4M3FN`, which RLX's storage types do not include.

    Why the side tensors are one variadic operand `side` of this op, rather
    than a second op or named optional operands: one op keeps one lowering
    entry, one HIR expansion and one verifier for every quantised matmul, and
    a single variadic operand needs no `operandSegmentSizes` (named optional
    operands would, two or more of them), so the GGUF form `(x, w) {scheme}`
    is exactly what it was.  IRDL holds every tensor of a variadic operand to
    one type, which the scale and zero point (both `f32 [K / B, N]`) meet; the
    NVFP4 global scale, a `[1]` tensor, could not share it, so it is an
    attribute (a checkpoint's per-tensor scalar, known when the graph is
    built).  Which tensors `side` holds is fixed by the scheme, and the
    verifier checks their count, element types and shapes.
    """

    x = operand(TensorOf(("f32",)), "activations, `[..., K]`")
    w = operand(
        TensorOf(),
        "GGUF: the weight `[N, K]` as blocks, `[N, K / block * block_bytes]` bytes; "
        "side-tensor schemes: the codes, `[K, N]` (`[K, N / 2]` bytes for 4-bit codes)",
    )
    side = operand(
        TensorOf(("f32", "ui8")),
        "the scheme's side tensors `[K / B, N]`, in order: none (GGUF); `scale` (`int8/B`); `scale`, `zp` "
        "(`int8_asym/B`, `int4/B`); `scales` (`nvfp4`)",
        variadic=True,
    )
    scheme = attribute(scheme_attr(tuple(GGUF_SCHEMES)), "the format of `w` (and of the side tensors)")
    global_scale = attribute(F32Attr, "`nvfp4` only (and required there): the scale of the whole weight", optional=True)
    activations = attribute(
        StrEnumAttr(*ACTIVATION_MODES),
        "`\"f32\"` (absent: the default) multiplies f32 x by the exactly decoded weight; `\"q8\"` (`q4_k` only, "
        "opt-in: other numerics) first rounds x to 8 bits per block of 256, as llama.cpp's q8_K",
        optional=True,
    )
    result = result(TensorOf(("f32",)), "`[..., N]`")

    @classmethod
    def infer_result_type(cls, x: ir.Type, w: ir.Type, side: list, scheme: str, global_scale, activations=None) -> ir.Type:
        xs = shape_of(x)
        if len(xs) < 1:
            raise VerifyError(f"requires x of rank 1 or more, got {format_shape(xs)}")
        n = weight_columns(scheme, xs[-1], w, side, types=False)
        check_global_scale(scheme, global_scale)
        check_activations(scheme, activations)
        return ir.RankedTensorType.get([*xs[:-1], n], ir.F32Type.get())

    def verify(self) -> None:
        weight_columns(self.scheme, shape_of(self.x.type)[-1], self.w.type, [v.type for v in self.side])
        check_activations(self.scheme, self.activations)


def check_activations(scheme_name: str, activations) -> None:
    """VerifyError for `activations = "q8"` on a scheme without an 8-bit-activation kernel."""
    if activations == "q8" and scheme_name not in Q8_ACTIVATION_SCHEMES:
        raise VerifyError(
            f"activations = \"q8\" (8-bit activations) is implemented for scheme {', '.join(map(repr, Q8_ACTIVATION_SCHEMES))} "
            f"only, got scheme '{scheme_name}'"
        )


class DequantGatherOp(Rlx.Operation, name="dequant_gather", traits=[Pure]):
    """Picks rows of a GGUF-quantised table by index and decodes them: a quantised embedding lookup.

    `table` is `ui8 [V, K / block * block_bytes]`: `V` rows of `K` weights, each
    row its blocks back to back in the layout of `scheme` (as `rlx.dequant_matmul`'s
    `w`, whose description gives every layout; a GGUF `token_embd` tensor is
    stored this way).  The result is f32 `indices.shape + [K]` with

        result[i..., k] = decode(table)[clamp(indices[i...], 0, V - 1), k]

    i.e. `rlx.gather(decode(table), indices, axis = 0)` (same clamping of
    out-of-range indices) without decoding the rows nobody asked for: only the
    picked rows are read.
    """

    table = operand(ByteTensor, "the packed rows, `ui8 [V, K / block * block_bytes]`")
    indices = operand(IntTensor, "the rows to pick, any shape")
    scheme = attribute(StrEnumAttr(*GGUF_SCHEMES), "the block format of `table`")
    result = result(TensorOf(("f32",)), "`indices.shape + [K]`")

    @classmethod
    def infer_result_type(cls, table: ir.Type, indices: ir.Type, scheme: str) -> ir.Type:
        ts = shape_of(table)
        if len(ts) != 2:
            raise VerifyError(f"requires table of rank 2, [rows, bytes per row], got {format_shape(ts)}")
        if ts[0] == 0:
            raise VerifyError("cannot gather from a table with no rows")
        return ir.RankedTensorType.get([*shape_of(indices), packed_row_weights(scheme, ts[1], "table")], ir.F32Type.get())


def packed_row_weights(scheme_name: str, row_bytes: int, operand: str) -> int:
    """K, the weights in a packed GGUF row of `row_bytes` bytes (DYNAMIC stays DYNAMIC); VerifyError
    naming `operand` unless the row is a whole number of the scheme's blocks."""
    blocks = GGUF_SCHEMES[scheme_name]
    if row_bytes == DYNAMIC:
        return DYNAMIC
    if row_bytes % blocks.block_bytes:
        raise VerifyError(
            f"scheme '{scheme_name}' packs blocks of {blocks.block_bytes} bytes, but a row of {operand} has "
            f"{row_bytes} bytes, not a whole number of blocks"
        )
    return row_bytes // blocks.block_bytes * blocks.block


def weight_columns(scheme_name: str, k: int, w: ir.Type, side, types: bool = True) -> int:
    """N, the output width, after checking `w` and the side tensors against the scheme for K = `k`
    (their element types too, with `types`: the builder leaves those to the verifier)."""
    affine = affine_scheme(scheme_name)
    if affine is not None:
        return check_affine_operands(affine, k, w, list(side), types)
    if side:
        raise VerifyError(
            f"scheme '{scheme_name}' keeps its scales inside the blocks of w and takes no tensors after w, "
            f"but {len(side)} {'was' if len(side) == 1 else 'were'} given"
        )
    element = ir.RankedTensorType(w).element_type
    if types and str(element) != "ui8":
        raise VerifyError(f"operand 'w' must be a ranked tensor of ui8, but got {w}")
    ws = shape_of(w)
    if len(ws) != 2:
        raise VerifyError(f"requires w of rank 2, [N, bytes per row], got {format_shape(ws)}")
    check_weight_bytes(scheme_name, k, ws[1])
    return ws[0]


def check_weight_bytes(scheme_name: str, k: int, given: int) -> None:
    """VerifyError unless a row of `k` weights in `scheme_name` takes `given` bytes."""
    scheme = GGUF_SCHEMES[scheme_name]
    if k == DYNAMIC:
        return
    if k % scheme.block:
        raise VerifyError(
            f"scheme '{scheme.name}' packs blocks of {scheme.block} weights, but K = {k} is not a multiple of {scheme.block}"
        )
    if given != DYNAMIC and given != scheme.row_bytes(k):
        blocks = k // scheme.block
        raise VerifyError(
            f"scheme '{scheme.name}' needs {scheme.row_bytes(k)} bytes per weight row for K = {k} "
            f"({blocks} block{'s' if blocks != 1 else ''} of {scheme.block_bytes} bytes), but w has {given}"
        )


__all__ = ["ACTIVATION_MODES", "BlockScheme", "DequantGatherOp", "DequantMatmulOp", "GGUF_SCHEMES", "Q8_ACTIVATION_SCHEMES",
           "check_activations", "check_weight_bytes", "packed_row_weights",
           "weight_columns"]
