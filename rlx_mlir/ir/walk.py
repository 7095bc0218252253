"""Walking IR: the ops and blocks nested in an op, collected before anything is
changed (erasing or replacing ops during MLIR's walk is unsafe).

Passes select ops by their Python op class (`collect_ops(module, rlx.MatmulOp)`,
`isinstance(view, func.FuncOp)`), never by name strings.  MLIR's walk hands out
untyped `ir.Operation`s and making the typed view of each costs far more than
reading its name, so a class selection is answered by the op names of the
classes (see `op_names`) and only the selected ops get their view.
"""

from __future__ import annotations

from typing import Callable, Union

from mlir import ir

OpClasses = Union[type, tuple]  # an op view class (rlx.MatmulOp, func.FuncOp, ...) or a tuple of them


def collect_ops(
    root: ir.Operation,
    select: Union[OpClasses, Callable[[ir.Operation], bool]] = lambda op: True,
    order: ir.WalkOrder = ir.WalkOrder.POST_ORDER,
) -> list:
    """Every op nested in `root` (itself included) that `select` picks, in walk order.

    `select` is an op class or a tuple of them (the ops that are instances of one,
    returned as their typed views), or a predicate on `ir.Operation` (the ops it
    accepts, returned as `ir.Operation`s).
    """
    found: list = []
    if isinstance(select, (type, tuple)):
        names = op_names(select)

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name in names:
                found.append(op.opview)
            return ir.WalkResult.ADVANCE

    else:

        def visit(op: ir.Operation) -> ir.WalkResult:
            if select(op):
                found.append(op)
            return ir.WalkResult.ADVANCE

    root.walk(visit, order)
    return found


def op_names(op_classes: OpClasses) -> frozenset[str]:
    """The names of the ops that are instances of `op_classes`: their `OPERATION_NAME`s and
    those of their subclasses (an abstract base such as a family of norms names none itself).
    Computed once per class or tuple: op classes are all defined when their dialect is imported."""
    names = _OP_NAMES.get(op_classes)
    if names is None:
        names = _OP_NAMES[op_classes] = _names_of(op_classes if isinstance(op_classes, tuple) else (op_classes,))
    return names


def is_op(op: Union[ir.Operation, ir.OpView], op_classes: OpClasses) -> bool:
    """Whether `op` (an `ir.Operation` or a view) is an instance of `op_classes`, without making its view."""
    names = _OP_NAMES.get(op_classes)
    # A view's `name` may be the op's own attribute (memref.get_global's symbol): ask its operation.
    name = op.name if type(op) is ir.Operation else op.operation.name
    return name in (names if names is not None else op_names(op_classes))


_OP_NAMES: dict = {}  # op class (or tuple of them) -> op_names


def _names_of(op_classes: tuple) -> frozenset[str]:
    names, pending = set(), list(op_classes)
    while pending:
        cls = pending.pop()
        if not (isinstance(cls, type) and issubclass(cls, ir.OpView)):
            raise TypeError(f"expected an op class (a subclass of mlir.ir.OpView), got {cls!r}")
        name = getattr(cls, "OPERATION_NAME", None)  # inherited by upstream's extended classes
        if isinstance(name, str):
            names.add(name)
        pending += cls.__subclasses__()
    return frozenset(names)


def ops_in_dialect(root: ir.Operation, namespace: str) -> list[ir.Operation]:
    """The ops of dialect `namespace` (e.g. "rlx") nested in `root`."""
    prefix = namespace + "."
    return collect_ops(root, lambda op: op.name.startswith(prefix))


def nested_blocks(root: ir.Operation) -> list[ir.Block]:
    """Every block of every region nested in `root`."""
    return [block for op in collect_ops(root) for region in op.regions for block in region.blocks]
