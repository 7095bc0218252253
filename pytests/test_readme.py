"""Every Python and shell block of README.md runs as written, so the README cannot drift.

The blocks run in README order in one temporary directory (a later block may read what an earlier
one wrote, as a reader following along would) holding a copy of `examples/` and `dialect/`, with
this checkout's sources first on PYTHONPATH and its console scripts first on PATH.  Each block is
its own process: python blocks under this Python, shell blocks under `bash -e -o pipefail`.

An HTML comment on the line before a block's fence tells this test how to treat it:

    <!-- readme-test: skip (why) -->       never run (e.g. `pip install`, the whole test suite)
    <!-- readme-test: slow -->             run only with RLX_TEST_SLOW=1 (takes minutes; pytest marker `slow`)
    <!-- readme-test: needs cuda -->       skipped, with a message, where no CUDA device is found
    <!-- readme-test: needs torch, gguf --> skipped, with a message, where a module is not importable
    <!-- readme-test: continues -->        run in the same process as the block before it

Blocks without a language (program output, diagnostics) are not run.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RUNNABLE = {"python": "python", "py": "python", "sh": "shell", "bash": "shell", "shell": "shell", "console": "shell"}
_FENCE = re.compile(r"^```(\S*)\s*$")
_DIRECTIVE = re.compile(r"^<!--\s*readme-test:\s*(.*?)\s*-->\s*$")
TIMEOUT_S = 300


@dataclass
class Block:
    language: str
    line: int  # of the opening fence, 1-based
    code: str
    directives: list[str] = field(default_factory=list)
    section: str = ""

    @property
    def ident(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-") or "top"
        return f"{slug}-L{self.line}"


def readme_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, with their `readme-test:` directives and section."""
    blocks, lines, section, i = [], text.split("\n"), "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            section = line.lstrip("#").strip()
        fence = _FENCE.match(line)
        if not fence:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        directives = []
        previous = start - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        directive = _DIRECTIVE.match(lines[previous]) if previous >= 0 else None
        if directive:
            directives = [d.strip() for d in directive.group(1).split(";") if d.strip()]
        blocks.append(Block(fence.group(1).lower(), start + 1, "\n".join(body) + "\n", directives, section))
        i += 1
    return blocks


def runnable_chains(blocks: list[Block]) -> list[list[Block]]:
    """Runnable blocks grouped so that a `continues` block runs in the process of the one before."""
    chains: list[list[Block]] = []
    for block in blocks:
        if block.language not in RUNNABLE:
            continue
        if "continues" in block.directives:
            if not chains or RUNNABLE[chains[-1][-1].language] != RUNNABLE[block.language]:
                raise ValueError(f"README.md:{block.line}: 'continues' needs a {block.language} block before it")
            chains[-1].append(block)
        else:
            chains.append([block])
    return chains


def _cuda_error() -> str | None:
    from rlx_mlir.runtime.cuda_driver import cuda_device_error

    return cuda_device_error()


def _skip_reason(chain: list[Block]) -> str | None:
    for block in chain:
        for directive in block.directives:
            if directive.startswith("skip"):
                return f"README.md:{block.line}: {directive}"
            if directive == "slow" and not os.environ.get("RLX_TEST_SLOW"):
                return f"README.md:{block.line}: slow block (set RLX_TEST_SLOW=1 to run it)"
            if directive.startswith("needs "):
                for need in (n.strip() for n in directive[len("needs "):].split(",")):
                    if need == "cuda":
                        error = _cuda_error()
                        if error:
                            return f"README.md:{block.line}: needs a CUDA device: {error}"
                    elif importlib.util.find_spec(need) is None:
                        return f"README.md:{block.line}: needs the optional package '{need}' (pip install {need})"
    return None


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))
CHAINS = runnable_chains(BLOCKS)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("readme")
    for name in ("examples", "dialect"):
        shutil.copytree(ROOT / name, directory / name)
    return directory


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    env.setdefault("RLX_NUM_THREADS", "1")
    return env


def _param(chain: list[Block]):
    slow = any("slow" in block.directives for block in chain)
    return pytest.param(chain, id=chain[0].ident, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("chain", [_param(chain) for chain in CHAINS])
def test_readme_block_runs(chain: list[Block], workdir: Path):
    reason = _skip_reason(chain)
    if reason:
        pytest.skip(reason)
    code = "".join(block.code for block in chain)
    if RUNNABLE[chain[0].language] == "python":
        command = [sys.executable, "-c", code]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", code]
    done = subprocess.run(command, cwd=workdir, env=_environment(), capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, (
        f"README.md:{chain[0].line} ({chain[0].section}) failed with exit code {done.returncode}\n"
        f"--- code ---\n{code}--- stdout ---\n{done.stdout[-4000:]}\n--- stderr ---\n{done.stderr[-4000:]}"
    )


def test_readme_has_runnable_blocks():
    """The extractor finds the README's blocks (a broken fence parser would make the test above vacuous)."""
    languages = [b.language for b in BLOCKS]
    assert languages.count("python") >= 8 and languages.count("sh") >= 3, languages


def test_directives_are_known():
    known = re.compile(r"^(skip( .*)?|slow|continues|needs [a-z0-9_, ]+)$")
    for block in BLOCKS:
        for directive in block.directives:
            assert known.match(directive), f"README.md:{block.line}: unknown readme-test directive '{directive}'"
