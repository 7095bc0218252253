"""The on-disk compile cache of ahead-of-time compiles (rlx_mlir/runtime/disk_cache.py).

A second export of the same module with the same options, in this process or another, reuses
the object file (no lowering, no LLVM); other options, another module or other tools miss;
entries appear whole or not at all, under concurrent writers; RLX_CACHE_DIR=off turns it off.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from rlx_mlir import aot
from rlx_mlir.aot import exporter
from rlx_mlir.runtime import disk_cache

ROOT = Path(__file__).resolve().parents[1]
MLP = """
func.func @mlp(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "rlx.relu"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.glob("*/*") if (p / "complete").is_file()) if cache.exists() else []


def count_lowerings(monkeypatch) -> list:
    calls = []
    real = exporter._lower

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(exporter, "_lower", counting)
    return calls


def run_mlp(path: Path) -> np.ndarray:
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in [(4, 8), (8, 16), (16,)])
    got = aot.load(str(path))(x, w, b)
    np.testing.assert_allclose(got, np.maximum(x.astype(np.float64) @ w + b, 0), rtol=1e-5, atol=1e-6)
    return got


def test_a_second_export_reuses_the_object_file(cache, tmp_path, monkeypatch):
    lowerings = count_lowerings(monkeypatch)
    first = aot.export(MLP, tmp_path / "a" / "mlp.so")
    assert len(lowerings) == 1 and len(entries(cache)) == 1
    second = aot.export(MLP, tmp_path / "b" / "mlp.so")
    assert len(lowerings) == 1, "the second export lowered the module again"
    assert first["functions"] == second["functions"]
    np.testing.assert_array_equal(run_mlp(tmp_path / "a" / "mlp.so"), run_mlp(tmp_path / "b" / "mlp.so"))
    # The object form comes from the same entry.
    aot.export(MLP, tmp_path / "mlp.o", emit="object")
    assert len(lowerings) == 1 and (tmp_path / "mlp.o").read_bytes() == (entries(cache)[0] / "model.o").read_bytes()


@pytest.mark.parametrize("change", ["opt_level", "threads", "module", "cpu"])
def test_other_options_or_another_module_miss(cache, tmp_path, monkeypatch, change):
    lowerings = count_lowerings(monkeypatch)
    aot.export(MLP, tmp_path / "a.so")
    other = {"opt_level": dict(opt_level=1), "threads": dict(threads=2), "cpu": dict(cpu="x86-64")}.get(change, {})
    text = MLP.replace("rlx.relu", "rlx.neg") if change == "module" else MLP
    aot.export(text, tmp_path / "b.so", **other)
    assert len(lowerings) == 2 and len(entries(cache)) == 2


def test_other_tools_miss(cache, tmp_path, monkeypatch):
    aot.export(MLP, tmp_path / "a.so")
    disk_cache.tool_versions.cache_clear()
    monkeypatch.setattr(disk_cache, "tool_versions", lambda llc: "another compiler")
    lowerings = count_lowerings(monkeypatch)
    aot.export(MLP, tmp_path / "b.so")
    assert len(lowerings) == 1 and len(entries(cache)) == 2


def test_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.ENV, "off")
    lowerings = count_lowerings(monkeypatch)
    aot.export(MLP, tmp_path / "a.so")
    aot.export(MLP, tmp_path / "b.so")
    assert len(lowerings) == 2 and disk_cache.cache_dir() is None


def test_an_incomplete_entry_is_ignored_and_replaced(cache, tmp_path, monkeypatch):
    aot.export(MLP, tmp_path / "a.so")
    (entry,) = entries(cache)
    (entry / "complete").unlink()  # as if its writer died before the rename (it never does: see store)
    lowerings = count_lowerings(monkeypatch)
    aot.export(MLP, tmp_path / "b.so")
    assert len(lowerings) == 1
    run_mlp(tmp_path / "b.so")


def test_concurrent_writers_leave_one_whole_entry(cache):
    results, start = [], threading.Barrier(8)

    def write(i: int) -> None:
        start.wait()
        results.append(disk_cache.store("ab" * 32, {"model.o": bytes([i]) * 4096, "records.json": "[]"}))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    (entry,) = entries(cache)
    assert all(result == entry for result in results)
    data = (entry / "model.o").read_bytes()
    assert len(data) == 4096 and len(set(data)) == 1  # one writer's whole file
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]  # no temporary left behind


