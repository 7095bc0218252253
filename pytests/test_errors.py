"""Every exception class rlx-mlir defines derives from `rlx_mlir.RlxError`."""

import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest

import rlx_mlir
from rlx_mlir.errors import RlxError


def _public_exception_classes() -> dict[str, type]:
    """{qualified name: class} of every public exception class defined in a module of rlx_mlir."""
    found = {}
    for info in pkgutil.walk_packages(rlx_mlir.__path__, "rlx_mlir."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == info.name
                    and not name.startswith("_")):
                found[f"{info.name}.{name}"] = value
    return found


def test_every_public_exception_class_is_an_rlx_error():
    classes = _public_exception_classes()
    # The walk really finds the project's exceptions (a walk that found none would pass vacuously).
    names = {qualified.rsplit(".", 1)[1] for qualified in classes}
    assert {"CompileError", "ArgumentError", "VerifyError", "BuildError", "PipelineError", "PassFailure",
            "PassOptionError", "DimError", "DimExprError", "PlanError", "TargetError", "ManifestError",
            "ToolError", "CudaUnavailableError"} <= names
    not_rlx = sorted(qualified for qualified, cls in classes.items() if not issubclass(cls, RlxError))
    assert not_rlx == []


@pytest.mark.parametrize("module, name, older_base", [
    ("rlx_mlir.runtime.jit", "ArgumentError", ValueError),
    ("rlx_mlir.frontend.builder", "BuildError", ValueError),
    ("rlx_mlir.passmanager.pipeline", "PipelineError", ValueError),
    ("rlx_mlir.passmanager.base", "PassOptionError", ValueError),
    ("rlx_mlir.dims.dynamic", "DimError", ValueError),
    ("rlx_mlir.dims.expr", "DimExprError", ValueError),
    ("rlx_mlir.lir.planner", "PlanError", ValueError),
    ("rlx_mlir.targets.cuda", "TargetError", ValueError),
    ("rlx_mlir.aot.loader", "ManifestError", ValueError),
    ("rlx_mlir.runtime.cuda", "CudaUnavailableError", RuntimeError),
])
def test_exceptions_keep_their_older_base(module, name, older_base):
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, RlxError) and issubclass(cls, older_base)


def test_rlx_error_is_exported_and_catches_a_compile_failure():
    assert rlx_mlir.RlxError is RlxError
    with pytest.raises(RlxError, match=r"'rlx.add' op operand shapes \[2\] and \[3\] do not broadcast"):
        rlx_mlir.compile(
            "func.func @f(%a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<2xf32> {\n"
            "  %c = \"rlx.add\"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>\n"
            "  return %c : tensor<2xf32>\n}\n",
            entry="f",
        )


def test_errors_module_imports_neither_mlir_nor_numpy():
    # The AOT loader raises these where MLIR is not installed.
    code = "import sys, rlx_mlir.errors; print(sorted(m for m in ('mlir', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
