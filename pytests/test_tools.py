"""Generated files, the pass registry and the command-line tools' error behaviour."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir.passmanager import registry
from rlx_mlir.passmanager.pipeline import PipelineError, parse_pipeline
from rlx_mlir.tools.gen_dialect import stale_files

ROOT = Path(__file__).resolve().parents[1]
BAD_MATMUL = ROOT / "lit_tests" / "cli" / "Inputs" / "bad-matmul.mlir"
MLP = ROOT / "lit_tests" / "cli" / "Inputs" / "mlp.mlir"


def test_generated_dialect_files_are_up_to_date():
    stale = stale_files(ROOT / "dialect")
    assert not stale, f"run `rlx-gen-dialect` to regenerate: {[str(p) for p in stale]}"


def test_registry_names_match_their_passes():
    for table in (registry.PASSES, registry.PIPELINES):
        for name, cls in table.items():
            assert cls.name == name
            assert cls.summary and "\n" not in cls.summary


def test_every_registered_name_parses_as_a_pipeline_element():
    for name in [*registry.PASSES, *registry.PIPELINES]:
        assert parse_pipeline(f"builtin.module({name})")


def test_pipelines_expand_to_passes_and_upstream_text():
    elements = parse_pipeline("builtin.module(rlx-lower-to-llvm{out-params=false plan=false},cse)")
    names = [e if isinstance(e, str) else e.name for e in elements]
    assert names[:5] == [
        "rlx-outline-blocks", "rlx-hir-to-mir", "rlx-split-weight-concat", "rlx-mir-to-linalg", "rlx-bool-tensors-to-i8"
    ]
    # exp/log/tanh/erf expand late, on buffers, before the functions are split for LLVM.
    assert names.index("rlx-approximate-math") == names.index("rlx-split-functions") - 1
    assert names[-1] == "cse"
    assert not any(n.startswith("buffer-results-to-out-params") for n in names)


def test_unknown_names_get_suggestions():
    with pytest.raises(PipelineError, match="did you mean 'rlx-mir-to-linalg'"):
        parse_pipeline("builtin.module(rlx-mir-to-linalgg)")


def _run(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, input=stdin, timeout=120)


def test_help_lists_every_pass_and_pipeline():
    output = _run("rlx_mlir.tools.opt", "--help").stdout
    for name, cls in [*registry.PASSES.items(), *registry.PIPELINES.items()]:
        assert f"--{name}" in output and cls.summary in output


BAD_OPT_INVOCATIONS = {
    "malformed": (["-"], "func.func @f( {"),
    "unknown op": (["-"], 'func.func @f(%a: tensor<2xf32>) { %0 = "rlx.nope"(%a) : (tensor<2xf32>) -> tensor<2xf32> return }'),
    "matmul K": ([str(BAD_MATMUL)], None),
    "unknown pass": ([str(MLP), "--pass-pipeline=builtin.module(nope)"], None),
    "bad option": ([str(MLP), "--pass-pipeline=builtin.module(rlx-lower-to-llvm{x=1})"], None),
    "missing file": (["/nonexistent/x.mlir"], None),
    "binary input": (["-"], "\x00\x01\x02"),
    "empty pipeline element": ([str(MLP), "--pass-pipeline=builtin.module(,)"], None),
}


@pytest.mark.parametrize("case", list(BAD_OPT_INVOCATIONS))
def test_rlx_opt_bad_input_is_one_clear_error(case):
    args, stdin = BAD_OPT_INVOCATIONS[case]
    done = _run("rlx_mlir.tools.opt", *args, stdin=stdin)
    assert done.returncode == 1, done.stderr
    assert "error:" in done.stderr
    assert "Traceback" not in done.stderr and "LLVM ERROR" not in done.stderr


def test_rlx_run_bad_inputs(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((3, 8), np.float32))
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    cases = [
        [str(MLP), "--input", str(tmp_path / "x.npy"), "--random-inputs"],
        [str(MLP), "--input", str(tmp_path / "junk.npy"), "--random-inputs"],
        [str(MLP), "--input", str(tmp_path / "absent.npy"), "--random-inputs"],
        [str(MLP), "--random-inputs", "--output", "a.npy", "--output", "b.npy"],
        [str(BAD_MATMUL), "--random-inputs"],
    ]
    for args in cases:
        done = _run("rlx_mlir.tools.run", *args)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert "error:" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_big_endian_arguments_are_accepted_in_native_order():
    """A big-endian array holds the same values: the runtime converts it instead of refusing
    it with a message that printed the same type twice."""
    exe = rlx_mlir.compile(MLP.read_text(), "mlp")
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (8, 16), (16,)))
    native = exe(x, w, b)
    swapped = exe(x.astype(">f4"), w.astype(">f4"), b)
    np.testing.assert_array_equal(swapped, native)
    with pytest.raises(ValueError, match=r"expected tensor<4x8xf32> \(numpy float32 \[4, 8\]\), got numpy float64"):
        exe(x.astype(">f8"), w, b)


def test_memory_error_is_a_clear_tool_error(capsys):
    from rlx_mlir.tools.cli import guarded

    def main(argv):
        raise MemoryError("Unable to allocate 37.3 GiB for an array with shape (100000, 100000)")

    assert guarded("rlx-run", main, []) == 1
    err = capsys.readouterr().err
    assert err == "rlx-run: error: out of memory: Unable to allocate 37.3 GiB for an array with shape (100000, 100000)\n"


def _ranged_options():
    for table in (registry.PASSES, registry.PIPELINES):
        for name, cls in table.items():
            for field in cls.option_fields():
                valid = field.metadata.get("valid")
                if valid is not None:
                    yield name, cls, field, valid


RANGED_OPTIONS = list(_ranged_options())


@pytest.mark.parametrize("name, cls, field, valid", RANGED_OPTIONS, ids=[f"{n}:{f.name}" for n, _, f, _ in RANGED_OPTIONS])
def test_every_ranged_option_refuses_values_outside_its_range(name, cls, field, valid):
    """Each option is checked where it is declared: just outside the range is an error naming
    the option, the value and the range, from a pipeline string and from Python."""
    option = field.name.replace("_", "-")
    outside = [v for v in (valid.minimum - 1 if valid.minimum is not None else None,
                           valid.maximum + 1 if valid.maximum is not None else None) if v is not None]
    if valid.power_of_two:
        outside.append(3)
    assert outside
    for value in outside:
        message = f"option '{option}' of '{name}': expected {re.escape(valid.describe())}, got {value}"
        with pytest.raises(PipelineError, match=rf"<pass-pipeline>:1:1: error: {message}"):
            parse_pipeline(f"{name}{{{option}={value}}}")
        with pytest.raises(ValueError, match=message):
            cls(**{field.name: value})
    cls(**{field.name: field.default})  # the default is in range


def test_option_types_are_checked_from_python():
    from rlx_mlir.pipelines.lower_to_llvm import LowerToLLVM

    with pytest.raises(ValueError, match=r"option 'threads' of 'rlx-lower-to-llvm': expected int, got True"):
        LowerToLLVM(threads=True)
    with pytest.raises(ValueError, match=r"option 'plan' of 'rlx-lower-to-llvm': expected bool, got 1"):
        LowerToLLVM(plan=1)
