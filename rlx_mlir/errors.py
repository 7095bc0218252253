"""The exceptions rlx-mlir raises: every one derives from `RlxError`.

MLIR-free and import-free, so that any layer (and the AOT loader, where MLIR is not installed)
can raise them.  `except rlx_mlir.RlxError` catches everything the project reports on purpose.
"""


class RlxError(Exception):
    """Base of every error rlx-mlir reports on purpose (bad input, failed compile, bad arguments)."""


class ArgumentError(RlxError, ValueError):
    """An argument whose shape or dtype does not match the function signature.

    `spec` is the argument's `TensorSpec` (rlx_mlir.runtime.signature)."""

    def __init__(self, message: str, spec):
        super().__init__(message)
        self.spec = spec
