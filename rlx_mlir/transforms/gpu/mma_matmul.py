"""rlx-gpu-mma-matmul: f16 matmuls on tensor cores (warp-level `gpu.subgroup_mma_*`, WMMA m16n16k16).

Takes the contractions rlx-gpu-tile-matmul recognises (named `matmul` / `batch_matmul` and generic
contractions with permuted or grouped operands, see that pass) whose two operands are f16 and whose
result is f16 or f32, and replaces each by a `gpu.launch` of this scheme:

- blocks of warps (32 threads each, one dimension of threads) owning a BM x BN tile of C: 2 x 4 warps
  of 64 x 32 outputs (128 x 128), else 2 x 2 warps of 32 x 32 or of 16 x 16 while the grid would have fewer
  than `min-blocks` blocks; each warp holds its outputs as 16 x 16 accumulator fragments in f32
  (`!gpu.mma_matrix<16x16xf32, "COp">`);
- for each slice of BK = 32 along K, the block's threads stage the BM x BK slice of A and the BK x BN
  slice of B in workgroup memory (zero outside the matrices; 16-byte vector loads where an operand's
  staged dimension is its innermost one, a multiple of 8; otherwise each operand read element by
  element in its own dimension order, so transposed operands and grouped-query heads need no copy);
  each warp loads its fragments from there (`gpu.subgroup_mma_load_matrix`) and multiplies them into its
  accumulators (`gpu.subgroup_mma_compute`, 16 x 16 x 16 on the tensor cores), twice per slice.  The
  loads of slice s + 1 are issued into registers before slice s is multiplied (their latency hidden
  behind the tensor cores) and stored between two barriers;
- where C is f32, row-major, with M and N multiples of 16, each accumulator starts as its fragment of C
  and is stored back there; otherwise the accumulators go to a BM x BN f32 tile in workgroup memory and
  the block's threads add it to C element by element (linalg semantics: C accumulates), rounding once.

Rows of the workgroup tiles are padded by 8 halves / 4 floats, so a fragment's rows do not all start in the
same memory bank; the tiles are in memory space 3 (workgroup, as a number: `convert-vector-to-llvm` maps
no `#gpu.address_space`) and 32-byte aligned by rlx-gpu-align-workgroup-memory, as fragments need.
Buffers in global memory are at least 64-byte aligned (LIR slots, the device arena, cudaMalloc).

Products of f16 values are summed in f32, as rlx-gpu-tile-matmul's multiply-adds on widened operands do
(in another order); that pass takes what this one leaves (other types).  Needs a chip with tensor cores
(sm_70 or later; rlx-lower-to-nvvm turns it off below that).  convert-gpu-to-nvvm lowers the subgroup ops
to `nvvm.wmma.*`.
"""

from __future__ import annotations

import dataclasses
import math

from mlir import ir

from ...passmanager.base import RlxPass, option
from .tile_matmul import Contraction, batch_indices, guarded_load, index_list, replace_contractions

WARP = 32
FRAGMENT = 16  # m16n16k16
SLICE = 32  # BK: the K extent staged per step (two fragment steps)
PAD_F16, PAD_F32 = 8, 4  # row padding of the workgroup tiles (WMMA wants leading dimensions in 16 bytes)
VECTOR = 8  # halves per staging load where an operand's rows allow (16 bytes)


def takes(contraction: Contraction) -> bool:
    """f16 x f16 operands, an f16 or f32 result: what WMMA's f16 shapes multiply."""
    return (str(contraction.a.element_type) == "f16" and str(contraction.b.element_type) == "f16"
            and str(contraction.c.element_type) in ("f16", "f32"))


@dataclasses.dataclass(frozen=True)
class Shape:
    """A block of warps_m x warps_n warps, each with frags_m x frags_n 16 x 16 accumulators."""

    warps_m: int
    warps_n: int
    frags_m: int
    frags_n: int

    @property
    def bm(self) -> int:
        return self.warps_m * self.frags_m * FRAGMENT

    @property
    def bn(self) -> int:
        return self.warps_n * self.frags_n * FRAGMENT

    @property
    def threads(self) -> int:
        return self.warps_m * self.warps_n * WARP


