"""A small interpreter for GPU-mapped IR, so kernels can be checked on machines without a GPU.

It executes the output of `rlx-lower-to-gpu` (host functions holding `gpu.launch`
kernels over device buffers) with numpy: every block of every launch runs its
threads as Python generators that pause at `gpu.barrier`, so shared-memory
schemes (tiled matmul, tree reductions) are executed with their real
synchronisation, and a barrier reached by only some threads of a block is an
error.  Device allocations are filled with random bytes, so reading memory no
kernel wrote gives garbage, not zeros.  Scalars are numpy scalars of the IR's
element types (f32 arithmetic rounds as f32).

Test-only and slow (one Python call per op per thread): keep shapes small.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
from mlir import ir

_DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i64": np.int64, "i32": np.int32,
           "i8": np.int8, "i16": np.int16, "i1": np.bool_, "index": np.int64}


def numpy_dtype(type_: ir.Type) -> np.dtype:
    """The numpy dtype of an MLIR element type (f32, f16, i64, index, ...)."""
    return np.dtype(_DTYPES[str(type_)])


_dtype = numpy_dtype


def _scalar(value, type_: ir.Type):
    text = str(type_)
    if text == "index":
        return int(value)
    if text == "i1":
        return bool(value)
    return _DTYPES[text](value)


class BarrierDivergence(AssertionError):
    pass


class Interpreter:
    """Runs host functions of a GPU-mapped module; buffers are numpy arrays."""

    def __init__(self, module: ir.Module, seed: int = 0):
        self.module = module
        self.rng = np.random.default_rng(seed)
        self.functions = {}
        self.globals = {}
        for op in module.body.operations:
            name = op.operation.name
            if name == "func.func":
                self.functions[ir.StringAttr(op.attributes["sym_name"]).value] = op.operation
            elif name == "memref.global":
                self.globals[ir.StringAttr(op.attributes["sym_name"]).value] = op.operation
        self.launches = 0

    # -- host ---------------------------------------------------------------------------

    def call(self, name: str, *buffers: np.ndarray) -> None:
        function = self.functions[name]
        block = function.regions[0].blocks[0]
        env = dict(zip(block.arguments, buffers))
        runner = self._block(block, env, on_device=False)
        try:
            while True:
                next(runner)
                raise AssertionError("gpu.barrier outside a kernel")
        except StopIteration:
            pass

    def _global(self, name: str, type_: ir.MemRefType) -> np.ndarray:
        op = self.globals[name]
        attr = op.attributes["initial_value"]
        dtype = _dtype(type_.element_type)
        if isinstance(attr, ir.UnitAttr):
            return self.rng.standard_normal(type_.shape).astype(dtype)
        return np.array(ir.DenseElementsAttr(attr), dtype=dtype).reshape(type_.shape)

    # -- kernels ------------------------------------------------------------------------

    def _launch(self, op: ir.Operation, env: dict) -> None:
        self.launches += 1
        sizes = [env[v] for v in op.operands[-6:]] if len(op.operands) >= 6 else None
        grid, block_dims = sizes[:3], sizes[3:]
        body = op.regions[0].blocks[0]
        args = list(body.arguments)
        workgroup = args[12:]
        for bz in range(grid[2]):
            for by in range(grid[1]):
                for bx in range(grid[0]):
                    shared = {a: self.rng.standard_normal(ir.MemRefType(a.type).shape).astype(
                        _dtype(ir.MemRefType(a.type).element_type)) for a in workgroup}
                    threads = []
                    for tz in range(block_dims[2]):
                        for ty in range(block_dims[1]):
                            for tx in range(block_dims[0]):
                                local = {**env, **shared}
                                for arg, value in zip(args[:12], (bx, by, bz, tx, ty, tz, *grid, *block_dims)):
                                    local[arg] = value
                                threads.append(self._block(body, local, on_device=True))
                    self._run_block_threads(threads)

    @staticmethod
    def _run_block_threads(threads) -> None:
        live = list(threads)
        while live:
            finished, waiting = [], []
            for thread in live:
                try:
                    next(thread)
                    waiting.append(thread)
                except StopIteration:
                    finished.append(thread)
            if finished and waiting:
                raise BarrierDivergence(f"{len(waiting)} threads wait at a barrier that {len(finished)} never reach")
            live = waiting

    # -- ops ----------------------------------------------------------------------------

    def _block(self, block: ir.Block, env: dict, on_device: bool):
        """Generator executing `block`; pauses at barriers; returns the terminator's operands."""
        for op in block.operations:
            op = op.operation
            name = op.name
            if name in ("scf.yield", "gpu.terminator", "func.return", "scf.reduce", "scf.condition"):
                return [env[v] for v in op.operands]
            if name == "gpu.barrier":
                if not on_device:
                    raise AssertionError("gpu.barrier on the host")
                yield
                continue
            if name == "scf.for":
                lo, hi, step = (env[v] for v in op.operands[:3])
                carried = [env[v] for v in op.operands[3:]]
                body = op.regions[0].blocks[0]
                for i in range(lo, hi, step):
                    local = dict(env)
                    local[body.arguments[0]] = i
                    local.update(zip(list(body.arguments)[1:], carried))
                    carried = yield from self._block(body, local, on_device)
                env.update(zip(op.results, carried))
                continue
            if name == "scf.while":
                values = [env[v] for v in op.operands]
                before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
                while True:
                    local = dict(env)
                    local.update(zip(before.arguments, values))
                    condition, *values = yield from self._block(before, local, on_device)
                    if not condition:
                        break
                    local = dict(env)
                    local.update(zip(after.arguments, values))
                    values = yield from self._block(after, local, on_device)
                env.update(zip(op.results, values))
                continue
            if name == "scf.if":
                region = op.regions[0] if env[op.operands[0]] else op.regions[1]
                results = []
                if region.blocks:
                    results = yield from self._block(region.blocks[0], dict(env), on_device)
                env.update(zip(op.results, results))
                continue
            if name == "scf.parallel" and on_device:  # left unmapped inside a kernel: runs sequentially
                bounds = [env[v] for v in op.operands]
                rank = len(bounds) // 3
                body = op.regions[0].blocks[0]
                ranges = [range(lo, hi, st)
                          for lo, hi, st in zip(bounds[:rank], bounds[rank:2 * rank], bounds[2 * rank:])]
                for ivs in itertools.product(*ranges):
                    local = dict(env)
                    local.update(zip(body.arguments, ivs))
                    yield from self._block(body, local, on_device)
                continue
            if name == "scf.forall" and not on_device:  # a host loop around launches (batched matmuls)
                if len(op.results):
                    raise NotImplementedError("gpu_interpreter: scf.forall with results (tensors) on the host")
                ranges = [range(lo, hi, st) for lo, hi, st in zip(*self._forall_bounds(op, env))]
                body = op.regions[0].blocks[0]
                for ivs in itertools.product(*ranges):
                    local = dict(env)
                    local.update(zip(body.arguments, ivs))
                    yield from self._block(body, local, on_device)
                continue
            if name == "scf.forall.in_parallel":
                continue
            if name == "gpu.launch":
                if on_device:
                    raise AssertionError("nested gpu.launch")
                self._launch(op, env)
                continue
            if not on_device and name in ("memref.load", "memref.store"):
                raise AssertionError(f"host code accesses device memory: {op}")
            self._simple(op, env)
        return []

    @staticmethod
    def _forall_bounds(op: ir.Operation, env: dict) -> list[list[int]]:
        """[lower bounds, upper bounds, steps] of an scf.forall: static values, dynamic ones from operands."""
        dynamic = iter(env[v] for v in op.operands)
        bounds = []
        for name in ("staticLowerBound", "staticUpperBound", "staticStep"):
            values = list(ir.DenseI64ArrayAttr(op.attributes[name]))
            bounds.append([next(dynamic) if v == ir.ShapedType.get_dynamic_size() else v for v in values])
        return bounds

    def _simple(self, op: ir.Operation, env: dict) -> None:
        name = op.name
        operands = [env[v] for v in op.operands]
        result_type = op.results[0].type if len(op.results) else None

        def out(value):
            env[op.results[0]] = value

        if name == "arith.constant":
            attr = op.attributes["value"]
            if isinstance(attr, ir.IntegerAttr):
                out(_scalar(attr.value, result_type))
            elif isinstance(attr, ir.FloatAttr):
                out(_scalar(attr.value, result_type))
            elif isinstance(attr, ir.DenseElementsAttr) and attr.is_splat:  # a vector's splat
                vector = ir.VectorType(result_type)
                out(np.full(vector.shape, attr.get_splat_value().value, _dtype(vector.element_type)))
            else:
                raise NotImplementedError(f"constant {attr}")
        elif name in _BINARY:
            out(_scalar(_BINARY[name](*operands), result_type) if str(result_type) in ("index", "i1")
                else _BINARY[name](*operands))
        elif name == "arith.cmpi":
            out(_CMPI[int(ir.IntegerAttr(op.attributes["predicate"]).value)](*operands))
        elif name == "arith.cmpf":
            out(_CMPF[int(ir.IntegerAttr(op.attributes["predicate"]).value)](*operands))
        elif name == "arith.select":
            out(operands[1] if operands[0] else operands[2])
        elif name in ("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi",
                      "arith.index_cast", "arith.extsi", "arith.extui", "arith.trunci", "arith.index_castui"):
            out(_scalar(operands[0], result_type))
        elif name in _UNARY:
            with np.errstate(all="ignore"):  # NaN and inf as the hardware gives them
                out(_scalar(_UNARY[name](np.float64(operands[0])), result_type))
        elif name == "math.fma":
            out(_scalar(np.float64(operands[0]) * np.float64(operands[1]) + np.float64(operands[2]), result_type))
        elif name == "math.powf":
            with np.errstate(all="ignore"):
                out(_scalar(np.power(np.float64(operands[0]), np.float64(operands[1])), result_type))
        elif name == "arith.bitcast":
            out(np.array(operands[0]).view(numpy_dtype(result_type))[()])
        elif name == "memref.load":
            out(operands[0][tuple(operands[1:])])
        elif name == "memref.store":
            operands[1][tuple(operands[2:])] = operands[0]
        elif name == "memref.view":
            memref_type = ir.MemRefType(result_type)
            dtype = _dtype(memref_type.element_type)
            start = operands[1]
            count = int(np.prod(memref_type.shape, dtype=np.int64)) * dtype.itemsize
            source = operands[0].reshape(-1).view(np.uint8)  # memref<Nxi8>: bytes
            assert np.shares_memory(source, operands[0])
            out(source[start:start + count].view(dtype).reshape(memref_type.shape))
        elif name in ("memref.expand_shape", "memref.collapse_shape", "memref.reshape"):
            reshaped = operands[0].reshape(ir.MemRefType(result_type).shape)
            assert np.shares_memory(reshaped, operands[0])
            out(reshaped)
        elif name == "memref.subview":
            out(_subview(op, operands))
        elif name == "memref.get_global":
            out(self._global(ir.FlatSymbolRefAttr(op.attributes["name"]).value, ir.MemRefType(result_type)))
        elif name == "gpu.alloc":
            memref_type = ir.MemRefType(result_type)
            dtype = _dtype(memref_type.element_type)
            raw = self.rng.integers(0, 256, int(np.prod(memref_type.shape)) * dtype.itemsize, dtype=np.uint8)
            out(raw.view(dtype).reshape(memref_type.shape))
        elif name == "gpu.memcpy":
            np.copyto(operands[0], operands[1])
        elif name in ("gpu.dealloc", "memref.assume_alignment"):
            if name == "memref.assume_alignment":
                out(operands[0])
        elif name == "vector.load":  # a 1-D vector along the buffer's last dimension
            *outer, last = operands[1:]
            out(operands[0][tuple(outer)][last:last + ir.VectorType(result_type).shape[0]].copy())
        elif name == "vector.store":
            *outer, last = operands[2:]
            operands[1][tuple(outer)][last:last + len(operands[0])] = operands[0]
        elif name.startswith("gpu.subgroup_mma_"):
            _mma(op, name, operands, out)
        elif name == "affine.apply":
            amap = ir.AffineMapAttr(op.attributes["map"]).value
            out(_affine(amap, operands))
        else:
            raise NotImplementedError(f"gpu_interpreter: no rule for '{name}'")


