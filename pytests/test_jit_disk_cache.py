"""compile() keeps its executables on disk too (rlx_mlir/runtime/jit_disk_cache.py).

A second compile of the same module with the same options, after the in-process cache is
cleared or in another process, loads the shared object stored the first time: no lowering, no
LLVM, and in a new process no MLIR imported at all.  Other options miss; a corrupted entry is
compiled again (never a crash); RLX_CACHE_DIR=off stores nothing; processes compiling one module
at once leave one whole entry.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rlx_mlir
from rlx_mlir.runtime import disk_cache, jit

ROOT = Path(__file__).resolve().parents[1]
MLP = """
func.func @mlp(%x: tensor<4x8xf32> {rlx.name = "x"}, %w: tensor<8x16xf32> {rlx.name = "w", rlx.param},
               %b: tensor<16xf32> {rlx.name = "b", rlx.param}) -> tensor<4x16xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "rlx.exp"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %3 = "rlx.relu"(%2) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %3 : tensor<4x16xf32>
}
"""
# In a new process: compile MLP from disk, check it against numpy, say whether MLIR was imported.
CHILD = """
import sys
import numpy as np
import rlx_mlir
exe = rlx_mlir.compile(sys.stdin.read(), threads=1)
rng = np.random.default_rng(3)
x, w, b = (rng.standard_normal(s).astype(np.float32) for s in [(4, 8), (8, 16), (16,)])
expected = np.maximum(np.exp(x.astype(np.float64) @ w + b), 0)
np.testing.assert_allclose(exe(x, w=w, b=b), expected, rtol=1e-5)
print("mlir imported" if "mlir" in sys.modules else "no mlir", str(exe.signature))
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path / "cache"))
    rlx_mlir.clear_compile_cache()
    yield tmp_path / "cache"
    rlx_mlir.clear_compile_cache()


def entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.glob("*/*") if (p / "complete").is_file()) if cache.exists() else []


def inputs():
    rng = np.random.default_rng(3)
    return [rng.standard_normal(s).astype(np.float32) for s in [(4, 8), (8, 16), (16,)]]


def reference(x, w, b):
    return np.maximum(np.exp(x.astype(np.float64) @ w + b), 0)


def count_compiles(monkeypatch) -> list:
    calls = []
    real = jit.compile_text

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(jit, "compile_text", counting)
    return calls


def child(text: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), disk_cache.ENV: str(cache)}
    return subprocess.run([sys.executable, "-c", CHILD], input=text, capture_output=True, text=True, env=env,
                          timeout=300)


def test_another_process_loads_the_code_without_mlir(cache):
    first = child(MLP, cache)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("mlir imported") and len(entries(cache)) == 1
    second = child(MLP, cache)
    assert second.returncode == 0, second.stderr
    # The signature (names, weights) comes back from the entry's record.
    assert second.stdout.strip() == "no mlir @mlp(x: float32[4, 8], w: float32[8, 16] (param), b: float32[16] " \
                                    "(param)) -> (result0: float32[4, 16])"
    assert len(entries(cache)) == 1


def test_this_process_loads_it_after_the_in_process_cache_is_cleared(cache, monkeypatch):
    x, w, b = inputs()
    compiled = rlx_mlir.compile(MLP, threads=1)
    compiles = count_compiles(monkeypatch)
    rlx_mlir.clear_compile_cache()
    loaded = rlx_mlir.compile(MLP, threads=1)
    assert compiles == [] and loaded is not compiled
    np.testing.assert_allclose(loaded(x, w, b), reference(x, w, b), rtol=1e-5)
    np.testing.assert_array_equal(loaded(x, w, b), compiled(x, w, b))
    assert loaded.arena == compiled.arena
    # Source positions come back too (rlx-run's `file:line:col: error:` for a bad argument).
    positions = [spec.position for spec in compiled.signature.inputs]
    assert [spec.position for spec in loaded.signature.inputs] == positions and None not in positions
    # Its LLVM dialect is lowered again on demand, as the compiled one's.
    assert loaded.llvm_ir == compiled.llvm_ir and "llvm.func @_mlir_ciface_mlp" in loaded.llvm_ir
    # Contexts of a loaded executable have arenas of their own, as compiled ones'.
    np.testing.assert_array_equal(loaded.context()(x, w, b), compiled(x, w, b))


