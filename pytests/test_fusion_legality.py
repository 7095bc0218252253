"""rlx-fuse-elementwise: what it may fuse, checked by numerics on both lowering paths.

- A gather along axis 1 feeding an argmax along axis 0 (ISSUE13 #11): fusing the gather into
  the argmax's reduction left no operand ranging over the reduced loop and failed to verify
  on the direct path. Compiled with `plan=True` and `plan=False`, against numpy.
- Long chains of elementwise ops (one fused loop nest, built in one step per op), with and
  without values read twice, against numpy in float64.

The references are written from dialect/rlx.md: gather is `numpy.take(table, clip(indices))`,
argmax returns the first index of the maximum.
"""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

import rlx_mlir
from rlx_mlir.dialects.context import make_context
from rlx_mlir.passmanager.pipeline import run_pipeline

PLANS = [pytest.param(True, id="planned"), pytest.param(False, id="direct")]


def tensor(shape, dtype="f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def gather_argmax_program(table: tuple, indices: tuple, gather_axis: int, argmax_axis: int, between: str = "",
                          keep_dim: bool = False) -> str:
    gathered = table[:gather_axis] + indices + table[gather_axis + 1:]
    reduced = tuple(1 if keep_dim and i == argmax_axis else d for i, d in enumerate(gathered)
                    if keep_dim or i != argmax_axis % len(gathered))
    lines = [f"func.func @f(%t: {tensor(table)}, %i: {tensor(indices, 'i64')}) -> {tensor(reduced, 'i64')} {{",
             f'  %g = "rlx.gather"(%t, %i) {{axis = {gather_axis} : i64}} : '
             f"({tensor(table)}, {tensor(indices, 'i64')}) -> {tensor(gathered)}"]
    value = "%g"
    if between:
        lines.append(f'  %b = "rlx.{between}"(%g) : ({tensor(gathered)}) -> {tensor(gathered)}')
        value = "%b"
    lines += [f'  %r = "rlx.argmax"({value}) {{axis = {argmax_axis} : i64, keep_dim = {str(keep_dim).lower()}}} : '
              f"({tensor(gathered)}) -> {tensor(reduced, 'i64')}",
              f"  return %r : {tensor(reduced, 'i64')}", "}"]
    return "\n".join(lines) + "\n"


def gather_argmax_reference(table, indices, gather_axis, argmax_axis, between="", keep_dim=False):
    gathered = np.take(table, np.clip(indices, 0, table.shape[gather_axis] - 1), axis=gather_axis)
    if between == "exp":
        gathered = np.exp(gathered.astype(np.float64))
    elif between == "neg":
        gathered = -gathered
    result = np.argmax(gathered, axis=argmax_axis)  # ties: the first index
    return np.expand_dims(result, argmax_axis) if keep_dim else result


CASES = [
    # table, indices, gather axis, argmax axis, op between, keep_dim
    pytest.param((3, 7), (5,), 1, 0, "", False, id="2d-axis1-argmax0"),
    pytest.param((3, 7), (5,), 1, 0, "exp", False, id="2d-exp-between"),
    pytest.param((3, 7), (5,), 1, 0, "neg", True, id="2d-neg-keepdim"),
    pytest.param((4, 6, 3), (2, 5), 1, 0, "", False, id="3d-indices2d-argmax0"),
    pytest.param((4, 6, 3), (5,), 1, -1, "", False, id="3d-argmax-last"),
    pytest.param((4, 6, 3), (5,), 2, 1, "exp", False, id="3d-gather-last-argmax-middle"),
    pytest.param((6, 4), (3,), 0, 1, "", False, id="embedding-argmax1"),
]


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("table_shape, index_shape, gather_axis, argmax_axis, between, keep_dim", CASES)
def test_gather_feeding_argmax(plan, table_shape, index_shape, gather_axis, argmax_axis, between, keep_dim):
    rng = np.random.default_rng(13)
    table = rng.standard_normal(table_shape).astype(np.float32)
    # Out-of-range indices (clamped) and repeats included.
    indices = rng.integers(-2, table_shape[gather_axis] + 2, index_shape).astype(np.int64)
    text = gather_argmax_program(table_shape, index_shape, gather_axis, argmax_axis, between, keep_dim)
    exe = rlx_mlir.compile(text, "f", plan=plan, threads=1)
    expected = gather_argmax_reference(table, indices, gather_axis, argmax_axis, between, keep_dim)
    np.testing.assert_array_equal(exe(table, indices), expected)


