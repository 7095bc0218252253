"""List every private name (`_name`) a module of rlx_mlir imports from another package.

    python scripts/private_imports.py        # exit code 1 if there is any

A private name is its module's own business: one imported across packages (from
`rlx_mlir/aot` into `rlx_mlir/runtime`, say) should be made public or moved to the
layer that owns it.  Imports between the modules of one package, one folder
(`dims/derive.py` from `dims/dynamic.py`), are that package's business and are not listed.
"""

from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "rlx_mlir"


def _package(source: tuple[str, ...], root: pathlib.Path) -> tuple[str, ...]:
    """The package (folder under rlx_mlir) holding the module or package `source` imports from."""
    return source if root.joinpath(*source).is_dir() else source[:-1]


def private_imports(root: pathlib.Path = ROOT) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        here = parts[:-1]  # the module's package: where a relative import starts from
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                source = base + tuple(filter(None, (node.module or "").split(".")))
            elif node.module and node.module.split(".")[0] == "rlx_mlir":
                source = tuple(node.module.split(".")[1:])
            else:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__") \
                        and _package(source, root) != here:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno}: "
                                 f"{alias.name} from rlx_mlir.{'.'.join(source)}")
    return found


if __name__ == "__main__":
    lines = private_imports()
    print("\n".join(lines) if lines else "no private name is imported across packages")
    sys.exit(1 if lines else 0)
