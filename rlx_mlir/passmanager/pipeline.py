"""Textual pass pipelines mixing RLX passes with upstream MLIR passes.

    builtin.module(rlx-mir-to-linalg,canonicalize,cse)

RLX names (see `registry`) become Python passes; every other element is handed
to MLIR's own pipeline parser, so any upstream pass or pipeline works, options
and nesting included.  Elements are checked before anything runs, so a typo is
a clear error naming the element and its column, never a half-built pipeline.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import traceback
from dataclasses import dataclass
from typing import Optional, Sequence, Union

from mlir import ir
from mlir.passmanager import PassManager

from ..dialects import verifier
from ..errors import RlxError
from ..targets.toolchain import mlir_tool
from . import registry
from .base import Configurable, PassFailure, PassOptionError, RlxPass, RlxPipeline

Element = Union[RlxPass, str]
ANCHOR = "builtin.module"


class PipelineError(RlxError, ValueError):
    """A pipeline string that does not parse or names an unknown pass or option."""

    def __init__(self, message: str, text: str = "", column: int = 0):
        self.message, self.text, self.column = message, text, column
        where = f"<pass-pipeline>:1:{column + 1}: " if text else ""
        detail = f"\n{text}\n{' ' * column}^" if text else ""
        super().__init__(f"{where}error: {message}{detail}")


@dataclass(frozen=True)
class _Token:
    text: str
    column: int


def _split_top_level(text: str, start: int, sep: str = ",") -> list[_Token]:
    """Splits `text` at `sep` outside braces, parentheses and quotes."""
    parts, depth, quote, begin = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(_Token(text[begin:i], start + begin))
            begin = i + 1
    parts.append(_Token(text[begin:], start + begin))
    return [_Token(p.text.strip(), p.column + len(p.text) - len(p.text.lstrip())) for p in parts]


_ELEMENT = re.compile(r"^([A-Za-z0-9_.\-]+)\s*(\{(.*)\})?\s*(\((.*)\))?$", re.S)


def parse_options(text: str) -> dict[str, str]:
    """`k=v k2=v2` (MLIR's pass-option syntax) into a dict; a bare `k` means true."""
    options = {}
    for token in _split_top_level(text, 0, sep=" "):
        if not token.text:
            continue
        key, _, value = token.text.partition("=")
        options[key.strip()] = value.strip().strip("\"'") if _ else "true"
    return options


def parse_pipeline(text: str) -> list[Element]:
    """Parses `builtin.module(...)` (or a bare comma-separated list) into elements."""
    stripped = text.strip()
    body, offset = stripped, len(text) - len(text.lstrip())
    if stripped.startswith(ANCHOR):
        rest = stripped[len(ANCHOR):].strip()
        if not (rest.startswith("(") and rest.endswith(")")):
            raise PipelineError(f"expected '{ANCHOR}(...)'", text, offset)
        body = rest[1:-1]
        offset += stripped.index("(") + 1
    if _unbalanced(body):
        raise PipelineError("unbalanced brackets in pipeline", text, offset)
    elements: list[Element] = []
    if not body.strip():
        return []
    for token in _split_top_level(body, offset):
        if not token.text:
            raise PipelineError("empty pipeline element", text, token.column)
        elements += _parse_element(token, text)
    return elements


def _unbalanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch in "({["
        depth -= ch in ")}]"
        if depth < 0:
            return True
    return depth != 0


def _parse_element(token: _Token, text: str) -> list[Element]:
    match = _ELEMENT.match(token.text)
    if not match:
        raise PipelineError(f"cannot parse pipeline element '{token.text}'", text, token.column)
    name, options, nested = match.group(1), match.group(3), match.group(5)
    rlx_class = registry.lookup(name)
    if rlx_class is None:
        _check_upstream(token, text, nested)
        return [token.text]
    if nested is not None:
        raise PipelineError(f"'{name}' is a module pass and takes no nested pipeline", text, token.column)
    try:
        # Expanding a pipeline builds its passes, whose options are checked as well.
        return expand(rlx_class.from_options(parse_options(options or "")))
    except PassOptionError as error:
        raise PipelineError(str(error), text, token.column) from None


def expand(item: Configurable) -> list[Element]:
    """Flattens pipelines into passes and upstream text."""
    if isinstance(item, RlxPipeline):
        flat: list[Element] = []
        for element in item.elements():
            flat += [element] if isinstance(element, str) else expand(element)
        return flat
    return [item]


def _check_upstream(token: _Token, text: str, nested: Optional[str]) -> None:
    name = token.text.split("{", 1)[0].split("(", 1)[0].strip()
    if nested is not None:
        for inner in _split_top_level(nested, 0):
            if not inner.text:
                continue
            inner_name = inner.text.split("{", 1)[0].split("(", 1)[0].strip()
            if registry.lookup(inner_name):
                raise PipelineError(
                    f"RLX pass '{inner_name}' runs on '{ANCHOR}' and cannot be nested in '{name}'",
                    text,
                    token.column,
                )
    with ir.Context():
        try:
            PassManager.parse(f"{ANCHOR}({token.text})")
            return
        except (ValueError, ir.MLIRError) as error:
            detail = str(error)
    if "does not refer to a registered pass" in detail and nested is None:
        message = f"unknown pass or pipeline '{name}'"
        suggestions = registry.closest_names(name, [*registry.PASSES, *registry.PIPELINES, *upstream_pass_names()])
        if suggestions:
            message += "; did you mean " + " or ".join(f"'{s}'" for s in suggestions) + "?"
        raise PipelineError(message, text, token.column)
    first_line = next((line for line in detail.splitlines() if line.strip()), detail)
    first_line = re.sub(r"^.*?error: ", "", first_line)
    raise PipelineError(f"invalid pipeline element '{token.text}': {first_line.strip()}", text, token.column)


@functools.lru_cache(maxsize=1)
def upstream_pass_names() -> tuple[str, ...]:
    """Names of upstream passes and pipelines, read from `mlir-opt --help` (for suggestions)."""
    tool = mlir_tool("mlir-opt")
    if tool is None:
        return ()
    try:
        help_text = subprocess.run([tool, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(sorted(set(re.findall(r"^\s{4,7}--([a-z][a-z0-9-]+)\s", help_text, re.M))))


# --- running -------------------------------------------------------------------------------


@dataclass
class VerificationState:
    """What the RLX verifier learnt about the module a pass manager runs on.

    `rlx_free`: the last verification found no op of an RLX dialect (and no function with
    symbolic dimensions). Upstream passes cannot create RLX ops, nor can an RLX pass with
    `creates_rlx_ops = False`; after such a pass an RLX-free module has nothing for the
    RLX verifier to check (MLIR's own verifier still runs after it, see `build_pass_manager`),
    so it is skipped: late in `rlx-lower-to-llvm` it would walk hundreds of thousands of ops per pass.
    """

    rlx_free: bool = False


STRUCTURE_CHECK = "rlx-verify-structure"  # MLIR's verifier after a run of upstream passes (build_pass_manager)


def _verify_structure(op: ir.Operation, pass_) -> None:
    """MLIR's own verifier on `op`; its errors as diagnostics and a pass failure."""
    try:
        op.verify()
    except ir.MLIRError as error:
        # With emit_error_diagnostics on, the diagnostics went to the handler; otherwise re-emit them.
        for diagnostic in error.error_diagnostics:
            diagnostic.location.emit_error(diagnostic.message)
        pass_.signal_pass_failure()


def _structure_check(op: ir.Operation, pass_) -> None:
    _verify_structure(op, pass_)


def _python_pass(instance: RlxPass, state: VerificationState, first: bool, receives_verified: bool,
                 receives_structure_verified: bool = False):
    """The callback running `instance` in a pass manager. `receives_verified`: the module it
    receives passed the RLX verifier (the element before it in the same pass manager is an RLX
    pass, which verified the module it left or failed; or it is the first element and the
    caller verified the module), so a run that changed nothing (`run` returned False) leaves a
    verified module. `receives_structure_verified`: it receives the module MLIR's verifier just
    checked after a run of upstream passes, which is all the verification an RLX-free module
    gets (`state.rlx_free`): then too a run that changed nothing leaves a verified module."""

    def run(op: ir.Operation, pass_) -> None:
        try:
            if first:  # a new run of the pass manager, maybe on another module: learn afresh
                state.rlx_free = False
            with op.location:  # a default location for types and attributes the pass creates
                changed = instance.run(op)
            if instance.name == "rlx-verify":
                return
            if changed is False and (receives_verified or (receives_structure_verified and state.rlx_free)):
                # e.g. rlx-hir-to-mir on a module without HIR, rlx-pack-matmul on one without
                # matmuls: the module is the verified one it received, verifying it again finds nothing new
                return
            if state.rlx_free and not instance.creates_rlx_ops:
                _verify_structure(op, pass_)  # nothing for the RLX checks: MLIR's own verifier only
                return
            ok, holds_rlx = verifier.verify_and_find_rlx(op)
            state.rlx_free = ok and not holds_rlx
            if not ok:
                pass_.signal_pass_failure()
        except PassFailure:
            pass_.signal_pass_failure()
        except MemoryError as error:  # e.g. a huge tensor: numpy's message names the size
            op.location.emit_error(f"pass '{instance.name}' ran out of memory: {error or 'MemoryError'}")
            pass_.signal_pass_failure()
        except Exception as error:  # a bug in a pass: report it as a diagnostic, not a crash
            if os.environ.get("RLX_DEBUG"):
                traceback.print_exc()
            # Errors raised inside MLIR callbacks carry a traceback in their text: keep the last line.
            lines = [line for line in str(error).splitlines() if line.strip()]
            detail = lines[-1].strip() if lines else type(error).__name__
            op.location.emit_error(f"internal error in pass '{instance.name}': {type(error).__name__}: {detail}")
            pass_.signal_pass_failure()

    return run


def build_pass_manager(
    elements: Sequence[Element],
    context: ir.Context,
    *,
    print_ir_before_all: bool = False,
    print_ir_after_all: bool = False,
    print_ir_after_change: bool = False,
    print_ir_after_failure: bool = False,
    print_debuginfo: bool = False,
    elide_elements_larger: Optional[int] = None,
    timing: bool = False,
    statistics: bool = False,
    verification: Optional[VerificationState] = None,
    input_verified: bool = False,
) -> PassManager:
    """A pass manager running `elements` in order. Each RLX pass is followed by the RLX
    verifier, unless `verification` knows the module to be RLX-free (see VerificationState);
    by default that knowledge starts afresh with each run, at its first RLX pass; a state
    passed in (e.g. shared by pass managers that each run one pass on the same module)
    is the caller's to keep true. `input_verified`: the module this pass manager runs on (once)
    has just passed the RLX verifier (e.g. `Compilation.parse` verified it), so a first element
    that is an RLX pass and changes nothing (rlx-outline-blocks without HIR) is not verified again.

    MLIR's own verifier runs after every RLX pass (as part of the RLX verifier, or alone where
    the RLX checks are skipped) and once after each run of consecutive upstream passes, so no
    pass manager hands on IR that does not verify; not between upstream passes, which trust each
    other's output (a long program spends seconds per verification: ~0.4 s for 50k elementwise
    ops late in rlx-lower-to-llvm). With IR printing, MLIR verifies after every pass, as mlir-opt.

    The rest is MLIR's own instrumentation, as mlir-opt's flags of the same names set it up:
    IR printing before every pass / after every pass / after a change / after a failure (to
    stderr; with locations where `print_debuginfo`, constants of more than `elide_elements_larger`
    elements elided), pass timing and pass statistics (reported when the pass manager is destroyed)."""
    own_state = verification is None
    verification = verification if verification is not None else VerificationState()
    first_python = next((e for e in elements if not isinstance(e, str)), None) if own_state else None
    printing = print_ir_before_all or print_ir_after_all or print_ir_after_change or print_ir_after_failure
    with context:
        pm = PassManager(ANCHOR)
        pm.enable_verifier(printing)  # else verified where the passes below say
        pending: list[str] = []

        def flush():
            if pending:
                pm.add(",".join(pending))
                pending.clear()
                if not printing:
                    pm.add(_structure_check, name=STRUCTURE_CHECK, argument=STRUCTURE_CHECK,
                           description="MLIR's verifier after a run of upstream passes")

        receives_verified = input_verified  # the module as the next element receives it passed the RLX verifier
        for element in elements:
            if isinstance(element, str):
                pending.append(element)
                receives_verified = False
            else:
                after_upstream = bool(pending)  # MLIR's verifier checks what they leave (see flush)
                flush()
                callback = _python_pass(element, verification, element is first_python, receives_verified,
                                        after_upstream)
                pm.add(callback, name=element.name, argument=element.name, description=element.summary)
                receives_verified = True
        flush()
        if printing:
            # MLIR's "after change" and "after failure" filters apply on top of "after all".
            after = print_ir_after_all or print_ir_after_change or print_ir_after_failure
            pm.enable_ir_printing(
                print_before_all=print_ir_before_all,
                print_after_all=after,
                print_after_change=print_ir_after_change and not print_ir_after_all,
                print_after_failure=print_ir_after_failure and not (print_ir_after_all or print_ir_after_change),
                print_module_scope=True,
                large_elements_limit=elide_elements_larger,
                enable_debug_info=print_debuginfo,
            )
        if timing:
            pm.enable_timing()
        if statistics:
            pm.enable_statistics()
    return pm


def run_pipeline(module: ir.Operation, pipeline: Union[str, Sequence[Element]], **printing) -> None:
    """Runs `pipeline` on `module`; raises ir.MLIRError on failure (diagnostics emitted)."""
    elements = parse_pipeline(pipeline) if isinstance(pipeline, str) else list(pipeline)
    build_pass_manager(elements, module.context, **printing).run(module)
