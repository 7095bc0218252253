"""The exceptions rlx-mlir raises: every one derives from `RlxError`.

MLIR-free and import-free, so that any layer (and the AOT loader, where MLIR is not installed)
can raise them.  `except rlx_mlir.RlxError` catches everything the project reports on purpose.
"""


class RlxError(Exception):
    """Base of every error rlx-mlir reports on purpose (bad input, failed compile, bad arguments)."""
