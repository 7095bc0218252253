"""The AOT loader does not trust its manifest: every tampered field, library or
runtime-library path is a ManifestError naming the field, raised before anything
that could crash the process or run foreign code.  Each case writes the
tampered files in tmp_path and checks the message."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from test_aot import MLP

from rlx_mlir import CompileError, aot
from rlx_mlir.aot import ManifestError


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    directory = tmp_path_factory.mktemp("exported")
    aot.export(MLP, directory / "mlp.so")
    return directory


@pytest.fixture
def model_dir(exported, tmp_path):
    """A fresh copy of the exported model (mlp.so + mlp.json) to tamper with."""
    directory = tmp_path / "model"
    shutil.copytree(exported, directory)
    return directory


def rewrite(directory, change) -> None:
    path = directory / "mlp.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


def set_in(path: str, value):
    """A change that sets `manifest[...]` along `path` ("functions.0.inputs.0.shape") to `value`."""
    def change(manifest):
        *parents, last = [int(k) if k.isdigit() else k for k in path.split(".")]
        node = manifest
        for key in parents:
            node = node[key]
        node[last] = value
    return change


def function(manifest):
    return manifest["functions"][0]


SPEC = {"name": "z", "shape": [4], "dtype": "float32", "param": False}

TAMPERED = {  # the attacks of issue 13 item 9 first, then every other field's type and value
    "output-shape-smaller": (set_in("functions.0.outputs.0.shape", [2, 16]),
                             r"functions\[0\]\.outputs\[0\]\.shape \(is \[2, 16\], the library says \[4, 16\]\)"),
    "input-added": (lambda m: function(m)["inputs"].append(SPEC),
                    r"functions\[0\]\.inputs \(has 4 entries, the library 3\)"),
    "input-removed": (lambda m: function(m)["inputs"].pop(),
                      r"functions\[0\]\.inputs \(has 2 entries, the library 3\)"),
    "object-dtype": (set_in("functions.0.inputs.0.dtype", "object"),
                     r"functions\[0\]\.inputs\[0\]\.dtype: unsupported dtype 'object'"),
    "input-shape-smaller": (set_in("functions.0.inputs.0.shape", [2, 8]),
                            r"functions\[0\]\.inputs\[0\]\.shape \(is \[2, 8\], the library says \[4, 8\]\)"),
    "symbol-malloc": (set_in("functions.0.symbol", "malloc"),
                      r"functions\[0\]\.symbol: must be '_mlir_ciface_mlp', got 'malloc'"),
    "name-and-symbol-malloc": (lambda m: function(m).update(name="malloc", symbol="_mlir_ciface_malloc"),
                               r"functions\[0\]\.name \(is 'malloc', the library says 'mlp'\)"),
    "unknown-target": (set_in("target", "tpu"), r"target: unknown target 'tpu' \(known: cpu, cuda\)"),
    "runtime-library-in-parent": (set_in("runtime_libraries", ["../evil.so"]),
                                  r"runtime_libraries\[0\]: must be a bare file name in the model's directory, "
                                  r"got '\.\./evil\.so'"),
    "runtime-library-absolute": (set_in("runtime_libraries", ["/tmp/evil.so"]),
                                 r"runtime_libraries\[0\]: must be a bare file name .*got '/tmp/evil\.so'"),
    "output-tied-out-of-range": (set_in("functions.0.outputs.0.tied", 3),
                                 r"functions\[0\]\.outputs\[0\]\.tied: must name an input index below 3, got 3"),
    "output-tied-other-shape": (set_in("functions.0.outputs.0.tied", 0),
                                r"functions\[0\]\.outputs\[0\]\.tied: input #0 is float32 \[4, 8\], the result "
                                r"float32 \[4, 16\]"),
    "shape-not-a-list": (set_in("functions.0.inputs.0.shape", "4x8"),
                         r"functions\[0\]\.inputs\[0\]\.shape: expected list, got str"),
    "shape-negative": (set_in("functions.0.inputs.0.shape", [-4, 8]),
                       r"functions\[0\]\.inputs\[0\]\.shape: expected a list of non-negative integers"),
    "shape-bool": (set_in("functions.0.inputs.0.shape", [True, 8]),
                   r"functions\[0\]\.inputs\[0\]\.shape: expected a list of non-negative integers"),
    "shape-huge": (set_in("functions.0.outputs.0.shape", [2**40, 2**40]),
                   r"functions\[0\]\.outputs\[0\]\.shape: \[1099511627776, 1099511627776\] float32 is too large"),
    "param-not-bool": (set_in("functions.0.inputs.1.param", 1),
                       r"functions\[0\]\.inputs\[1\]\.param: expected bool, got int"),
    "spec-missing-dtype": (lambda m: function(m)["inputs"][2].pop("dtype"),
                           r"functions\[0\]\.inputs\[2\]\.dtype: missing"),
    "function-not-an-object": (set_in("functions.0", "mlp"), r"functions\[0\]: expected an object, got str"),
    "function-name-not-identifier": (set_in("functions.0.name", "mlp; rm"),
                                     r"functions\[0\]\.name: not a function name: 'mlp; rm'"),
    "no-function": (set_in("functions", []), r"functions: the model has no function"),
    "functions-missing": (lambda m: m.pop("functions"), r"functions: missing"),
    "unknown-field": (set_in("llvm_library", "/tmp/evil/libLLVM.so"), r"llvm_library: unknown field"),
    "gpu-on-cpu": (set_in("gpu", {"chip": "sm_90", "features": "+ptx80", "format": "isa"}),
                   r"gpu: unknown field"),
    "format-older": (set_in("format", "rlx-aot/1"),
                     r"format: 'rlx-aot/1' was written by another version of rlx_mlir .*export the model again"),
    "format-other": (set_in("format", 7), r"format: not an RLX AOT manifest \(expected 'rlx-aot/2', got 7\)"),
    "library-other": (lambda m: m.update(library="other.so", sha256={"other.so": m["sha256"]["mlp.so"]}),
                      r"library: describes 'other.so', not 'mlp.so'"),
    "library-path": (lambda m: m.update(library="../mlp.so", sha256={"../mlp.so": m["sha256"]["mlp.so"]}),
                     r"library: must be a bare file name in the model's directory, got '\.\./mlp\.so'"),
    "sha256-malformed": (lambda m: m["sha256"].update({"mlp.so": "ABC"}),
                         r"sha256\.mlp\.so: expected 64 lower-case hex digits, got 'ABC'"),
    "sha256-missing-library": (set_in("sha256", {}), r"sha256: must give the digest of exactly mlp\.so; has $"),
    "sha256-wrong": (set_in("sha256", {"mlp.so": "0" * 64}),
                     r"mlp\.so: its SHA-256 is not the one .*mlp\.json records \(the file is truncated, altered"),
}


@pytest.mark.parametrize("case", list(TAMPERED), ids=list(TAMPERED))
def test_tampered_manifest_is_a_clear_error(model_dir, case):
    change, message = TAMPERED[case]
    rewrite(model_dir, change)
    with pytest.raises(ManifestError, match=message):
        aot.load(str(model_dir / "mlp.so"))


def test_untampered_copy_loads(model_dir):
    # The fixture's copy itself is fine: every failure above comes from its one change.
    assert aot.load(str(model_dir / "mlp.so")).mlp.outputs[0].shape == (4, 16)


def test_truncated_library_is_refused_before_it_is_loaded(model_dir):
    library = model_dir / "mlp.so"
    library.write_bytes(library.read_bytes()[: library.stat().st_size // 2])  # was a SIGBUS in dlopen
    with pytest.raises(ManifestError, match=r"mlp\.so: its SHA-256 is not the one .* truncated"):
        aot.load(str(library))


def test_library_swapped_with_matching_hash_is_caught_by_its_signature_record(model_dir, tmp_path):
    # Another export's library under this name, its hash written into the manifest: the manifest now
    # passes every check but one, the library's own record of its functions.
    other = tmp_path / "other" / "mlp.so"
    aot.export(MLP.replace("4x8", "2x8").replace("4x16", "2x16"), other)
    shutil.copy(other, model_dir / "mlp.so")
    rewrite(model_dir, lambda m: m["sha256"].update({"mlp.so": aot.loader.file_sha256(str(other))}))
    with pytest.raises(ManifestError, match=r"does not describe mlp\.so: functions\[0\]\.inputs\[0\]\.shape "
                                            r"\(is \[4, 8\], the library says \[2, 8\]\)"):
        aot.load(str(model_dir / "mlp.so"))


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
@pytest.mark.parametrize("where", ["parent", "absolute"])
def test_runtime_library_outside_the_model_directory_is_never_loaded(model_dir, tmp_path, where):
    marker = tmp_path / "constructor-ran"
    source = tmp_path / "evil.c"
    source.write_text(f'#include <stdio.h>\n__attribute__((constructor)) static void run(void) '
                      f'{{ fclose(fopen("{marker}", "w")); }}\n')
    evil = tmp_path / "evil.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(evil), str(source)], check=True)
    name = "../evil.so" if where == "parent" else str(evil)
    digest = aot.loader.file_sha256(str(evil))
    rewrite(model_dir, lambda m: m.update(runtime_libraries=[name], sha256={**m["sha256"], name: digest}))
    with pytest.raises(ManifestError, match=r"runtime_libraries\[0\]: must be a bare file name"):
        aot.load(str(model_dir / "mlp.so"))
    assert not marker.exists()


def test_manifest_that_is_not_json_is_a_clear_error(model_dir):
    (model_dir / "mlp.json").write_bytes(b'{"format": "rlx-aot/2", \xff')
    with pytest.raises(ManifestError, match=r"mlp\.json: not valid JSON"):
        aot.load(str(model_dir / "mlp.so"))
    (model_dir / "mlp.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ManifestError, match=r"mlp\.json: not valid JSON: maximum recursion depth"):
        aot.load(str(model_dir / "mlp.so"))
    (model_dir / "mlp.json").write_text("[1, 2]")
    with pytest.raises(ManifestError, match=r"mlp\.json: format: not an RLX AOT manifest"):
        aot.load(str(model_dir / "mlp.so"))


def test_missing_manifest_is_a_clear_error(model_dir):
    os.remove(model_dir / "mlp.json")
    with pytest.raises(FileNotFoundError, match=r"mlp\.json: no manifest \(aot\.export writes it next to the lib"):
        aot.load(str(model_dir / "mlp.so"))


# --- export: one path per artefact, a missing compiler ----------------------------------------------


def test_export_never_writes_the_manifest_over_the_library(tmp_path):
    with pytest.raises(ValueError, match=r"model\.json: the library path must not end in \.json .*model\.so"):
        aot.export(MLP, tmp_path / "model.json")
    with pytest.raises(ValueError, match=r"'libmlir_c_runner_utils\.so' is the name of a runtime library"):
        aot.export(MLP, tmp_path / "libmlir_c_runner_utils.so")
    assert os.listdir(tmp_path) == []


def test_export_with_a_missing_compiler_in_cc_is_a_compile_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc") + " -O2")
    with pytest.raises(CompileError, match=r"the C compiler '.*no-such-cc' named by the environment variable CC "
                                           r"was not found"):
        aot.export(MLP, tmp_path / "m.so")
    assert not (tmp_path / "m.so").exists() and not (tmp_path / "m.json").exists()


def test_exported_library_exports_only_its_c_interfaces(exported):
    nm = subprocess.run(["nm", "-D", "--defined-only", str(exported / "mlp.so")], capture_output=True, text=True)
    assert sorted(line.split()[-1] for line in nm.stdout.splitlines()) == ["_mlir_ciface_mlp", "rlx_aot_signature",
                                                                       "rlx_call_mlp"]


def test_function_names_that_name_c_symbols(tmp_path):
    import numpy as np

    dotted = MLP.replace("@mlp", "@mlp.v2$1")
    aot.export(dotted, tmp_path / "dotted.so")
    x, w, b = np.ones((4, 8), np.float32), np.zeros((8, 16), np.float32), np.zeros(16, np.float32)
    assert aot.load(str(tmp_path / "dotted.so")).functions["mlp.v2$1"](x, w, b).shape == (4, 16)
    with pytest.raises(ValueError, match=r"function '@my mlp' cannot be exported: a C symbol is named after it"):
        aot.export(MLP.replace("@mlp", '@"my mlp"'), tmp_path / "spaced.so")