# --- long chains ---------------------------------------------------------------------------------

CYCLE = ("neg", "add", "mul", "tanh", "exp")


def chain_program(ops: int, reread_every: int = 0) -> str:
    """`ops` rlx elementwise ops on x (tensor<4x8xf32>) cycling through CYCLE, with `s` as the
    second operand of add and mul; every `reread_every`-th step reads its value twice instead:
    y -> tanh(y) + y * s."""
    t = tensor((4, 8))
    lines, value = [f"func.func @f(%x: {t}, %s: {t}) -> {t} {{"], "%x"
    for step in range(ops):
        name = f"%v{step}"
        if reread_every and step % reread_every == reread_every - 1:
            lines += [f'  {name}a = "rlx.tanh"({value}) : ({t}) -> {t}',
                      f'  {name}b = "rlx.mul"({value}, %s) : ({t}, {t}) -> {t}',
                      f'  {name} = "rlx.add"({name}a, {name}b) : ({t}, {t}) -> {t}']
        elif CYCLE[step % 5] in ("add", "mul"):
            lines.append(f'  {name} = "rlx.{CYCLE[step % 5]}"({value}, %s) : ({t}, {t}) -> {t}')
        else:
            lines.append(f'  {name} = "rlx.{CYCLE[step % 5]}"({value}) : ({t}) -> {t}')
        value = name
    lines += [f"  return {value} : {t}", "}"]
    return "\n".join(lines) + "\n"


def chain_reference(ops: int, reread_every: int, x: np.ndarray, s: np.ndarray) -> np.ndarray:
    y, s = x.astype(np.float64), s.astype(np.float64)
    unary = {"neg": np.negative, "tanh": np.tanh, "exp": np.exp}
    for step in range(ops):
        op = CYCLE[step % 5]
        if reread_every and step % reread_every == reread_every - 1:
            y = np.tanh(y) + y * s
        elif op == "add":
            y = y + s
        elif op == "mul":
            y = y * s
        else:
            y = unary[op](y)
    return y


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("reread_every", [0, 7], ids=["chain", "fan-out"])
def test_long_chain_numerics(plan, reread_every):
    rng = np.random.default_rng(14)
    x = rng.uniform(-1, 1, (4, 8)).astype(np.float32)
    s = rng.uniform(0.25, 0.75, (4, 8)).astype(np.float32)
    exe = rlx_mlir.compile(chain_program(300, reread_every), "f", plan=plan, threads=1)
    np.testing.assert_allclose(exe(x, s), chain_reference(300, reread_every, x, s), rtol=1e-4, atol=1e-5)


def test_long_chain_becomes_one_loop_nest():
    """A 300-op chain on the direct path fuses into one linalg.generic reading x and s once each."""
    with make_context():
        module = ir.Module.parse(chain_program(300))
        run_pipeline(module.operation, "builtin.module(rlx-hir-to-mir,rlx-mir-to-linalg,rlx-fuse-elementwise)")
        generics = [op for op in module.body.operations[0].regions[0].blocks[0].operations
                    if op.operation.name == "linalg.generic"]
        assert len(generics) == 1
        assert [str(v.get_name()) for v in generics[0].operands][:2] == ["%arg1", "%arg0"]


# A returned elementwise value read by one op fuses into it as an extra result (a stored producer),
# so it is computed later than where the LIR plan saw it read its inputs. The fuzzer's seed 125:
# the where's mask slot was also the add's result slot, and the where, moved into the add's loop,
# read mask bytes the add had already written (30 of 168 elements wrong).
STORED_READS_A_SLOT = """
func.func @f(%a0: tensor<6x4xf32>, %a1: tensor<3x6x4xf32>, %a2: tensor<4x6x4xf32>) -> (tensor<7x6x4xf32>, tensor<3x6x4xf32>) {
  %mask = "rlx.compare"(%a0, %a1) {predicate = "le"} : (tensor<6x4xf32>, tensor<3x6x4xf32>) -> tensor<3x6x4xi1>
  %w = "rlx.where"(%mask, %a0, %a1) : (tensor<3x6x4xi1>, tensor<6x4xf32>, tensor<3x6x4xf32>) -> tensor<3x6x4xf32>
  %sum = "rlx.add"(%a0, %w) : (tensor<6x4xf32>, tensor<3x6x4xf32>) -> tensor<3x6x4xf32>
  %cat = "rlx.concat"(%sum, %a2) {axis = 0 : i64} : (tensor<3x6x4xf32>, tensor<4x6x4xf32>) -> tensor<7x6x4xf32>
  return %cat, %w : tensor<7x6x4xf32>, tensor<3x6x4xf32>
}
"""

