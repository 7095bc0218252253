"""`Dialect`: a namespace of Python-defined ops, emitted as IRDL and loaded per Context.

    class Rlx(Dialect, name="rlx"):
        '''The MIR dialect.'''

    class MatmulOp(Rlx.Operation, name="matmul"):
        ...

Declaring the dialect registers its Python classes with the bindings (once per
process, at import).  `load(context)` parses the dialect's IRDL into a Context,
once per Context, after which ops of the dialect parse, print and verify.
"""

from __future__ import annotations

from typing import ClassVar, Optional

from mlir import ir
from mlir._mlir_libs._mlir import register_dialect
from mlir.dialects import irdl

from .fields import OPTIONAL, VARIADIC
from .operation import Operation


class Dialect:
    name: ClassVar[str]
    ops: ClassVar[list]
    python_dialect: ClassVar[type]
    Operation: ClassVar[type]
    _irdl_text: ClassVar[Optional[str]]

    def __init_subclass__(cls, name: str, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.name = name
        cls.ops = []
        cls._irdl_text = None
        cls.python_dialect = register_dialect(
            type(f"_{cls.__name__}Dialect", (ir.Dialect,), {"DIALECT_NAMESPACE": name})
        )
        cls.Operation = type(
            "Operation",
            (Operation,),
            {"DIALECT": cls, "__module__": cls.__module__, "__qualname__": f"{cls.__qualname__}.Operation"},
        )

    @classmethod
    def irdl_text(cls) -> str:
        """The dialect as an IRDL module in MLIR text (built once per process)."""
        if cls._irdl_text is None:
            with ir.Context(), ir.Location.unknown():
                module = ir.Module.create()
                with ir.InsertionPoint(module.body):
                    cls._emit_irdl()
                cls._irdl_text = str(module)
        return cls._irdl_text

    @classmethod
    def _emit_irdl(cls) -> None:
        dialect = irdl.dialect(cls.name)
        with ir.InsertionPoint(dialect.body):
            for op in cls.ops:
                short_name = op.OPERATION_NAME.split(".", 1)[1]
                definition = irdl.operation_(short_name)
                with ir.InsertionPoint(definition.body):
                    _emit_op_fields(op)

    @classmethod
    def is_loaded(cls, context: ir.Context) -> bool:
        return bool(cls.ops) and context.is_registered_operation(cls.ops[0].OPERATION_NAME)

    @classmethod
    def load(cls, context: ir.Context) -> None:
        """Makes the dialect's ops known to `context` (a no-op when they already are)."""
        if not cls.ops or cls.is_loaded(context):
            return
        with context:
            irdl.load_dialects(ir.Module.parse(cls.irdl_text()))


_VARIADICITY = {OPTIONAL: irdl.Variadicity.optional, VARIADIC: irdl.Variadicity.variadic}


def _emit_op_fields(op: type) -> None:
    single = irdl.Variadicity.single
    operands = [d.constraint.emit_irdl() for d in op._operand_defs]
    # Optional attributes stay out of IRDL, which has no way to say "optional".
    declared = [d for d in op._attribute_defs if not d.optional]
    attributes = [d.constraint.emit_irdl() for d in declared]
    results = [d.constraint.emit_irdl() for d in op._result_defs]
    if operands:
        variadicity = [_VARIADICITY.get(d.variadicity, single) for d in op._operand_defs]
        irdl.operands_(operands, [d.name for d in op._operand_defs], variadicity)
    if attributes:
        irdl.attributes_(attributes, [d.name for d in declared])
    if results:
        irdl.results_(results, [d.name for d in op._result_defs], [single] * len(results))