# Largest first: 128 x 128 outputs per block (8 warps of 64 x 32), 64 x 64 (4 warps of 32 x 32), 32 x 32.
SHAPES = (Shape(2, 4, 4, 2), Shape(2, 2, 2, 2), Shape(2, 2, 1, 1))
SHARED_BYTES = 48 * 1024  # static workgroup memory a kernel may declare


def _identity(type_: ir.MemRefType) -> bool:
    """Row-major, no offset: the default layout."""
    layout = type_.layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value.is_permutation and all(
        isinstance(e, ir.AffineDimExpr) and e.position == i for i, e in enumerate(layout.value.results))


def vector_staged(contraction: Contraction, operand: str) -> bool:
    """Whether the operand's tile slices are read 8 halves at a time: its staged columns (k of A, n of B)
    are its innermost, contiguous dimension, a multiple of 8 long (so a vector never crosses a row and
    every vector starts 16-byte aligned)."""
    type_, roles, column = ((contraction.a, contraction.a_roles, "k") if operand == "a"
                            else (contraction.b, contraction.b_roles, "n"))
    return _identity(type_) and roles[-1] == column and type_.shape[-1] % VECTOR == 0


def direct_result(contraction: Contraction) -> bool:
    """Whether the accumulators start from C's fragments and go back to C without a workgroup tile: C is
    f32, row-major in (m, n) innermost, both multiples of 16 (a fragment is all in or all out)."""
    c = contraction.c
    return (str(c.element_type) == "f32" and _identity(c) and contraction.c_roles[-2:] == ("m", "n")
            and contraction.size("m") % FRAGMENT == 0 and contraction.size("n") % FRAGMENT == 0)


def _shared_bytes(shape: Shape, direct: bool) -> int:
    a = shape.bm * (SLICE + PAD_F16) * 2
    b = SLICE * (shape.bn + PAD_F16) * 2
    return a + b + (0 if direct else shape.bm * (shape.bn + PAD_F32) * 4)


