"""Compile progress: each stage and its time, on request (rlx_mlir/progress.py)."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rlx_mlir

ROOT = Path(__file__).resolve().parents[1]

NEG = """
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

STAGE_DONE = re.compile(r"^\[rlx_mlir\] (.+): (\d+\.\d\d) s$", re.M)


def test_progress_prints_each_stage_with_its_time(capfd):
    exe = rlx_mlir.compile(NEG, cache=False, progress=True)
    err = capfd.readouterr().err
    finished = dict(STAGE_DONE.findall(err))
    assert "parse <string> and verify" in finished
    assert "rlx-lower-to-llvm" in finished
    assert "LLVM code generation (-O3)" in finished
    assert "[rlx_mlir] rlx-lower-to-llvm ...\n" in err  # announced before it runs
    np.testing.assert_array_equal(exe(np.arange(4, dtype=np.float32)), -np.arange(4, dtype=np.float32))


def test_silent_by_default_and_after_a_progress_compile(capfd):
    rlx_mlir.compile(NEG, cache=False, progress=True)
    capfd.readouterr()
    rlx_mlir.compile(NEG, cache=False)
    assert "[rlx_mlir]" not in capfd.readouterr().err


def test_stages_reach_the_rlx_mlir_logger(caplog):
    with caplog.at_level(logging.INFO, logger="rlx_mlir"):
        rlx_mlir.compile(NEG, cache=False)
    messages = [record.getMessage() for record in caplog.records if record.name == "rlx_mlir"]
    assert any(re.fullmatch(r"rlx-lower-to-llvm: \d+\.\d\d s", message) for message in messages), messages


def test_a_failing_stage_still_reports_its_time(capfd):
    bad = NEG.replace("tensor<4xf32>) -> tensor<4xf32>\n  return", "tensor<4xf32>) -> tensor<5xf32>\n  return")
    with pytest.raises(rlx_mlir.CompileError):
        rlx_mlir.compile(bad, cache=False, progress=True)
    assert "parse <string> and verify" in dict(STAGE_DONE.findall(capfd.readouterr().err))


def test_progress_must_be_a_flag():
    try:
        rlx_mlir.compile(NEG, progress="yes")
    except ValueError as error:
        assert "progress must be True or False" in str(error)
    else:
        raise AssertionError("progress='yes' was accepted")


def test_rlx_verbose_environment_variable_prints_stages():
    script = f"import rlx_mlir; rlx_mlir.compile({NEG!r}, cache=False)"
    env = dict(os.environ, RLX_VERBOSE="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "rlx-lower-to-llvm" in dict(STAGE_DONE.findall(done.stderr))
    quiet = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env=dict(env, RLX_VERBOSE="0"), timeout=300)
    assert "[rlx_mlir]" not in quiet.stderr
