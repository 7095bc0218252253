"""rlx-gpu-tile-matmul: matmuls as shared-memory tiled GPU kernels.

Replaces each `linalg.matmul` (C[m, n] += A[m, k] * B[k, n]) and
`linalg.batch_matmul` (C[b, m, n] += A[b, m, k] * B[b, k, n]) on statically
shaped float memrefs by a `gpu.launch` of the classic tiled scheme, with a
register tile of R x R outputs per thread:

- blocks of T x T threads (T = `tile`), each block owning a (T*R) x (T*R) tile
  of C; a grid of ceil(N / TR) x ceil(M / TR) (x batch) blocks;
  thread (tx, ty) owns C[row0 + ty + T*i, col0 + tx + T*j] for i, j < R
  (strided, so a warp's loads and stores are contiguous);
- for each of the ceil(K / T) slices of K, the block stages the (TR) x T slice
  of A and the T x (TR) slice of B in workgroup (shared) memory, R elements per
  thread (zero outside the matrices), synchronises (`gpu.barrier`), and every
  thread accumulates its R x R sums over the T products from shared memory, in
  registers with fused multiply-adds (`math.fma`), then synchronises again;
- each thread adds its sums to C (linalg semantics: C accumulates).

R is the largest of `thread-tile`, ..., 2, 1 (powers of two) with T*R <= min(M, N),
so small matmuls keep one output per thread.  Operands are converted to C's
element type before multiplying, as `linalg.matmul` specifies; products are
fused into the sum (one rounding instead of two, as cuBLAS does).  Other matmuls
(transposed maps, integer types, dynamic shapes) are left to the generic loop
mapping.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import linalg

from ...ir import dtypes
from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass, option


def _is_float(name: str) -> bool:
    entry = dtypes.element_type(name)
    return entry is not None and entry.is_float


def _guarded_load(name: str, memref: str, indices: str, condition: str, type_: ir.MemRefType, target: str) -> str:
    """MLIR text defining `name`: memref[indices] converted to `target` where `condition`, else zero."""
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
            f"        }} else {{\n          scf.yield %zero : {target}\n        }}")


def _kernel(name: str, a: ir.MemRefType, b: ir.MemRefType, c: ir.MemRefType, tile: int, reg: int) -> str:
    batched = c.rank == 3
    batch, m, n = (c.shape if batched else [1, *c.shape])
    k = a.shape[-1]
    tc = str(c.element_type)
    prefix = "%bz, " if batched else ""
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
        emit("      " + _guarded_load(f"%a{i}", "%A", f"{prefix}%row{i}, %ka", f"%a_in{i}", a, tc))
        emit(f"      memref.store %a{i}, %As[%srow{i}, %tx] : {a_shared}")
        emit(f"      %b_in{i} = arith.andi %kb_in, %col_in{i} : i1")
        emit("      " + _guarded_load(f"%b{i}", "%B", f"{prefix}%kb, %col{i}", f"%b_in{i}", b, tc))
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
        emit(f"    scf.if %out_in{i}_{j} {{")
        emit(f"      %old{i}_{j} = memref.load %C[{prefix}%row{i}, %col{j}] : {c}")
        emit(f"      %new{i}_{j} = arith.addf %old{i}_{j}, %sums#{p} : {tc}")
        emit(f"      memref.store %new{i}_{j}, %C[{prefix}%row{i}, %col{j}] : {c}")
        emit("    }")
    emit("    gpu.terminator")
    emit("  }")
    emit("  return")
    emit("}")
    del acc
    return "\n".join(lines) + "\n"


def register_tile(m: int, n: int, tile: int, thread_tile: int) -> int:
    """R: the largest power of two <= thread_tile with tile * R <= min(m, n) (at least 1)."""
    r = 1
    while r * 2 <= thread_tile and tile * r * 2 <= min(m, n):
        r *= 2
    return r


def _eligible(op: ir.Operation) -> bool:
    if "indexing_maps" in op.attributes:  # transposed / broadcast variants
        return False
    types = [operand.type for operand in op.operands]
    if len(types) != 3 or not all(isinstance(t, ir.MemRefType) for t in types):
        return False
    types = [ir.MemRefType(t) for t in types]
    return all(t.has_static_shape and _is_float(str(t.element_type)) for t in types)


@dataclasses.dataclass(frozen=True)
class GpuTileMatmul(RlxPass):
    name = "rlx-gpu-tile-matmul"
    summary = "linalg.matmul / batch_matmul on buffers as shared-memory tiled gpu.launch kernels"
    tile: int = option(16, "T: blocks of T x T threads; slices of K are T wide", minimum=1, maximum=32)
    thread_tile: int = option(8, "largest R: each thread accumulates R x R outputs in registers", minimum=1)

    def run(self, module: ir.Operation) -> None:
        body = module.regions[0].blocks[0]
        kernels: dict[str, str] = {}
        for op in collect_ops(module, lambda o: is_op(o, (linalg.MatmulOp, linalg.BatchMatmulOp)) and _eligible(o)):
            a, b, c = (ir.MemRefType(operand.type) for operand in op.operands)
            key = f"{a}|{b}|{c}"
            if key not in kernels:
                kernels[key] = f"__rlx_gpu_matmul_{len(kernels)}"
                reg = register_tile(c.shape[-2], c.shape[-1], self.tile, self.thread_tile)
                parsed = ir.Module.parse(_kernel(kernels[key], a, b, c, self.tile, reg))
                for function in list(parsed.body.operations):
                    function.operation.move_before(body.operations[0])
            with ir.InsertionPoint(op), op.location:
                ir.Operation.create(
                    "func.call",
                    results=[],
                    operands=list(op.operands),
                    attributes={"callee": ir.FlatSymbolRefAttr.get(kernels[key])},
                )
            op.erase()
