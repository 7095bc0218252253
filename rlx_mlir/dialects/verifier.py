"""The RLX verifier: MLIR's structural verification plus every op's Python checks.

IRDL can only state structure (operand counts, tensor-ness, attribute kinds);
shape and dtype rules live in the op classes.  `verify()` runs both and reports
each failure as an MLIR error diagnostic at the failing op's location.
"""

from __future__ import annotations

import difflib
import functools
import re
from typing import Callable, Optional

from mlir import ir
from mlir.dialects import builtin, func

from ..dims import dynamic
from ..dsl import Operation, VerifyError
from ..ir.attrs import NAME_ATTR, PARAM_ATTR
from ..ir.diagnostics import Diagnostic
from ..ir.walk import is_op
from .context import RLX_DIALECTS
from .rlx.control import call_cycles
from .rlx_lir.dialect import PlanOp
from .rlx_lir.ir_plan import plan_problems


def verify(root: ir.Operation) -> bool:
    """Verifies `root` and everything nested in it; False after emitting diagnostics."""
    return verify_and_find_rlx(root)[0]


def verify_and_find_rlx(root: ir.Operation) -> tuple[bool, bool]:
    """`verify(root)`, and whether `root` holds any op of an RLX dialect (rlx, rlx_hir,
    rlx_lir) or a function with symbolic dimensions: where it holds none, a pass that
    creates no RLX ops cannot make the module fail the RLX checks (see pass_pipeline)."""
    try:
        root.verify()
    except ir.MLIRError as error:
        # With emit_error_diagnostics on, the diagnostics went to the handler;
        # otherwise re-emit them so that a handler sees them.
        for diagnostic in error.error_diagnostics:
            diagnostic.location.emit_error(diagnostic.message)
        return False, True
    failed = False
    holds_rlx = False
    dynamic_funcs = dynamic.dynamic_functions(root)
    in_dynamic = {op for function in dynamic_funcs for op in dynamic.body_ops(function)}

    plans = []  # plan ops whose own checks passed: their functions' plans are checked next

    def check(op: ir.Operation) -> ir.WalkResult:
        nonlocal failed, holds_rlx
        if not op.name.startswith("rlx"):  # the ops with Python checks are those of the RLX dialects
            return ir.WalkResult.ADVANCE
        holds_rlx = True
        view = op.opview
        if in_dynamic and op in in_dynamic:
            return ir.WalkResult.ADVANCE  # checked at probe sizes below
        if isinstance(view, Operation):
            try:
                with op.location:
                    view.verify_invariants()
                if isinstance(view, PlanOp):
                    plans.append(view)
            except VerifyError as error:
                op.location.emit_error(f"'{op.name}' op {error}")
                failed = True
            except Exception as error:  # a bug in a verifier must not take the tool down
                op.location.emit_error(f"'{op.name}' op internal error in its verifier: {type(error).__name__}: {error}")
                failed = True
        return ir.WalkResult.ADVANCE

    # One walk for the op checks and what the checks below need: a long program has hundreds of thousands of ops.
    scan = _ModuleScan(root, check)
    failed = not _verify_plans(plans) or failed
    for function in dynamic_funcs:
        try:
            dynamic.verify_function(function)
        except dynamic.DimError as error:
            (error.location or function.location).emit_error(error.message)
            failed = True
        except Exception as error:  # a bug in a verifier must not take the tool down
            function.location.emit_error(f"internal error verifying symbolic dimensions: {type(error).__name__}: {error}")
            failed = True
    sizes_ok = _verify_type_sizes(scan)
    acyclic = _verify_no_recursion(scan)
    ok = not failed and _verify_argument_attributes(scan) and sizes_ok and acyclic
    return ok, holds_rlx or bool(dynamic_funcs)


def _verify_plans(plans: list) -> bool:
    """Each plan against its function: the independent checker (`ir_plan.plan_problems`), at the plan op."""
    ok = True
    for plan in plans:
        op = plan.operation
        try:
            problems = plan_problems(op.parent)
        except Exception as error:  # a bug in the checker must not take the tool down
            problems = [f"internal error in the plan checker: {type(error).__name__}: {error}"]
        if problems:
            op.location.emit_error(f"'{op.name}' op the plan is invalid: " + "; ".join(problems[:3]))
            ok = False
    return ok


