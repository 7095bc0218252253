"""rlx-pack-matmul: f32 matmuls in the register-blocked, B-packed form of a GEMM kernel.

Each static f32 `linalg.matmul` C += A·B with A: [M, K], B: [K, N] becomes

    A' = A padded to [M', K']       -> viewed as [M'/MR, MR, K']        (tensor.expand_shape)
    Bp = B padded to K' rows, packed -> [N'/NR, K', NR]                 (linalg.pack; NR-wide column panels
                                                                         contiguous over K, N padded by the pack)
    C' = C padded to [M', N']       -> viewed as [M'/MR, MR, N'/NR, NR]
    C' += A'·Bp  as one 5-D linalg.generic over (M'/MR, N'/NR, K', MR, NR), K' reducing
    C  = C' collapsed to [M', N'] and sliced back to [M, N]

with M' = MR·⌈M/MR⌉, N' = NR·⌈N/NR⌉ and K' = KR·⌈K/KR⌉ (zero padding, so the sum is exact). A C that
is a zero fill (the plain product) is not filled in the end: `rlx-tile-matmul` starts the register
tiles of its first K block from zeros and stores them. The
generic is tagged `rlx.microkernel` so `rlx-tile-matmul` can tile and vectorize it into an
MR×NR register tile of FMAs (MR=8 rows of A broadcast against NR=32 packed B columns: 16 AVX-512
accumulators). Only B is packed: A and C are views, which measured fastest
(shared/reference/perf_anchors.md, P7). When A has fewer than `pack-rows` rows and B needs no
padding, B is not packed either but viewed as [k, n/NR, NR]: each panel is then reused by few
row blocks, and packing it (a transposing copy of all of B) would cost more than it saves.
Padding copies O(MK + KN + MN) elements, against the O(MNK) multiply-adds; shapes that already
divide are not padded.

An operand that is a `linalg.transpose` (the [1, 0] permutation: a dot_general contracting a
first dimension, as the weight gradient `x^T dy` of a training step) is read where it lies, not
copied transposed first: a transposed A, X^T with X: [K, M], is viewed as [K', M'/MR, MR] (the
MR values of one A column are then contiguous), and a transposed B, Y^T with Y: [N, K], is
packed straight from Y, the pack reading it transposed (`linalg.pack` of Y's rows into the same
[N'/NR, K', NR] panels).  The transposing copy it replaces was a separate strided pass, and
the packing a second one.

Matmuls below `min-flops` multiply-adds, or not in f32, are left to the scalar loops.

With `pack-params`, a B that is a parameter (`rlx.param`, followed into the layers it is passed to:
transforms/linalg/param_arguments.py) is always packed, whatever the rows of A: the packing op is
tagged `rlx.b_panels`, and `rlx-hoist-param-packing` moves it out of the function, into a companion
function run once when the weights are bound (`Executable.bind_params`).  Packed once, the
contiguous panels cost nothing per call.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from ...ir.attrs import KERNEL_ATTR, PACKED_ATTR, PANELS_ATTR
from ...ir.shapes import shape_of
from ...ir.walk import collect_ops
from ...passmanager.base import RlxPass, option
from .param_arguments import param_argument_of, param_arguments

MR, NR, KR = 8, 32, 4


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _pad(value: ir.Value, shape: list[int]) -> ir.Value:
    """`value` zero-padded at the high end up to `shape` (itself when it already has it)."""
    current = shape_of(value.type)
    if list(current) == list(shape):
        return value
    element = ir.RankedTensorType(value.type).element_type
    high = [target - size for size, target in zip(current, shape)]
    zero = arith.constant(element, 0.0)
    padded = tensor.PadOp(ir.RankedTensorType.get(shape, element), value, [], [], [0] * len(shape), high)
    block = padded.region.blocks.append(*[ir.IndexType.get()] * len(shape))
    with ir.InsertionPoint(block):
        tensor.YieldOp(zero)
    return padded.result


def matmul_operands(op: ir.Operation):
    """(A, B, C) of a static f32 2-D matmul with the default indexing, else None."""
    if len(op.operands) != 3 or ("indexing_maps" in op.attributes and _has_custom_maps(op)):
        return None
    a, b, c = op.operands
    f32 = ir.F32Type.get()
    for value in (a, b, c):
        if not isinstance(value.type, ir.RankedTensorType):
            return None
        shaped = ir.RankedTensorType(value.type)
        if shaped.rank != 2 or not shaped.has_static_shape or shaped.element_type != f32:
            return None
    return a, b, c


def _has_custom_maps(op: ir.Operation) -> bool:
    """True when the matmul carries explicit (transposing or broadcasting) indexing maps."""
    default = ["(d0, d1, d2) -> (d0, d2)", "(d0, d1, d2) -> (d2, d1)", "(d0, d1, d2) -> (d0, d1)"]
    maps = ir.ArrayAttr(op.attributes["indexing_maps"])
    return [str(ir.AffineMapAttr(m).value).replace("affine_map<", "").rstrip(">") for m in maps] != default


def transposed_source(value: ir.Value):
    """X when `value` is `linalg.transpose` of a 2-D X with the permutation [1, 0], else None."""
    if isinstance(value, ir.BlockArgument):
        return None
    op = value.owner.opview
    if not isinstance(op, linalg.TransposeOp) or list(op.permutation) != [1, 0]:
        return None
    return op.input


def _a_view(a: ir.Value, m: int, k: int, transposed: bool) -> tuple[ir.Value, list]:
    """A [m, k] as [m/MR, MR, k] (or, `transposed`, its source [k, m] as [k, m/MR, MR]) and the
    kernel's map of it over (m-block, n-panel, k, row, column)."""
    f32 = ir.F32Type.get()
    d = [ir.AffineDimExpr.get(i) for i in range(5)]
    if transposed:
        view = tensor.expand_shape(ir.RankedTensorType.get([k, m // MR, MR], f32), a, [[0], [1, 2]], [], [k, m // MR, MR])
        return view, [d[2], d[0], d[3]]
    view = tensor.expand_shape(ir.RankedTensorType.get([m // MR, MR, k], f32), a, [[0, 1], [2]], [], [m // MR, MR, k])
    return view, [d[0], d[3], d[2]]


def _kernel(a: ir.Value, panels: ir.Value, c: ir.Value, m: int, n: int, k: int, packed: bool,
            a_transposed: bool = False) -> ir.Value:
    """The 5-D generic C[m/MR, MR, n/NR, NR] += A[m/MR, MR, k] * B, B packed as [n/NR, k, NR]
    or, unpacked, viewed as [k, n/NR, NR]; with `a_transposed`, `a` is A's source [k, m]."""
    f32 = ir.F32Type.get()
    a_view, a_map = _a_view(a, m, k, a_transposed)
    c_view_type = ir.RankedTensorType.get([m // MR, MR, n // NR, NR], f32)
    c_view = tensor.expand_shape(c_view_type, c, [[0, 1], [2, 3]], [], [m // MR, MR, n // NR, NR])
    d = [ir.AffineDimExpr.get(i) for i in range(5)]  # (m-block, n-panel, k, row, column)
    maps = [
        ir.AffineMap.get(5, 0, a_map),
        ir.AffineMap.get(5, 0, [d[1], d[2], d[4]] if packed else [d[2], d[1], d[4]]),
        ir.AffineMap.get(5, 0, [d[0], d[3], d[1], d[4]]),
    ]
    par, red = ir.Attribute.parse("#linalg.iterator_type<parallel>"), ir.Attribute.parse(
        "#linalg.iterator_type<reduction>"
    )
    generic = linalg.GenericOp(
        [c_view_type],
        [a_view, panels],
        [c_view],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m_) for m_ in maps]),
        ir.ArrayAttr.get([par, par, red, par, par]),
    )
    block = generic.regions[0].blocks.append(f32, f32, f32)
    with ir.InsertionPoint(block):
        x, y, acc = block.arguments
        linalg.YieldOp([arith.addf(acc, arith.mulf(x, y))])
    generic.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
    generic.attributes[PACKED_ATTR] = ir.BoolAttr.get(packed)
    return tensor.collapse_shape(ir.RankedTensorType.get([m, n], f32), generic.result, [[0, 1], [2, 3]])


def pack_panels(b: ir.Value, kp: int, np_: int, tag: bool = False, transposed: bool = False) -> ir.Value:
    """B [k, n] as NR-wide column panels [np_/NR, kp, NR]: K zero-padded to kp rows, the last panel
    zero-padded; with `transposed`, `b` is B's source [n, k], its rows packed into the same
    panels; with `tag`, the packing op is tagged `rlx.b_panels`."""
    f32 = ir.F32Type.get()
    if transposed:
        padded = _pad(b, [shape_of(b.type)[0], kp])
        n_dim, outer = 0, [0, 1]
    else:
        padded = _pad(b, [kp, shape_of(b.type)[1]])
        n_dim, outer = 1, [1, 0]
    packed = tensor.empty([np_ // NR, kp, NR], f32)
    result = linalg.pack(
        padded,
        packed,
        inner_dims_pos=[n_dim],
        inner_tiles=[NR],
        padding_value=arith.constant(f32, 0.0),
        outer_dims_perm=outer,
    )
    if tag:
        result.owner.attributes[PANELS_ATTR] = ir.UnitAttr.get()
    return result


@dataclasses.dataclass(frozen=True)
class PackMatmul(RlxPass):
    name = "rlx-pack-matmul"
    summary = "Rewrite static f32 linalg.matmul into the B-packed, register-blocked GEMM form"
    creates_rlx_ops = False
    pack_rows: int = option(256, "pack B into panels when A has at least this many rows (else read B in place)", minimum=0)
    min_flops: int = option(32 * 32 * 32, "leave matmuls with fewer multiply-adds (M·N·K) to the scalar loops", minimum=0)
    pack_params: bool = option(False, "always pack a B that is a parameter (for rlx-hoist-param-packing to pack once)")

    def run(self, module: ir.Operation) -> bool:
        changed = False
        params = param_arguments(module) if self.pack_params else set()
        for op in collect_ops(module, linalg.MatmulOp):
            operands = matmul_operands(op)
            if operands is None:
                continue
            a, b, c = operands
            (m, k), (_, n) = shape_of(a.type), shape_of(b.type)
            if m * n * k < self.min_flops:
                continue
            mp, np_, kp = _round_up(m, MR), _round_up(n, NR), _round_up(k, KR)
            # Packing B pays off when its panels are reused by many row blocks; a B that needs
            # no padding is otherwise read in place, as a view.
            param = param_argument_of(b, params) is not None
            a_source, b_source = transposed_source(a), transposed_source(b)
            # A transposed B cannot be read in place: its panels are always packed.
            packed = m >= self.pack_rows or (np_, kp) != (n, k) or param or b_source is not None
            with ir.InsertionPoint(op), op.location:
                if b_source is not None:
                    panels = pack_panels(b_source, kp, np_, transposed=True)
                elif packed:
                    panels = pack_panels(b, kp, np_, tag=param)
                else:
                    f32 = ir.F32Type.get()
                    panels = tensor.expand_shape(
                        ir.RankedTensorType.get([k, n // NR, NR], f32), b, [[0], [1, 2]], [], [k, n // NR, NR]
                    )
                padded_a = _pad(a, [mp, kp]) if a_source is None else _pad(a_source, [kp, mp])
                product = _kernel(padded_a, panels, _pad(c, [mp, np_]), mp, np_, kp, packed, a_source is not None)
                if (mp, np_) != (m, n):
                    product = tensor.extract_slice(
                        ir.RankedTensorType(c.type), product, [], [], [], [0, 0], [m, n], [1, 1]
                    )
            op.results[0].replace_all_uses_with(product)
            op.erase()
            changed = True
        return changed
