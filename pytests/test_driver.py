"""The compile driver (rlx_mlir/driver.py): parse, verify, run a pipeline, CompileError; and the
reproducer a failing pipeline writes: its module plus an rlx-opt command that fails the same way."""

import re
import shlex
import subprocess
import sys

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir import driver
from rlx_mlir.transforms.linalg.tile_matmul import TileMatmul

# Verifies, but the old cache is read after the write: rlx-lower-to-llvm's rlx-drop-tied-results fails.
TIED_READ_AFTER_WRITE = """\
func.func @step(%q: tensor<1x1x8xf32>, %k: tensor<1x1x8xf32>, %cache: tensor<1x16x8xf32>, %pos: tensor<i64>)
    -> (tensor<1x1x8xf32>, tensor<1x16x8xf32> {rlx.tied = 2 : i64}) {
  %new = "rlx.kv_cache_write"(%cache, %k, %pos) : (tensor<1x16x8xf32>, tensor<1x1x8xf32>, tensor<i64>) -> tensor<1x16x8xf32>
  %o = "rlx.cached_attention"(%q, %cache, %cache, %pos) {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<1x1x8xf32>, tensor<1x16x8xf32>, tensor<1x16x8xf32>, tensor<i64>) -> tensor<1x1x8xf32>
  return %o, %new : tensor<1x1x8xf32>, tensor<1x16x8xf32>
}
"""
TIED_ERROR = "result #1 is tied to argument #2 (rlx.tied), but bufferization did not update that argument in place"

# A generic tagged as a GEMM kernel that is not one: rlx-tile-matmul fails on it.
NOT_A_KERNEL = """\
func.func @not_a_kernel(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x4xf32>) outs(%a : tensor<4x4xf32>) attrs = {rlx.microkernel} {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
"""

ADD = """\
func.func @add(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "rlx.add"(%a, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""


def _reproducer_of(error: rlx_mlir.CompileError):
    found = re.search(r"\(reproducer: (\S+\.mlir)\)", str(error))
    assert found, str(error)
    return found.group(1)


def _run_reproducer(path: str) -> subprocess.CompletedProcess:
    """Runs the command written in the reproducer's header (rlx-opt as `python -m`, so this checkout's)."""
    header = open(path).read().splitlines()[:2]
    assert header[1].startswith("// reproduce: rlx-opt ")
    argv = shlex.split(header[1][len("// reproduce: "):])
    assert argv[:2] == ["rlx-opt", path]
    return subprocess.run([sys.executable, "-m", "rlx_mlir.tools.opt", *argv[1:]], capture_output=True, text=True,
                          timeout=300)


def _error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if ": error: " in line]


def test_failing_compile_writes_a_reproducer_that_rlx_opt_fails_on_alike(tmp_path, monkeypatch):
    monkeypatch.setenv(driver.REPRODUCER_ENV, str(tmp_path / "repro"))
    with pytest.raises(rlx_mlir.CompileError, match=r"^lowering to LLVM failed \(reproducer: ") as caught:
        rlx_mlir.compile(TIED_READ_AFTER_WRITE, "step", threads=1, cache=False, filename="step.mlir")
    path = _reproducer_of(caught.value)
    assert path.startswith(str(tmp_path / "repro" / "rlx-repro-"))
    header = open(path).read().splitlines()
    assert header[0] == "// rlx-mlir reproducer: lowering to LLVM failed"
    # The exact pipeline compile() ran: the options it resolved are spelled out.
    assert "'--pass-pipeline=builtin.module(rlx-lower-to-llvm{threads=1})'" in header[1]
    done = _run_reproducer(path)
    assert done.returncode == 1, done.stderr
    ours = _error_lines(caught.value.render_diagnostics())
    assert any(TIED_ERROR in line for line in ours)
    # The same diagnostics at the same source positions (the module keeps its locations).
    assert _error_lines(done.stderr) == ours
    assert ours[0].startswith("step.mlir:5:")


def test_reproducer_argument_spells_the_pass_options(tmp_path):
    with driver.Compilation(filename="kernel.mlir", reproducer=tmp_path) as job:
        module = job.parse(NOT_A_KERNEL)
        with pytest.raises(rlx_mlir.CompileError, match=r"^tiling failed \(reproducer: ") as caught:
            job.run(module, [TileMatmul(threads=2), "canonicalize"], "tiling failed")
    path = _reproducer_of(caught.value)
    assert "'--pass-pipeline=builtin.module(rlx-tile-matmul{threads=2},canonicalize)'" in open(path).read()
    done = _run_reproducer(path)
    assert done.returncode == 1
    assert "kernel.mlir:2:8: error: tiling the matmul kernels failed" in done.stderr
    assert _error_lines(done.stderr) == _error_lines(caught.value.render_diagnostics())


def test_no_reproducer_unless_asked(tmp_path, monkeypatch):
    monkeypatch.delenv(driver.REPRODUCER_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(rlx_mlir.CompileError) as caught:
        rlx_mlir.compile(TIED_READ_AFTER_WRITE, "step", threads=1, cache=False)
    assert str(caught.value).startswith("lowering to LLVM failed\n")
    monkeypatch.setenv(driver.REPRODUCER_ENV, str(tmp_path / "env"))
    with driver.Compilation(reproducer=False) as job:  # False wins over the environment
        module = job.parse(NOT_A_KERNEL)
        with pytest.raises(rlx_mlir.CompileError, match=r"^tiling failed\n"):
            job.run(module, TileMatmul(), "tiling failed")
    assert list(tmp_path.iterdir()) == []


def test_unwritable_reproducer_directory_still_reports_the_compile_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with driver.Compilation(reproducer=blocker / "sub") as job:
        module = job.parse(NOT_A_KERNEL)
        with pytest.raises(rlx_mlir.CompileError, match=r"^tiling failed \(no reproducer written to .*a-file/sub: "):
            job.run(module, TileMatmul(), "tiling failed")


def test_driver_parses_verifies_and_runs():
    with driver.Compilation(filename="bad.mlir") as job:
        with pytest.raises(rlx_mlir.CompileError, match=r"^module does not verify\nbad.mlir:2:8: error: 'rlx.add' op operand shapes \[3\] and \[4\] do not broadcast"):
            job.parse(ADD.replace("%b: tensor<3xf32>", "%b: tensor<4xf32>").replace(
                "(tensor<3xf32>, tensor<3xf32>) ->", "(tensor<3xf32>, tensor<4xf32>) ->"))
    with driver.Compilation(filename="bad.mlir") as job:
        with pytest.raises(rlx_mlir.CompileError, match=r"^failed to parse bad.mlir\nbad.mlir:1:13: error: expected non-function type\n"):
            job.parse("func.func @f(")
    with driver.Compilation() as job:
        module = job.parse(ADD)
        job.run(module, "builtin.module(rlx-mir-to-linalg)", "lowering failed")
        assert "linalg.generic" in str(module) and "rlx.add" not in str(module)
    a, b = np.arange(3, dtype=np.float32), np.full(3, 0.5, np.float32)
    np.testing.assert_array_equal(rlx_mlir.compile(ADD, threads=1)(a, b), np.array([0.5, 1.5, 2.5], np.float32))