def _mma_dtype(type_: ir.Type) -> np.dtype:
    """The element dtype of a `!gpu.mma_matrix<16x16xf16, "AOp">`."""
    element = re.fullmatch(r'!gpu\.mma_matrix<\d+x\d+x(\w+), "\w+">', str(type_)).group(1)
    return np.dtype({"f16": np.float16, "f32": np.float32}[element])


def _mma(op, name, operands, out):
    """Warp-level matrix ops (WMMA): a fragment is the whole 16 x 16 matrix, which every thread of the warp
    holds here; a load or store by each thread of a warp reads or writes the same elements (rows
    `leadDimension` apart in the buffer from the element at the indices)."""
    if name == "gpu.subgroup_mma_constant_matrix":
        out(np.full((16, 16), operands[0], _mma_dtype(op.results[0].type)))
    elif name == "gpu.subgroup_mma_compute":
        a, b, c = operands
        out((a.astype(np.float64) @ b.astype(np.float64) + c).astype(c.dtype))
    elif name in ("gpu.subgroup_mma_load_matrix", "gpu.subgroup_mma_store_matrix"):
        if "transpose" in op.attributes:
            raise NotImplementedError("gpu_interpreter: transposed WMMA loads")
        store = name.endswith("store_matrix")
        buffer, indices = (operands[1], operands[2:]) if store else (operands[0], operands[1:])
        flat = buffer.reshape(-1)
        assert np.shares_memory(flat, buffer)
        lead = ir.IntegerAttr(op.attributes["leadDimension"]).value
        start = int(np.ravel_multi_index(tuple(indices), buffer.shape))
        rows = [slice(start + r * lead, start + r * lead + 16) for r in range(16)]
        if store:
            for r, row in enumerate(rows):
                flat[row] = operands[0][r]
        else:
            out(np.stack([flat[row] for row in rows]))
    else:
        raise NotImplementedError(f"gpu_interpreter: no rule for '{name}'")


