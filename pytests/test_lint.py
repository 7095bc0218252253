"""The tree passes ruff, configured in pyproject.toml (pyflakes, import order, bugbear, ...)."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    beside_python = Path(sys.executable).parent / "ruff"
    ruff = str(beside_python) if beside_python.exists() else shutil.which("ruff")
    assert ruff, "ruff is in the test extra: pip install -e '.[test]'"
    result = subprocess.run([ruff, "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