@pytest.mark.parametrize("change", [dict(threads=2), dict(opt_level=1), dict(plan=False), dict(entry="mlp"), "module"])
def test_other_options_or_another_module_miss(cache, monkeypatch, change):
    rlx_mlir.compile(MLP, threads=1)
    compiles = count_compiles(monkeypatch)
    rlx_mlir.clear_compile_cache()
    text = MLP.replace("rlx.exp", "rlx.neg") if change == "module" else MLP
    options = {"threads": 1, **(change if isinstance(change, dict) else {})}
    rlx_mlir.compile(text, **options)
    assert len(compiles) == 1 and len(entries(cache)) == 2


@pytest.mark.parametrize("damage", ["truncated", "altered", "record", "missing library"])
def test_a_damaged_entry_is_compiled_again(cache, monkeypatch, damage):
    x, w, b = inputs()
    rlx_mlir.compile(MLP, threads=1)
    (entry,) = entries(cache)
    library = entry / "jit.so"
    if damage == "truncated":
        library.write_bytes(library.read_bytes()[:4096])
    elif damage == "altered":
        data = bytearray(library.read_bytes())
        data[len(data) // 2] ^= 0xFF
        library.write_bytes(bytes(data))
    elif damage == "record":
        (entry / "record.json").write_text('{"format": 1, "signature": ')
    else:
        library.unlink()
    compiles = count_compiles(monkeypatch)
    rlx_mlir.clear_compile_cache()
    exe = rlx_mlir.compile(MLP, threads=1)
    assert len(compiles) == 1, "the damaged entry was used"
    np.testing.assert_allclose(exe(x, w, b), reference(x, w, b), rtol=1e-5)
    # ... and replaced by a good one, which the next compile loads.
    rlx_mlir.clear_compile_cache()
    np.testing.assert_allclose(rlx_mlir.compile(MLP, threads=1)(x, w, b), reference(x, w, b), rtol=1e-5)
    assert len(compiles) == 1 and len(entries(cache)) == 1


def test_a_damaged_entry_does_not_crash_another_process(cache):
    assert child(MLP, cache).returncode == 0
    (entry,) = entries(cache)
    (entry / "jit.so").write_bytes((entry / "jit.so").read_bytes()[:1000])  # mapped, it would SIGBUS
    done = child(MLP, cache)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("mlir imported")  # compiled again


def test_off_stores_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.ENV, "off")
    rlx_mlir.clear_compile_cache()
    compiles = count_compiles(monkeypatch)
    rlx_mlir.compile(MLP, threads=1)
    rlx_mlir.clear_compile_cache()
    rlx_mlir.compile(MLP, threads=1)
    assert len(compiles) == 2
    rlx_mlir.clear_compile_cache()


def test_cache_false_neither_reads_nor_writes_it(cache, monkeypatch):
    compiles = count_compiles(monkeypatch)
    rlx_mlir.compile(MLP, threads=1, cache=False)
    assert entries(cache) == []
    rlx_mlir.compile(MLP, threads=1)
    rlx_mlir.compile(MLP, threads=1, cache=False)
    assert len(compiles) == 3


def test_processes_compiling_at_once_leave_one_whole_entry(cache):
    env = {**os.environ, "PYTHONPATH": str(ROOT), disk_cache.ENV: str(cache)}
    children = [subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    for process in children:
        out, err = process.communicate(MLP, timeout=300)
        assert process.returncode == 0, err
    (entry,) = entries(cache)
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]  # no temporary left behind
    assert child(MLP, cache).stdout.startswith("no mlir")
