# lit configuration for rlx-mlir.  Run with:  lit lit_tests
import os
import sys
import tempfile

import lit.formats

config.name = "RLX"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)

from rlx_mlir.targets.toolchain import llvm_tool, mlir_tool  # noqa: E402

# Tools on PATH, in this order: the console scripts next to the Python running
# lit (rlx-opt, rlx-run, rlx-gen-dialect), then upstream mlir-opt from the MLIR
# tools wheel and LLVM's FileCheck from the LLVM tools wheel.
tool_dirs = [os.path.dirname(sys.executable)]
tool_dirs += [os.path.dirname(t) for t in (mlir_tool("mlir-opt"), llvm_tool("FileCheck")) if t]
config.environment["PATH"] = os.pathsep.join(tool_dirs + [os.environ.get("PATH", "")])
# PYTHONPATH lets a checkout other than the installed one (a git worktree) test its own sources.
for name in ("HOME", "TMPDIR", "PYTHONPATH"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
# The tools' on-disk compile cache (rlx_mlir/runtime/disk_cache.py): one fresh directory per lit run,
# so tests neither read nor fill the user's cache (unless RLX_CACHE_DIR is set).
config.environment["RLX_CACHE_DIR"] = os.environ.get("RLX_CACHE_DIR") or tempfile.mkdtemp(prefix="rlx-lit-cache-")

repo_root = os.path.dirname(config.test_source_root)
config.substitutions.append(("%python", f'"{sys.executable}"'))
config.substitutions.append(("%dialect", os.path.join(repo_root, "dialect")))
if llvm_tool("FileCheck") is None:
    # PyPI's filecheck covers what these tests use.
    config.substitutions.append((r"\bFileCheck\b", "filecheck"))
