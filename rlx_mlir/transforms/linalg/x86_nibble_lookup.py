"""rlx-x86-nibble-lookup: 4-bit codes converted to f32 by one `vpermps` table lookup, on AVX-512 hosts.

Runs on the LLVM dialect, last in `rlx-lower-to-llvm`.  A quantised kernel that decodes 4-bit codes
(`rlx.dequant_matmul`'s Q4_K GEMV, conversion/mir_to_linalg/quant.py) writes the low nibble of
each i32 lane as f32 portably:

    code = uitofp(and(v, splat(15)) : vector<16xi32>) : vector<16xf32>     (or sitofp)

which LLVM's x86 backend selects as a `vpandd` and a `vcvtdq2ps`.  `vpermps` (AVX-512F) picks
lane `v[i] & 15` of a 16-lane table, and only looks at those 4 bits of each index: with the table
`[0.0, 1.0, .., 15.0]` one `vpermps` gives the same 16 floats exactly, one vector instruction
instead of two (a Q4_K GEMV spends about a tenth of its instructions on these).  Here, in the
LLVM dialect, and not in the linalg lowering: the intrinsic call has no memory effects MLIR
knows, which buffer deallocation and the inlining of OpenMP's `memref.alloca_scope` reject (as
for rlx-x86-byte-dot).

The JIT compiles for this machine's CPU, so the pass rewrites where its flags (`/proc/cpuinfo`)
name `avx512f`, and leaves the portable code elsewhere (`host=false` rewrites regardless: for an
AVX-512 target, and the lit test).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from mlir import ir
from mlir.dialects import llvm

from ...ir.walk import collect_ops, is_op
from ...passmanager.base import RlxPass, option
from ...targets.cpu import host_cpu_flags

VPERMPS = "llvm.x86.avx512.permvar.sf.512"
LANES = 16  # f32 lanes of one vpermps
NIBBLE = 15


def host_has_avx512() -> bool:
    """Whether the JIT's CPU (this machine's) runs `vpermps` on 512-bit vectors."""
    return "avx512f" in host_cpu_flags()


def _i32_lanes(value: ir.Value) -> bool:
    type_ = value.type
    return (isinstance(type_, ir.VectorType) and ir.VectorType(type_).shape == [LANES]
            and ir.VectorType(type_).element_type == ir.IntegerType.get_signless(32))


def _is_splat(value: ir.Value, number: int) -> bool:
    """Whether `value` is an `llvm.mlir.constant` whose lanes all hold `number`."""
    if not isinstance(value, ir.OpResult) or not is_op(value.owner, llvm.ConstantOp):
        return False
    attr = value.owner.attributes["value"]
    if not isinstance(attr, ir.DenseIntElementsAttr):
        return False
    if attr.is_splat:
        return ir.IntegerAttr(attr.get_splat_value()).value == number
    return bool((np.array(ir.DenseIntElementsAttr(attr)) == number).all())


def _low_nibble_source(conversion: ir.Operation) -> ir.Value | None:
    """`v` where `conversion` is `uitofp` / `sitofp` of `and(v, splat(15))` on vector<16 x i32>, or None."""
    operand = conversion.operands[0]
    if not _i32_lanes(operand) or not isinstance(operand, ir.OpResult) or not is_op(operand.owner, llvm.AndOp):
        return None
    left, right = operand.owner.operands
    if _is_splat(right, NIBBLE):
        return left
    if _is_splat(left, NIBBLE):
        return right
    return None


@dataclasses.dataclass(frozen=True)
class X86NibbleLookup(RlxPass):
    name = "rlx-x86-nibble-lookup"
    summary = "LLVM dialect: f32 of the low 4 bits of i32 lanes as one vpermps table lookup (AVX-512 hosts)"
    creates_rlx_ops = False
    host: bool = option(True, "rewrite only where this machine's CPU has AVX-512F (false: always, for an AVX-512 target)")

    def run(self, module: ir.Operation) -> bool:
        if self.host and not host_has_avx512():
            return False
        changed = False
        conversions = [view.operation for op in (llvm.UIToFPOp, llvm.SIToFPOp) for view in collect_ops(module, op)]
        for conversion in conversions:
            source = _low_nibble_source(conversion)
            if source is None:
                continue
            changed = True
            masked = conversion.operands[0].owner
            f32 = ir.VectorType.get([LANES], ir.F32Type.get())
            with ir.InsertionPoint(conversion), conversion.location:
                table_attr = ir.DenseElementsAttr.get(np.arange(LANES, dtype=np.float32), type=f32)
                table = ir.Operation.create("llvm.mlir.constant", results=[f32], attributes={"value": table_attr}).result
                lookup = llvm.call_intrinsic(f32, VPERMPS, [table, source], [], [])
            conversion.results[0].replace_all_uses_with(lookup)
            conversion.erase()
            if next(iter(masked.results[0].uses), None) is None:
                masked.erase()
        return changed