def block_shape(contraction: Contraction, min_blocks: int) -> Shape:
    """The largest block tile whose grid has at least `min_blocks` blocks (and whose workgroup memory fits);
    the smallest when none has."""
    m, n = contraction.size("m"), contraction.size("n")
    batch = math.prod(contraction.size(role) for role in contraction.batch_roles)
    direct = direct_result(contraction)
    fitting = [s for s in SHAPES if _shared_bytes(s, direct) <= SHARED_BYTES]
    for shape in fitting:
        if -(-m // shape.bm) * -(-n // shape.bn) * batch >= min_blocks:
            return shape
    return fitting[-1]


def _kernel(name: str, contraction: Contraction, shape: Shape) -> str:
    a, b, c = contraction.a, contraction.b, contraction.c
    m, n, k = (contraction.size(role) for role in "mnk")
    batch_roles = contraction.batch_roles
    batch = math.prod(contraction.size(role) for role in batch_roles)
    bm, bn, bk, p = shape.bm, shape.bn, SLICE, shape.threads
    a_ld, b_ld, c_ld = bk + PAD_F16, bn + PAD_F16, bn + PAD_F32
    direct = direct_result(contraction)
    wg = 3  # workgroup memory, as a number: convert-vector-to-llvm (run on kernels first) maps no #gpu.address_space
    a_shared = f"memref<{bm}x{a_ld}xf16, {wg}>"
    b_shared = f"memref<{bk}x{b_ld}xf16, {wg}>"
    c_shared = f"memref<{bm}x{c_ld}xf32, {wg}>"
    a_frag = '!gpu.mma_matrix<16x16xf16, "AOp">'
    b_frag = '!gpu.mma_matrix<16x16xf16, "BOp">'
    c_frag = '!gpu.mma_matrix<16x16xf32, "COp">'
    pairs = [(i, j) for i in range(shape.frags_m) for j in range(shape.frags_n)]
    frag_types = ", ".join([c_frag] * len(pairs))
    constants: set[int] = set()

    def const(value: int) -> str:
        constants.add(value)
        return f"%c{value}"

    body = []
    emit = body.append
    workgroup = f"%As : {a_shared}, %Bs : {b_shared}" + ("" if direct else f", %Cs : {c_shared}")
    emit("  gpu.launch blocks(%bx, %by, %bz) in (%sx = %gx, %sy = %gy, %sz = %gz)")
    emit(f"             threads(%tx, %ty, %tz) in (%ux = {const(p)}, %uy = {const(1)}, %uz = {const(1)})")
    emit(f"             workgroup({workgroup}) {{")
    emit(f"    %row_base = arith.muli %by, {const(bm)} : index")
    emit(f"    %col_base = arith.muli %bx, {const(bn)} : index")
    names = batch_indices(contraction, "%bz", emit)
    # This warp's sub-tile of the block's tile of C: fragments at rows %fm<i>, columns %fn<j> of the tile.
    emit(f"    %warp = arith.divui %tx, {const(WARP)} : index")
    emit(f"    %warp_m = arith.divui %warp, {const(shape.warps_n)} : index")
    emit(f"    %warp_n = arith.remui %warp, {const(shape.warps_n)} : index")
    emit(f"    %fm0 = arith.muli %warp_m, {const(shape.frags_m * FRAGMENT)} : index")
    emit(f"    %fn0 = arith.muli %warp_n, {const(shape.frags_n * FRAGMENT)} : index")
    for i in range(1, shape.frags_m):
        emit(f"    %fm{i} = arith.addi %fm0, {const(FRAGMENT * i)} : index")
    for j in range(1, shape.frags_n):
        emit(f"    %fn{j} = arith.addi %fn0, {const(FRAGMENT * j)} : index")
    emit(f"    %zero_frag = gpu.subgroup_mma_constant_matrix %zero32 : {c_frag}")
    c_at = {}
    if direct:  # each accumulator starts as its fragment of C (a fragment outside C: skipped, uniformly per warp)
        for i, j in pairs:
            emit(f"    %grow{i}_{j} = arith.addi %row_base, %fm{i} : index")
            emit(f"    %gcol{i}_{j} = arith.addi %col_base, %fn{j} : index")
            emit(f"    %grow_in{i}_{j} = arith.cmpi ult, %grow{i}_{j}, {const(m)} : index")
            emit(f"    %gcol_in{i}_{j} = arith.cmpi ult, %gcol{i}_{j}, {const(n)} : index")
            emit(f"    %gin{i}_{j} = arith.andi %grow_in{i}_{j}, %gcol_in{i}_{j} : i1")
            c_at[i, j] = index_list(contraction.c_roles, {**names, "m": f"%grow{i}_{j}", "n": f"%gcol{i}_{j}"})
            emit(f"    %init{i}_{j} = scf.if %gin{i}_{j} -> ({c_frag}) {{")
            emit(f"      %f = gpu.subgroup_mma_load_matrix %C[{c_at[i, j]}] {{leadDimension = {n} : index}} : "
                 f"{c} -> {c_frag}")
            emit(f"      scf.yield %f : {c_frag}")
            emit(f"    }} else {{\n      scf.yield %zero_frag : {c_frag}\n    }}")
        init = ", ".join(f"%acc{i}_{j} = %init{i}_{j}" for i, j in pairs)
    else:
        init = ", ".join(f"%acc{i}_{j} = %zero_frag" for i, j in pairs)

    def stage(k0: str, tag: str, indent: str) -> list[str]:
        """Emits the loads of the slice of A (BM x BK) and B (BK x BN) starting at K index `k0`, row-major:
        thread tx loads (vectors of 8 halves of) elements tx + P * i of each, zero outside the matrices;
        returns the stores of what it loaded into the workgroup tiles (SSA names prefixed by `tag`)."""
        stores = []
        for x, rows, cols, shared in (("a", bm, bk, a_shared), ("b", bk, bn, b_shared)):
            width = VECTOR if vector_staged(contraction, x) else 1
            if x == "a":  # rows of A's tile are m, columns k
                outer, inner = ("m", "%row_base", m), ("k", k0, k)
            else:  # rows of B's tile are k, columns n
                outer, inner = ("k", k0, k), ("n", "%col_base", n)
            source, roles = (a, contraction.a_roles) if x == "a" else (b, contraction.b_roles)
            v = f"%{tag}{x}"
            for i in range(rows * cols // width // p):
                emit(f"{indent}{v}e{i} = arith.addi %tx, {const(p * i)} : index")
                emit(f"{indent}{v}r{i} = arith.divui {v}e{i}, {const(cols // width)} : index")
                if width == 1:
                    emit(f"{indent}{v}c{i} = arith.remui {v}e{i}, {const(cols)} : index")
                else:
                    emit(f"{indent}{v}v{i} = arith.remui {v}e{i}, {const(cols // width)} : index")
                    emit(f"{indent}{v}c{i} = arith.muli {v}v{i}, {const(width)} : index")
                emit(f"{indent}{v}{outer[0]}{i} = arith.addi {outer[1]}, {v}r{i} : index")
                emit(f"{indent}{v}{inner[0]}{i} = arith.addi {inner[1]}, {v}c{i} : index")
                emit(f"{indent}{v}in_r{i} = arith.cmpi ult, {v}{outer[0]}{i}, {const(outer[2])} : index")
                emit(f"{indent}{v}in_c{i} = arith.cmpi ult, {v}{inner[0]}{i}, {const(inner[2])} : index")
                emit(f"{indent}{v}in{i} = arith.andi {v}in_r{i}, {v}in_c{i} : i1")
                at = index_list(roles, {**names, outer[0]: f"{v}{outer[0]}{i}", inner[0]: f"{v}{inner[0]}{i}"})
                target = f"%{x.upper()}s[{v}r{i}, {v}c{i}]"
                if width == 1:
                    emit(indent + guarded_load(f"{v}x{i}", f"%{x.upper()}", at, f"{v}in{i}", source, "f16",
                                               zero="%zero16"))
                    stores.append(f"{indent}memref.store {v}x{i}, {target} : {shared}")
                else:
                    vector = f"vector<{width}xf16>"
                    emit(f"{indent}{v}x{i} = scf.if {v}in{i} -> ({vector}) {{")
                    emit(f"{indent}  %v = vector.load %{x.upper()}[{at}] {{alignment = 16 : i64}} : {source}, {vector}")
                    emit(f"{indent}  scf.yield %v : {vector}")
                    emit(f"{indent}}} else {{\n{indent}  scf.yield %zero16x8 : {vector}\n{indent}}}")
                    stores.append(f"{indent}vector.store {v}x{i}, {target} {{alignment = 16 : i64}} : {shared}, {vector}")
        return stores

    # Slice 0 staged before the loop; each iteration loads slice s + 1 into registers before multiplying
    # slice s out of workgroup memory (the loads' latency hidden behind the tensor cores), then, between
    # barriers, stores it there for the next iteration (past the last slice the loads are all masked).
    for line in stage(const(0), "p", "    "):
        emit(line)
    emit("    gpu.barrier")
    emit(f"    %sums:{len(pairs)} = scf.for %s = {const(0)} to %slices step {const(1)} iter_args({init}) "
         f"-> ({frag_types}) {{")
    emit(f"      %s_next = arith.addi %s, {const(1)} : index")
    emit(f"      %k_next = arith.muli %s_next, {const(bk)} : index")
    next_stores = stage("%k_next", "n", "      ")
    current = [f"%acc{i}_{j}" for i, j in pairs]
    for step, kk in enumerate(range(0, bk, FRAGMENT)):
        for i in range(shape.frags_m):
            emit(f"      %fa{step}_{i} = gpu.subgroup_mma_load_matrix %As[%fm{i}, {const(kk)}] "
                 f"{{leadDimension = {a_ld} : index}} : {a_shared} -> {a_frag}")
        for j in range(shape.frags_n):
            emit(f"      %fb{step}_{j} = gpu.subgroup_mma_load_matrix %Bs[{const(kk)}, %fn{j}] "
                 f"{{leadDimension = {b_ld} : index}} : {b_shared} -> {b_frag}")
        following = []
        for (i, j), acc in zip(pairs, current):
            emit(f"      %d{step}_{i}_{j} = gpu.subgroup_mma_compute %fa{step}_{i}, %fb{step}_{j}, {acc} : "
                 f"{a_frag}, {b_frag} -> {c_frag}")
            following.append(f"%d{step}_{i}_{j}")
        current = following
    emit("      gpu.barrier")
    body.extend(next_stores)
    emit("      gpu.barrier")
    emit(f"      scf.yield {', '.join(current)} : {frag_types}")
    emit("    }")
    if direct:
        for index, (i, j) in enumerate(pairs):
            emit(f"    scf.if %gin{i}_{j} {{")
            emit(f"      gpu.subgroup_mma_store_matrix %sums#{index}, %C[{c_at[i, j]}] {{leadDimension = {n} : index}} "
                 f": {c_frag}, {c}")
            emit("    }")
    else:
        emit_shared_epilogue(emit, const, contraction, shape, names, pairs, c_shared, c_ld, c_frag)
    emit("    gpu.terminator")
    emit("  }")
    head = [f"func.func private @{name}(%A: {a}, %B: {b}, %C: {c}) {{"]
    head += [f"  %c{value} = arith.constant {value} : index" for value in sorted(constants)]
    head += [f"  %gx = arith.constant {-(-n // bn)} : index",
             f"  %gy = arith.constant {-(-m // bm)} : index",
             f"  %gz = arith.constant {batch} : index",
             f"  %slices = arith.constant {-(-k // bk)} : index",
             "  %zero16 = arith.constant 0.0 : f16",
             f"  %zero16x8 = arith.constant dense<0.0> : vector<{VECTOR}xf16>",
             "  %zero32 = arith.constant 0.0 : f32"]
    return "\n".join(head + body + ["  return", "}"]) + "\n"


def emit_shared_epilogue(emit, const, contraction: Contraction, shape: Shape, names: dict, pairs, c_shared: str,
                         c_ld: int, c_frag: str) -> None:
    """C += the accumulators through a BM x BN f32 tile in workgroup memory: each thread adds elements
    tx + P * i of the tile to C (converted to C's type once, ragged edges skipped)."""
    c, tc = contraction.c, str(contraction.c.element_type)
    m, n = contraction.size("m"), contraction.size("n")
    bn, p = shape.bn, shape.threads
    for index, (i, j) in enumerate(pairs):
        emit(f"    gpu.subgroup_mma_store_matrix %sums#{index}, %Cs[%fm{i}, %fn{j}] "
             f"{{leadDimension = {c_ld} : index}} : {c_frag}, {c_shared}")
    emit("    gpu.barrier")
    for i in range(shape.bm * bn // p):
        emit(f"    %ce{i} = arith.addi %tx, {const(p * i)} : index")
        emit(f"    %cr{i} = arith.divui %ce{i}, {const(bn)} : index")
        emit(f"    %cc{i} = arith.remui %ce{i}, {const(bn)} : index")
        emit(f"    %crow{i} = arith.addi %row_base, %cr{i} : index")
        emit(f"    %ccol{i} = arith.addi %col_base, %cc{i} : index")
        emit(f"    %crow_in{i} = arith.cmpi ult, %crow{i}, {const(m)} : index")
        emit(f"    %ccol_in{i} = arith.cmpi ult, %ccol{i}, {const(n)} : index")
        emit(f"    %cin{i} = arith.andi %crow_in{i}, %ccol_in{i} : i1")
        at = index_list(contraction.c_roles, {**names, "m": f"%crow{i}", "n": f"%ccol{i}"})
        emit(f"    scf.if %cin{i} {{")
        emit(f"      %sum{i} = memref.load %Cs[%cr{i}, %cc{i}] : {c_shared}")
        emit(f"      %old{i} = memref.load %C[{at}] : {c}")
        if tc == "f32":
            emit(f"      %new{i} = arith.addf %old{i}, %sum{i} : f32")
        else:
            emit(f"      %wide{i} = arith.extf %old{i} : {tc} to f32")
            emit(f"      %add{i} = arith.addf %wide{i}, %sum{i} : f32")
            emit(f"      %new{i} = arith.truncf %add{i} : f32 to {tc}")
        emit(f"      memref.store %new{i}, %C[{at}] : {c}")
        emit("    }")


@dataclasses.dataclass(frozen=True)
class GpuMmaMatmul(RlxPass):
    name = "rlx-gpu-mma-matmul"
    summary = "f16 matmuls (named, batched, or generic contractions) as tensor-core gpu.launch kernels (WMMA)"
    min_blocks: int = option(
        132, "a block's tile of C shrinks (128 x 128, 64 x 64, 32 x 32) while a grid has fewer blocks", minimum=0
    )

    def run(self, module: ir.Operation) -> None:
        replace_contractions(module, "__rlx_gpu_mma_matmul", takes,
                             lambda name, contraction: _kernel(name, contraction, block_shape(contraction, self.min_blocks)))
