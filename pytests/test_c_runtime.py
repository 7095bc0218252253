"""Deployment from C and C++: rlx-compile, the C runtime (rlx/runtime.h) and the CMake package.

The MLP of examples/c is compiled by the rlx-compile CLI; pytests/native/check_runtime.c (built
with the system C compiler and the runtime's one source) opens it with no Python in its process,
runs it and is compared with numpy; it runs 4 threads x 4 contexts x 1000 calls; it reports
each misuse's error code and message. Broken libraries and manifests are refused with a code and
a message, never a crash. The CMake example (rlx_add_model, a C and a C++ program) is
configured, built and run under ctest where cmake is installed.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_llama import CONFIG as LLAMA
from test_llama import reference_forward

from rlx_mlir import aot
from rlx_mlir.models.llama import random_weights

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "c"
NATIVE = ROOT / "rlx_mlir" / "native"
COMPILE = [sys.executable, "-m", "rlx_mlir.tools.compile"]  # rlx-compile, from these sources
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
C_COMPILER = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")

pytestmark = pytest.mark.skipif(C_COMPILER is None, reason="no C compiler (cc or gcc) to build the C runtime with")

# Codes of rlx_status_t (rlx/runtime.h).
INVALID_ARGUMENT, IO, LOAD, MANIFEST, SHAPE, DTYPE, MISSING_PARAM = 1, 2, 3, 4, 5, 6, 7


def rlx_compile(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*COMPILE, *map(str, args)], capture_output=True, text=True, env=ENV, timeout=300)


def gelu(v: np.ndarray) -> np.ndarray:
    return 0.5 * v * (1.0 + np.vectorize(math.erf)(v / math.sqrt(2.0)))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(the MLP library, its data directory, the check_runtime program)."""
    work = tmp_path_factory.mktemp("c-runtime")
    done = rlx_compile(EXAMPLES / "mlp.mlir", "-o", work / "model" / "libmlp.so")
    assert done.returncode == 0, done.stderr
    subprocess.run([sys.executable, str(EXAMPLES / "make_data.py"), str(work / "data")], check=True)
    program = work / "check_runtime"
    subprocess.run([C_COMPILER, "-std=c11", "-O1", "-Wall", "-Werror", f"-I{NATIVE / 'include'}",
                    str(ROOT / "pytests" / "native" / "check_runtime.c"), str(NATIVE / "src" / "runtime.c"),
                    "-o", str(program), "-ldl", "-lpthread"], check=True)
    return work / "model" / "libmlp.so", work / "data", program


