"""The package is layered: each layer imports only from the layers below it.

The layers, lowest first, are listed in LAYERS (the README's Layout section and
docs/design.md describe what each owns).  Every `import` in rlx_mlir/, at module
level or inside a function, is checked: a module may import from its own
top-level package, from a package in a lower layer, or from a package of its own
layer as long as the packages of that layer import each other without a cycle.
No module imports another package's private (`_name`) names, and no two modules
import each other, even through function-level imports.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rlx_mlir"

LAYERS: list[set[str]] = [
    {"errors", "progress"},
    {"ir", "targets"},
    {"dsl", "lir", "quant"},
    {"dims"},
    {"dialects"},
    {"passmanager"},
    {"conversion", "transforms"},
    {"pipelines"},
    {"driver"},
    {"runtime"},
    {"aot"},
    {"frontend"},
    {"models", "train"},
    {"tools"},
]
LAYER_OF = {unit: index for index, units in enumerate(LAYERS) for unit in units}


def _module_name(path: Path) -> tuple[str, bool]:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _imports(path: Path):
    """(imported module, imported names, line) for every import of an rlx_mlir module in `path`."""
    module, is_package = _module_name(path)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("rlx_mlir"):
                    yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "rlx_mlir" or target.startswith("rlx_mlir."):
                yield target, [alias.name for alias in node.names], node.lineno


def _unit(module: str) -> str:
    """The top-level package (or root module) of rlx_mlir that `module` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "__init__.py":
            continue  # the root re-exports lazily by name, from every layer
        yield path


def _edges():
    for path in _sources():
        module, _ = _module_name(path)
        for target, names, line in _imports(path):
            # `from rlx_mlir.x import y` may name a module y of package x
            targets = [target]
            for name in names:
                if (PACKAGE.parent / (target + "." + name).replace(".", "/")).with_suffix(".py").exists():
                    targets.append(f"{target}.{name}")
            yield path, module, line, targets, names


def test_every_package_is_in_a_layer():
    units = {_unit(_module_name(path)[0]) for path in _sources()}
    assert units - set(LAYER_OF) == set(), "add the new package to LAYERS (and to the README's Layout)"


def test_no_module_imports_from_a_layer_above_it():
    problems = []
    for path, module, line, targets, _ in _edges():
        source = _unit(module)
        for target in targets:
            unit = _unit(target)
            if unit and unit != source and LAYER_OF[unit] > LAYER_OF[source]:
                problems.append(f"{path.relative_to(ROOT)}:{line}: {source} (layer {LAYER_OF[source]}) imports "
                                f"{target} (layer {LAYER_OF[unit]})")
    assert not problems, "\n".join(problems)


def _cycle(graph: dict[str, set[str]]):
    """One cycle of `graph` as a list of nodes, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for successor in sorted(graph.get(node, ())):
            if state.get(successor) == 1:
                return stack[stack.index(successor):] + [successor]
            if successor not in state:
                found = visit(successor)
                if found:
                    return found
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycle_between_packages():
    graph: dict[str, set[str]] = {}
    for _, module, _, targets, _ in _edges():
        package = module.rsplit(".", 1)[0] if not (PACKAGE.parent / module.replace(".", "/")).is_dir() else module
        for target in targets:
            if (PACKAGE.parent / target.replace(".", "/")).is_dir():
                target_package = target
            else:
                target_package = target.rsplit(".", 1)[0]
            # a package importing its own subpackages (re-exports) is not a cycle
            if target_package != package and not target_package.startswith(package + "."):
                graph.setdefault(package, set()).add(target_package)
    cycle = _cycle(graph)
    assert cycle is None, "import cycle between packages: " + " -> ".join(cycle)


def test_no_two_modules_import_each_other():
    graph: dict[str, set[str]] = {}
    for _, module, _, targets, _ in _edges():
        for target in targets:
            if target != module and not module.startswith(target + "."):
                graph.setdefault(module, set()).add(target)
    # a package's __init__ re-exporting its modules is how packages work, not a cycle
    for module in list(graph):
        graph[module] = {t for t in graph[module] if not t.startswith(module + ".")}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle between modules: " + " -> ".join(cycle)


def test_no_private_name_is_imported_from_another_package():
    problems = []
    for path, module, line, targets, names in _edges():
        target = targets[0]
        if _unit(target) != _unit(module):
            private = [name for name in names if name.startswith("_")]
            if private:
                problems.append(f"{path.relative_to(ROOT)}:{line}: imports {', '.join(private)} from {target}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "module, forbidden",
    [
        # the pass registry resolves names without importing every pass
        ("rlx_mlir.passmanager.registry", ("rlx_mlir.transforms", "rlx_mlir.conversion", "rlx_mlir.pipelines")),
        # the AOT loader runs where MLIR is not installed
        ("rlx_mlir.aot.loader", ("mlir",)),
    ],
)
def test_import_does_not_pull_in(module, forbidden):
    code = (
        "import sys, importlib\n"
        f"importlib.import_module({module!r})\n"
        f"print([m for m in sys.modules if m.startswith({forbidden!r})])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout
