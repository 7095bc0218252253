"""rlx-gpu-tile-matmul: matmuls as shared-memory tiled GPU kernels.

Replaces each `linalg.matmul` (C[m, n] += A[m, k] * B[k, n]),
`linalg.batch_matmul` (C[b, m, n] += A[b, m, k] * B[b, k, n]) and each
`linalg.generic` that is one in disguise (a multiply-accumulate body, one
reduction loop, every indexing map a permutation of its loops, a batch loop
possibly divided by a constant: attention's Q K^T and P V over heads
interleaved in the hidden dimension, grouped-query key/value heads,
transposed operands, several batch loops) on statically shaped float memrefs by a
`gpu.launch` of the classic tiled scheme, with a register tile of R x R
outputs per thread:

- blocks of T x T threads (T = `tile`), each block owning a (T*R) x (T*R) tile
  of C; a grid of ceil(N / TR) x ceil(M / TR) x batch blocks (the batch loops
  flattened into the z index, at most 65535 of them);
  thread (tx, ty) owns C[row0 + ty + T*i, col0 + tx + T*j] for i, j < R
  (strided, so a warp's loads and stores are contiguous);
- for each of the ceil(K / T) slices of K, the block stages the (TR) x T slice
  of A and the T x (TR) slice of B in workgroup (shared) memory, R elements per
  thread (zero outside the matrices), synchronises (`gpu.barrier`), and every
  thread accumulates its R x R sums over the T products from shared memory, in
  registers with fused multiply-adds (`math.fma`), then synchronises again;
- each thread adds its sums to C (linalg semantics: C accumulates).

R is the largest of `thread-tile`, ..., 2, 1 (powers of two) with T*R <= min(M, N),
halved while the grid has fewer than `min-blocks` blocks (default 132, an H100's
multiprocessors), so small matmuls keep one output per thread and a GPU's
multiprocessors all get work.  Operands are converted to C's
element type before multiplying, as `linalg.matmul` specifies (and a generic whose body widens an
f16 operand to an f32 sum with `arith.extf`, as attention's f16 scores and P.V do); products are
fused into the sum (one rounding instead of two, as cuBLAS does).  Each buffer is
indexed in its own dimension order, so no operand is transposed first.  Other
contractions (integer types, dynamic shapes, a body doing more than widen, multiply and add,
several reduction loops, broadcast operands) are left to the generic loop
mapping (one thread or block per output).
"""

from __future__ import annotations

import dataclasses
import math

from mlir import ir
from mlir.dialects import arith, linalg

from ...ir import dtypes
from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass, option


def _is_float(name: str) -> bool:
    entry = dtypes.element_type(name)
    return entry is not None and entry.is_float


def guarded_load(name: str, memref: str, indices: str, condition: str, type_: ir.MemRefType, target: str,
                 zero: str = "%zero") -> str:
    """MLIR text defining `name`: memref[indices] converted to `target` where `condition`, else `zero` (an SSA
    value of type `target`)."""
    source = str(type_.element_type)
    convert = ""
    value = "%v"
    if source != target:
        op = "arith.extf" if dtypes.byte_width(source) < dtypes.byte_width(target) else "arith.truncf"
        convert = f"\n          %w = {op} %v : {source} to {target}"
        value = "%w"
    return (f"{name} = scf.if {condition} -> ({target}) {{\n"
            f"          %v = memref.load {memref}[{indices}] : {type_}{convert}\n"
            f"          scf.yield {value} : {target}\n"
            f"        }} else {{\n          scf.yield {zero} : {target}\n        }}")


@dataclasses.dataclass(frozen=True)
class Contraction:
    """C[batch.., m, n] += A[..] * B[..] over k, in whatever index order each buffer holds its dimensions.

    `a_roles`, `b_roles`, `c_roles` name, per dimension of each buffer, the loop it is indexed by:
    "m", "n", "k", or "batch0", "batch1", ... (the batch loops, in C and in both operands); an operand shared by
    `g` consecutive entries of a batch loop (grouped-query attention's key/value heads) has "batch1/g"."""

    a: ir.MemRefType
    b: ir.MemRefType
    c: ir.MemRefType
    a_roles: tuple[str, ...]
    b_roles: tuple[str, ...]
    c_roles: tuple[str, ...]

    def size(self, role: str) -> int:
        for type_, roles in ((self.c, self.c_roles), (self.a, self.a_roles), (self.b, self.b_roles)):
            if role in roles:
                return type_.shape[roles.index(role)]
        raise KeyError(role)

    @property
    def batch_roles(self) -> list[str]:
        return [role for role in self.c_roles if role.startswith("batch")]


