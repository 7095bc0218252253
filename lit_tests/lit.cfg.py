# lit configuration for rlx-mlir.  Run with:  lit lit_tests
import os
import sys

import lit.formats

config.name = "RLX"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)

# The console scripts (rlx-opt, rlx-run, rlx-gen-dialect) live next to the
# Python that runs lit: put them first on PATH.
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bin_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
for name in ("HOME", "TMPDIR"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

from rlx_mlir.toolchain import llvm_tool, mlir_tool  # noqa: E402

repo_root = os.path.dirname(config.test_source_root)
file_check = llvm_tool("FileCheck") or "filecheck"
config.substitutions.append(("%python", f'"{sys.executable}"'))
config.substitutions.append(("%dialect", os.path.join(repo_root, "dialect")))
config.substitutions.append(("%mlir-opt", f'"{mlir_tool("mlir-opt")}"'))
config.substitutions.append((r"\bFileCheck\b", f'"{file_check}"'))
