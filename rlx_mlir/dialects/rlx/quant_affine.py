"""The side-tensor schemes of `rlx.dequant_matmul`: `int8/B`, `int8_asym/B`, `int4/B` and `nvfp4`.

Their weight is stored K-major, `[K, N]` (the orientation of `rlx.matmul`'s weight), as codes
with separate tensors of scales (and zero points) per block of `B` consecutive k, as
`rlx_mlir.quant.blockwise` and `rlx_mlir.quant.nvfp4` write them.  This module parses the scheme
names and checks an op's operands against a scheme; `rlx.dequant_matmul`'s description
documents the layouts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from mlir import ir

from ...dsl import AttrConstraint, VerifyError
from ...ir.shapes import DYNAMIC, format_shape, shape_of

KINDS = ("int8", "int8_asym", "int4")
NVFP4 = "nvfp4"
NVFP4_BLOCK = 16
_NAME = re.compile(r"(int8|int8_asym|int4)/([0-9]+)")


@dataclass(frozen=True)
class SideTensor:
    """One tensor after `w`: its name and element type; its shape is `[K / B, N]`."""

    name: str
    element: str

    def shape(self, k: int, n: int, block: int) -> list[int]:
        return [DYNAMIC if k == DYNAMIC else k // block, n]

    def spelled(self, block: int) -> str:
        return f"{self.name} [K / {block}, N] {self.element}"


@dataclass(frozen=True)
class AffineScheme:
    """`int8/B`, `int8_asym/B`, `int4/B` or `nvfp4`: codes `[K, N / codes_per_byte]` of
    `code_element`, then the `side` tensors."""

    name: str
    kind: str  # int8, int8_asym, int4, nvfp4
    block: int
    code_element: str  # i8 or ui8
    codes_per_byte: int  # 1, or 2 (4-bit codes packed along N)
    side: tuple[SideTensor, ...]


_SCALE = SideTensor("scale", "f32")
_ZP = SideTensor("zp", "f32")


def affine_scheme(name: str) -> Optional[AffineScheme]:
    """The scheme `name` spells, None for a name that is no side-tensor scheme (a GGUF one), and
    VerifyError for `int8/...` with a bad block."""
    if name == NVFP4:
        return AffineScheme(NVFP4, NVFP4, NVFP4_BLOCK, "ui8", 2, (SideTensor("scales", "ui8"),))
    kind = name.partition("/")[0]
    if kind not in KINDS:
        return None
    match = _NAME.fullmatch(name)
    if match is None or int(match.group(2)) == 0:
        raise VerifyError(f"bad scheme '{name}': expected '{kind}/B' with B, the block size along K, a positive integer (such as '{kind}/32')")
    block = int(match.group(2))
    if kind == "int8":
        return AffineScheme(name, kind, block, "i8", 1, (_SCALE,))
    if kind == "int8_asym":
        return AffineScheme(name, kind, block, "ui8", 1, (_SCALE, _ZP))
    return AffineScheme(name, kind, block, "ui8", 2, (_SCALE, _ZP))


def side_count(name: str) -> int:
    """How many tensors follow `w` for scheme `name` (0 for the GGUF schemes)."""
    scheme = affine_scheme(name)
    return 0 if scheme is None else len(scheme.side)


def scheme_attr(gguf_names: Sequence[str]) -> AttrConstraint:
    """The `scheme` attribute: a GGUF scheme name, `int8/B`, `int8_asym/B`, `int4/B` or `nvfp4`."""
    listed = ", ".join(f"'{v}'" for v in gguf_names)

    def to_python(attr: ir.Attribute) -> str:
        value = ir.StringAttr(attr).value
        if value in gguf_names:
            return value
        try:
            if affine_scheme(value) is not None:
                return value
        except VerifyError as error:
            raise ValueError(str(error)) from None
        raise ValueError(
            f"must be one of {listed}, but got '{value}' (nor is it a side-tensor scheme: 'nvfp4', or "
            "'int8/B', 'int8_asym/B', 'int4/B' with B the block size along K)"
        )

    class _SchemeAttr(AttrConstraint):
        def check(self, attr: ir.Attribute) -> Optional[str]:
            if not isinstance(attr, ir.StringAttr):
                return f"must be {self.summary}, but got {attr}"
            try:
                to_python(attr)
            except ValueError as error:
                return str(error)
            return None

    return _SchemeAttr(
        "a string attribute: a GGUF scheme (" + ", ".join(f'"{v}"' for v in gguf_names)
        + '), "int8/B", "int8_asym/B", "int4/B" (B: the block size along K) or "nvfp4"',
        "#builtin.string",
        lambda a: ir.StringAttr(a).value,
        lambda v: ir.StringAttr.get(str(v)),
    )


def _element(type_: ir.Type) -> str:
    return str(ir.RankedTensorType(type_).element_type) if isinstance(type_, ir.RankedTensorType) else str(type_)


def check_global_scale(scheme_name: str, global_scale: Optional[float]) -> None:
    """`global_scale` is given for nvfp4 and only for nvfp4."""
    if scheme_name == NVFP4 and global_scale is None:
        raise VerifyError("scheme 'nvfp4' requires the attribute 'global_scale' (the f32 scale of the whole weight)")
    if scheme_name != NVFP4 and global_scale is not None:
        raise VerifyError(f"attribute 'global_scale' is for scheme 'nvfp4' only, but the scheme is '{scheme_name}'")


def check_affine_operands(scheme: AffineScheme, k: int, w: ir.Type, side: Sequence[ir.Type], types: bool = True) -> int:
    """N, after checking `w` and the side tensors against `scheme` for K = `k` (their element
    types too, with `types`); VerifyError naming the scheme, what it expects and what it was given."""
    name = scheme.name
    if len(side) != len(scheme.side):
        wanted = ", ".join(s.spelled(scheme.block) for s in scheme.side)
        count = len(scheme.side)
        raise VerifyError(
            f"scheme '{name}' takes {count} tensor{'s' if count != 1 else ''} after w ({wanted}), but {len(side)} "
            f"{'was' if len(side) == 1 else 'were'} given"
        )
    if types and _element(w) != scheme.code_element:
        raise VerifyError(f"operand 'w' must be a ranked tensor of {scheme.code_element} for scheme '{name}', but got {w}")
    ws = shape_of(w)
    packed = "[K, N / 2] (two 4-bit codes per byte along N)" if scheme.codes_per_byte == 2 else "[K, N]"
    if len(ws) != 2:
        raise VerifyError(f"scheme '{name}' needs w of rank 2, {packed}, got {format_shape(ws)}")
    if k != DYNAMIC and k % scheme.block:
        raise VerifyError(f"scheme '{name}' has blocks of {scheme.block} along K, but K = {k} is not a multiple of {scheme.block}")
    if DYNAMIC not in (k, ws[0]) and ws[0] != k:
        raise VerifyError(f"scheme '{name}' needs w {packed} with K = {k} rows, but w has {ws[0]}")
    n = DYNAMIC if ws[1] == DYNAMIC else ws[1] * scheme.codes_per_byte
    for tensor, given in zip(scheme.side, side):
        expected = tensor.shape(k, n, scheme.block)
        if types and _element(given) != tensor.element:
            raise VerifyError(f"scheme '{name}' needs {tensor.name} of element type {tensor.element}, but got {given}")
        gs = shape_of(given)
        fits = len(gs) == len(expected) and all(DYNAMIC in (a, b) or a == b for a, b in zip(gs, expected))
        if not fits:
            rule = f"[K / {scheme.block}, N]"
            raise VerifyError(
                f"scheme '{name}' needs {tensor.name} of shape {rule} = {format_shape(expected)}, but got {format_shape(gs)}"
            )
    return n


__all__ = [
    "KINDS", "NVFP4", "AffineScheme", "SideTensor", "affine_scheme", "check_affine_operands", "check_global_scale",
    "scheme_attr", "side_count",
]