def index_list(roles: tuple[str, ...], names: dict[str, str]) -> str:
    return ", ".join(names[role] for role in roles)


def batch_indices(contraction: Contraction, flat: str, emit) -> dict[str, str]:
    """Emits (MLIR lines, through `emit`) the split of a kernel's flattened batch index `flat` (the grid's z
    index) into the batch loops, innermost last, and the divisions of grouped operands' batch loops; returns
    the SSA name of each batch role ("batch0", ..., "batch1/4")."""
    names = {}
    rest = flat
    for position, role in reversed(list(enumerate(contraction.batch_roles))):
        if position == 0:
            names[role] = rest
            break
        emit(f"    %{role}_size = arith.constant {contraction.size(role)} : index")
        emit(f"    %{role} = arith.remui {rest}, %{role}_size : index")
        emit(f"    %{role}_rest = arith.divui {rest}, %{role}_size : index")
        names[role], rest = f"%{role}", f"%{role}_rest"
    for grouped in sorted({r for r in contraction.a_roles + contraction.b_roles if "/" in r}):
        role, divisor = grouped.split("/")
        ssa = f"%{role}_by{divisor}"
        emit(f"    {ssa}_divisor = arith.constant {divisor} : index")
        emit(f"    {ssa} = arith.divui {names[role]}, {ssa}_divisor : index")
        names[grouped] = ssa
    return names


