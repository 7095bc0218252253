"""rlx-vectorize-elementwise: small static elementwise loop nests as straight-line vector code.

On buffers, just before the LLVM conversion, every `linalg.generic` that

- has only parallel loops and reads and writes every operand through the identity map,
- runs over static memrefs of at most `max-elements` elements (contiguous in the last dimension)
  of f32, f64 or 8/16/32/64-bit integers,
- computes with `arith` and `math` ops on such scalars only (no loop indices, no integer
  division, which traps on x86 where a lane divides by zero, no f16/bf16; i1 only as the
  result of a comparison, so boolean tensors, stored as bytes, stay loops),

becomes vector code by MLIR's linalg vectorizer (`transform.structured.vectorize`): one
`vector.transfer_read` per input, the body's ops on `vector<...>` values, one
`vector.transfer_write`. Each element is computed by the same IEEE operation as in the loop
(`arith`/`math` ops act lane by lane; no reassociation, no contraction into FMA), so the
numbers are those of the loop nest, bit for bit.

Why: LLVM's loop vectorizer does the same, at a price. A long elementwise chain becomes
hundreds of such loop nests (`rlx-fuse-elementwise` bounds each body), and LLVM -O3 spends
about half its optimisation time on analysing and vectorizing them (a 10k-op chain of
`tensor<16xf32>` values: 4.3 s of -O3 before, 2.0 s after; machine code takes as long).
Larger loop nests are left to LLVM, whose loops do not grow with the element count.
"""

from __future__ import annotations

import dataclasses

from mlir import ir
from mlir.dialects import linalg

from ...ir.attrs import VECTORIZE_ATTR
from ...ir.walk import is_op
from ...passmanager.base import RlxPass, option
from .transform_script import apply_script

# Integer division and remainder trap on x86 (idiv) for a zero divisor: a vector op computes
# every lane, where the loop would compute the same lanes; left to the loop all the same.
_TRAPPING = frozenset({
    "arith.divsi", "arith.divui", "arith.remsi", "arith.remui",
    "arith.ceildivsi", "arith.ceildivui", "arith.floordivsi",
})
_INTEGER_WIDTHS = (8, 16, 32, 64)
_COMPARISONS = frozenset({"arith.cmpf", "arith.cmpi"})

_SCRIPT = """
%ops = transform.structured.match ops{{["linalg.generic"]}} attributes {{{attr}}} in %root : (!transform.any_op) -> !transform.any_op
transform.structured.vectorize %ops : !transform.any_op
"""


def _element_ok(type_: ir.Type, *, allow_i1: bool) -> bool:
    if isinstance(type_, (ir.F32Type, ir.F64Type)):
        return True
    if isinstance(type_, ir.IntegerType):
        return type_.width in _INTEGER_WIDTHS or (allow_i1 and type_.width == 1)
    return False


def _operand_ok(type_: ir.Type, max_elements: int) -> bool:
    if not isinstance(type_, ir.MemRefType):
        return False
    memref = ir.MemRefType(type_)
    if memref.rank == 0 or not memref.has_static_shape or not _element_ok(memref.element_type, allow_i1=False):
        return False
    elements = 1
    for size in memref.shape:
        elements *= size
    if not 0 < elements <= max_elements:
        return False
    strides, _ = memref.get_strides_and_offset()
    return strides[-1] == 1


# Ops whose result has the type of their (first) operand or operands: the type of every value
# in a body comes from a block argument (an operand's element type) or from one of the other ops.
_SAME_TYPE = frozenset(
    [f"arith.{name}" for name in ("addf", "subf", "mulf", "divf", "negf", "remf", "maximumf", "minimumf", "maxnumf",
                                  "minnumf", "addi", "subi", "muli", "andi", "ori", "xori", "shli", "shrsi", "shrui",
                                  "maxsi", "minsi", "maxui", "minui", "select")]
    + [f"math.{name}" for name in ("fma", "absf", "copysign", "sqrt", "rsqrt", "exp", "exp2", "expm1", "log", "log1p",
                                   "log2", "tanh", "erf", "floor", "ceil", "round", "roundeven", "trunc", "sin", "cos",
                                   "powf", "fpowi", "absi")]
)


def _body_ok(generic: ir.Operation) -> bool:
    """The body computes with arith/math ops on scalars `_element_ok` allows (i1 included)."""
    ok = True

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal ok
        name = op.name
        if name in _SAME_TYPE or name == "linalg.yield":
            return ir.WalkResult.ADVANCE
        if op == generic:
            return ir.WalkResult.ADVANCE
        # i1 only as a comparison's mask (for arith.select, andi, ori, xori): a boolean tensor,
        # stored as bytes, is converted from and to i1 in its body (rlx-bool-tensors-to-i8),
        # and stays a loop, so that no i1 vector meets byte storage.
        mask = name in _COMPARISONS
        if (not name.startswith(("arith.", "math.")) or name in _TRAPPING
                or not all(_element_ok(result.type, allow_i1=mask) for result in op.results)
                or not (mask or all(_element_ok(operand.type, allow_i1=False) for operand in op.operands))):
            ok = False
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    generic.walk(visit, ir.WalkOrder.PRE_ORDER)
    return ok


def vectorizable(op: ir.Operation, max_elements: int) -> bool:
    """Whether `op` (a linalg.generic on buffers) is one this pass vectorizes (module docstring)."""
    if len(op.results) != 0 or not op.operands:
        return False
    iterators = ir.ArrayAttr(op.attributes["iterator_types"])
    if any(not str(it).endswith("<parallel>") for it in iterators):
        return False
    identity = ir.AffineMap.get_identity(len(iterators))
    if any(ir.AffineMapAttr(m).value != identity for m in ir.ArrayAttr(op.attributes["indexing_maps"])):
        return False
    if not all(_operand_ok(operand.type, max_elements) for operand in op.operands):
        return False
    return _body_ok(op)


def _generics(module: ir.Operation) -> list[ir.Operation]:
    """The linalg.generic ops of `module`, not looking into their bodies (most of a long program's ops)."""
    found, blocks = [], [block for region in module.regions for block in region.blocks]
    while blocks:
        for op in blocks.pop().operations:
            op = op.operation
            if is_op(op, linalg.GenericOp):
                found.append(op)
            elif len(op.regions):
                blocks += [block for region in op.regions for block in region.blocks]
    return found


@dataclasses.dataclass(frozen=True)
class VectorizeElementwise(RlxPass):
    name = "rlx-vectorize-elementwise"
    summary = "Small static elementwise linalg.generic ops on buffers as straight-line vector code (MLIR's vectorizer)"
    creates_rlx_ops = False
    max_elements: int = option(64, "largest operand, in elements, vectorized whole", minimum=1)

    def run(self, module: ir.Operation) -> bool:
        chosen = [op for op in _generics(module) if vectorizable(op, self.max_elements)]
        if not chosen:
            return False
        for op in chosen:
            op.attributes[VECTORIZE_ATTR] = ir.UnitAttr.get()
        apply_script(module, _SCRIPT.format(attr=VECTORIZE_ATTR), chosen[0].location, "vectorizing elementwise ops")
        return True
