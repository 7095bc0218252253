"""The MLIR half of `export` (aot/exporter.py): parse, check and lower a module to the LLVM dialect.

`lower` returns the function records (what the manifest, the header and the library's signature
record say about each exported function) and the lowered module's text; what follows (LLVM IR, `opt`,
`llc`, linking) runs the LLVM tools, and a compile-cache hit needs none of this: the exporter imports
this module on a miss only.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import func, llvm

from ..dims.dynamic import DimError, function_symbols
from ..driver import Compilation
from ..ir.diagnostics import CompileError
from ..pipelines.lower_to_llvm import LowerToLLVM
from ..runtime.signature import arena_of, find_function, signature_of
from ..targets.cpu import resolve_threads
from .manifest import CIFACE_PREFIX, SYMBOL_NAME
from .records import descriptor_count


def pipeline_for(target: str, threads: int, cpu, chip: str, features: str, format: str):
    """The lowering of `target`: rlx-lower-to-nvvm for "cuda", rlx-lower-to-llvm with `threads` for "cpu"
    (with this machine's VNNI byte dot products only in a library built for this machine's CPU,
    `cpu = "native"`: elsewhere LLVM could not select them)."""
    if target == "cuda":
        return f"builtin.module(rlx-lower-to-nvvm{{chip={chip} features={features} format={format}}})"
    return LowerToLLVM(threads=resolve_threads(int(threads)), host_vnni=cpu == "native")


def lower(text: str, filename: str, functions, pipeline, target: str) -> tuple[list, str]:
    """Parses, checks and lowers the module: (the function records, the module in the LLVM dialect)."""
    with Compilation(filename=filename) as job:
        parsed = job.parse(text)
        names = functions or [
            ir.StringAttr(op.sym_name).value
            for op in parsed.body.operations
            if isinstance(op, func.FuncOp) and not op.is_external and "sym_visibility" not in op.attributes
        ]
        if not names:
            raise ValueError("the module has no public function to export")
        bad = [name for name in names if not SYMBOL_NAME.fullmatch(name)]
        if bad:
            raise ValueError(f"function '@{bad[0]}' cannot be exported: a C symbol is named after it, so its name "
                             f"must be letters, digits, '_', '$' and '.', not starting with a digit")
        for name in names:
            try:
                symbols = function_symbols(find_function(parsed, name).operation)
            except DimError:  # `?` sizes without rlx.dims: signature_of below says what to do
                symbols = []
            if symbols:
                raise ValueError(
                    f"@{name} has symbolic dimensions ({', '.join(symbols)}): a library is compiled for static "
                    "shapes; bind them first and export one library per binding (GraphModule.bind_dims({...}), "
                    "rlx_mlir.dims.dynamic.bind_module, rlx-opt --rlx-bind-dims=...), or use compile(), which "
                    "specialises on the sizes of each call"
                )
        records = [_function_record(signature_of(find_function(parsed, name))) for name in names]
        job.run(parsed, pipeline, f"lowering for target '{target}' failed")
        for record in records:  # the caller's arena, where the planned code takes one (rlx.arena)
            arena = arena_of(parsed, record["name"])
            if arena is not None:
                record["arena"] = {"bytes": arena[0], "alignment": arena[1]}
        _check_calling_convention(parsed, records, target)
        lowered = parsed.operation.get_asm()
    return records, lowered


def _check_calling_convention(lowered: ir.Module, records: list, target: str) -> None:
    """Each `_mlir_ciface_<name>` takes one descriptor per input and per result not tied to an input:
    what the loader passes (a result tied to an input must have been updated in its buffer)."""
    arity = {}
    for op in lowered.body.operations:
        if isinstance(op, llvm.LLVMFuncOp) and len(op.regions[0].blocks):
            arity[ir.StringAttr(op.attributes["sym_name"]).value] = len(op.regions[0].blocks[0].arguments)
    for function in records:
        tied = sum(output["tied"] is not None for output in function["outputs"])
        expected = descriptor_count(function)
        found = arity.get(function["symbol"])
        if tied and found == expected + tied:
            raise CompileError(f"@{function['name']}: target '{target}' does not update results tied to an "
                               f"argument (rlx.tied) in place yet: its compiled function still returns them")
        if found != expected:
            raise CompileError(f"@{function['name']}: the compiled C interface takes {found} descriptors, not one "
                               f"per input and per result not tied to an input ({expected})")


def _function_record(signature) -> dict:
    """One function of the manifest (and of the library's signature record)."""
    def spec(spec, **extra) -> dict:
        return {"name": spec.name, "shape": list(spec.shape), "dtype": spec.dtype.name, "param": spec.is_param,
                **extra}

    return {
        "name": signature.entry,
        "symbol": CIFACE_PREFIX + signature.entry,
        "inputs": [spec(s) for s in signature.inputs],
        "outputs": [spec(s, tied=s.tied_input) for s in signature.outputs],
    }