def test_an_unwritable_cache_is_skipped(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(disk_cache.ENV, str(blocker / "cache"))
    aot.export(MLP, tmp_path / "a.so")
    run_mlp(tmp_path / "a.so")


def test_another_process_hits_the_entry_this_one_wrote(cache, tmp_path):
    aot.export(MLP, tmp_path / "a.so")
    script = ("import sys; from rlx_mlir.aot import exporter\n"
              "def fail(*a, **k): raise SystemExit('lowered again')\n"
              "exporter._lower = fail\n"
              f"exporter.export({MLP!r}, sys.argv[1])\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "b.so")], capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 0, done.stderr
    run_mlp(tmp_path / "b.so")


# --- the warm start: a hit needs no MLIR, and a damaged entry is compiled again ----------------


def test_a_hit_in_a_new_process_imports_no_mlir_and_only_copies(cache, tmp_path):
    (tmp_path / "mlp.mlir").write_text(MLP)
    aot.export(MLP, tmp_path / "a" / "mlp.so", filename=str(tmp_path / "mlp.mlir"))  # as rlx-compile names it
    (entry,) = entries(cache)
    assert (entry / "model.so").is_file()  # the linked library is kept too
    script = ("import sys\nfrom rlx_mlir.tools.compile import main\n"
              "assert main([sys.argv[1], '-o', sys.argv[2]]) == 0\n"
              "print('mlir imported' if 'mlir' in sys.modules else 'no mlir')\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "mlp.mlir"), str(tmp_path / "b" / "mlp.so")],
                          capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT), disk_cache.ENV: str(cache)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "no mlir"
    np.testing.assert_array_equal(run_mlp(tmp_path / "a" / "mlp.so"), run_mlp(tmp_path / "b" / "mlp.so"))
    assert (tmp_path / "b" / "mlp.h").is_file()


def test_rlx_compile_with_params_on_a_hit_imports_neither_mlir_nor_numpy(cache, tmp_path):
    """rlx-compile only copies (or links) on a hit, and checks a parameter file and writes the header
    and manifest in pure Python: numpy (most of a new process's start) is not imported either."""
    (tmp_path / "mlp.mlir").write_text(MLP)
    weights = tmp_path / "w.safetensors"
    header = {}
    for name, spec in ((s["name"], s) for s in aot.export(MLP, tmp_path / "a" / "mlp.so")["functions"][0]["inputs"]
                       if s["param"]):
        size = 4 * int(np.prod(spec["shape"]))
        start = sum(end - begin for begin, end in (v["data_offsets"] for v in header.values()))
        header[name] = {"dtype": "F32", "shape": spec["shape"], "data_offsets": [start, start + size]}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    total = sum(v["data_offsets"][1] - v["data_offsets"][0] for v in header.values())
    weights.write_bytes(len(text).to_bytes(8, "little") + text + bytes(total))
    script = ("import sys\nfrom rlx_mlir.tools.compile import main\n"
              "assert main([sys.argv[1], '-o', sys.argv[2], '--params', sys.argv[3]]) == 0\n"
              "print(sorted(m for m in ('mlir', 'numpy', 'ml_dtypes') if m in sys.modules))\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT), disk_cache.ENV: str(cache)}
    for output in ("b", "c"):  # the first may compile (another option set), the second hits
        done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "mlp.mlir"),
                               str(tmp_path / output / "mlp.so"), str(weights)],
                              capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert (tmp_path / "c" / "mlp.safetensors").read_bytes() == weights.read_bytes()
    assert "#define RLX_MLP_OUTPUT_RESULT0_BYTES 256" in (tmp_path / "c" / "mlp.h").read_text()  # 4 x 16 x 4


@pytest.mark.parametrize("damaged", ["model.so", "model.o", "records.json"])
def test_a_damaged_entry_is_compiled_again(cache, tmp_path, monkeypatch, damaged):
    aot.export(MLP, tmp_path / "a.so")
    (entry,) = entries(cache)
    data = (entry / damaged).read_bytes()
    (entry / damaged).write_bytes(data[: len(data) // 2])  # truncated: a linker or dlopen must never see it
    lowerings = count_lowerings(monkeypatch)
    aot.export(MLP, tmp_path / "b.so")
    assert len(lowerings) == 1, "the damaged entry was used"
    run_mlp(tmp_path / "b.so")
    (entry,) = entries(cache)  # replaced by a whole one
    assert disk_cache.intact(entry)
    aot.export(MLP, tmp_path / "c.so")
    assert len(lowerings) == 1