def _kernel(name: str, contraction: Contraction, tile: int, reg: int) -> str:
    a, b, c = contraction.a, contraction.b, contraction.c
    m, n, k = (contraction.size(role) for role in "mnk")
    batch_roles = contraction.batch_roles
    batch = math.prod(contraction.size(role) for role in batch_roles)
    tc = str(c.element_type)
    t, r = tile, reg
    span = t * r
    a_shared = f"memref<{span}x{t}x{tc}, #gpu.address_space<workgroup>>"
    b_shared = f"memref<{t}x{span}x{tc}, #gpu.address_space<workgroup>>"
    pairs = [(i, j) for i in range(r) for j in range(r)]
    acc = ", ".join(f"%acc{i}_{j}" for i, j in pairs)
    acc_init = ", ".join(f"%acc{i}_{j} = %zero" for i, j in pairs)
    acc_types = ", ".join([tc] * len(pairs))
    lines = []
    emit = lines.append
    emit(f"func.func private @{name}(%A: {a}, %B: {b}, %C: {c}) {{")
    emit("  %c0 = arith.constant 0 : index")
    emit("  %c1 = arith.constant 1 : index")
    emit(f"  %cT = arith.constant {t} : index")
    emit(f"  %cSpan = arith.constant {span} : index")
    emit(f"  %cM = arith.constant {m} : index")
    emit(f"  %cN = arith.constant {n} : index")
    emit(f"  %cK = arith.constant {k} : index")
    emit(f"  %gx = arith.constant {-(-n // span)} : index")
    emit(f"  %gy = arith.constant {-(-m // span)} : index")
    emit(f"  %gz = arith.constant {batch} : index")
    emit(f"  %slices = arith.constant {-(-k // t)} : index")
    emit(f"  %zero = arith.constant 0.0 : {tc}")
    for i in range(r):
        emit(f"  %off{i} = arith.constant {t * i} : index")
    emit("  gpu.launch blocks(%bx, %by, %bz) in (%sx = %gx, %sy = %gy, %sz = %gz)")
    emit("             threads(%tx, %ty, %tz) in (%ux = %cT, %uy = %cT, %uz = %c1)")
    emit(f"             workgroup(%As : {a_shared}, %Bs : {b_shared}) {{")
    emit("    %row_base = arith.muli %by, %cSpan : index")
    emit("    %col_base = arith.muli %bx, %cSpan : index")
    # The flattened batch index %bz split into the batch loops, innermost last.
    names = batch_indices(contraction, "%bz", emit)
    for i in range(r):  # this thread's rows and columns of C, and of the shared tiles
        emit(f"    %srow{i} = arith.addi %ty, %off{i} : index")
        emit(f"    %row{i} = arith.addi %row_base, %srow{i} : index")
        emit(f"    %row_in{i} = arith.cmpi ult, %row{i}, %cM : index")
        emit(f"    %scol{i} = arith.addi %tx, %off{i} : index")
        emit(f"    %col{i} = arith.addi %col_base, %scol{i} : index")
        emit(f"    %col_in{i} = arith.cmpi ult, %col{i}, %cN : index")
    emit(f"    %sums:{len(pairs)} = scf.for %s = %c0 to %slices step %c1 iter_args({acc_init}) -> ({acc_types}) {{")
    emit("      %k0 = arith.muli %s, %cT : index")
    emit("      %ka = arith.addi %k0, %tx : index")
    emit("      %ka_in = arith.cmpi ult, %ka, %cK : index")
    emit("      %kb = arith.addi %k0, %ty : index")
    emit("      %kb_in = arith.cmpi ult, %kb, %cK : index")
    for i in range(r):
        emit(f"      %a_in{i} = arith.andi %row_in{i}, %ka_in : i1")
        a_at = index_list(contraction.a_roles, {**names, "m": f"%row{i}", "k": "%ka"})
        emit("      " + guarded_load(f"%a{i}", "%A", a_at, f"%a_in{i}", a, tc))
        emit(f"      memref.store %a{i}, %As[%srow{i}, %tx] : {a_shared}")
        emit(f"      %b_in{i} = arith.andi %kb_in, %col_in{i} : i1")
        b_at = index_list(contraction.b_roles, {**names, "k": "%kb", "n": f"%col{i}"})
        emit("      " + guarded_load(f"%b{i}", "%B", b_at, f"%b_in{i}", b, tc))
        emit(f"      memref.store %b{i}, %Bs[%ty, %scol{i}] : {b_shared}")
    emit("      gpu.barrier")
    inner_init = ", ".join(f"%p{i}_{j} = %acc{i}_{j}" for i, j in pairs)
    emit(f"      %next:{len(pairs)} = scf.for %kk = %c0 to %cT step %c1 iter_args({inner_init}) -> ({acc_types}) {{")
    for i in range(r):
        emit(f"        %x{i} = memref.load %As[%srow{i}, %kk] : {a_shared}")
        emit(f"        %y{i} = memref.load %Bs[%kk, %scol{i}] : {b_shared}")
    for i, j in pairs:  # fused multiply-add: one rounding per step
        emit(f"        %q{i}_{j} = math.fma %x{i}, %y{j}, %p{i}_{j} : {tc}")
    emit(f"        scf.yield {', '.join(f'%q{i}_{j}' for i, j in pairs)} : {acc_types}")
    emit("      }")
    emit("      gpu.barrier")
    emit(f"      scf.yield {', '.join(f'%next#{p}' for p in range(len(pairs)))} : {acc_types}")
    emit("    }")
    for p, (i, j) in enumerate(pairs):
        emit(f"    %out_in{i}_{j} = arith.andi %row_in{i}, %col_in{j} : i1")
        c_at = index_list(contraction.c_roles, {**names, "m": f"%row{i}", "n": f"%col{j}"})
        emit(f"    scf.if %out_in{i}_{j} {{")
        emit(f"      %old{i}_{j} = memref.load %C[{c_at}] : {c}")
        emit(f"      %new{i}_{j} = arith.addf %old{i}_{j}, %sums#{p} : {tc}")
        emit(f"      memref.store %new{i}_{j}, %C[{c_at}] : {c}")
        emit("    }")
    emit("    gpu.terminator")
    emit("  }")
    emit("  return")
    emit("}")
    del acc
    return "\n".join(lines) + "\n"


