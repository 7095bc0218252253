"""Compile-time safeguards for long programs (benchmarks/scaling.py measures them):
the RLX verifier is skipped only where no RLX op can be left, and rlx-split-functions
cuts a huge function into parts without changing its results."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir import driver
from rlx_mlir.dialects import verifier
from rlx_mlir.dialects.context import make_context
from rlx_mlir.ir.diagnostics import DiagnosticCollector
from rlx_mlir.passmanager.pipeline import expand, run_pipeline
from rlx_mlir.pipelines.lower_to_llvm import LowerToLLVM

TYPE = "tensor<16xf32>"


def chain(ops: int) -> str:
    """x -> tanh -> add s -> tanh -> add s ... (`ops` rlx ops)."""
    lines = [f"func.func @main(%x: {TYPE}, %s: {TYPE}) -> {TYPE} {{"]
    value = "%x"
    for i in range(ops):
        if i % 2 == 0:
            lines.append(f'  %v{i} = "rlx.tanh"({value}) : ({TYPE}) -> {TYPE}')
        else:
            lines.append(f'  %v{i} = "rlx.add"({value}, %s) : ({TYPE}, {TYPE}) -> {TYPE}')
        value = f"%v{i}"
    lines += [f"  return {value} : {TYPE}", "}"]
    return "\n".join(lines) + "\n"


def reference(ops: int, x: np.ndarray, s: np.ndarray) -> np.ndarray:
    y = x.astype(np.float64)
    for i in range(ops):
        y = np.tanh(y) if i % 2 == 0 else y + s
    return y


def lowered(text: str, **options) -> str:
    context = make_context()
    with context, DiagnosticCollector(context) as diagnostics:
        module = driver.parse_verified(text, "<chain>", context, diagnostics)
        run_pipeline(module.operation, list(expand(LowerToLLVM(threads=1, **options))))
        return str(module)


def test_verifier_skipped_once_no_rlx_op_is_left(monkeypatch):
    calls = []
    original = verifier.verify_and_find_rlx

    def counting(op):
        result = original(op)
        calls.append(result[1])
        return result

    monkeypatch.setattr(verifier, "verify_and_find_rlx", counting)
    lowered(chain(8))
    # Verified while RLX ops can be present: after each pass up to the first one that left
    # none (rlx-lir-to-linalg); the linalg and LLVM passes after it are not verified again.
    assert calls[-1] is False and all(calls[:-1])
    assert 3 <= len(calls) <= 6, calls


def test_long_chain_is_split_and_computes_the_same():
    ops = 3000  # tanh bodies of ~20 ops: far more than max-ops=20000 in one function
    text = chain(ops)
    llvm = lowered(text)
    assert "llvm.func internal @main_part0(" in llvm and 'passthrough = ["noinline"]' in llvm
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 16).astype(np.float32)
    s = rng.uniform(0.25, 0.75, 16).astype(np.float32)
    result = rlx_mlir.compile(text, cache=False)(x, s)
    np.testing.assert_allclose(result, reference(ops, x, s), rtol=1e-4, atol=1e-5)


def test_small_function_is_not_split():
    assert "main_part" not in lowered(chain(8))


HIR_BLOCK = """func.func @main(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %y = "rlx_hir.rms_norm"(%x, %g, %b) {eps = 1.0e-6 : f32} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
"""


def _verifications(monkeypatch, text: str, elements) -> int:
    """How often the RLX verifier runs for `elements` after parsing `text`."""
    context = make_context()
    with context, DiagnosticCollector(context) as diagnostics:
        module = driver.parse_verified(text, "<t>", context, diagnostics)
        calls = []
        original = verifier.verify_and_find_rlx
        monkeypatch.setattr(verifier, "verify_and_find_rlx", lambda op: calls.append(op) or original(op))
        run_pipeline(module.operation, elements)
        monkeypatch.setattr(verifier, "verify_and_find_rlx", original)
        return len(calls)


def test_pass_that_changed_nothing_is_not_reverified(monkeypatch):
    from rlx_mlir.conversion.hir_to_mir.hir_to_mir import HirToMir
    from rlx_mlir.transforms.hir.outline_blocks import OutlineBlocks
    from rlx_mlir.transforms.mir.split_weight_concat import SplitWeightConcat

    passes = [OutlineBlocks(), HirToMir(), SplitWeightConcat()]
    # MIR only: the first pass of the run verifies (the module may come from anywhere); the
    # two after it change nothing and the module they leave is the one just verified.
    assert _verifications(monkeypatch, chain(4), passes) == 1
    # HIR: rlx-hir-to-mir expands it, and what it made is verified.
    assert _verifications(monkeypatch, HIR_BLOCK, passes) == 2
    # After an upstream pass (which may have changed the module) an unchanged pass verifies.
    assert _verifications(monkeypatch, chain(4), [OutlineBlocks(), "cse", HirToMir()]) == 2


# --- llvm.noalias on the functions split off (rlx-noalias-arguments) -----------------------


def compile_split(text: str, entry: str, **options):
    """`rlx_mlir.compile` with every loop nest split off into a function of its own (split-max-ops=1),
    so that each receives its buffers (arena views, allocations, the caller's arrays) as arguments;
    `options` go to rlx-lower-to-llvm (`split_loops`, `threads`)."""
    from unittest import mock

    from rlx_mlir.runtime import jit

    threads = options.pop("threads", None)
    with mock.patch.object(jit, "LowerToLLVM", functools.partial(LowerToLLVM, split_max_ops=1, **options)):
        return rlx_mlir.compile(text, entry, cache=False, threads=threads)


def test_split_parts_get_noalias_and_public_functions_do_not():
    llvm = lowered(chain(3000))
    parts = [line for line in llvm.splitlines() if line.lstrip().startswith("llvm.func internal @main_part")]
    assert len(parts) > 1 and sum("llvm.noalias" in line for line in parts) >= len(parts) - 1
    public = [line for line in llvm.splitlines() if line.lstrip().startswith(("llvm.func @main(", "llvm.func @_mlir_ciface"))]
    assert public and not any("llvm.noalias" in line for line in public)
    assert "rlx.noalias_pointers" not in llvm


@pytest.mark.parametrize("seed", range(1300000, 1300024))
def test_random_programs_split_into_one_function_per_loop_nest_compute_the_same(seed):
    """Fuzzer programs (views, slots reused, matmuls, several results) with every loop nest in a
    function of its own that gets llvm.noalias where its arguments provably never overlap:
    against the fuzzer's float64 reference."""
    from fuzz import reference
    from fuzz.generator import generate
    from fuzz.runner import compare

    program = generate(seed)
    executable = compile_split(program.text(), "f")
    outputs = executable(*[program.arrays[arg.name] for arg in program.inputs])
    outputs = list(outputs) if isinstance(outputs, tuple) else [outputs]
    outcome = compare(program, reference.evaluate(program), outputs, "split-max-ops=1")
    assert outcome.kind == "ok", f"{outcome.detail}\n{program.text()}"


@pytest.mark.parametrize("seed", range(1300100, 1300112))
def test_random_programs_with_every_loop_nest_split_off_compute_the_same(seed):
    """split-loops on one thread: the GEMM kernels' and the other scf loop nests move into
    functions of their own too (each a symbol for a profiler); against the fuzzer's reference."""
    from fuzz import reference
    from fuzz.generator import generate
    from fuzz.runner import compare

    program = generate(seed)
    executable = compile_split(program.text(), "f", split_loops=True, threads=1)
    outputs = executable(*[program.arrays[arg.name] for arg in program.inputs])
    outputs = list(outputs) if isinstance(outputs, tuple) else [outputs]
    outcome = compare(program, reference.evaluate(program), outputs, "split-max-ops=1 split-loops")
    assert outcome.kind == "ok", f"{outcome.detail}\n{program.text()}"


def _causal_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, heads: int) -> np.ndarray:
    seq, width = q.shape
    d = width // heads
    out = np.empty((seq, width))
    for h in range(heads):
        cols = slice(h * d, (h + 1) * d)
        scores = q[:, cols].astype(np.float64) @ k[:, cols].T / np.sqrt(d)
        scores[np.triu_indices(seq, 1)] = -np.inf
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        out[:, cols] = (weights / weights.sum(axis=1, keepdims=True)) @ v[:, cols]
    return out


def test_split_loops_gives_the_gemm_and_the_tiled_attention_functions_of_their_own():
    """A matmul and a causal attention long enough for the tiled loop nest, on one thread: with
    split-loops both loop nests are functions of their own (more parts than without), and the
    results are the same bits as the unsplit code's, and numpy's within rounding."""
    seq, width, heads = 256, 128, 2
    t = f"tensor<1x{seq}x{width}xf32>"
    text = (f"func.func @f(%x: {t}, %w: tensor<{width}x{width}xf32>, %k: {t}, %v: {t}) -> {t} {{\n"
            f'  %q = "rlx.matmul"(%x, %w) : ({t}, tensor<{width}x{width}xf32>) -> {t}\n'
            f'  %0 = "rlx.attention"(%q, %k, %v) {{num_heads = {heads} : i64, head_dim = {width // heads} : i64, '
            f'mask_kind = "causal"}} : ({t}, {t}, {t}) -> {t}\n  return %0 : {t}\n}}\n')
    rng = np.random.default_rng(7)
    x, k, v = (rng.standard_normal((1, seq, width)).astype(np.float32) for _ in range(3))
    w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)

    def parts(**options) -> int:
        return lowered(text, split_max_ops=1, **options).count("llvm.func internal @f_part")

    assert parts(split_loops=True) >= parts() + 2  # the GEMM kernel's loop nest and attention's at least
    split = compile_split(text, "f", split_loops=True, threads=1)(x, w, k, v)
    whole = rlx_mlir.compile(text, "f", cache=False, threads=1)(x, w, k, v)
    assert np.array_equal(split, whole)
    expected = _causal_attention((x[0] @ w).astype(np.float32), k[0], v[0], heads)
    np.testing.assert_allclose(split[0], expected, rtol=1e-4, atol=1e-4)