INT64_MAX = 2**63 - 1


def _oversized(type_: ir.Type) -> str | None:
    """Why a tensor or memref type's element count or byte size does not fit in int64, or None.

    Sizes are multiplied in Python (MLIR's own size computation asserts on overflow)."""
    if not isinstance(type_, (ir.RankedTensorType, ir.MemRefType)):
        return None
    shaped = ir.ShapedType(type_)
    elements = 1
    for size in shaped.shape:
        if size >= 0:  # dynamic sizes are checked when they are bound
            elements *= size
    element = shaped.element_type
    width = element.width if isinstance(element, (ir.IntegerType, ir.FloatType)) else 64
    size_bytes = elements * max(1, -(-width // 8))
    if elements > INT64_MAX:
        return f"type '{type_}' has {elements} elements, more than a 64-bit size can count (at most {INT64_MAX})"
    if size_bytes > INT64_MAX:
        return f"type '{type_}' takes {size_bytes} bytes, more than a 64-bit size can count (at most {INT64_MAX})"
    return None


class _ModuleScan:
    """What the checks after the op checks need, found in the walk of `root` (post order) that
    also runs `each` on every op: the type-size problems of each op (reported in walk order),
    the modules (for call cycles) and the functions (for argument attributes)."""

    def __init__(self, root: ir.Operation, each: Callable[[ir.Operation], object] = lambda op: None) -> None:
        self.type_problems: list[tuple[ir.Operation, str]] = []
        self.modules: list[ir.Operation] = []
        self.functions: list[ir.Operation] = []
        known: dict = {}  # type -> _oversized(type): types are few, values many

        def oversized(type_: ir.Type) -> Optional[str]:
            problem = known.get(type_, False)
            if problem is False:
                problem = known[type_] = _oversized(type_)
            return problem

        def visit(op: ir.Operation) -> ir.WalkResult:
            each(op)
            types = [result.type for result in op.results]
            regions = op.regions
            if len(regions):
                types += [argument.type for region in regions for block in region.blocks for argument in block.arguments]
                if is_op(op, func.FuncOp):
                    self.functions.append(op)
                    signature = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                    types += list(signature.inputs) + list(signature.results)
                elif is_op(op, builtin.ModuleOp):
                    self.modules.append(op)
            reported = set()
            for type_ in types:
                problem = oversized(type_)
                if problem is not None and problem not in reported:
                    reported.add(problem)
                    self.type_problems.append((op, problem))
            return ir.WalkResult.ADVANCE

        root.walk(visit)


def _verify_type_sizes(scan: _ModuleScan) -> bool:
    """Every tensor or memref type of an op's results, a block's arguments or a function's
    signature has an element count and a byte size that fit in int64."""
    for op, problem in scan.type_problems:
        op.location.emit_error(f"'{op.name}' op {problem}")
    return not scan.type_problems


def _verify_no_recursion(scan: _ModuleScan) -> bool:
    """No function runs itself, directly or through others (func.call, or the bodies of
    rlx.scan / if / while / custom_fn)."""
    ok = True
    for op in scan.modules:
        for cycle, role, caller in call_cycles(op):
            chain = " -> ".join(f"@{name}" for name in cycle)
            caller.location.emit_error(
                f"'{caller.name}' op {role} @{cycle[-1]} closes the call cycle {chain}: "
                "recursion (through func.call or scan/if/while/custom_fn bodies) is not supported"
            )
            ok = False
    return ok


def _verify_argument_attributes(scan: _ModuleScan) -> bool:
    """`rlx.name` must be a string, unique per function; `rlx.param` a unit attribute."""
    ok = True
    for op in scan.functions:
        if "arg_attrs" not in op.attributes:
            continue
        seen: dict[str, int] = {}
        arguments = op.regions[0].blocks[0].arguments if op.regions[0].blocks else []
        for index, attrs in enumerate(ir.ArrayAttr(op.attributes["arg_attrs"])):
            attrs = ir.DictAttr(attrs)
            location = arguments[index].location if index < len(arguments) else op.location
            if NAME_ATTR in attrs:
                if not isinstance(attrs[NAME_ATTR], ir.StringAttr):
                    location.emit_error(f"argument #{index}: '{NAME_ATTR}' must be a string, got {attrs[NAME_ATTR]}")
                    ok = False
                    continue
                name = ir.StringAttr(attrs[NAME_ATTR]).value
                if name in seen:
                    location.emit_error(f"argument #{index}: '{NAME_ATTR}' \"{name}\" is already the name of argument #{seen[name]}")
                    ok = False
                seen[name] = index
            if PARAM_ATTR in attrs and not isinstance(attrs[PARAM_ATTR], ir.UnitAttr):
                location.emit_error(f"argument #{index}: '{PARAM_ATTR}' is a unit attribute, got {attrs[PARAM_ATTR]}")
                ok = False
    return ok



# --- wording MLIR's own verifier errors on RLX ops ----------------------------------------------

_UNREGISTERED = re.compile(r"^unregistered operation '((\w+)\.[\w.]+)' found in dialect")
_CURRENT_OP = "see current operation: "
_GENERIC_OP_NAME = re.compile(r'"((\w+)\.[\w.]+)"\(')


@functools.lru_cache(maxsize=1)
def _op_classes() -> dict[str, type]:
    return {op.OPERATION_NAME: op for dialect in RLX_DIALECTS for op in dialect.ops}


def explain_diagnostic(diagnostic: Diagnostic) -> None:
    """Rewords, in place, MLIR's verifier errors on RLX ops that do not say enough: an unknown op
    name gets the closest RLX op names; an IRDL error that names neither op nor attribute
    ("expected base attribute 'builtin.dense_array' but got 'builtin.integer'") names both, in the
    RLX verifier's words (`'rlx.transpose' op attribute 'perm' must be ..., but got 3 : i64`)."""
    unregistered = _UNREGISTERED.match(diagnostic.message)
    if unregistered:
        dialect = unregistered.group(2)
        short_names = [name.split(".", 1)[1] for name in _op_classes() if name.startswith(dialect + ".")]
        close = difflib.get_close_matches(unregistered.group(1).split(".", 1)[1], short_names, n=3, cutoff=0.7)
        suggestions = [f"{dialect}.{name}" for name in close]
        if suggestions:
            diagnostic.message += "; did you mean " + " or ".join(f"'{s}'" for s in suggestions) + "?"
        return
    if diagnostic.message.startswith("'"):
        return  # already `'op.name' op ...`
    op_text = next((n.message[len(_CURRENT_OP):] for n in diagnostic.notes if n.message.startswith(_CURRENT_OP)), "")
    named = _GENERIC_OP_NAME.search(op_text)
    if named is None or named.group(1) not in _op_classes():
        return
    op_name = named.group(1)
    problem = None
    if "attribute" in diagnostic.message:
        attributes = _attribute_dict(op_text[named.end():])
        problem = _op_classes()[op_name].attribute_problem(attributes) if attributes else None
    # MLIR's words stay, in parentheses: they are what IRDL-only tools (mlir-opt) print.
    diagnostic.message = f"'{op_name}' op {problem} ({diagnostic.message})" if problem else \
        f"'{op_name}' op {diagnostic.message}"


def _attribute_dict(rest: str) -> Optional[dict]:
    """The attribute dictionary of a generic op's text after `"name"(`, as {name: ir.Attribute}; None if unreadable."""
    depth, start, end = 1, None, None
    for i, ch in enumerate(rest):  # skip the operand list, then take the first balanced {...}
        if depth == 0 and start is None and ch == "{":
            start = i
        if ch in "({[<":
            depth += 1
        elif ch in ")}]>":
            depth -= 1
            if start is not None and depth == 0:
                end = i + 1
                break
        if depth == 0 and start is None and ch == ":":
            return None  # no attributes before the type
    if start is None or end is None:
        return None
    try:
        with ir.Context():
            parsed = ir.DictAttr(ir.Attribute.parse(rest[start:end]))
            return {named.name: named.attr for named in parsed}
    except Exception:  # not readable on its own (aliases, dialect attributes): keep MLIR's words
        return None