def check(program: Path, *args) -> str:
    done = subprocess.run([str(program), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr}"
    return done.stdout


def numpy_mlp(data: Path, scale: float = 1.0) -> np.ndarray:
    a = {n: np.fromfile(data / f"{n}.bin", "<f4").astype(np.float64) for n in ("x", "w1", "b1", "w2", "b2")}
    x = a["x"].reshape(8, 32) * scale
    return gelu(x @ a["w1"].reshape(32, 64) + a["b1"]) @ a["w2"].reshape(64, 16) + a["b2"]


def test_rlx_compile_writes_the_library_header_and_manifest(built):
    library, _, _ = built
    manifest = json.loads(library.with_suffix(".json").read_text())
    function = manifest["functions"][0]
    assert function["arena"]["bytes"] > 0 and function["arena"]["alignment"] == 64
    header = library.with_name("libmlp.h").read_text()
    for line in ("#include <rlx/runtime.h>", '#define RLX_MLP_NAME "mlp"', "#define RLX_MLP_NUM_INPUTS 5",
                 "#define RLX_MLP_INPUT_X_SHAPE {8, 32}", "#define RLX_MLP_INPUT_W1_BYTES 8192",
                 "#define RLX_MLP_INPUT_W1_PARAM 1", "#define RLX_MLP_OUTPUT_RESULT0_DTYPE RLX_DTYPE_FLOAT32",
                 "#define RLX_MLP_OUTPUT_RESULT0_TIED -1",
                 f"#define RLX_MLP_ARENA_BYTES {function['arena']['bytes']}"):
        assert line in header, line
    assert "x: float32[8, 32], w1: float32[32, 64] (param)" in header


def test_the_c_program_matches_numpy(built):
    library, data, program = built
    check(program, "run", library, data)
    result = np.fromfile(data / "result.bin", "<f4").reshape(8, 16)
    np.testing.assert_allclose(result, numpy_mlp(data), rtol=1e-4, atol=1e-5)


def test_inputs_and_outputs_are_queried_by_index_and_name(built):
    library, _, program = built
    lines = check(program, "info", library).splitlines()
    assert re.fullmatch(r"function mlp arena \d+ runtime-inputs 1", lines[0])
    assert lines[1:] == [
        "input x float32 [8, 32] bytes 1024 param 0 tied -1",
        "input w1 float32 [32, 64] bytes 8192 param 1 tied -1",
        "input b1 float32 [64] bytes 256 param 1 tied -1",
        "input w2 float32 [64, 16] bytes 4096 param 1 tied -1",
        "input b2 float32 [16] bytes 64 param 1 tied -1",
        "output result0 float32 [8, 16] bytes 512 param 0 tied -1",
    ]


def test_four_threads_with_four_contexts_each_match_one_thread(built):
    library, data, program = built
    # Each thread runs its own input (x times t + 1), so a shared arena would mix results up.
    assert check(program, "threads", library, data, 4, 4, 1000).strip() == "calls 4000 differ 0 failed 0"


MISUSES = {
    "missing-param": (MISSING_PARAM, r"weight 'w1' of @mlp is not bound \(rlx_context_bind_param\)"),
    "wrong-shape": (SHAPE, r"input 'x' of @mlp: expected float32\[8, 32\], got float32\[8, 31\]"),
    "wrong-rank": (SHAPE, r"input 'x' of @mlp: expected float32\[8, 32\], got float32\[256\]"),
    "wrong-dtype": (DTYPE, r"input 'x' of @mlp: expected float32\[8, 32\], got int32\[8, 32\]"),
    "wrong-bytes": (SHAPE, r"input 'x' of @mlp: float32\[8, 32\] is 1024 bytes, got a buffer of 1020"),
    "null-data": (INVALID_ARGUMENT, r"input 'x' of @mlp: data is NULL"),
    "null-shape": (INVALID_ARGUMENT, r"input 'x' of @mlp: rank 2 with a NULL shape"),
    "too-many-inputs": (INVALID_ARGUMENT, r"@mlp takes 1 runtime inputs \(its 4 weights are bound to the context\), got 2"),
    "null-inputs": (INVALID_ARGUMENT, r"rlx_invoke: the inputs array is NULL"),
    "null-context": (INVALID_ARGUMENT, r"rlx_invoke: the context is NULL"),
    "output-overlaps-weight": (INVALID_ARGUMENT, r"output 'result0' of @mlp overlaps input 'w1'.*"),
    "bind-unknown": (INVALID_ARGUMENT, r"@mlp has no input named 'w9'"),
    "bind-input": (INVALID_ARGUMENT, r"input 'x' of @mlp is not a weight \(rlx.param\): pass it to rlx_invoke"),
    "bind-bytes": (SHAPE, r"weight 'w1' of @mlp is float32 with 2048 elements \(8192 bytes\), got 8188 bytes"),
    "bind-null": (INVALID_ARGUMENT, r"rlx_context_bind_param: the data is NULL"),
    "null-model": (INVALID_ARGUMENT, r"rlx_context_create: model is NULL"),
    "still-runs": (0, r"ok"),
}


def test_misuse_is_an_error_code_and_a_message(built):
    library, data, program = built
    lines = check(program, "misuse", library, data).splitlines()
    found = dict(line.split(": ", 1) for line in lines if not line.startswith("queries"))
    assert set(found) == set(MISUSES)
    for name, (code, message) in MISUSES.items():
        assert re.fullmatch(rf"{code} {message}", found[name]), (name, found[name])
    assert "queries: -1 0 1 1" in lines  # unknown name -1, result0 at 0, indices out of range NULL
    assert check(program, "open-null", "-").strip() == f"open-null: {INVALID_ARGUMENT} rlx_model_open: path is NULL"


def broken_copy(library: Path, tmp_path: Path, change) -> Path:
    for file in library.parent.iterdir():
        shutil.copy2(file, tmp_path / file.name)
    copy = tmp_path / library.name
    change(copy, copy.with_suffix(".json"))
    return copy


def edit_manifest(edit):
    def change(_library: Path, manifest: Path) -> None:
        content = json.loads(manifest.read_text())
        edit(content)
        manifest.write_text(json.dumps(content))
    return change


BROKEN = {
    # Refused before dlopen (which would map a truncated file past its end: SIGBUS).
    "truncated-library": (lambda lib, _m: lib.write_bytes(lib.read_bytes()[:2000]),
                          MANIFEST, r".*libmlp.so: its SHA-256 is not the one .*libmlp.json records .*"),
    "empty-library": (lambda lib, _m: lib.write_bytes(b""), MANIFEST, r".*libmlp.so: its SHA-256 is not the one .*"),
    "runtime-library-altered": (lambda lib, m: ((lib.parent / "libextra.so").write_bytes(b"\0" * 64), edit_manifest(
                                    lambda c: (c["runtime_libraries"].append("libextra.so"),
                                               c["sha256"].update({"libextra.so": "0" * 64})))(lib, m)),
                                MANIFEST, r".*libextra.so: its SHA-256 is not the one .*"),
    "runtime-library-path": (edit_manifest(lambda c: c["runtime_libraries"].append("../libm.so.6")),
                             MANIFEST, r".*runtime_libraries: expected bare file names"),
    "library-missing": (lambda lib, _m: lib.unlink(), IO, r".*libmlp.so: cannot open it \(named by .*libmlp.json\)"),
    # A library that is not what it says, with the manifest's digest made to match: dlopen refuses it.
    "not-a-library": (lambda lib, m: (lib.write_bytes(b"not an ELF file" * 100), edit_manifest(
                          lambda c: c["sha256"].update({"libmlp.so": aot.loader.file_sha256(str(lib))}))(lib, m)),
                      LOAD, r".*libmlp.so: cannot load the library: .*"),
    "manifest-shape": (edit_manifest(lambda m: m["functions"][0]["inputs"][0].update(shape=[8, 33])),
                       MANIFEST, r".*libmlp.json: does not describe libmlp.so .*export the model again\)"),
    "manifest-arena": (edit_manifest(lambda m: m["functions"][0]["arena"].update(bytes=64)),
                       MANIFEST, r".*does not describe libmlp.so.*"),
    "manifest-format": (edit_manifest(lambda m: m.update(format="rlx-aot/1")),
                        MANIFEST, r".*libmlp.json: format: not an RLX AOT manifest of format 'rlx-aot/2'.*"),
    "manifest-library": (edit_manifest(lambda m: m.update(library="libother.so")),
                         MANIFEST, r".*library: describes 'libother.so', not 'libmlp.so'"),
    "manifest-not-json": (lambda _l, m: m.write_text('{"format": "rlx-aot/2", '), MANIFEST,
                          r".*libmlp.json: not valid JSON: .*"),
    "manifest-deep": (lambda _l, m: m.write_text("[" * 100000), MANIFEST, r".*not valid JSON: nested too deeply"),
    "manifest-missing": (lambda _l, m: m.unlink(), IO, r".*libmlp.json: cannot open the manifest .*"),
    # (A 'cuda' manifest is a CUDA model now: test_a_cuda_model_opens_only_where_the_cuda_driver_and_a_device_are.)
    "manifest-target": (edit_manifest(lambda m: m.update(target="tpu")), 9,
                        r".*a 'tpu' model; the C runtime runs 'cpu' and 'cuda' models"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_libraries_and_manifests_are_refused(built, tmp_path, case):
    library, _, program = built
    change, code, message = BROKEN[case]
    copy = broken_copy(library, tmp_path, change)
    line = check(program, "open", copy).strip()
    assert re.fullmatch(rf"open: {code} {message}", line), line


def test_a_kv_cache_is_updated_in_place_through_the_c_api(built, tmp_path):
    _, _, program = built
    source = tmp_path / "step.mlir"
    source.write_text("""
func.func @step(%x: tensor<1x1x8xf32> {rlx.name = "x"}, %cache: tensor<1x16x8xf32> {rlx.name = "cache"},
                %pos: tensor<i64> {rlx.name = "pos"}, %w: tensor<8x8xf32> {rlx.name = "w", rlx.param})
    -> (tensor<1x1x8xf32>, tensor<1x16x8xf32> {rlx.tied = 1 : i64}) {
  %k = "rlx.matmul"(%x, %w) : (tensor<1x1x8xf32>, tensor<8x8xf32>) -> tensor<1x1x8xf32>
  %c = "rlx.kv_cache_write"(%cache, %k, %pos) : (tensor<1x16x8xf32>, tensor<1x1x8xf32>, tensor<i64>) -> tensor<1x16x8xf32>
  %y = "rlx.tanh"(%k) : (tensor<1x1x8xf32>) -> tensor<1x1x8xf32>
  return %y, %c : tensor<1x1x8xf32>, tensor<1x16x8xf32>
}
""")
    done = rlx_compile(source, "-o", tmp_path / "libstep.so")
    assert done.returncode == 0, done.stderr
    rng = np.random.default_rng(7)
    x, cache, w = (rng.standard_normal(s).astype(np.float32) for s in [(1, 1, 8), (1, 16, 8), (8, 8)])
    for name, value in {"x": x, "cache": cache, "pos": np.array(5, np.int64), "w": w}.items():
        value.tofile(tmp_path / f"{name}.bin")
    check(program, "raw", tmp_path / "libstep.so", tmp_path)
    k = x.astype(np.float64) @ w
    expected_cache = cache.copy()
    expected_cache[:, 5:6, :] = k
    np.testing.assert_allclose(np.fromfile(tmp_path / "result0.out.bin", np.float32).reshape(1, 1, 8), np.tanh(k),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.fromfile(tmp_path / "cache.after.bin", np.float32).reshape(1, 16, 8),
                               expected_cache, rtol=1e-5, atol=1e-6)


def test_bf16_and_float8_tensors_cross_the_c_api_and_ship_in_safetensors(built, tmp_path):
    """bfloat16 and float8_e4m3fn (OCP FP8 E4M3) inputs, weights and results: in the header and the
    manifest, queried, passed and returned through the C runtime, and an F8_E4M3 / BF16 weight file
    written by the safetensors package shipped with --params and bound from it (C and Python)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    _, _, program = built
    source = tmp_path / "mix.mlir"
    source.write_text("""
func.func @mix(%x: tensor<4xbf16> {rlx.name = "x"}, %w: tensor<4xf8E4M3FN> {rlx.name = "w", rlx.param},
               %s: tensor<4xbf16> {rlx.name = "s", rlx.param}) -> (tensor<4xf32>, tensor<4xf8E4M3FN>, tensor<4xbf16>) {
  %xf = "rlx.cast"(%x) : (tensor<4xbf16>) -> tensor<4xf32>
  %wf = "rlx.cast"(%w) : (tensor<4xf8E4M3FN>) -> tensor<4xf32>
  %sf = "rlx.cast"(%s) : (tensor<4xbf16>) -> tensor<4xf32>
  %p = "rlx.mul"(%xf, %wf) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = "rlx.add"(%p, %sf) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y8 = "rlx.cast"(%y) : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  %y16 = "rlx.cast"(%y) : (tensor<4xf32>) -> tensor<4xbf16>
  return %y, %y8, %y16 : tensor<4xf32>, tensor<4xf8E4M3FN>, tensor<4xbf16>
}
""")
    w = np.array([1.5, -0.25, 448.0, 0.0068359375], np.float32).astype(ml_dtypes.float8_e4m3fn)
    s = np.array([0.5, 3.0, -2.0, 1e-3], np.float32).astype(ml_dtypes.bfloat16)
    weights = tmp_path / "weights.safetensors"
    safetensors_torch.save_file({"w": torch.from_numpy(w.view(np.uint8).copy()).view(torch.float8_e4m3fn),
                                 "s": torch.from_numpy(s.view(np.uint16).copy()).view(torch.bfloat16)}, str(weights))
    stored = json.loads(weights.read_bytes()[8:8 + int.from_bytes(weights.read_bytes()[:8], "little")])
    assert (stored["w"]["dtype"], stored["s"]["dtype"]) == ("F8_E4M3", "BF16")
    done = rlx_compile(source, "-o", tmp_path / "libmix.so", "--params", weights)
    assert done.returncode == 0, done.stderr
    header = (tmp_path / "libmix.h").read_text()
    assert "#define RLX_MIX_INPUT_X_DTYPE RLX_DTYPE_BFLOAT16" in header
    assert "#define RLX_MIX_INPUT_W_DTYPE RLX_DTYPE_FLOAT8_E4M3FN" in header
    assert check(program, "info", tmp_path / "libmix.so").splitlines()[1:] == [
        "input x bfloat16 [4] bytes 8 param 0 tied -1", "input w float8_e4m3fn [4] bytes 4 param 1 tied -1",
        "input s bfloat16 [4] bytes 8 param 1 tied -1", "output result0 float32 [4] bytes 16 param 0 tied -1",
        "output result1 float8_e4m3fn [4] bytes 4 param 0 tied -1", "output result2 bfloat16 [4] bytes 8 param 0 tied -1"]
    x = np.array([2.0, -4.0, 0.5, 100.0], np.float32).astype(ml_dtypes.bfloat16)
    x.tofile(tmp_path / "x.bin")  # no w.bin, s.bin: the shipped file's weights
    check(program, "raw", tmp_path / "libmix.so", tmp_path)
    expected = x.astype(np.float64) * w.astype(np.float64) + s.astype(np.float64)  # exact in f32 here
    y = np.fromfile(tmp_path / "result0.out.bin", np.float32)
    np.testing.assert_array_equal(y, expected.astype(np.float32))
    y8 = np.fromfile(tmp_path / "result1.out.bin", np.uint8)
    np.testing.assert_array_equal(y8, y.astype(ml_dtypes.float8_e4m3fn).view(np.uint8))
    y16 = np.fromfile(tmp_path / "result2.out.bin", np.uint16)
    np.testing.assert_array_equal(y16, y.astype(ml_dtypes.bfloat16).view(np.uint16))
    # The Python loader reads the same shipped file (aot.params: F8_E4M3 -> float8_e4m3fn).
    shipped = aot.loader.load_params(str(tmp_path / "libmix.safetensors"))
    assert shipped["w"].dtype == np.dtype(ml_dtypes.float8_e4m3fn) and shipped["s"].dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(shipped["w"].view(np.uint8), w.view(np.uint8))
    results = aot.load(str(tmp_path / "libmix.so"))(x)
    np.testing.assert_array_equal(results[0], y)
    np.testing.assert_array_equal(results[1].view(np.uint8), y8)


def test_rlx_compile_emits_header_object_and_llvm_dialect(tmp_path):
    source = EXAMPLES / "mlp.mlir"
    assert rlx_compile(source, "-o", tmp_path / "mlp.h", "--emit", "header").returncode == 0
    assert "#define RLX_MLP_INPUT_B2_SHAPE {16}" in (tmp_path / "mlp.h").read_text()
    assert not (tmp_path / "mlp.so").exists() and not (tmp_path / "mlp.json").exists()
    assert rlx_compile(source, "-o", tmp_path / "mlp.o", "--emit", "object").returncode == 0
    assert (tmp_path / "mlp.o").read_bytes()[:4] == b"\x7fELF" and (tmp_path / "mlp.h").exists()
    assert rlx_compile(source, "-o", tmp_path / "mlp.ll.mlir", "--emit", "mlir-llvm").returncode == 0
    lowered = (tmp_path / "mlp.ll.mlir").read_text()
    assert "llvm.func @_mlir_ciface_mlp(" in lowered and "rlx.arena = array<i64:" in lowered
    cmake_dir = rlx_compile("--cmake-dir").stdout.strip()
    assert (Path(cmake_dir) / "RlxMlirConfig.cmake").is_file()


@pytest.mark.parametrize("args, message", [
    (["-o", "out.so"], r"rlx-compile: error: could not open input file 'missing.mlir': .*"),
    ([], r"rlx-compile: error: no output path: give -o PATH"),
    (["-o", "out.so", "--target", "tpu"], r".*argument --target: invalid choice: 'tpu'.*"),
    (["-o", "out.so", "--entry", "nope"], r"rlx-compile: error: no function '@nope' in the module .*"),
    (["-o", "out.so", "--chip", "sm_80"], r"rlx-compile: error: --chip is an option of --target cuda"),
    (["-o", "out.so", "--target", "cuda", "--chip", "sm_12"], r"rlx-compile: error: unknown NVIDIA chip 'sm_12' .*"),
    (["-o", "out.so", "--target", "cuda", "--features", "+ptx99"],
     r"rlx-compile: error: PTX version 9.9 \('\+ptx99'\) is not supported by LLVM 22 .*"),
])
def test_rlx_compile_usage_errors(tmp_path, args, message):
    source = EXAMPLES / "mlp.mlir" if "missing.mlir" not in message else "missing.mlir"
    done = subprocess.run([*COMPILE, str(source), *args], capture_output=True, text=True, env=ENV, cwd=tmp_path)
    assert done.returncode == 1
    assert re.search(message, done.stderr.strip(), re.S), done.stderr
    assert "Traceback" not in done.stderr


def test_a_cuda_model_opens_only_where_the_cuda_driver_and_a_device_are(built, tmp_path):
    """rlx-compile --target cuda writes the library (PTX inside), its header and manifest; the C runtime
    loads the CUDA driver itself (dlopen, not linked): without one, or where it finds no device,
    opening the model is RLX_ERROR_DEVICE with the reason. Where a GPU is present, the model runs and
    matches numpy (as it did on an H100 through the GPU bundle's check.py)."""
    _, data, program = built
    library = tmp_path / "cuda" / "libmlp.so"
    done = rlx_compile(EXAMPLES / "mlp.mlir", "-o", library, "--target", "cuda", "--chip", "sm_80",
                       "--features", "+ptx70")
    assert done.returncode == 0, done.stderr
    assert json.loads(library.with_suffix(".json").read_text())["gpu"] == {"chip": "sm_80", "features": "+ptx70",
                                                                          "format": "isa"}
    assert '#define RLX_MODEL_TARGET "cuda"' in library.with_suffix(".h").read_text()
    if aot.cuda_device_error() is None:  # a GPU: the C runtime runs the model on it
        (data / "result.bin").unlink(missing_ok=True)
        check(program, "run", library, data)
        np.testing.assert_allclose(np.fromfile(data / "result.bin", "<f4").reshape(8, 16), numpy_mlp(data),
                                   rtol=1e-4, atol=1e-5)
        return
    line = check(program, "open", library).strip()
    assert re.fullmatch(r"open: 11 .*libmlp\.so: a 'cuda' model, and no CUDA driver here \(libcuda\.so\.1 cannot be "
                        r"loaded: .*\)", line), line
    # A driver that finds no device (cuInit fails, as libcuda does on a machine without a GPU).
    fake = tmp_path / "libfakecuda.so"
    (tmp_path / "fake.c").write_text("int cuInit(unsigned f) { (void)f; return 100; }\n"
                                     "int cuDeviceGetCount(int *n) { *n = 0; return 0; }\n")
    subprocess.run([C_COMPILER, "-shared", "-fPIC", str(tmp_path / "fake.c"), "-o", str(fake)], check=True)
    done = subprocess.run([str(program), "open", str(library)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "RLX_CUDA_DRIVER": str(fake)})
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"open: 11 .*: a 'cuda' model, and the CUDA driver does not initialise \(cuInit: CUresult "
                        r"100; is a GPU present\?\)", done.stdout.strip()), done.stdout


def test_the_cuda_path_of_the_c_runtime_against_a_fake_driver(built, tmp_path):
    """pytests/fake_cuda's libcuda.so.1 (device memory is host memory, kernels do not run) counts what
    the C runtime asks: each context allocates its buffers once (5 inputs, 1 output); a call copies the
    input and the weights in and the result out; the next call with the same weights copies only x and
    the result; another context uploads its own weights; destroying frees every buffer."""
    _, data, program = built
    library = tmp_path / "cuda" / "libmlp.so"
    done = rlx_compile(EXAMPLES / "mlp.mlir", "-o", library, "--target", "cuda", "--chip", "sm_80",
                       "--features", "+ptx70")
    assert done.returncode == 0, done.stderr
    spec = importlib.util.find_spec("llvm")
    locations = list(spec.submodule_search_locations or []) if spec else []
    llvm_lib = Path(locations[0]) / "lib" if locations else None
    if llvm_lib is None or not (llvm_lib / "libLLVM.so").is_file():
        pytest.skip("libLLVM.so (the llvm package), which libmlir_cuda_runtime.so needs, is not installed")
    subprocess.run([C_COMPILER, "-shared", "-fPIC", "-o", str(tmp_path / "libcuda.so.1"),
                    str(ROOT / "pytests" / "fake_cuda" / "fake_libcuda.c"), "-Wl,-soname,libcuda.so.1"], check=True)
    done = subprocess.run([str(program), "cuda-counts", str(library), str(data)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "LD_LIBRARY_PATH": f"{tmp_path}:{llvm_lib}"})
    assert done.returncode == 0, done.stderr
    counts = {line.split()[0]: dict(zip(line.split()[1::2], map(int, line.split()[2::2])))
              for line in done.stdout.splitlines()}
    x, weights, y = 8 * 32 * 4, (32 * 64 + 64 + 64 * 16 + 16) * 4, 8 * 16 * 4
    assert counts["create"] == {"allocs": 12, "frees": 0, "copies": 0, "bytes": 0, "launches": 0}
    assert counts["first"]["copies"] == 6 and counts["first"]["bytes"] == x + weights + y
    assert counts["again"]["copies"] == 2 and counts["again"]["bytes"] == x + y
    assert counts["other"]["copies"] == 6 and counts["other"]["bytes"] == x + weights + y
    assert counts["first"]["launches"] > 0 and counts["again"]["launches"] == counts["first"]["launches"]
    assert counts["destroy"]["frees"] == 12 and counts["destroy"]["allocs"] == 0
    for phase in ("first", "again", "other"):  # what the compiled function allocates itself, it frees
        assert counts[phase]["allocs"] == counts[phase]["frees"]


def test_rlx_compile_reports_bad_mlir_at_its_location(tmp_path):
    (tmp_path / "bad.mlir").write_text('func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n'
                                       '  %0 = "rlx.add"(%x) : (tensor<4xf32>) -> tensor<4xf32>\n'
                                       '  return %0 : tensor<4xf32>\n}\n')
    done = rlx_compile(tmp_path / "bad.mlir", "-o", tmp_path / "libbad.so")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert re.search(r"bad.mlir:2:\d+: error: ", done.stderr), done.stderr
    assert not (tmp_path / "libbad.so").exists()


def test_the_python_loader_runs_what_rlx_compile_wrote(built):
    library, data, _ = built
    model = aot.load(str(library))
    weights = {n: np.fromfile(data / f"{n}.bin", "<f4").reshape(s)
               for n, s in {"w1": (32, 64), "b1": (64,), "w2": (64, 16), "b2": (16,)}.items()}
    x = np.fromfile(data / "x.bin", "<f4").reshape(8, 32)
    np.testing.assert_allclose(model(x=x, **weights), numpy_mlp(data), rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed (pip install cmake)")
def test_the_cmake_examples_build_and_pass_under_ctest(tmp_path):
    build, data = tmp_path / "build", tmp_path / "data"
    subprocess.run([sys.executable, str(EXAMPLES / "make_data.py"), str(data)], check=True)
    subprocess.run([sys.executable, str(EXAMPLES / "make_llama.py"), str(data / "llama")], check=True, env=ENV)
    cmake_dir = rlx_compile("--cmake-dir").stdout.strip()
    configure = subprocess.run(
        ["cmake", "-S", str(EXAMPLES), "-B", str(build), f"-DRlxMlir_DIR={cmake_dir}", f"-DRLX_EXAMPLE_DATA={data}",
         f"-DRLX_COMPILE={';'.join(COMPILE)}", "-DCMAKE_BUILD_TYPE=Release"],
        capture_output=True, text=True, env=ENV, timeout=120)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    compiled = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, env=ENV, timeout=300)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    assert (build / "rlx_models" / "mlp_model" / "mlp.h").is_file()
    tested = subprocess.run(["ctest", "--output-on-failure"], cwd=build, capture_output=True, text=True, timeout=120)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "100% tests passed, 0 tests failed out of 3" in tested.stdout
    # The Llama's logits from C against the numpy reference of pytests/test_llama.py.
    weights = random_weights(LLAMA, seed=0)
    tokens = np.fromfile(data / "llama" / "tokens.bin", np.int64).reshape(LLAMA.batch, LLAMA.seq)
    expected = reference_forward(tokens, weights, LLAMA)
    logits = np.fromfile(data / "llama" / "result0.out.bin", np.float32).reshape(expected.shape)
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    # Rebuilding with nothing changed runs rlx-compile again only when the .mlir changed.
    again = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, env=ENV, timeout=120)
    assert "rlx-compile" not in again.stdout


# --- weights from safetensors files, static libraries, the checkout's cmake/ ---------------------


def safetensors(path: Path, tensors: dict) -> Path:
    """`tensors` (name -> float32 array) written as a safetensors file by the `safetensors` package's
    own rules (the header padded to 8 bytes), independently of make_data.py's writer."""
    header, offset = {}, 0
    for name, value in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(value.shape), "data_offsets": [offset, offset + value.nbytes]}
        offset += value.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"".join(v.astype("<f4").tobytes()
                                                                          for v in tensors.values()))
    return path