KV_STEP = """func.func @step(%cache: tensor<1x8x4xf32>, %x: tensor<1x1x4xf32>, %pos: tensor<i64>)
    -> (tensor<1x8x4xf32> {rlx.tied = 0 : i64}, tensor<1x1x4xf32>) {
  %n = "rlx.tanh"(%x) : (tensor<1x1x4xf32>) -> tensor<1x1x4xf32>
  %c = "rlx.kv_cache_write"(%cache, %n, %pos) : (tensor<1x8x4xf32>, tensor<1x1x4xf32>, tensor<i64>) -> tensor<1x8x4xf32>
  %y = "rlx.neg"(%n) : (tensor<1x1x4xf32>) -> tensor<1x1x4xf32>
  return %c, %y : tensor<1x8x4xf32>, tensor<1x1x4xf32>
}
"""


def test_cache_updated_in_place_by_split_functions():
    """A tied argument (a KV cache written in place) reaches the split functions as the caller's
    argument, like the inputs: never noalias against them, and updated where the caller sees it."""
    executable = compile_split(KV_STEP, "step")
    rng = np.random.default_rng(1)
    cache = rng.uniform(-1, 1, (1, 8, 4)).astype(np.float32)
    x = rng.uniform(-1, 1, (1, 1, 4)).astype(np.float32)
    expected = cache.astype(np.float64)
    expected[:, 5] = np.tanh(x.astype(np.float64))[:, 0]
    updated, y = executable(cache, x, np.array(5, np.int64))
    np.testing.assert_allclose(cache, expected, rtol=1e-6, atol=1e-6)
    assert np.shares_memory(updated, cache)
    np.testing.assert_allclose(y, -np.tanh(x.astype(np.float64)), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("seed", range(1300100, 1300140))
def test_outputs_read_off_the_return_are_the_buffers_of_kind_output(seed):
    """rlx-lir-to-linalg reads the outputs off the return (`returned_outputs`) instead of building
    every buffer again: the same values, in the same order, as `function_buffers` calls outputs."""
    from fuzz.generator import generate

    from rlx_mlir.conversion.mir_to_lir import MirToLir
    from rlx_mlir.dialects.rlx_lir.ir_plan import defined_functions, function_buffers, returned_outputs

    context = make_context()
    with context, DiagnosticCollector(context) as diagnostics:
        module = driver.parse_verified(generate(seed).text(), "<fuzz>", context, diagnostics)
        run_pipeline(module.operation, [MirToLir(fuse_elementwise=True)])
        for function in defined_functions(module.operation):
            buffers = function_buffers(function)
            expected = [(op, result) for op in buffers.ops for result in op.results
                        if result in buffers.value_ids and buffers.buffers[buffers.value_ids[result]].kind == "output"]
            assert returned_outputs(function) == expected


def test_module_verified_at_parse_is_not_verified_again_by_an_unchanging_first_pass(monkeypatch):
    calls = []
    original = verifier.verify_and_find_rlx

    def counting(op):
        calls.append(op)
        return original(op)

    monkeypatch.setattr(verifier, "verify_and_find_rlx", counting)
    counts = {}
    for verify_at_parse in (True, False):
        calls.clear()
        with driver.Compilation() as job:
            module = job.parse(chain(8), verify=verify_at_parse)
            job.run(module, LowerToLLVM(threads=1), "lowering failed")
        counts[verify_at_parse] = len(calls)
    # Verified at parse: rlx-outline-blocks (first, changes nothing) is not verified again; the
    # RLX checks run once in all as often as without parse verification (the first pass does them).
    assert counts[True] == counts[False], counts


def test_mlir_verifier_runs_after_each_run_of_upstream_passes(monkeypatch):
    from rlx_mlir.passmanager import pipeline

    checks = []
    original = pipeline._verify_structure

    def counting(op, pass_):
        checks.append(op.name)
        original(op, pass_)

    monkeypatch.setattr(pipeline, "_verify_structure", counting)
    context = make_context()
    with context, DiagnosticCollector(context) as diagnostics:
        module = driver.parse_verified(chain(2), "<chain>", context, diagnostics)
        elements = ["canonicalize", "cse", *expand(LowerToLLVM(threads=1))[:2], "canonicalize", "symbol-dce"]
        pipeline.build_pass_manager(elements, context).run(module.operation)
    assert checks == ["builtin.module", "builtin.module"]  # after cse, after symbol-dce; not in between


def test_pass_breaking_an_rlx_free_module_is_caught_by_mlir_verifier():
    import dataclasses

    from mlir import ir
    from mlir.dialects import func

    from rlx_mlir.ir.walk import collect_ops
    from rlx_mlir.passmanager.base import RlxPass
    from rlx_mlir.passmanager.pipeline import VerificationState, build_pass_manager

    @dataclasses.dataclass(frozen=True)
    class DropReturn(RlxPass):
        name = "test-drop-return"
        summary = "erases every func.return (a block without terminator)"
        creates_rlx_ops = False

        def run(self, module):
            for op in collect_ops(module, func.ReturnOp):
                op.operation.erase()

    context = make_context()
    text = "func.func @f(%x: memref<4xf32>) {\n  return\n}\n"
    with context, DiagnosticCollector(context) as diagnostics:
        module = driver.parse_verified(text, "<t>", context, diagnostics)
        manager = build_pass_manager([DropReturn()], context, verification=VerificationState(rlx_free=True))
        with pytest.raises(ir.MLIRError):
            manager.run(module.operation)
        assert any("terminator" in str(error) for error in diagnostics.errors), diagnostics.errors


def test_lowering_passes_with_nothing_to_do_are_not_followed_by_a_verify(monkeypatch):
    """On a chain without matmuls or reductions the passes that would rewrite those say they changed
    nothing, and the module they received (verified) is not verified again; on a matmul they change
    it, and it is verified after them."""
    from rlx_mlir.conversion.mir_to_linalg.mir_to_linalg import MirToLinalg
    from rlx_mlir.passmanager import pipeline
    from rlx_mlir.transforms.linalg.pack_matmul import PackMatmul
    from rlx_mlir.transforms.linalg.reassociate_reductions import ReassociateReductions
    from rlx_mlir.transforms.linalg.tile_gemv import TileGemv

    checks = []
    structure, rlx = pipeline._verify_structure, verifier.verify_and_find_rlx

    def counting_structure(op, pass_):
        checks.append("mlir")
        structure(op, pass_)

    def counting_rlx(op):
        checks.append("rlx")
        return rlx(op)

    monkeypatch.setattr(pipeline, "_verify_structure", counting_structure)
    monkeypatch.setattr(verifier, "verify_and_find_rlx", counting_rlx)
    matmul = ("func.func @f(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {\n"
              '  %0 = "rlx.matmul"(%a, %b) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>\n'
              "  return %0 : tensor<64x64xf32>\n}\n")
    counts = {}
    for name, text in (("chain", chain(8)), ("matmul", matmul)):
        context = make_context()
        with context, DiagnosticCollector(context) as diagnostics:
            module = driver.parse_verified(text, "<test>", context, diagnostics)
            pipeline.build_pass_manager([MirToLinalg()], context).run(module.operation)
            checks.clear()
            elements = [ReassociateReductions(), TileGemv(), PackMatmul()]
            pipeline.build_pass_manager(elements, context, input_verified=True).run(module.operation)
        counts[name] = len(checks)
    assert counts["chain"] == 0 and counts["matmul"] >= 1, counts


def test_unchanging_pass_after_upstream_passes_is_verified_only_where_rlx_ops_remain(monkeypatch):
    """After a run of upstream passes MLIR's verifier checks the module; an RLX pass that then
    changes nothing is not verified again on an RLX-free module (that check is all it would get),
    but still gets the RLX verifier on a module that holds RLX ops (upstream passes do not run it)."""
    import dataclasses

    from rlx_mlir.conversion.mir_to_linalg.mir_to_linalg import MirToLinalg
    from rlx_mlir.passmanager import pipeline
    from rlx_mlir.passmanager.base import RlxPass

    @dataclasses.dataclass(frozen=True)
    class Nothing(RlxPass):
        name = "test-nothing"
        summary = "changes nothing and says so"
        creates_rlx_ops = False

        def run(self, module):
            return False

    checks = []
    structure, rlx = pipeline._verify_structure, verifier.verify_and_find_rlx
    monkeypatch.setattr(pipeline, "_verify_structure", lambda op, pass_: checks.append("mlir") or structure(op, pass_))
    monkeypatch.setattr(verifier, "verify_and_find_rlx", lambda op: checks.append("rlx") or rlx(op))
    seen = {}
    for lowered in (True, False):
        context = make_context()
        with context, DiagnosticCollector(context) as diagnostics:
            module = driver.parse_verified(chain(4), "<test>", context, diagnostics)
            checks.clear()
            # The first RLX pass learns whether the module is RLX-free; upstream passes follow.
            first = [MirToLinalg()] if lowered else [Nothing()]
            pipeline.build_pass_manager([*first, "canonicalize", Nothing()], context).run(module.operation)
        seen[lowered] = list(checks)
    assert seen[True] == ["rlx", "mlir"], seen  # after rlx-mir-to-linalg; after canonicalize, none after test-nothing
    assert seen[False] == ["rlx", "mlir", "rlx"], seen  # rlx ops remain: verified after test-nothing too
