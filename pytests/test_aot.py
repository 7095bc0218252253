"""AOT shared objects: export on the CPU target, load with numpy + ctypes only, run
against plain numpy references written here; the CUDA export is built (PTX
embedded) and checked structurally, since CI has no GPU."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from test_llama import CONFIG, reference_forward

import rlx_mlir
from rlx_mlir import aot
from rlx_mlir.models.llama import build_llama, random_weights

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MLP = """
func.func @mlp(%x: tensor<4x8xf32> {rlx.name = "x"}, %w: tensor<8x16xf32> {rlx.name = "w", rlx.param},
               %b: tensor<16xf32> {rlx.name = "b", rlx.param}) -> tensor<4x16xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "rlx.gelu"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}
"""

TWO_FUNCTIONS = """
func.func @scale_add(%a: tensor<3x5xf32> {rlx.name = "a"}, %b: tensor<3x5xf32> {rlx.name = "b"}) -> tensor<3x5xf32> {
  %0 = "rlx.mul"(%a, %a) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  return %1 : tensor<3x5xf32>
}
func.func @row_softmax(%x: tensor<2x6xf32> {rlx.name = "x"}) -> tensor<2x6xf32> {
  %0 = "rlx.softmax"(%x) {axis = -1 : i64} : (tensor<2x6xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}
"""


def cache_step(tied_first: bool) -> str:
    """A decode step: the cache with 2 rows written at `pos` (a result tied to argument 0, updated in
    place) and the new rows squared.  Named `step` like a libc function: calls inside the library must
    still reach the model's own `step`."""
    cache, new = "tensor<2x6x4xf32>", "tensor<2x2x4xf32>"
    tied = f"{cache} {{rlx.tied = 0 : i64}}"
    results, values = ((f"{tied}, {new}", f"%0, %1 : {cache}, {new}") if tied_first
                       else (f"{new}, {tied}", f"%1, %0 : {new}, {cache}"))
    return f"""
func.func @step(%cache: {cache} {{rlx.name = "cache"}}, %new: {new} {{rlx.name = "new"}},
                %pos: tensor<i64> {{rlx.name = "pos"}}) -> ({results}) {{
  %0 = "rlx.kv_cache_write"(%cache, %new, %pos) : ({cache}, {new}, tensor<i64>) -> {cache}
  %1 = "rlx.mul"(%new, %new) : ({new}, {new}) -> {new}
  return {values}
}}"""


def gelu(h):
    return 0.5 * h * (1.0 + np.vectorize(math.erf)(h / math.sqrt(2.0)))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def mlp_so(tmp_path_factory):
    path = tmp_path_factory.mktemp("mlp") / "mlp.so"
    aot.export(MLP, path, target="cpu")
    return path


@pytest.fixture(scope="module")
def mlp_inputs():
    rng = np.random.default_rng(3)
    return {name: rng.standard_normal(shape).astype(np.float32)
            for name, shape in (("x", (4, 8)), ("w", (8, 16)), ("b", (16,)))}


def test_exported_mlp_matches_numpy(mlp_so, mlp_inputs):
    model = aot.load(str(mlp_so))
    expected = gelu(mlp_inputs["x"].astype(np.float64) @ mlp_inputs["w"] + mlp_inputs["b"])
    by_name = model(**mlp_inputs)
    np.testing.assert_allclose(by_name, expected, rtol=1e-5, atol=1e-5)
    by_position = model.mlp(mlp_inputs["x"], mlp_inputs["w"], mlp_inputs["b"])
    np.testing.assert_array_equal(by_position, by_name)


def test_manifest_describes_the_function(mlp_so):
    manifest = json.loads(mlp_so.with_suffix(".json").read_text())
    assert manifest["target"] == "cpu" and manifest["library"] == "mlp.so"
    (function,) = manifest["functions"]
    assert function["name"] == "mlp" and function["symbol"] == "_mlir_ciface_mlp"
    assert [(i["name"], i["shape"], i["dtype"], i["param"]) for i in function["inputs"]] == [
        ("x", [4, 8], "float32", False), ("w", [8, 16], "float32", True), ("b", [16], "float32", True)]
    assert [(o["shape"], o["dtype"]) for o in function["outputs"]] == [([4, 16], "float32")]


def test_load_and_run_do_not_import_mlir(mlp_so):
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        from rlx_mlir import aot
        model = aot.load({str(mlp_so)!r})
        y = model(x=np.ones((4, 8), np.float32), w=np.full((8, 16), 0.5, np.float32), b=np.zeros(16, np.float32))
        loaded = sorted(m for m in sys.modules if m == "mlir" or m.startswith("mlir."))
        print(repr(float(y[0, 0])), loaded)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    value, loaded = done.stdout.strip().split(" ", 1)
    assert loaded == "[]"
    assert float(value) == pytest.approx(gelu(np.float64(4.0)), rel=1e-6)  # 8 * 1 * 0.5


def _gpu_bundle():
    spec = importlib.util.spec_from_file_location("gpu_bundle", os.path.join(ROOT, "scripts", "gpu_bundle.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("where", ["source-tree", "bundle-files"])
def test_loader_imports_and_runs_where_mlir_cannot_be_imported(mlp_so, tmp_path, where):
    # A machine without MLIR: every `import mlir` fails.  The loader imports and runs a model from the
    # source tree, and from a folder that holds only the files the GPU bundle carries (loader_files).
    bundle = _gpu_bundle()
    root = ROOT
    if where == "bundle-files":
        files = bundle.loader_files()
        assert "rlx_mlir/aot/loader.py" in [str(f) for f in files]
        root = str(tmp_path / "bundle")
        for file in files:
            os.makedirs(os.path.join(root, os.path.dirname(file)), exist_ok=True)
            with open(os.path.join(ROOT, file), "rb") as source, open(os.path.join(root, file), "wb") as copy:
                copy.write(source.read())
    script = bundle.BLOCK_MLIR + textwrap.dedent(f"""
        sys.path.insert(0, {root!r})
        import numpy as np
        import rlx_mlir, rlx_mlir.runtime, rlx_mlir.ir
        from rlx_mlir import aot
        from rlx_mlir.aot import loader
        try:
            import mlir.ir
        except ImportError as error:
            assert "MLIR is not available here" in str(error), error
        else:
            raise SystemExit("mlir was importable")
        model = loader.load({str(mlp_so)!r})
        y = model(x=np.ones((4, 8), np.float32), w=np.full((8, 16), 0.5, np.float32), b=np.zeros(16, np.float32))
        print(repr(float(y[0, 0])))
        print(sorted({{m.__file__ for name, m in sys.modules.items() if name.split(".")[0] == "rlx_mlir"}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    value, files = done.stdout.splitlines()
    assert float(value) == pytest.approx(gelu(np.float64(4.0)), rel=1e-6)  # 8 * 1 * 0.5
    files = eval(files)
    assert os.path.join(root, "rlx_mlir", "aot", "loader.py") in files
    assert all(f.startswith(os.path.join(root, "rlx_mlir") + os.sep) for f in files), files


def test_multi_function_module_exposes_each_function(tmp_path):
    path = tmp_path / "two.so"
    manifest = aot.export(TWO_FUNCTIONS, str(path))
    assert [f["name"] for f in manifest["functions"]] == ["scale_add", "row_softmax"]
    model = aot.load(str(path))
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 5)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    x = rng.standard_normal((2, 6)).astype(np.float32)
    np.testing.assert_allclose(model.scale_add(a=a, b=b), a.astype(np.float64) ** 2 + b, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(model.row_softmax(x), softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="has 2 functions .*call one by name"):
        model(x)
    with pytest.raises(AttributeError, match="no function 'nope'.*scale_add, row_softmax"):
        model.nope  # noqa: B018 (the attribute access is what raises)


def test_two_layer_llama_round_trip(tmp_path):
    path = tmp_path / "llama.so"
    aot.export(str(build_llama(CONFIG)), str(path), target="cpu")
    model = aot.load(str(path))
    weights = random_weights(CONFIG, seed=0)
    tokens = np.random.default_rng(1).integers(0, CONFIG.vocab, (CONFIG.batch, CONFIG.seq)).astype(np.int64)
    expected = reference_forward(tokens, weights, CONFIG)
    logits = model(tokens=tokens, **weights)
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_wrong_argument_is_a_clear_error(mlp_so, mlp_inputs):
    model = aot.load(str(mlp_so))
    with pytest.raises(ValueError, match=r"argument 'w' of mlp: expected numpy float32 \[8, 16\], got numpy float64"):
        model(**{**mlp_inputs, "w": mlp_inputs["w"].astype(np.float64)})
    with pytest.raises(TypeError, match="missing arguments: b"):
        model(x=mlp_inputs["x"], w=mlp_inputs["w"])


def test_loader_takes_arguments_as_compile_does(mlp_so, mlp_inputs):
    # One argument handling (runtime/abi.py): a big-endian or strided array is read in native order, as a copy.
    model = aot.load(str(mlp_so))
    expected = model(**mlp_inputs)
    x = np.zeros((4, 16), np.float32)
    x[:, ::2] = mlp_inputs["x"]
    odd = {"x": x[:, ::2], "w": mlp_inputs["w"].astype(">f4"), "b": mlp_inputs["b"]}
    np.testing.assert_array_equal(model(**odd), expected)
    np.testing.assert_array_equal(rlx_mlir.compile(MLP)(**odd), expected)


def test_export_errors_are_clear(tmp_path):
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        aot.export(MLP, str(tmp_path / "m.so"), target="tpu")
    from rlx_mlir.targets.cuda import TargetError

    with pytest.raises(TargetError, match=r"PTX version 6.0 does not support 'sm_90'.*'\+ptx78'"):
        aot.export(MLP, str(tmp_path / "m.so"), target="cuda", chip="sm_90", features="+ptx60")
    from rlx_mlir import CompileError

    bad = MLP.replace("tensor<8x16xf32>", "tensor<9x16xf32>")
    with pytest.raises(CompileError, match="contracting dimensions differ"):
        aot.export(bad, str(tmp_path / "m.so"))
    assert not (tmp_path / "m.so").exists()


def test_cuda_export_embeds_ptx_and_ships_the_cuda_runtime(tmp_path):
    path = tmp_path / "mlp_cuda.so"
    manifest = aot.export(MLP, str(path), target="cuda", chip="sm_80", features="+ptx70")
    assert manifest["gpu"] == {"chip": "sm_80", "features": "+ptx70", "format": "isa"}
    assert manifest["runtime_libraries"] == ["libmlir_cuda_runtime.so"]
    assert (tmp_path / "libmlir_cuda_runtime.so").exists()
    binary = path.read_bytes()
    assert b".target sm_80" in binary and b".version 7.0" in binary and b".visible .entry" in binary
    assert b".shared" in binary  # the tiled matmul's workgroup memory
    needed = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True).stdout
    assert "libmlir_cuda_runtime.so" in needed and "$ORIGIN" in needed


@pytest.mark.skipif(aot.cuda_device_error() is None, reason="a CUDA device is present")
def test_loading_a_cuda_model_without_a_device_is_a_clear_error(tmp_path):
    path = tmp_path / "mlp_cuda.so"
    aot.export(MLP, str(path), target="cuda")
    with pytest.raises(RuntimeError, match="cannot run CUDA model .*mlp_cuda.so: no CUDA"):
        aot.load(str(path))


def test_gpu_bundle_builds_and_its_check_script_passes_on_cpu(tmp_path):
    # The deployment bundle of docs/design.md §5 without libLLVM and the benchmark models (fast);
    # its check script runs the CPU builds against its own numpy references, MLIR-free, through the
    # Python loader and through the C runtime.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = tmp_path / "bundle"
    build = subprocess.run([sys.executable, os.path.join(root, "scripts", "gpu_bundle.py"), "--out", str(out),
                            "--no-bench", "--no-llvm"], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    assert {"check.py", "rlx_mlir", "models.json", "cpu", "cuda"} <= set(os.listdir(out))
    assert "libmlir_cuda_runtime.so" in os.listdir(out / "cuda")
    check = subprocess.run([sys.executable, str(out / "check.py"), "--cpu"], capture_output=True, text=True,
                           timeout=300, cwd=tmp_path)
    models = json.loads((out / "models.json").read_text())["numerics"]
    passed = [line.split()[2:4] for line in check.stdout.splitlines() if line.startswith("PASS")]
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    through_c = [["C", name] for name in models] if compiler else []
    # Every model through the Python loader, then through the C runtime (c/run_model) where it was built.
    assert passed == [["python", name] for name in models] + through_c, check.stdout + check.stderr
    assert check.returncode == 0
    if aot.cuda_device_error() is not None:
        no_gpu = subprocess.run([sys.executable, str(out / "check.py")], capture_output=True, text=True, timeout=60)
        assert no_gpu.returncode == 2 and "cannot run the CUDA models here: no CUDA" in no_gpu.stdout


@pytest.mark.parametrize("tied_first", [True, False], ids=["tied-first", "tied-second"])
def test_tied_result_is_the_callers_array_updated_in_place(tmp_path, tied_first):
    text = cache_step(tied_first)
    manifest = aot.export(text, tmp_path / "step.so")
    assert [o["tied"] for o in manifest["functions"][0]["outputs"]] == ([0, None] if tied_first else [None, 0])
    model, jit = aot.load(str(tmp_path / "step.so")), rlx_mlir.compile(text)
    rng = np.random.default_rng(7)
    cache = rng.standard_normal((2, 6, 4)).astype(np.float32)
    jit_cache, expected = cache.copy(), cache.copy()
    for pos in (3, 0, 5):  # 5 is clamped to C - S = 4: rows 4 and 5
        new = rng.standard_normal((2, 2, 4)).astype(np.float32)
        start = min(pos, 4)
        expected[:, start:start + 2] = new  # numpy: rlx.kv_cache_write writes S rows at clamp(pos, 0, C - S)
        outputs = model(cache, new, np.array(pos))
        jit_outputs = jit(jit_cache, new, np.array(pos))
        written, squared = outputs if tied_first else outputs[::-1]
        assert written is cache  # the caller's own array, as compile() returns it
        np.testing.assert_array_equal(cache, expected)
        np.testing.assert_allclose(squared, new.astype(np.float64) ** 2, rtol=1e-6)
        for ours, theirs in zip(outputs, jit_outputs):
            np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(jit_cache, cache)


def test_tied_argument_must_be_a_writable_c_contiguous_array(tmp_path):
    aot.export(cache_step(True), tmp_path / "step.so")
    model = aot.load(str(tmp_path / "step.so"))
    new, pos = np.ones((2, 2, 4), np.float32), np.array(0)
    message = "argument 'cache' of step is updated in place .* must be a writable C-contiguous numpy array"
    read_only = np.zeros((2, 6, 4), np.float32)
    read_only.flags.writeable = False
    for cache in (read_only, np.zeros((4, 6, 2), np.float32).transpose(2, 1, 0)):  # read-only; Fortran order
        with pytest.raises(ValueError, match=message):
            model(cache, new, pos)
    assert not read_only.any()


def test_cuda_export_of_a_tied_result_is_a_clear_error(tmp_path):
    # The CUDA pipeline keeps a tied result as an output of its own: refused, rather than a cache
    # that is silently never updated.
    text = """
func.func @acc(%acc: tensor<4x8xf32>, %x: tensor<4x8xf32>) -> (tensor<4x8xf32> {rlx.tied = 0 : i64}) {
  %0 = "rlx.add"(%acc, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}"""
    from rlx_mlir import CompileError

    with pytest.raises(CompileError, match=r"@acc: target 'cuda' does not update results tied to an argument "
                                           r"\(rlx.tied\) in place"):
        aot.export(text, tmp_path / "acc.so", target="cuda")
    assert not (tmp_path / "acc.json").exists()


MATMUL_8x64x64 = """
func.func @mm(%a: tensor<8x64xf32> {rlx.name = "a"}, %b: tensor<64x64xf32> {rlx.name = "b"}) -> tensor<8x64xf32> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}
"""


def test_export_threads_are_chosen_not_the_exporting_machines(tmp_path, monkeypatch):
    """A library's thread count is compiled in: serial unless asked (threads=N, or 0 for this
    machine's RLX_NUM_THREADS / cores); OpenMP (and its runtime, shipped alongside) only then."""
    monkeypatch.setenv("RLX_NUM_THREADS", "2")
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((8, 64)).astype(np.float32), rng.standard_normal((64, 64)).astype(np.float32)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    for name, options, openmp in (("default", {}, False), ("two", {"threads": 2}, True),
                                  ("machine", {"threads": 0}, True), ("one", {"threads": 1}, False)):
        path = tmp_path / name / "mm.so"
        manifest = aot.export(MATMUL_8x64x64, path, **options)
        assert ("libiomp5.so" in manifest["runtime_libraries"]) == openmp, (name, manifest["runtime_libraries"])
        np.testing.assert_allclose(aot.load(path)(a, b), expected, rtol=1e-4, atol=1e-4)
    for bad in (-1, 1025, True, 2.0):
        with pytest.raises(ValueError, match=rf"export\(\): threads must be an integer in \[0, 1024\] \(0: this "
                                             rf"machine's thread count\), got {bad!r}"):
            aot.export(MATMUL_8x64x64, tmp_path / "bad.so", threads=bad)
