"""Running a transform-dialect script from a Python pass.

The passes that drive MLIR's transform dialect (rlx-tile-matmul,
rlx-parallelize-linalg) build the body of a named sequence as text; this
module wraps it in `@__transform_main`, applies it to the payload module and
turns an interpreter failure into an error diagnostic at a given location.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects.transform import interpreter

from ...passmanager.base import PassFailure


def apply_script(module: ir.Operation, body: str, location: ir.Location, what: str) -> None:
    """Applies the named-sequence `body` (its root handle is `%root`) to `module`.

    `location` is taken before the call: a failed script may have erased the ops it
    matched. On failure, "`what` failed: <interpreter message>" is emitted there.
    """
    script = ir.Module.parse(
        "module attributes {transform.with_named_sequence} {\n"
        "transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n"
        + body
        + "\ntransform.yield\n}\n}\n",
        module.context,
    )
    try:
        interpreter.apply_named_sequence(module, script.body.operations[0], script)
    except Exception as error:  # the interpreter reports through diagnostics and raises
        message = f"{what} failed: {error}"
        location.emit_error(message)
        raise PassFailure(message) from None