def mlp_weights(data: Path) -> dict:
    shapes = {"w1": (32, 64), "b1": (64,), "w2": (64, 16), "b2": (16,)}
    return {n: np.fromfile(data / f"{n}.bin", "<f4").reshape(s) for n, s in shapes.items()}


@pytest.fixture(scope="module")
def with_params(built, tmp_path_factory):
    """The MLP compiled with --params: (the library, the data directory, check_runtime)."""
    _, data, program = built
    work = tmp_path_factory.mktemp("params")
    done = rlx_compile(EXAMPLES / "mlp.mlir", "-o", work / "libmlp.so", "--params", data / "weights.safetensors")
    assert done.returncode == 0, done.stderr
    return work / "libmlp.so", data, program


def test_weights_shipped_beside_the_library_are_bound_to_every_context(with_params):
    library, data, program = with_params
    manifest = json.loads(library.with_suffix(".json").read_text())
    shipped = library.with_suffix(".safetensors")
    assert manifest["params"] == {"file": "libmlp.safetensors", "bytes": shipped.stat().st_size}
    assert '#define RLX_MODEL_PARAMS "libmlp.safetensors"' in library.with_suffix(".h").read_text()
    (data / "result.bin").unlink(missing_ok=True)
    assert check(program, "params", library, data).splitlines() == ["invoke: 0 ok"]  # no weight bound by hand
    np.testing.assert_allclose(np.fromfile(data / "result.bin", "<f4").reshape(8, 16), numpy_mlp(data),
                               rtol=1e-4, atol=1e-5)
    # The Python loader passes them for the weights a call leaves out (and takes those it is given).
    model = aot.load(str(library))
    x = np.fromfile(data / "x.bin", "<f4").reshape(8, 32)
    np.testing.assert_allclose(model(x), numpy_mlp(data), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(model.mlp.context()(x=x), numpy_mlp(data), rtol=1e-4, atol=1e-5)
    doubled = {**mlp_weights(data), "w2": 2 * mlp_weights(data)["w2"], "b2": 2 * mlp_weights(data)["b2"]}
    np.testing.assert_allclose(model(x, *doubled.values()), 2 * numpy_mlp(data), rtol=1e-4, atol=1e-5)


def test_a_context_binds_weights_from_a_file(built, tmp_path):
    library, data, program = built  # compiled without --params: nothing bound at creation
    weights = {name: 3 * value for name, value in mlp_weights(data).items()}
    path = safetensors(tmp_path / "w.safetensors", {"__pad": np.zeros(3, np.float32), **weights})
    (data / "result.bin").unlink(missing_ok=True)
    assert check(program, "params", library, data, path).splitlines() == ["bind: 0 ok", "invoke: 0 ok"]
    a = {n: v.astype(np.float64) for n, v in weights.items()}
    x = np.fromfile(data / "x.bin", "<f4").reshape(8, 32).astype(np.float64)
    expected = gelu(x @ a["w1"] + a["b1"]) @ a["w2"] + a["b2"]
    np.testing.assert_allclose(np.fromfile(data / "result.bin", "<f4").reshape(8, 16), expected, rtol=1e-4, atol=1e-4)


def shifted_safetensors(path: Path, tensors: dict, shift: int) -> Path:
    """`tensors` (float32) in a safetensors file whose header is `shift` bytes longer than a multiple
    of 8 (trailing spaces, as the format allows): with shift 2, no tensor is 4-byte aligned in the file."""
    header, offset = {}, 0
    for name, value in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(value.shape), "data_offsets": [offset, offset + value.nbytes]}
        offset += value.nbytes
    text = json.dumps(header).encode()
    text += b" " * ((-len(text) % 8) + shift)
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"".join(v.astype("<f4").tobytes()
                                                                          for v in tensors.values()))
    return path


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps")
@pytest.mark.parametrize("shift, where", [(0, "mapped"), (2, "copied")])
def test_weights_are_used_in_place_in_the_mapped_file(built, tmp_path, shift, where):
    """rlx_params_open maps the file: an aligned weight's data lies in the mapping (not a copy), shared
    by every context bound to it; a weight misaligned in the file is copied. Either way the results
    are numpy's, and identical across contexts (two sharing one rlx_params_t, one binding the file)."""
    library, data, program = built
    weights = {name: 5 * value for name, value in mlp_weights(data).items()}
    path = shifted_safetensors(tmp_path / "w.safetensors", weights, shift)
    (data / "result.bin").unlink(missing_ok=True)
    lines = check(program, "mapped", library, data, path).splitlines()
    assert lines == [f"{name} {where} {value.nbytes}" for name, value in weights.items()] + [
        "unknown absent", "shared 1 identical 1"]
    a = {n: v.astype(np.float64) for n, v in weights.items()}
    x = np.fromfile(data / "x.bin", "<f4").reshape(8, 32).astype(np.float64)
    expected = gelu(x @ a["w1"] + a["b1"]) @ a["w2"] + a["b2"]
    np.testing.assert_allclose(np.fromfile(data / "result.bin", "<f4").reshape(8, 16), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps")
def test_a_file_that_cannot_be_mapped_is_read_instead(built, tmp_path):
    """mmap refused (an LD_PRELOAD shim making the program's own mmap calls fail, as on a file system
    without mmap): the weights are read into memory, and the results are the same."""
    library, data, program = built
    (tmp_path / "no_mmap.c").write_text("#include <errno.h>\n#include <stddef.h>\n#include <sys/mman.h>\n"
                                        "void *mmap(void *a, size_t n, int p, int f, int fd, off_t o) {\n"
                                        "  (void)a; (void)n; (void)p; (void)f; (void)fd; (void)o;\n"
                                        "  errno = ENODEV; return MAP_FAILED;\n}\n")
    shim = tmp_path / "libno_mmap.so"
    subprocess.run([C_COMPILER, "-shared", "-fPIC", str(tmp_path / "no_mmap.c"), "-o", str(shim)], check=True)
    weights = {name: 7 * value for name, value in mlp_weights(data).items()}
    path = shifted_safetensors(tmp_path / "w.safetensors", weights, 0)
    (data / "result.bin").unlink(missing_ok=True)
    done = subprocess.run([str(program), "mapped", str(library), str(data), str(path)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "LD_PRELOAD": str(shim)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{name} copied {value.nbytes}" for name, value in weights.items()] + [
        "unknown absent", "shared 1 identical 1"]
    a = {n: v.astype(np.float64) for n, v in weights.items()}
    x = np.fromfile(data / "x.bin", "<f4").reshape(8, 32).astype(np.float64)
    expected = gelu(x @ a["w1"] + a["b1"]) @ a["w2"] + a["b2"]
    np.testing.assert_allclose(np.fromfile(data / "result.bin", "<f4").reshape(8, 16), expected, rtol=1e-4, atol=1e-4)


def mapping_of(address: int) -> str:
    """The file mapped at `address` in this process ('' for anonymous memory), per /proc/self/maps."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        begin, end = (int(v, 16) for v in fields[0].split("-"))
        if begin <= address < end:
            return fields[5] if len(fields) > 5 else ""
    return ""


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps")
@pytest.mark.parametrize("shift", [0, 2])
def test_the_python_loader_maps_aligned_weights_and_copies_misaligned_ones(tmp_path, shift):
    from rlx_mlir.aot.loader import load_params

    weights = {"a": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.linspace(-1, 1, 5, dtype=np.float32)}
    path = shifted_safetensors(tmp_path / "w.safetensors", weights, shift)
    loaded = load_params(str(path))
    for name, value in weights.items():
        np.testing.assert_array_equal(loaded[name], value)
        assert loaded[name].flags.aligned and not loaded[name].flags.writeable
        in_file = mapping_of(loaded[name].ctypes.data) == str(path.resolve())
        assert in_file == (shift == 0), (name, mapping_of(loaded[name].ctypes.data))


def params_cases(data: Path, tmp: Path) -> dict:
    weights = mlp_weights(data)
    good = safetensors(tmp / "good.safetensors", weights)
    truncated = tmp / "truncated.safetensors"
    truncated.write_bytes(good.read_bytes()[:-100])
    garbage = tmp / "garbage.safetensors"
    garbage.write_bytes(b"\xff" * 64)
    return {
        "missing file": (tmp / "none.safetensors", IO, r"none\.safetensors: cannot open the parameter file",
                         r"none\.safetensors: no such parameter file"),
        "missing weight": (safetensors(tmp / "short.safetensors", {n: weights[n] for n in ("w1", "b1", "w2")}),
                           MISSING_PARAM, r"weight 'b2' of @mlp is not in .*short\.safetensors",
                           r"short\.safetensors: has no tensor 'b2' \(a weight of @mlp, float32\[16\]\)"),
        "wrong shape": (safetensors(tmp / "shape.safetensors", {**weights, "w1": weights["w1"].T.copy()}), SHAPE,
                        r"weight 'w1' of @mlp is float32\[32, 64\], .* holds float32\[64, 32\]",
                        r"tensor 'w1' is float32\[64, 32\]; @mlp takes float32\[32, 64\]"),
        "truncated": (truncated, 10, r"tensor 'w2': data_offsets \[\d+, \d+\] outside the \d+ bytes of data",
                      r"tensor 'w2' has no valid dtype, shape and data_offsets"),
        "not safetensors": (garbage, 10, r"not a safetensors file", r"not a safetensors file"),
    }


@pytest.mark.parametrize("case", ["missing file", "missing weight", "wrong shape", "truncated", "not safetensors"])
def test_bad_parameter_files_are_an_error_code_and_a_message(built, tmp_path, case):
    library, data, program = built
    path, code, c_message, compile_message = params_cases(data, tmp_path)[case]
    line = check(program, "params", library, data, path).splitlines()[0]
    assert line.startswith(f"bind: {code} ") and re.search(c_message, line), line
    # rlx-compile refuses the file before writing anything: a message, no traceback.
    done = rlx_compile(EXAMPLES / "mlp.mlir", "-o", tmp_path / "out" / "libmlp.so", "--params", path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert re.search(compile_message, done.stderr), done.stderr
    assert not (tmp_path / "out" / "libmlp.so").exists()


def test_a_truncated_shipped_parameter_file_is_refused(with_params, tmp_path):
    library, data, program = with_params
    for name in (library.name, library.with_suffix(".json").name):
        shutil.copy(library.parent / name, tmp_path / name)
    shipped = library.with_suffix(".safetensors").read_bytes()
    (tmp_path / "libmlp.safetensors").write_bytes(shipped[:-8])
    line = check(program, "open", tmp_path / "libmlp.so")
    assert line.startswith(f"open: {MANIFEST} ") and "truncated, or from another compile" in line, line
    with pytest.raises(aot.ManifestError, match="truncated, or from another compile"):
        aot.load(str(tmp_path / "libmlp.so"))
    (tmp_path / "libmlp.safetensors").unlink()
    assert check(program, "open", tmp_path / "libmlp.so").startswith(f"open: {IO} ")
    with pytest.raises(FileNotFoundError, match="no such parameter file"):
        aot.load(str(tmp_path / "libmlp.so"))


def test_a_static_library_links_into_a_program(built, tmp_path):
    _, data, _ = built
    done = rlx_compile(EXAMPLES / "mlp.mlir", "-o", tmp_path / "libmlp_static.a", "--emit", "static",
                       "--params", data / "weights.safetensors", "--header", tmp_path / "mlp_static.h")
    assert done.returncode == 0, done.stderr
    header = (tmp_path / "mlp_static.h").read_text()
    assert "static inline rlx_model_t *rlx_model_open_mlp_static(rlx_error_t **err)" in header
    # Only the renamed entry points are global: two models link into one program, and a function of
    # the model named like a symbol of the program stays the model's.
    nm = subprocess.run(["nm", "--defined-only", str(tmp_path / "libmlp_static.a")], capture_output=True, text=True)
    exported = sorted(line.split()[-1] for line in nm.stdout.splitlines() if re.search(r" [A-Z] ", line))
    assert exported == ["rlx_model_mlp_static_call_mlp", "rlx_model_mlp_static_signature"]
    program = tmp_path / "mlp_static"
    subprocess.run([C_COMPILER, "-std=c11", "-O1", "-Wall", "-Werror", f"-I{tmp_path}", f"-I{NATIVE / 'include'}",
                    f"-DRLX_MODEL_MLP_STATIC_PARAMS_PATH=\"{data / 'weights.safetensors'}\"",
                    str(EXAMPLES / "mlp_static.c"), str(NATIVE / "src" / "runtime.c"),
                    str(tmp_path / "libmlp_static.a"), "-o", str(program), "-ldl", "-lm"], check=True)
    assert check(program, data).startswith("static: max error")


def test_the_checkout_cmake_folder_is_the_installed_package():
    installed = Path(rlx_compile("--cmake-dir").stdout.strip()) / "RlxMlirConfig.cmake"
    assert (ROOT / "cmake" / "RlxMlirConfig.cmake").resolve() == installed.resolve()  # one file, not a copy


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed (pip install cmake)")
def test_find_package_from_the_checkout_builds_a_static_model_with_its_weights(tmp_path):
    build, data = tmp_path / "build", tmp_path / "data"
    subprocess.run([sys.executable, str(EXAMPLES / "make_data.py"), str(data)], check=True)
    # No RLX_COMPILE: a checkout's cmake/ runs the checkout's own rlx-compile.
    configure = subprocess.run(
        ["cmake", "-S", str(EXAMPLES), "-B", str(build), f"-DRlxMlir_DIR={ROOT / 'cmake'}",
         f"-DRLX_EXAMPLE_DATA={data}", "-DRLX_EXAMPLE_STATIC=ON", f"-DPython3_EXECUTABLE={sys.executable}"],
        capture_output=True, text=True, timeout=120)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    assert f"PYTHONPATH={ROOT}" in (build / "CMakeCache.txt").read_text()
    compiled = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    assert (build / "rlx_models" / "mlp_static_model" / "libmlp_static.a").is_file()
    tested = subprocess.run(["ctest", "--output-on-failure"], cwd=build, capture_output=True, text=True, timeout=120)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "100% tests passed, 0 tests failed out of 3" in tested.stdout and "mlp_static" in tested.stdout


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed (pip install cmake)")
def test_rlx_add_model_builds_a_cuda_model_without_cuda(tmp_path):
    """TARGET cuda with CHIP and FEATURES: built and linked where no CUDA is installed (the runtime loads
    the driver when it opens the model); the program opens it and reports what the runtime says."""
    project, build = tmp_path / "project", tmp_path / "build"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(f"""
cmake_minimum_required(VERSION 3.19)
project(cuda_model C)
find_package(RlxMlir CONFIG REQUIRED)
rlx_add_model(mlp_cuda SOURCES {EXAMPLES / 'mlp.mlir'} TARGET cuda CHIP sm_80 FEATURES +ptx70 NAME mlp_gpu)
add_executable(open_cuda open_cuda.c)
target_link_libraries(open_cuda PRIVATE mlp_cuda)
""")
    (project / "open_cuda.c").write_text("""
#include <stdio.h>
#include "mlp_gpu.h"
int main(void) {
  rlx_error_t *err = NULL;
  rlx_model_t *model = rlx_model_open(RLX_MODEL_MLP_GPU_PATH, &err);
  printf("%s %d %s\\n", RLX_MODEL_TARGET, model ? 0 : (int)rlx_error_code(err), model ? "ok" : rlx_error_message(err));
  rlx_error_free(err);
  rlx_model_close(model);
  return 0;
}
""")
    configure = subprocess.run(["cmake", "-S", str(project), "-B", str(build), f"-DRlxMlir_DIR={ROOT / 'cmake'}",
                                f"-DPython3_EXECUTABLE={sys.executable}"], capture_output=True, text=True, timeout=120)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    compiled = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    out = subprocess.run([str(build / "open_cuda")], capture_output=True, text=True, timeout=60).stdout.strip()
    if aot.cuda_device_error() is None:
        assert out == "cuda 0 ok", out
    else:
        assert re.fullmatch(r"cuda 11 .*libmlp_gpu\.so: a 'cuda' model, and no CUDA driver here .*", out), out
    # TARGET cuda takes neither STATIC nor PARAMS: a configure-time error.
    (project / "CMakeLists.txt").write_text((project / "CMakeLists.txt").read_text().replace("NAME mlp_gpu",
                                                                                             "NAME mlp_gpu STATIC"))
    refused = subprocess.run(["cmake", "-S", str(project), "-B", str(tmp_path / "b2"), f"-DRlxMlir_DIR={ROOT / 'cmake'}",
                              f"-DPython3_EXECUTABLE={sys.executable}"], capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "STATIC and PARAMS are for TARGET cpu" in refused.stderr, refused.stderr