def _subview(op, operands):
    static = {k: list(ir.DenseI64ArrayAttr(op.attributes[k]))
              for k in ("static_offsets", "static_sizes", "static_strides")}
    dynamic = iter(operands[1:])
    dyn = -(2 ** 63)

    def values(key):
        return [next(dynamic) if v == dyn else v for v in static[key]]

    offsets, sizes, strides = values("static_offsets"), values("static_sizes"), values("static_strides")
    source = operands[0]
    index = tuple(slice(o, o + s * st, st) for o, s, st in zip(offsets, sizes, strides))
    view = source[index]
    result_shape = ir.MemRefType(op.results[0].type).shape
    return view.reshape(result_shape) if list(view.shape) != list(result_shape) else view


def _affine(amap: ir.AffineMap, operands):
    dims, symbols = operands[:amap.n_dims], operands[amap.n_dims:]
    (expr,) = amap.results
    return _affine_expr(expr, dims, symbols)


def _affine_expr(expr, dims, symbols):
    if isinstance(expr, ir.AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, ir.AffineSymbolExpr):
        return symbols[expr.position]
    if isinstance(expr, ir.AffineConstantExpr):
        return expr.value
    for kind, fn in ((ir.AffineAddExpr, lambda a, b: a + b), (ir.AffineMulExpr, lambda a, b: a * b),
                     (ir.AffineModExpr, lambda a, b: a % b), (ir.AffineFloorDivExpr, lambda a, b: a // b),
                     (ir.AffineCeilDivExpr, lambda a, b: -(-a // b))):
        if isinstance(expr, kind):
            return fn(_affine_expr(expr.lhs, dims, symbols), _affine_expr(expr.rhs, dims, symbols))
    raise NotImplementedError(f"affine expression {expr}")


def _nan_max(a, b):
    return np.maximum(a, b)


def _nan_min(a, b):
    return np.minimum(a, b)


_BINARY = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
    "arith.divui": lambda a, b: a // b, "arith.remui": lambda a, b: a % b,
    "arith.divsi": lambda a, b: int(a / b), "arith.remsi": lambda a, b: int(math.fmod(a, b)),
    "arith.floordivsi": lambda a, b: a // b, "arith.ceildivsi": lambda a, b: -(-a // b),
    "arith.andi": lambda a, b: a & b if not isinstance(a, bool) else (a and b),
    "arith.ori": lambda a, b: a | b if not isinstance(a, bool) else (a or b),
    "arith.xori": lambda a, b: a ^ b, "arith.shli": lambda a, b: a << b, "arith.shrsi": lambda a, b: a >> b,
    "arith.shrui": lambda a, b: (a % (1 << (8 * np.dtype(type(a)).itemsize))) >> b if isinstance(a, np.integer)
    else a >> b,
    "arith.maxsi": max, "arith.minsi": min, "arith.maxui": max, "arith.minui": min,
    "arith.addf": lambda a, b: a + b, "arith.subf": lambda a, b: a - b, "arith.mulf": lambda a, b: a * b,
    "arith.divf": lambda a, b: a / b, "arith.maximumf": _nan_max, "arith.minimumf": _nan_min,
    "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin, "arith.remf": np.fmod,
}
_UNARY = {
    "math.exp": np.exp, "math.log": np.log, "math.sqrt": np.sqrt, "math.rsqrt": lambda x: 1 / np.sqrt(x),
    "math.tanh": np.tanh, "math.erf": lambda x: np.float64(math.erf(x)) if np.isfinite(x) else np.sign(x),
    "math.absf": np.abs, "arith.negf": np.negative, "math.sin": np.sin, "math.cos": np.cos,
    "math.exp2": np.exp2, "math.log1p": np.log1p, "math.expm1": np.expm1, "math.floor": np.floor,
    "math.ceil": np.ceil, "math.log2": np.log2, "math.round": np.round, "math.roundeven": np.round,
    "math.trunc": np.trunc, "math.atan": np.arctan, "math.sinh": np.sinh, "math.cosh": np.cosh,
}
_CMPI = {0: lambda a, b: a == b, 1: lambda a, b: a != b, 2: lambda a, b: a < b, 3: lambda a, b: a <= b,
         4: lambda a, b: a > b, 5: lambda a, b: a >= b, 6: lambda a, b: a < b, 7: lambda a, b: a <= b,
         8: lambda a, b: a > b, 9: lambda a, b: a >= b}
_CMPF = {0: lambda a, b: False, 1: lambda a, b: a == b, 2: lambda a, b: a > b, 3: lambda a, b: a >= b,
         4: lambda a, b: a < b, 5: lambda a, b: a <= b, 6: lambda a, b: a != b and not (np.isnan(a) or np.isnan(b)),
         7: lambda a, b: not (np.isnan(a) or np.isnan(b)), 8: lambda a, b: a == b or np.isnan(a) or np.isnan(b),
         9: lambda a, b: not (a <= b), 10: lambda a, b: not (a < b), 11: lambda a, b: not (a >= b),
         12: lambda a, b: not (a > b), 13: lambda a, b: not (a == b), 14: lambda a, b: np.isnan(a) or np.isnan(b),
         15: lambda a, b: True}
