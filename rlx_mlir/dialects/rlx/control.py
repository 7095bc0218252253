"""Control flow and extension ops: scan, if, while, custom_fn.

RLX's `Scan`, `If`, `While` and `CustomFn` hold sub-graphs.  IRDL ops in
LLVM 22 cannot carry regions that need terminators, so here every body is a
`func.func` (usually private) in the same module, named by a flat symbol
reference attribute (`@name`); the verifier looks the function up in the
symbol table of the enclosing module and checks its signature.  The lowerings
call the bodies with `func.call` inside `scf.for`, `scf.if` and `scf.while`.

IRDL in LLVM 22 also requires all operands of one variadic field to share one
type, so where RLX takes any number of inputs these ops take at most one
optional operand per role (a tensor of any type); pack several inputs into one
tensor, or close over constants inside the body.
"""

from __future__ import annotations

from typing import Optional, Sequence

from mlir import ir
from mlir.dialects import builtin, func

from ...dsl import AnyTensor, BoolAttr, I64Attr, Pure, VerifyError, attribute, operand, result
from ...dsl.constraints import AttrConstraint
from ...ir.shapes import format_shape, shape_of
from ...ir.walk import collect_ops
from .dialect import Rlx
from .shape import NarrowOp, ReshapeOp

__all__ = [
    "ScanOp", "IfOp", "WhileOp", "CustomFnOp",
    "SymbolRefAttr", "custom_fn_outputs", "lookup_function", "function_signature", "call_cycles",
]


def _flat_symbol(attr: ir.Attribute) -> str:
    return ir.FlatSymbolRefAttr(attr).value


SymbolRefAttr = AttrConstraint(
    "a flat symbol reference to a func.func",
    "#builtin.symbol_ref",
    _flat_symbol,
    lambda v: v if isinstance(v, ir.Attribute) else ir.FlatSymbolRefAttr.get(str(v).lstrip("@")),
)


# --- function lookup -----------------------------------------------------------------


def _enclosing_symbol_table(operation: ir.Operation) -> Optional[ir.Operation]:
    parent = operation.parent
    while parent is not None:
        if isinstance(parent.opview, builtin.ModuleOp):
            return parent
        parent = parent.parent
    return None


def lookup_function(op, name: str, role: str = "body"):
    """The `func.func` named `name` in the module enclosing `op`; VerifyError (naming the
    attribute `role`) when there is none."""
    module = _enclosing_symbol_table(op.operation)
    if module is None:
        raise VerifyError(f"{role} @{name} cannot be resolved: the op is not inside a module")
    for candidate in module.regions[0].blocks[0].operations:
        if isinstance(candidate, func.FuncOp) and ir.StringAttr(candidate.attributes["sym_name"]).value == name:
            return candidate.operation
    raise VerifyError(f"{role} @{name} does not name a func.func in the enclosing module")


def function_signature(function) -> tuple[list[ir.Type], list[ir.Type]]:
    ftype = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
    return list(ftype.inputs), list(ftype.results)