def register_tile(m: int, n: int, tile: int, thread_tile: int, batch: int = 1, min_blocks: int = 0) -> int:
    """R: the largest power of two <= thread_tile with tile * R <= min(m, n) (at least 1), halved while the
    grid (ceil(m / TR) x ceil(n / TR) x batch blocks) has fewer than `min_blocks` blocks: a few large tiles
    leave most of a GPU's multiprocessors idle."""
    r = 1
    while r * 2 <= thread_tile and tile * r * 2 <= min(m, n):
        r *= 2
    while r > 1 and -(-m // (tile * r)) * -(-n // (tile * r)) * batch < min_blocks:
        r //= 2
    return r


# An H100 has 132 multiprocessors: a grid of fewer blocks leaves some idle.  Measured on an H100 (12-layer
# Llama-style model, 128 tokens, hidden 768): 14.8 ms with R as large as fits (a 128-row matmul was one row of
# 128 x 128 tiles, 6 blocks), 6.0 / 5.5 / 5.8 / 6.1 / 6.6 ms with 66 / 132 / 264 / 528 / 1056 blocks at least;
# a 4096^3 matmul keeps R = 8 (1024 blocks).
MIN_BLOCKS = 132
MAX_GRID_Z = 65535  # CUDA's limit on gridDim.z: the batch of one launch


def _static_float_memrefs(op: ir.Operation) -> list[ir.MemRefType] | None:
    types = [operand.type for operand in op.operands]
    if len(types) != 3 or not all(isinstance(t, ir.MemRefType) for t in types):
        return None
    types = [ir.MemRefType(t) for t in types]
    if not all(t.has_static_shape and _is_float(str(t.element_type)) for t in types):
        return None
    return types


def _named_contraction(op: ir.Operation) -> Contraction | None:
    """linalg.matmul / batch_matmul with their default maps."""
    if "indexing_maps" in op.attributes:  # transposed / broadcast variants: through the generic path below
        return None
    types = _static_float_memrefs(op)
    if types is None:
        return None
    if types[2].rank == 3:
        return Contraction(*types, ("batch0", "m", "k"), ("batch0", "k", "n"), ("batch0", "m", "n"))
    return Contraction(*types, ("m", "k"), ("k", "n"), ("m", "n"))


def _dims(map_attr: ir.Attribute) -> list[tuple[int, int]] | None:
    """(loop dimension, divisor) of each result of an indexing map: `d` is (d, 1), `d floordiv c` (grouped-query
    attention's key/value head) is (d, c); None for any other expression or a repeated dimension."""
    dims = []
    for expr in ir.AffineMapAttr(map_attr).value.results:
        if isinstance(expr, ir.AffineDimExpr):
            dims.append((expr.position, 1))
        elif (isinstance(expr, ir.AffineFloorDivExpr) and isinstance(expr.lhs, ir.AffineDimExpr)
              and isinstance(expr.rhs, ir.AffineConstantExpr) and expr.rhs.value > 0):
            dims.append((expr.lhs.position, expr.rhs.value))
        else:
            return None
    return dims if len({d for d, _ in dims}) == len(dims) else None


def _is_multiply_accumulate(op: ir.Operation) -> bool:
    """The body is `out + in0 * in1` (either operand order), each input possibly widened first (`arith.extf`
    to the output's type: f16 operands summed in f32), nothing else."""
    block = op.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    a, b, out = block.arguments
    widened = {}
    while ops and is_op(ops[0], arith.ExtFOp) and ops[0].operands[0] in (a, b):
        widened[ops[0].operands[0]] = ops[0].results[0]
        ops = ops[1:]
    if [o.name for o in ops] != ["arith.mulf", "arith.addf", "linalg.yield"]:
        return False
    mul, add, done = ops
    a, b = widened.get(a, a), widened.get(b, b)

    def is_pair(operands, x, y):
        return (operands[0] == x and operands[1] == y) or (operands[0] == y and operands[1] == x)

    return (is_pair(mul.operands, a, b) and is_pair(add.operands, out, mul.results[0])
            and done.operands[0] == add.results[0] and all(v.type == out.type for v in (a, b)))


def _generic_contraction(op: ir.Operation) -> Contraction | None:
    """A linalg.generic that is a (batched, transposed) matmul: one reduction loop k; every other loop in C
    and in A (the m loop), in B (the n loop) or in both (batch loops); each map a permutation of its
    loops; the body a multiply-accumulate, each operand of the result's float type or widened to it (attention's
    f32 probabilities times f16 values)."""
    types = _static_float_memrefs(op)
    if types is None or len(op.regions[0].blocks[0].arguments) != 3 or not _is_multiply_accumulate(op):
        return None
    maps = [_dims(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if any(m is None for m in maps):
        return None
    a_dims, b_dims, c_dims = ({d for d, _ in m} for m in maps)
    kinds = [str(kind) for kind in ir.ArrayAttr(op.attributes["iterator_types"])]
    reductions = [d for d, kind in enumerate(kinds) if "reduction" in kind]
    loops = set(range(len(kinds)))
    if len(reductions) != 1 or (a_dims | b_dims | c_dims) != loops:
        return None
    k = reductions[0]
    m_dims, n_dims = (a_dims & c_dims) - b_dims, (b_dims & c_dims) - a_dims
    batch = a_dims & b_dims & c_dims
    if (k in c_dims or k not in a_dims or k not in b_dims or len(m_dims) != 1 or len(n_dims) != 1
            or c_dims != batch | m_dims | n_dims or a_dims != batch | m_dims | {k} or b_dims != batch | n_dims | {k}):
        return None
    role = {k: "k", m_dims.pop(): "m", n_dims.pop(): "n"}
    role.update({d: f"batch{i}" for i, (d, _) in enumerate(r for r in maps[2] if r[0] in batch)})
    # Only a batch loop may be divided (an operand shared by a group of batch entries), and never in C.
    if any(divisor != 1 and (role[d] in "mnk" or m is maps[2]) for m in maps for d, divisor in m):
        return None
    roles = [tuple(role[d] if divisor == 1 else f"{role[d]}/{divisor}" for d, divisor in m) for m in maps]
    return Contraction(*types, *roles)


def contraction_of(op: ir.Operation) -> Contraction | None:
    if is_op(op, (linalg.MatmulOp, linalg.BatchMatmulOp)):
        found = _named_contraction(op)
    elif is_op(op, linalg.GenericOp):
        found = _generic_contraction(op)
    else:
        return None
    if found is None or math.prod(found.size(role) for role in found.batch_roles) > MAX_GRID_Z:
        return None
    return found


@dataclasses.dataclass(frozen=True)
class GpuTileMatmul(RlxPass):
    name = "rlx-gpu-tile-matmul"
    summary = "matmuls (named, batched, or generic contractions) on buffers as shared-memory tiled gpu.launch kernels"
    tile: int = option(16, "T: blocks of T x T threads; slices of K are T wide", minimum=1, maximum=32)
    thread_tile: int = option(8, "largest R: each thread accumulates R x R outputs in registers", minimum=1)
    min_blocks: int = option(
        MIN_BLOCKS, "R is halved while a matmul's grid has fewer blocks than this (0: R as large as fits)", minimum=0
    )

    def run(self, module: ir.Operation) -> None:
        def kernel(name: str, contraction: Contraction) -> str:
            batch = math.prod(contraction.size(role) for role in contraction.batch_roles)
            reg = register_tile(contraction.size("m"), contraction.size("n"), self.tile, self.thread_tile, batch,
                                self.min_blocks)
            return _kernel(name, contraction, self.tile, reg)

        replace_contractions(module, "__rlx_gpu_matmul", lambda contraction: True, kernel)


def replace_contractions(module: ir.Operation, prefix: str, takes, kernel) -> None:
    """Replaces every contraction (`contraction_of`) that `takes(contraction)` accepts by a call of a kernel
    function: `kernel(name, contraction)` is the MLIR text of `func.func private @name(%A, %B, %C)`, built
    once per distinct contraction and named `<prefix>_<n>`."""
    body = module.regions[0].blocks[0]
    kernels: dict[str, str] = {}
    for op in collect_ops(module, lambda o: is_op(o, (linalg.MatmulOp, linalg.BatchMatmulOp, linalg.GenericOp))):
        contraction = contraction_of(op)
        if contraction is None or not takes(contraction):
            continue
        key = repr(contraction)
        if key not in kernels:
            kernels[key] = f"{prefix}_{len(kernels)}"
            parsed = ir.Module.parse(kernel(kernels[key], contraction))  # alive while its ops move out
            for function in list(parsed.body.operations):
                function.operation.move_before(body.operations[0])
        with ir.InsertionPoint(op), op.location:
            ir.Operation.create("func.call", results=[], operands=list(op.operands),
                                attributes={"callee": ir.FlatSymbolRefAttr.get(kernels[key])})
        op.erase()
