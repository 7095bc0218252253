"""rlx-x86-byte-dot: byte dot products as AVX-512 VNNI's `vpdpbusd`, where this CPU has it.

Runs on the LLVM dialect, last in `rlx-lower-to-llvm`.  A lowering that multiplies bytes
(`rlx.dequant_matmul {activations = "q8"}`, conversion/mir_to_linalg/quant_q8.py) writes the dot
product of 64 unsigned bytes `a` and 64 signed bytes `b` in groups of 4 portably:

    p = mul(zext(a) : vector<64xi32>, sext(b) : vector<64xi32>)
    sum = shuffle(p, p, [0, 4, .., 60]) + shuffle(p, p, [1, 5, .., 61]) + .. [3, 7, .., 63]

LLVM's x86 backend selects no `vpdpbusd` for it (it widens to 32 bits and shuffles: about 20
instructions).  This pass replaces the first of the four shuffles by `vpdpbusd(0, a, b)` (lane i:
the sum of the 4 products of bytes 4 i .. 4 i + 3, exactly; no saturation) and the other three by
zeros, which LLVM then adds away.  Here, in the LLVM dialect, and not in the linalg lowering: the
intrinsic call has no memory effects MLIR knows, which buffer deallocation and the inlining of
OpenMP's `memref.alloca_scope` reject.

The JIT compiles for this machine's CPU, so the pass rewrites where its flags (`/proc/cpuinfo`)
name `avx512_vnni` and `avx512bw`, and leaves the portable code elsewhere (`host=false` rewrites
regardless: for a VNNI target, and the lit test).
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import llvm

from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass, option
from ...targets.cpu import host_cpu_flags

VPDPBUSD = "llvm.x86.avx512.vpdpbusd.512"
LANES = 16  # i32 lanes of the result, 4 bytes each


def host_has_vnni() -> bool:
    """Whether the JIT's CPU (this machine's) runs `vpdpbusd` on 512-bit vectors."""
    flags = host_cpu_flags()
    return "avx512_vnni" in flags and "avx512bw" in flags


def _vector(value: ir.Value, lanes: int, width: int) -> bool:
    type_ = value.type
    return (isinstance(type_, ir.VectorType) and ir.VectorType(type_).shape == [lanes]
            and ir.VectorType(type_).element_type == ir.IntegerType.get_signless(width))


def _bytes(value: ir.Value, extension) -> ir.Value | None:
    """The vector<64 x i8> that `value` is the `extension` (zext / sext) of, or None."""
    if not isinstance(value, ir.OpResult):  # a block argument
        return None
    owner = value.owner
    if is_op(owner, extension) and _vector(owner.operands[0], 4 * LANES, 8):
        return owner.operands[0]
    return None


def _mask(shuffle: ir.Operation) -> list[int]:
    return list(ir.DenseI32ArrayAttr(shuffle.attributes["mask"]))


def _match(mul: ir.Operation):
    """(unsigned bytes, signed bytes, the 4 shuffles in byte order) of a byte dot product, or None."""
    if not _vector(mul.results[0], 4 * LANES, 32):
        return None
    left, right = mul.operands
    unsigned, signed = _bytes(left, llvm.ZExtOp), _bytes(right, llvm.SExtOp)
    if unsigned is None or signed is None:
        unsigned, signed = _bytes(right, llvm.ZExtOp), _bytes(left, llvm.SExtOp)
    if unsigned is None or signed is None:
        return None
    users = [use.owner for use in mul.results[0].uses]
    if len(users) != 8 or any(not is_op(user, llvm.ShuffleVectorOp) for user in users):  # 4 shuffles, 2 uses each
        return None
    shuffles = {}
    for user in users:
        if user.operands[0] != mul.results[0] or user.operands[1] != mul.results[0]:
            return None
        mask = _mask(user)
        if mask[:1] and mask == list(range(mask[0], 4 * LANES, 4)) and mask[0] < 4:
            shuffles[mask[0]] = user
    if sorted(shuffles) != [0, 1, 2, 3]:
        return None
    return unsigned, signed, [shuffles[k] for k in range(4)]


def _zeros(type_: ir.Type) -> ir.Value:
    attr = ir.DenseElementsAttr.get_splat(type_, ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 0))
    return ir.Operation.create("llvm.mlir.constant", results=[type_], attributes={"value": attr}).result


@dataclasses.dataclass(frozen=True)
class X86ByteDot(RlxPass):
    name = "rlx-x86-byte-dot"
    summary = "LLVM dialect: dot products of 4 unsigned x signed bytes per i32 lane as vpdpbusd (AVX-512 VNNI hosts)"
    creates_rlx_ops = False
    host: bool = option(True, "rewrite only where this machine's CPU has AVX-512 VNNI (false: always, for a VNNI target)")

    def run(self, module: ir.Operation) -> bool:
        if self.host and not host_has_vnni():
            return False
        changed = False
        for mul in (view.operation for view in collect_ops(module, llvm.MulOp)):
            found = _match(mul)
            if found is None:
                continue
            changed = True
            unsigned, signed, shuffles = found
            type_ = shuffles[0].results[0].type
            with ir.InsertionPoint(shuffles[0]), shuffles[0].location:
                zero = _zeros(type_)
                dot = llvm.call_intrinsic(type_, VPDPBUSD, [zero, unsigned, signed], [], [])
            shuffles[0].results[0].replace_all_uses_with(dot)
            for shuffle in shuffles[1:]:
                shuffle.results[0].replace_all_uses_with(zero)
            extensions = [operand.owner for operand in mul.operands]
            for op in (*shuffles, mul, *extensions):
                if next(iter(op.results[0].uses), None) is None:
                    op.erase()
        return changed