def _types(types: Sequence[ir.Type]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


def _check_signature(op, role: str, name: str, inputs: Sequence[ir.Type], results: Optional[Sequence[ir.Type]]):
    """The function `name` takes `inputs` and (unless `results` is None) returns `results`."""
    function = lookup_function(op, name, role)
    actual_inputs, actual_results = function_signature(function)
    if list(actual_inputs) != list(inputs) or (results is not None and list(actual_results) != list(results)):
        expected_results = _types(results) if results is not None else "..."
        raise VerifyError(
            f"{role} @{name} has type {_types(actual_inputs)} -> {_types(actual_results)}, "
            f"expected {_types(inputs)} -> {expected_results}"
        )
    return actual_results


def _scalar_bool(type_: ir.Type) -> bool:
    return (
        isinstance(type_, ir.RankedTensorType)
        and str(ir.RankedTensorType(type_).element_type) == "i1"
        and all(d == 1 for d in shape_of(type_))
    )


# --- scan ----------------------------------------------------------------------------


class ScanOp(Rlx.Operation, name="scan", traits=[Pure]):
    """A loop carrying one tensor through `length` applications of a body function (JAX `lax.scan`).

    With `carry_0 = init`, for `t = 0 .. length - 1` in order:

        carry_{t+1} = body(carry_t, [bcast], [xs[t]])

    where `bcast` (optional) is passed unchanged to every step and `xs`
    (optional) is sliced along its leading axis of size `length` (`xs[t]` has
    the shape of `xs` without that axis).  The body is the `func.func` named by
    `body`, with exactly those inputs in that order (absent operands are not
    passed) and one result of the carry's type.

    The result is the final carry `carry_length` (type of `init`), or with
    `save_trajectory` the stacked carries `[carry_1, ..., carry_length]`,
    shape `[length, *carry]` (JAX's `ys` when the body emits its new carry).
    `num_checkpoints` is metadata for a later reverse pass (RLX's
    checkpointing of the trajectory; 0 = store every step) and does not change
    the forward result.  RLX's variadic `bcast_*` / `xs_*` are one optional
    operand each here (IRDL allows one type per variadic field).
    """

    init = operand(AnyTensor, "the initial carry")
    bcast = operand(AnyTensor, "passed unchanged to every step (optional)", optional=True)
    xs = operand(AnyTensor, "per-step inputs `[length, ...]`, step `t` gets `xs[t]` (optional)", optional=True)
    body = attribute(SymbolRefAttr, "the step function: (carry, [bcast], [x_t]) -> carry")
    length = attribute(I64Attr, "number of steps (positive)")
    save_trajectory = attribute(BoolAttr, "return the stacked carries `[length, *carry]`", default=False)
    num_checkpoints = attribute(I64Attr, "checkpoints for autodiff (metadata, >= 0; 0 = every step)", default=0)
    result = result(AnyTensor, "the final carry, or the trajectory `[length, *carry]`")

    @classmethod
    def infer_result_type(
        cls, init: ir.Type, bcast, xs, body: str, length: int, save_trajectory: bool, num_checkpoints: int
    ) -> ir.Type:
        if length <= 0:
            raise VerifyError(f"length must be positive, got {length}")
        if num_checkpoints < 0:
            raise VerifyError(f"num_checkpoints must be non-negative, got {num_checkpoints}")
        if xs is not None:
            xs_shape = shape_of(xs)
            if not xs_shape or xs_shape[0] != length:
                raise VerifyError(
                    f"xs has shape {format_shape(xs_shape)}, expected a leading axis of size length = {length}"
                )
        if not save_trajectory:
            return init
        carry = ir.RankedTensorType(init)
        return ir.RankedTensorType.get([length, *carry.shape], carry.element_type)

    def step_input_types(self) -> list[ir.Type]:
        types = [self.init.type]
        if self.bcast is not None:
            types.append(self.bcast.type)
        if self.xs is not None:
            xs = ir.RankedTensorType(self.xs.type)
            types.append(ir.RankedTensorType.get(list(xs.shape)[1:], xs.element_type))
        return types

    def verify(self) -> None:
        _check_signature(self, "body", self.body, self.step_input_types(), [self.init.type])


# --- if -------------------------------------------------------------------------------


class IfOp(Rlx.Operation, name="if", traits=[Pure]):
    """Calls `then_branch(arg)` when the predicate is true, else `else_branch(arg)`.

    `pred` is a boolean tensor with one element (`tensor<i1>`, or any shape of
    ones such as `tensor<1xi1>`).  `arg` is optional (at most one operand of
    any tensor type: RLX's captures are variadic, IRDL allows one type per
    variadic field); both branches are `func.func`s taking `arg` (or nothing)
    and returning one tensor of the result type.  Unlike RLX, which rewrites
    `If` to `Where` with both branches evaluated, only the chosen branch runs.
    """

    pred = operand(AnyTensor, "the predicate: an i1 tensor with one element")
    arg = operand(AnyTensor, "the operand passed to the chosen branch (optional)", optional=True)
    then_branch = attribute(SymbolRefAttr, "the function called when `pred` is true")
    else_branch = attribute(SymbolRefAttr, "the function called when `pred` is false")
    result = result(AnyTensor, "the chosen branch's result")

    def verify(self) -> None:
        if not _scalar_bool(self.pred.type):
            raise VerifyError(f"pred must be an i1 tensor with one element, got {self.pred.type}")
        inputs = [] if self.arg is None else [self.arg.type]
        results = [self.operation.results[0].type]
        _check_signature(self, "then_branch", self.then_branch, inputs, results)
        _check_signature(self, "else_branch", self.else_branch, inputs, results)

    @classmethod
    def build(cls, pred, then_branch: str, else_branch: str, *, arg=None, module=None, loc=None, ip=None):
        """Builds the op with the result type read from `then_branch` in `module` (an ir.Module)."""
        function = _function_in(module, then_branch)
        _, results = function_signature(function)
        return cls(pred, then_branch, else_branch, arg=arg, result_type=results[0], loc=loc, ip=ip)


# --- while ----------------------------------------------------------------------------


class WhileOp(Rlx.Operation, name="while", traits=[Pure]):
    """Repeats `carry = body(carry)` while `cond(carry)` holds (a do-nothing loop when it does not at first).

    `cond` is a `func.func` (carry) -> i1 tensor with one element, `body` a
    `func.func` (carry) -> carry.  With `max_iterations = N` the loop also
    stops after N applications of `body` (RLX requires it to unroll the loop;
    here it is optional and bounds the trip count).  The result is the last
    carry, of `init`'s type.  RLX carries any number of values; here one
    tensor (pack several into one, as IRDL allows one type per variadic field).
    """

    init = operand(AnyTensor, "the initial carry")
    cond = attribute(SymbolRefAttr, "the loop condition: (carry) -> tensor<i1>")
    body = attribute(SymbolRefAttr, "the loop body: (carry) -> carry")
    max_iterations = attribute(I64Attr, "upper bound on the number of iterations (>= 0)", optional=True)
    result = result(AnyTensor, "the carry when the loop stops")

    @classmethod
    def infer_result_type(cls, init: ir.Type, cond: str, body: str, max_iterations) -> ir.Type:
        if max_iterations is not None and max_iterations < 0:
            raise VerifyError(f"max_iterations must be non-negative, got {max_iterations}")
        return init

    def verify(self) -> None:
        carry = self.init.type
        results = _check_signature(self, "cond", self.cond, [carry], None)
        if len(results) != 1 or not _scalar_bool(results[0]):
            raise VerifyError(
                f"cond @{self.cond} must return one i1 tensor with one element, got {_types(results)}"
            )
        _check_signature(self, "body", self.body, [carry], [carry])


# --- custom_fn ------------------------------------------------------------------------


class CustomFnOp(Rlx.Operation, name="custom_fn", traits=[Pure]):
    """A user function with optional custom derivatives (JAX `custom_vjp` / `custom_jvp`).

    The forward value is `fwd(input)`; `vjp` and `jvp` name the derivative
    functions for a later autodiff pass and do not affect the forward result.
    `fwd` is a `func.func` (input) -> (result).  One operand (IRDL allows
    one type per variadic field; pack several inputs into one tensor).

    One result: IRDL results of the definition layer are single in this
    version, so a function with K outputs is used as RLX's
    `custom_fn_multi` does: `fwd` returns the K outputs packed into one flat
    tensor, and `custom_fn_outputs` narrows and reshapes it back (RLX's
    `MultiOutputHandle`).  `vjp` and `jvp` are only checked to exist: their
    signature conventions belong to the autodiff pass.
    """

    input = operand(AnyTensor, "the argument of `fwd`")
    fwd = attribute(SymbolRefAttr, "the forward function: (input) -> result")
    vjp = attribute(SymbolRefAttr, "the reverse-mode derivative (metadata)", optional=True)
    jvp = attribute(SymbolRefAttr, "the forward-mode derivative (metadata)", optional=True)
    result = result(AnyTensor, "`fwd(input)`")

    def verify(self) -> None:
        _check_signature(self, "fwd", self.fwd, [self.input.type], [self.operation.results[0].type])
        for role in ("vjp", "jvp"):
            name = getattr(self, role)
            if name is not None:
                lookup_function(self, name, role)

    @classmethod
    def build(cls, input, fwd: str, *, vjp=None, jvp=None, module=None, loc=None, ip=None):
        """Builds the op with the result type read from `fwd` in `module` (an ir.Module)."""
        function = _function_in(module, fwd)
        _, results = function_signature(function)
        if len(results) != 1:
            raise ValueError(f"'rlx.custom_fn' op fwd @{fwd} must return one tensor, got {_types(results)}")
        return cls(input, fwd, vjp=vjp, jvp=jvp, result_type=results[0], loc=loc, ip=ip)


# --- recursion -------------------------------------------------------------------------

# The symbol attributes through which an op runs another function. custom_fn's vjp / jvp
# are metadata, never called by the forward program.
CALLED_FUNCTIONS: dict[type, tuple[str, ...]] = {
    func.CallOp: ("callee",),
    ScanOp: ("body",),
    IfOp: ("then_branch", "else_branch"),
    WhileOp: ("cond", "body"),
    CustomFnOp: ("fwd",),
}


def _calls(function: ir.Operation, functions: dict) -> list[tuple[str, str, ir.Operation]]:
    """(callee, attribute, op) for every op in `function` that runs a function of `functions`."""
    found = []
    for op in collect_ops(function, tuple(CALLED_FUNCTIONS)):
        roles = next(roles for op_class, roles in CALLED_FUNCTIONS.items() if isinstance(op, op_class))
        for role in roles:
            if role in op.attributes and isinstance(op.attributes[role], ir.FlatSymbolRefAttr):
                callee = ir.FlatSymbolRefAttr(op.attributes[role]).value
                if callee in functions:
                    found.append((callee, role, op.operation))
    return found


def call_cycles(module: ir.Operation) -> list[tuple[list[str], str, ir.Operation]]:
    """Every cycle of the call graph of `module`'s functions (calls through func.call and the
    bodies of scan / if / while / custom_fn), as (the functions in call order, ending with
    the first again; the attribute; the op that closes the cycle). Recursion would run
    forever or, with bodies inlined, not at all: the lowerings need an acyclic call graph."""
    functions = {}
    for op in module.regions[0].blocks[0].operations:
        if isinstance(op, func.FuncOp):
            functions[ir.StringAttr(op.attributes["sym_name"]).value] = op.operation
    calls = {name: _calls(function, functions) for name, function in functions.items()}
    cycles = []
    state: dict[str, str] = {}  # "open" while on the current path, "done" after
    for start in functions:
        if start in state:
            continue
        path, stack = [start], [iter(calls[start])]
        state[start] = "open"
        while stack:  # depth-first, iteratively: call chains may be deep
            step = next(stack[-1], None)
            if step is None:
                state[path.pop()] = "done"
                stack.pop()
                continue
            callee, role, op = step
            if state.get(callee) == "open":
                cycles.append((path[path.index(callee):] + [callee], role, op))
            elif callee not in state:
                state[callee] = "open"
                path.append(callee)
                stack.append(iter(calls[callee]))
    return cycles


def _function_in(module, name: str):
    body = module.body if isinstance(module, ir.Module) else module.regions[0].blocks[0]
    for op in body.operations:
        if isinstance(op, func.FuncOp) and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op.operation
    raise ValueError(f"no func.func @{name} in the module")


def custom_fn_outputs(packed, shapes: Sequence[Sequence[int]]) -> list:
    """RLX's MultiOutputHandle: the K outputs of a packed 1-D custom_fn result, in order.

    `packed` is a 1-D tensor value holding the flattened outputs back to back;
    `shapes` their shapes.  Output `i` is `rlx.narrow` of its range then
    `rlx.reshape` to its shape (built at the current insertion point).
    """
    value = packed if isinstance(packed, ir.Value) else packed.result
    element = ir.RankedTensorType(value.type).element_type
    outputs, offset = [], 0
    for shape in shapes:
        count = 1
        for d in shape:
            count *= d
        piece = NarrowOp(value, 0, offset, count).result
        outputs.append(ReshapeOp(piece, result_type=ir.RankedTensorType.get(list(shape), element)).result)
        offset += count
    return outputs