# The same shape where the stored value's tree reads a planned slot nobody overwrites (%g, read
# twice): it fuses (lit_tests/cpu/fuse-elementwise-stored.mlir) and must still be right.
STORED_READS_A_KEPT_SLOT = """
func.func @f(%p: tensor<64xf32>, %m: tensor<64xf32>, %x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %g = "rlx.exp"(%x) : (tensor<64xf32>) -> tensor<64xf32>
  %s = "rlx.neg"(%g) : (tensor<64xf32>) -> tensor<64xf32>
  %newm = "rlx.add"(%m, %g) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %newp = "rlx.sub"(%p, %newm) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %newp, %newm, %s : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}
"""


# The fuzzer's seed 10820026: a returned gather read by a cast to bf16.  The cast's slot reused
# the gather table's (the table dies at the gather), and the gather, moved into the cast's loop as a
# stored producer, read table bytes the cast had already written: the check of the slots a stored
# producer reads looked at its operands only, not at the table its body reads by `tensor.extract`.
STORED_GATHER_READS_A_REUSED_SLOT = """
func.func @f(%a0: tensor<2x3x5xf32>) -> (tensor<2x3x6xf32>, tensor<2x3x6xf32>) {
  %v1 = "rlx.add"(%a0, %a0) : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %i = "rlx.constant"() {value = dense<[0, -1, 0, -1, 4, 1]> : tensor<6xi32>} : () -> tensor<6xi32>
  %g = "rlx.gather"(%v1, %i) {axis = 2 : i64} : (tensor<2x3x5xf32>, tensor<6xi32>) -> tensor<2x3x6xf32>
  %b = "rlx.cast"(%g) : (tensor<2x3x6xf32>) -> tensor<2x3x6xbf16>
  %r = "rlx.cast"(%b) : (tensor<2x3x6xbf16>) -> tensor<2x3x6xf32>
  return %r, %g : tensor<2x3x6xf32>, tensor<2x3x6xf32>
}
"""


def bf16_round(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 -> float32, rounding to nearest even (written out on the bits)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("plan", PLANS)
def test_stored_gather_reading_a_reused_slot(plan):
    a0 = (np.arange(30, dtype=np.float32).reshape(2, 3, 5) / 7 - 2).astype(np.float32)
    r, g = rlx_mlir.compile(STORED_GATHER_READS_A_REUSED_SLOT, "f", plan=plan, threads=1)(a0)
    gathered = np.take(a0 + a0, np.clip([0, -1, 0, -1, 4, 1], 0, 4), axis=2)
    np.testing.assert_array_equal(g, gathered)
    np.testing.assert_array_equal(r, bf16_round(gathered))


@pytest.mark.parametrize("plan", PLANS)
def test_stored_producer_reading_a_reused_slot(plan):
    rng = np.random.default_rng(125)
    a0 = rng.standard_normal((6, 4)).astype(np.float32)
    a1, a2 = rng.standard_normal((3, 6, 4)).astype(np.float32), rng.standard_normal((4, 6, 4)).astype(np.float32)
    cat, w = rlx_mlir.compile(STORED_READS_A_SLOT, "f", plan=plan, threads=1)(a0, a1, a2)
    where = np.where(a0 <= a1, a0, a1)  # compare broadcasts a0 over the leading axis
    np.testing.assert_array_equal(w, where)
    np.testing.assert_array_equal(cat, np.concatenate([a0 + where, a2], axis=0))


@pytest.mark.parametrize("plan", PLANS)
def test_stored_producer_reading_a_kept_slot(plan):
    rng = np.random.default_rng(7)
    p, m, x = (rng.standard_normal(64).astype(np.float32) for _ in range(3))
    newp, newm, s = rlx_mlir.compile(STORED_READS_A_KEPT_SLOT, "f", plan=plan, threads=1)(p, m, x)
    g = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(s, -g, rtol=1e-6)
    np.testing.assert_allclose(newm, m + g, rtol=1e-6)
    np.testing.assert_allclose(newp, p - (m + g), rtol=1e-5, atol=1e-6)
