"""`GraphModule`: RLX's builder, in Python, over the HIR and MIR dialects.

    g = GraphModule.hir("mlp")
    x = g.input("x", (4, 64))
    w = g.param("w", (64, 256))
    y = g.named("ffn", lambda: g.linear(x, w, activation="gelu"))
    g.set_outputs(y)
    print(g.inspect())
    exe = g.compile()            # the same Executable as rlx_mlir.compile
    out = exe(x=..., w=...)

or `GraphModule.define("mlp", lambda g: ...)`, returning the output(s).
Output shapes are inferred (pass `out_shape=` to have one checked); a
mismatch raises at the call that caused it, naming the block.  `named(name,
fn)` gives every op built inside `fn` the MLIR location `name` (nested names
join with "/"), which diagnostics, lowering and `inspect()` keep.  `str(g)` is
the module's MLIR text, which `rlx-opt` reads.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
from mlir import ir
from mlir.dialects import func

from ..conversion.hir_to_mir.hir_to_mir import HirToMir
from ..conversion.mir_to_lir import MirToLir
from ..dialects import rlx, rlx_hir
from ..dialects.context import make_context
from ..dialects.rlx.norm import DEFAULT_EPS
from ..dialects.rlx_hir.dialect import FUSION_POLICIES
from ..dims import derive as dynamic_builder
from ..dims.dynamic import DimError, bind_module, dims_attr, function_symbols, is_dynamic
from ..dims.expr import DimExpr, format_dims
from ..dims.variants import ModelVariant
from ..driver import Compilation
from ..dsl import VerifyError, element_type_from_name
from ..errors import RlxError
from ..ir import dtypes
from ..ir.attrs import DIMS_ATTR, FUSION_POLICY_ATTR, NAME_ATTR, PARAM_ATTR, TIED_ATTR
from ..ir.shapes import format_shape, shape_of
from ..ir.walk import collect_ops
from ..pipelines.optimize_mir import OptimizeMir
from ..runtime.compiler import compile as jit_compile
from ..transforms.autodiff import GradError, gradients
from ..transforms.autodiff import tangents as forward_tangents
from ..transforms.autodiff.batching import BatchingError, vectorize
from ..transforms.mir import fusion_report
from .inspection import summarize

STAGES = ("hir", "mir", "lir")
# The RLX dtypes `constant` infers from a numpy array's dtype; not float64 (numpy's default for
# floats), which must be asked for with dtype="f64".
_INFERRED_DTYPES = ("f32", "f16", "bf16", "i8", "ui8", "i32", "i64", "i1")


def _verify_or_erase(op, check_inference: bool = True) -> None:
    """Runs `op`'s verifier (the checks `rlx-opt` and `compile` run: operand and attribute
    constraints, result-type inference, the op's own `verify()`); on failure removes the op from
    the block and raises VerifyError, its message prefixed with the op's name as in MLIR's
    diagnostics (`'rlx.dequant_matmul' op operand 'w' must be ...`).  `check_inference=False`
    for an op whose builder inferred its result types (they agree by construction)."""
    verify = getattr(op, "verify_invariants", None)
    if verify is None:
        return
    try:
        verify(check_inference=check_inference)
    except VerifyError as error:
        name = op.operation.name
        op.operation.erase()
        raise VerifyError(f"'{name}' op {error}") from None


def _infers_result_types(op_class: type) -> bool:
    """Whether `op_class`'s builder infers its result types (else it takes `result_type(s)`)."""
    if len(getattr(op_class, "_result_defs", ())) > 1:
        return hasattr(op_class, "infer_result_types")
    return hasattr(op_class, "infer_result_type")


class BuildError(RlxError, ValueError):
    """A block that cannot be built (shapes or dtypes that do not fit)."""


class Tensor:
    """A value of a GraphModule: an SSA value with its shape and dtype.

    Arithmetic operators build MIR ops: `a + b`, `a - b`, `a * b`, `a / b`,
    `a @ b`, `-a`.
    """

    def __init__(self, module: "GraphModule", value: ir.Value):
        self.module = module
        self.value = value

    @property
    def shape(self) -> tuple:
        """The shape: ints, and symbol expressions (`dim_expr.DimExpr`) where it is symbolic."""
        dims = self.module._symbolic.get(self.value)
        return dims if dims is not None else shape_of(self.value.type)

    @property
    def dtype(self) -> str:
        return str(ir.RankedTensorType(self.value.type).element_type)

    def __repr__(self) -> str:
        return f"Tensor({format_shape(self.shape)}, {self.dtype})"

    def __add__(self, other: "Tensor") -> "Tensor":
        return self.module.op(rlx.AddOp, self, other)

    def __sub__(self, other: "Tensor") -> "Tensor":
        return self.module.op(rlx.SubOp, self, other)

    def __mul__(self, other: "Tensor") -> "Tensor":
        return self.module.op(rlx.MulOp, self, other)

    def __truediv__(self, other: "Tensor") -> "Tensor":
        return self.module.op(rlx.DivOp, self, other)

    def __matmul__(self, other: "Tensor") -> "Tensor":
        return self.module.op(rlx.MatmulOp, self, other)

    def __neg__(self) -> "Tensor":
        return self.module.op(rlx.NegOp, self)


Outputs = Union[Tensor, Sequence[Tensor]]


class GraphModule:
    """One function under construction (or lowered), at the HIR, MIR or LIR stage."""

    def __init__(self, name: str, stage: str = "hir", policy: str = "direct"):
        if stage not in ("hir", "mir"):
            raise ValueError(f"a GraphModule starts at stage 'hir' or 'mir', not '{stage}'")
        if policy not in FUSION_POLICIES:
            raise ValueError(f"unknown fusion policy '{policy}'; choose {' or '.join(FUSION_POLICIES)}")
        self.name = name
        self._stage = stage
        self.context = make_context()
        self._names: list[str] = []
        self.fusion_report = None  # set by optimize()
        self._arg_attrs: list[ir.Attribute] = []
        self._symbolic: dict[ir.Value, tuple] = {}  # symbolic shapes of values with `?` dims
        self._finished = False
        with self.context, ir.Location.unknown():
            self.module = ir.Module.create()
            if stage == "hir":
                self.module.operation.attributes[FUSION_POLICY_ATTR] = ir.StringAttr.get(policy)
            with ir.InsertionPoint(self.module.body):
                self._func = func.FuncOp(name, ir.FunctionType.get([], []))
            self._block = self._func.add_entry_block()

    # -- construction --------------------------------------------------------------

    @classmethod
    def hir(cls, name: str, *, policy: str = "direct") -> "GraphModule":
        """An empty HIR-stage module; `policy` is its fusion policy ("direct" or "fusable")."""
        return cls(name, "hir", policy)

    @classmethod
    def mir(cls, name: str) -> "GraphModule":
        """An empty MIR-stage module: MIR ops only (`g.op(...)` and the Tensor operators)."""
        return cls(name, "mir")

    @classmethod
    def define(cls, name: str, build: Callable[["GraphModule"], Outputs], *, policy: str = "direct") -> "GraphModule":
        """An HIR module built by `build(g)`, whose return value becomes the output(s)."""
        module = cls.hir(name, policy=policy)
        module.set_outputs(build(module))
        return module

    @property
    def stage(self) -> str:
        return self._stage

    @property
    def fusion_policy(self) -> Optional[str]:
        attrs = self.module.operation.attributes
        return ir.StringAttr(attrs[FUSION_POLICY_ATTR]).value if FUSION_POLICY_ATTR in attrs else None

    def input(self, name: str, shape: Sequence[int], dtype: str = "f32") -> Tensor:
        """A runtime input of the function; `shape` may name symbols: `("BATCH", "SEQ", 512)` (see `dynamic`)."""
        return self._argument(name, shape, dtype, is_param=False)

    def param(self, name: str, shape: Sequence[int], dtype: str = "f32") -> Tensor:
        """A weight: an argument marked `rlx.param`."""
        return self._argument(name, shape, dtype, is_param=True)

    def _argument(self, name: str, shape, dtype: str, is_param: bool) -> Tensor:
        self._check_open()
        return self._new_argument(name, shape, dtype, is_param)

    def _new_argument(self, name: str, shape, dtype: str, is_param: bool) -> Tensor:
        """A new argument of the function, open or finished (its results are kept)."""
        if not isinstance(name, str) or not name.strip():
            raise BuildError(f"an argument name must be a non-empty string, got {name!r}")
        if name in self._names:
            raise BuildError(f"an argument named '{name}' already exists")
        if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
            raise BuildError(f"argument '{name}': the shape must be a sequence of dimensions, got {shape!r}")
        for d in shape:
            if isinstance(d, bool):  # an int to Python, but never meant as a size
                raise BuildError(f"argument '{name}': shape {list(shape)} has the bool {d} as a dimension")
        if any(isinstance(d, str) or isinstance(d, DimExpr) for d in shape):
            return self._symbolic_argument(name, shape, dtype, is_param)
        if any(not isinstance(d, int) or d < 0 for d in shape):
            raise BuildError(f"argument '{name}': shape {list(shape)} must be non-negative integers")
        with self.context, ir.Location.unknown():
            type_ = ir.RankedTensorType.get(list(shape), element_type_from_name(dtype))
            value = self._block.add_argument(type_, ir.Location.name(name))
            attrs = {NAME_ATTR: ir.StringAttr.get(name)}
            if is_param:
                attrs[PARAM_ATTR] = ir.UnitAttr.get()
            self._arg_attrs.append(ir.DictAttr.get(attrs))
        self._names.append(name)
        self._update_signature()
        return Tensor(self, value)

    def argument(self, name: str) -> Tensor:
        """The argument (input or parameter) named `name`."""
        if name not in self._names:
            raise BuildError(f"'{self.name}' has no argument named '{name}' (arguments: {', '.join(self._names)})")
        return Tensor(self, self._block.arguments[self._names.index(name)])

    def _symbolic_argument(self, name: str, shape, dtype: str, is_param: bool) -> Tensor:
        """An argument with symbols in its shape: `?` in its type, the symbols in `rlx.dims`."""
        try:
            dims = dynamic_builder.parse_shape(shape)
        except ValueError as error:
            raise BuildError(f"argument '{name}': {error}") from None
        with self.context, ir.Location.unknown():
            tensor = self._argument(name, [0] * len(dims), dtype, is_param)
            tensor.value.set_type(dynamic_builder.tensor_type(dims, element_type_from_name(dtype)))
            attrs = {n.name: n.attr for n in ir.DictAttr(self._arg_attrs[-1])}
            self._arg_attrs[-1] = ir.DictAttr.get({**attrs, DIMS_ATTR: dims_attr(dims)})
        self._symbolic[tensor.value] = dims
        self._update_signature([])
        return tensor

    @contextlib.contextmanager
    def _scope(self, name: str):
        self._scopes = getattr(self, "_scopes", []) + [name]
        try:
            yield
        finally:
            self._scopes.pop()

    def named(self, name: str, build: Callable[[], Any]) -> Any:
        """Runs `build()` as the named block `name`: its ops carry the location `name`."""
        with self._scope(name):
            return build()

    def _block_name(self) -> Optional[str]:
        scopes = getattr(self, "_scopes", [])
        return "/".join(scopes) if scopes else None

    def _location(self) -> ir.Location:
        name = self._block_name()
        with self.context:
            return ir.Location.name(name) if name else ir.Location.unknown()

    # -- emitting ops ----------------------------------------------------------------------

    def op(self, op_class: type, *operands: Optional[Tensor], out_shape: Optional[Sequence[int]] = None,
           out_dtype: Optional[str] = None, **attributes) -> Union[Tensor, tuple]:
        """Any MIR op, e.g. `g.op(rlx.SoftmaxOp, x, axis=-1)`; in an HIR module this is RLX's escape hatch.

        Operands are Tensors (None for an absent optional operand), attributes are Python values
        (ints, floats, strings, tuples for arrays). An op whose result type is inferred needs nothing
        more; `out_shape` then checks the inferred shape. An op that takes its result type instead
        (`rlx.reshape`, `rlx.cast`, `rlx.constant`-like ops) gets it from `out_shape` (default: the
        first operand's shape) and `out_dtype` (a dtype name such as "f32", "i32", "u8"; default: the
        first operand's): `g.op(rlx.ReshapeOp, x, out_shape=(2, 4, 40))`, `g.op(rlx.CastOp, x,
        out_dtype="i32")`. An op with several results returns a tuple of all of them.
        """
        results = max(1, len(getattr(op_class, "_result_defs", ())))
        if out_dtype is not None and _infers_result_types(op_class):
            raise BuildError(f"{op_class.OPERATION_NAME} infers its result type: out_dtype= is only for ops that "
                             "do not (rlx.reshape, rlx.cast)")
        if not _infers_result_types(op_class):
            first = next((t for t in operands if isinstance(t, Tensor)), None)
            if out_shape is None and first is not None and "result_type" not in attributes:
                out_shape = first.shape  # symbolic sizes too: the dynamic builder checks them
            attributes = self._result_type_keywords(op_class, operands, attributes, out_shape, out_dtype, results)
        return self._emit(op_class, operands, attributes, out_shape, results)

    def _result_type_keywords(self, op_class, operands, attributes, out_shape, out_dtype, results: int) -> dict:
        """`attributes` with `result_type` made from `out_shape` / `out_dtype` (and the first operand)."""
        name = op_class.OPERATION_NAME
        if "result_type" in attributes or "result_types" in attributes:
            if out_dtype is not None:
                raise BuildError(f"{name}: give result_type or out_dtype, not both")
            return attributes
        if results != 1:
            raise BuildError(f"{name} has {results} results and does not infer their types: pass result_types=[...]")
        first = next((t for t in operands if isinstance(t, Tensor)), None)
        shape = out_shape if out_shape is not None else (first.shape if first is not None else None)
        dtype = out_dtype if out_dtype is not None else (first.dtype if first is not None else None)
        if shape is None or dtype is None:
            raise BuildError(f"{name} does not infer its result type and has no operand to take it from: "
                             f"pass out_shape= and out_dtype=")
        try:
            with self.context, ir.Location.unknown():
                element = element_type_from_name(dtype)
                # a symbolic size is `?` here; rlx.dims and the dynamic builder carry the symbol
                sizes = [d if isinstance(d, int) else ir.ShapedType.get_dynamic_size() for d in shape]
                type_ = ir.RankedTensorType.get(sizes, element)
        except (ValueError, TypeError) as error:
            raise BuildError(f"{name}: {error}") from None
        return {**attributes, "result_type": type_}

    hir_mir = op  # RLX's name for the escape hatch

    def _hir(self, op_class: type, operands, attributes, out_shape, results: int = 1):
        if self._stage != "hir":
            raise BuildError(f"'{op_class.OPERATION_NAME}' is an HIR block; this module is at stage '{self._stage}'")
        return self._emit(op_class, operands, attributes, out_shape, results)

    def _emit(self, op_class, operands, attributes, out_shape, results: int = 1):
        self._check_open()
        values = []
        for index, operand in enumerate(operands):
            group = operand if isinstance(operand, list) else [operand]  # a list: a variadic operand
            for member in group:
                if member is not None and not isinstance(member, Tensor):
                    raise BuildError(f"{op_class.OPERATION_NAME}: operand #{index} must be a Tensor, got {type(member).__name__}")
                if member is not None and member.module is not self:
                    raise BuildError(f"{op_class.OPERATION_NAME}: operand #{index} belongs to another GraphModule")
            unwrapped = [member.value if member is not None else None for member in group]
            values.append(unwrapped if isinstance(operand, list) else unwrapped[0])
        keywords = {k: (v.value if isinstance(v, Tensor) else v) for k, v in attributes.items()}
        members = [t for o in operands for t in (o if isinstance(o, list) else [o])]
        tensors = [t for t in (*members, *attributes.values()) if isinstance(t, Tensor)]
        if any(t.value in self._symbolic for t in tensors) or dynamic_builder.has_symbolic_attributes(op_class, attributes):
            return self._emit_symbolic(op_class, operands, attributes, out_shape, results)
        try:
            with self.context, self._location(), ir.InsertionPoint(self._block):
                given = "result_type" in keywords or "result_types" in keywords
                if results == 1 or "result_types" in keywords or not hasattr(op_class, "build"):
                    op = op_class(*values, **keywords)
                    inferred = not given  # the synthesised builder inferred the result types
                else:
                    op = op_class.build(*values, **keywords)
                    inferred = False
                # Every op is verified as it is built, in the builder's context and at its location:
                # an operand of the wrong dtype is reported here, at the call that built it, not at
                # compile time.  One op's checks only: building stays linear in the op count.
                _verify_or_erase(op, check_inference=not inferred)
        except (ValueError, TypeError, VerifyError) as error:
            where = f"block '{self._block_name()}': " if self._block_name() else ""
            raise BuildError(f"{where}{error}") from None
        outputs = [Tensor(self, r) for r in op.operation.results]
        if out_shape is not None and results == 1 and tuple(out_shape) != outputs[0].shape:
            where = f"block '{self._block_name()}': " if self._block_name() else ""
            raise BuildError(
                f"{where}{op_class.OPERATION_NAME} gives shape {format_shape(outputs[0].shape)}, "
                f"but out_shape is {format_shape(out_shape)}"
            )
        return outputs[0] if results == 1 else tuple(outputs)

    def _emit_symbolic(self, op_class, operands, attributes, out_shape, results: int):
        """`_emit` for operands or attributes with symbolic shapes (see `dynamic_builder`)."""

        def operand(t):
            if isinstance(t, Tensor):
                return dynamic_builder.Operand(t.value, t.shape)
            if isinstance(t, list) and t and all(isinstance(member, Tensor) for member in t):
                # a variadic operand: its tensors must have static shapes
                if any(member.value in self._symbolic for member in t):
                    raise BuildError(f"{op_class.OPERATION_NAME}: a variadic operand's tensors need static shapes")
                return [member.value for member in t]
            return t

        wanted = None
        if out_shape is not None:
            try:
                wanted = dynamic_builder.parse_shape(out_shape)
            except ValueError as error:
                raise BuildError(str(error)) from None
        infers = hasattr(op_class, "infer_result_type") or hasattr(op_class, "infer_result_types")
        element = attributes.get("result_type")
        element = ir.RankedTensorType(element).element_type if element is not None else None
        where = f"block '{self._block_name()}': " if self._block_name() else ""
        try:
            with self.context, self._location(), ir.InsertionPoint(self._block):
                op, shapes = dynamic_builder.build(
                    op_class if results == 1 else op_class.build,
                    [operand(t) for t in operands],
                    {k: operand(v) for k, v in attributes.items()},
                    op_class,
                    results,
                    None if infers else wanted,
                    element,
                )
        except (ValueError, TypeError) as error:
            raise BuildError(f"{where}{error}") from None
        outputs = []
        for result, dims in zip(op.operation.results, shapes):
            if dynamic_builder.is_symbolic(dims):
                self._symbolic[result] = dims
            outputs.append(Tensor(self, result))
        if wanted is not None and results == 1 and not dynamic_builder.same_dims(wanted, outputs[0].shape):
            raise BuildError(
                f"{where}{op_class.OPERATION_NAME} gives shape {format_dims(outputs[0].shape)}, "
                f"but out_shape is {format_dims(wanted)}"
            )
        return outputs[0] if results == 1 else tuple(outputs)

    def constant(self, array, dtype: Optional[str] = None) -> Tensor:
        """A constant tensor (`rlx.constant`) holding a copy of a numpy array."""
        self._check_open()
        with self.context, self._location():
            data = np.asarray(array)
            if dtype is None:
                entry = dtypes.from_numpy(data.dtype.name)
                dtype = entry.name if entry is not None and entry.name in _INFERRED_DTYPES else None
                if dtype is None:
                    raise BuildError(f"constant: numpy {data.dtype.name} has no RLX dtype; pass dtype=")
            element = element_type_from_name(dtype)
            data = np.ascontiguousarray(data.astype(dtypes.numpy_name(dtype, "constant")))
            type_ = ir.RankedTensorType.get(list(data.shape), element)
            attribute = ir.DenseElementsAttr.get(data, type=type_)
        return self._emit(rlx.ConstantOp, [], {"value": attribute}, None)

    # -- HIR blocks (names and operand order as in RLX) -------------------------------------

    def linear(self, x, w, bias=None, activation=None, *, out_shape=None) -> Tensor:
        """`act(x @ w [+ bias])` (`rlx_hir.linear`): `x` `[..., K]`, `w` `[K, N]` (RLX's layout, not
        PyTorch's `[N, K]`), optional `bias` `[N]`; result `[..., N]`. `activation`: None (= "none"),
        "relu", "gelu" (erf form), "gelu_approx" (tanh form), "silu", "sigmoid" or "tanh"."""
        return self._hir(rlx_hir.LinearOp, [x, w], {"bias": bias, "activation": activation or "none"}, out_shape)

    def linear_fused(self, x, w, bias, activation=None, *, out_shape=None) -> Tensor:
        """`act(x @ w + bias)` always as one `rlx.fused_matmul_bias_act` (`rlx_hir.linear_fused`); shapes and
        activations as `linear`, with the bias `[N]` required."""
        return self._hir(rlx_hir.LinearFusedOp, [x, w, bias], {"activation": activation or "none"}, out_shape)

    def dequant_linear(
        self, x, w, scheme, bias=None, activation=None, *, side=(), global_scale=None, activations=None, out_shape=None
    ) -> Tensor:
        """`act(x @ W [+ bias])`, an HIR block: `W` is GGUF blocks `w` (`u8 [N, bytes]`, `W [N, K]`
        transposed) or, for `int8/B`, `int8_asym/B`, `int4/B`, `nvfp4`, the codes `w [K, N]` with
        the scheme's `side` tensors (`[scale]`, `[scale, zp]`, `[scales]`; nvfp4 also takes the
        float `global_scale`).  A bias with side tensors is added by an `rlx.add` after the block
        (`rlx_hir.dequant_linear` takes none), then the activation.  `activations="q8"` (q4_k only)
        rounds x to 8 bits per block for integer dot products (`rlx.dequant_matmul`'s `activations`)."""
        side = self._side_tensors(side)
        attrs = {"scheme": scheme, "global_scale": global_scale, "activations": activations, "activation": activation or "none"}
        if not side:
            return self._hir(rlx_hir.DequantLinearOp, [x, w, [] if bias is None else [bias]], attrs, out_shape)
        if bias is None:
            return self._hir(rlx_hir.DequantLinearOp, [x, w, side], attrs, out_shape)
        product = self._hir(rlx_hir.DequantLinearOp, [x, w, side], {**attrs, "activation": "none"}, None)
        out = self._emit(rlx.AddOp, [product, bias], {}, None)
        if activation not in (None, "none"):
            activations = {"relu": rlx.ReluOp, "gelu": rlx.GeluOp, "gelu_approx": rlx.GeluApproxOp,
                           "silu": rlx.SiluOp, "sigmoid": rlx.SigmoidOp, "tanh": rlx.TanhOp}  # rlx_hir.linear's
            if activation not in activations:
                raise BuildError(f"unknown activation {activation!r}; expected one of 'none', {', '.join(map(repr, activations))}")
            out = self._emit(activations[activation], [out], {}, None)
        if out_shape is not None and tuple(out_shape) != out.shape:
            raise BuildError(f"rlx_hir.dequant_linear gives shape {format_shape(out.shape)}, but out_shape is {format_shape(out_shape)}")
        return out

    def lora_linear(self, x, w, a, b, scale=1.0, bias=None, activation=None, *, out_shape=None) -> Tensor:
        """`act(x @ w + scale * (x @ a) @ b [+ bias])`: a linear layer with a LoRA adapter, an HIR block.

        `w` is the base weight `[K, N]`, `a` `[K, r]` and `b` `[r, N]` the adapter, `scale`
        LoRA's `alpha / r`.  Equal to `linear(x, w + scale * a @ b, bias, activation)`; lowers
        to `rlx.lora_matmul`, which never forms `w + scale * a @ b` (see `rlx-merge-lora` for that).
        """
        attrs = {"bias": bias, "scale": float(scale), "activation": activation or "none"}
        return self._hir(rlx_hir.LoraLinearOp, [x, w, a, b], attrs, out_shape)

    def lora_matmul(self, x, w, a, b, scale=1.0, *, out_shape=None) -> Tensor:
        """`x @ w + scale * (x @ a) @ b` (`x [..., M, K]`, `w [K, N]`, `a [K, r]`, `b [r, N]`):
        `rlx.lora_matmul`, at any stage."""
        return self._emit(rlx.LoraMatmulOp, [x, w, a, b], {"scale": float(scale)}, out_shape)

    def attach_lora(self, weight: str, rank: int, scale: float = 1.0) -> tuple[Tensor, Tensor]:
        """Gives every `linear` on the weight argument named `weight` a LoRA adapter, in place.

        Adds the parameters `<weight>.lora_a` `[K, rank]` and `<weight>.lora_b` `[rank, N]`
        (appended to the signature, so callers pass them by name) and turns each
        `rlx_hir.linear(x, weight, ...)` into `rlx_hir.lora_linear(x, weight, a, b, scale=scale,
        ...)`, bias and activation kept.  The model's code stays as it is: build it (the module
        finished by `set_outputs`), then attach adapters, before `lower()`.  Returns the two new
        parameters.  Raises BuildError when no `linear` uses the weight (weights that HIR blocks
        such as `llama_decoder_block` consume are not `linear`s), or for a rank < 1.
        """
        if self._stage != "hir":
            raise BuildError(f"attach_lora rewrites HIR linear blocks; this module is at stage '{self._stage}'")
        self._require_finished("attach_lora()")
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 1:
            raise BuildError(f"attach_lora: the rank must be a positive integer, got {rank!r}")
        if weight not in self._names:
            raise BuildError(f"attach_lora: no argument named '{weight}'")
        w = self._block.arguments[self._names.index(weight)]
        linears = [op for op in collect_ops(self._func.operation, rlx_hir.LinearOp) if op.w == w]
        if not linears:
            users = sorted({use.owner.name for use in w.uses})
            used_by = f" (it is used by {', '.join(users)})" if users else ""
            raise BuildError(f"attach_lora: weight '{weight}' is used by no rlx_hir.linear{used_by}")
        if w in self._symbolic:
            raise BuildError(f"attach_lora: weight '{weight}' has a symbolic shape; give it a static one")
        k, n = shape_of(w.type)
        dtype = str(ir.RankedTensorType(w.type).element_type)
        a = self._new_argument(f"{weight}.lora_a", (k, rank), dtype, is_param=True)
        b = self._new_argument(f"{weight}.lora_b", (rank, n), dtype, is_param=True)
        with self.context:
            for linear in linears:
                with ir.InsertionPoint(linear), linear.location:
                    lora = rlx_hir.LoraLinearOp(
                        linear.x, w, a.value, b.value, bias=linear.bias, scale=float(scale), activation=linear.activation
                    )
                if linear.result in self._symbolic:
                    self._symbolic[lora.result] = self._symbolic.pop(linear.result)
                linear.result.replace_all_uses_with(lora.result)
                linear.operation.erase()
        return a, b

    def freeze(self, weights) -> "GraphModule":
        """Binds parameters to values, in place: each `{name: array}` becomes an `rlx.constant`.

        The arguments leave the signature (callers no longer pass them), and passes that need
        values at compile time see them: `rlx-fold-constants`, and `rlx-merge-lora`, which merges
        a LoRA adapter whose weight and adapter are frozen.  Only parameters (`param`, not
        `input`) with a static shape can be frozen; an array must have the parameter's shape and
        is converted to its dtype.  At stage hir or mir, before `plan()`.
        """
        if self._stage == "lir":
            raise BuildError("freeze() rewrites arguments: call it before plan()")
        for name, array in dict(weights).items():
            if name not in self._names:
                raise BuildError(f"freeze: no argument named '{name}'")
            index = self._names.index(name)
            argument = self._block.arguments[index]
            if PARAM_ATTR not in ir.DictAttr(self._arg_attrs[index]):
                raise BuildError(f"freeze: '{name}' is an input, not a parameter")
            if argument in self._symbolic:
                raise BuildError(f"freeze: parameter '{name}' has a symbolic shape")
            data = np.asarray(array)
            if tuple(data.shape) != tuple(shape_of(argument.type)):
                raise BuildError(
                    f"freeze: parameter '{name}' has shape {format_shape(shape_of(argument.type))}, "
                    f"the array {format_shape(data.shape)}"
                )
            dtype = str(ir.RankedTensorType(argument.type).element_type)
            data = np.ascontiguousarray(data.astype(dtypes.numpy_name(dtype, "freeze")))
            with self.context, ir.Location.name(name):
                attribute = ir.DenseElementsAttr.get(data, type=argument.type)
                constant = rlx.ConstantOp(attribute, ip=ir.InsertionPoint.at_block_begin(self._block))
                argument.replace_all_uses_with(constant.result)
                self._block.erase_argument(index)
            del self._names[index], self._arg_attrs[index]
            self._update_signature()
        return self

    def dequant_matmul(self, x, w, scheme, *, side=(), global_scale=None, activations=None, out_shape=None) -> Tensor:
        """`x @ W` (`rlx.dequant_matmul`, at any stage), `W` and `activations` as for `dequant_linear`."""
        attrs = {"scheme": scheme, "global_scale": global_scale, "activations": activations}
        return self._emit(rlx.DequantMatmulOp, [x, w, self._side_tensors(side)], attrs, out_shape)

    @staticmethod
    def _side_tensors(side) -> list:
        if isinstance(side, Tensor):
            return [side]
        if not isinstance(side, (list, tuple)):
            raise BuildError(f"side must be a list of Tensors (the scheme's scales, zero points), got {type(side).__name__}")
        return list(side)

    def scatter_add(self, updates, indices, init=None, *, out_dim=None, out_shape=None) -> Tensor:
        """`rlx.scatter_add`: rows of `updates [U, ...]` added into row `indices[u]` of `init` (or of
        zeros with `out_dim` rows); duplicates accumulate, out-of-range indices add nothing."""
        return self._emit(rlx.ScatterAddOp, [updates, indices], {"init": init, "out_dim": out_dim}, out_shape)

    def grouped_matmul(self, x, weight, expert_idx, *, out_shape=None) -> Tensor:
        """`rlx.grouped_matmul`: row `m` of `x [M, K]` times `weight[expert_idx[m]]` (`weight [E, K, N]`)."""
        return self._emit(rlx.GroupedMatmulOp, [x, weight, expert_idx], {}, out_shape)

    def dequant_grouped_matmul(self, x, w, expert_idx, scheme, *, out_shape=None) -> Tensor:
        """`rlx.dequant_grouped_matmul`: `grouped_matmul` over E packed GGUF slabs `u8 [E, N, bytes]`."""
        return self._emit(rlx.DequantGroupedMatmulOp, [x, w, expert_idx], {"scheme": scheme}, out_shape)

    def dequant_gather(self, table, indices, scheme, *, out_shape=None) -> Tensor:
        """`rlx.dequant_gather`: rows `indices` of a packed GGUF table `u8 [V, bytes]`, decoded to f32
        `indices.shape + [K]` (a quantised embedding lookup; indices clamped to `[0, V)`)."""
        return self._emit(rlx.DequantGatherOp, [table, indices], {"scheme": scheme}, out_shape)

    def dequant_moe_weights(self, w, scheme, *, out_shape=None) -> Tensor:
        """`rlx.dequant_moe_weights`: packed experts `u8 [E, N, bytes]` decoded to f32 `[E, K, N]`."""
        return self._emit(rlx.DequantMoeWeightsOp, [w], {"scheme": scheme}, out_shape)

    def shared_linear_pair(self, x, w_first, w_second) -> tuple[Tensor, Tensor]:
        """`(x @ w_first, x @ w_second)` (`rlx_hir.shared_linear_pair`): `x` `[..., K]`, `w_first` `[K, N1]`,
        `w_second` `[K, N2]`; results `[..., N1]` and `[..., N2]` (e.g. an FFN's gate and up, or K and V)."""
        return self._hir(rlx_hir.SharedLinearPairOp, [x, w_first, w_second], {}, None, results=2)

    def swiglu_ffn(self, x, up_w, gate_w, down_w, *, out_shape=None) -> Tensor:
        """`((x @ up_w) * silu(x @ gate_w)) @ down_w` (`rlx_hir.swiglu_ffn`): `x` `[..., D]`, `up_w` and
        `gate_w` `[D, F]`, `down_w` `[F, M]`; result `[..., M]`."""
        return self._hir(rlx_hir.SwigluFfnOp, [x, up_w, gate_w, down_w], {}, out_shape)

    def moe_ffn(self, x, router_w, gate_w, up_w, down_w, *, top_k, scoring="softmax", normalize=False,
                shared_gate_w=None, shared_up_w=None, shared_down_w=None, shared_expert_gate=None,
                gate_scheme=None, up_scheme=None, down_scheme=None, out_shape=None) -> Tensor:
        """Routed mixture-of-experts SwiGLU FFN (`rlx_hir.moe_ffn`), an HIR block.

        `x [..., D]`; `router_w [D, E]`; the experts' `gate_w`, `up_w` `[E, D, F]` and `down_w`
        `[E, F, D]` (RLX's `[in, out]` layout per expert).  Each token takes the `top_k` experts
        of highest router probability (`scoring`: "softmax" over the experts or "sigmoid" of
        each; ties to the lower expert id), weighted by those probabilities (divided by their
        sum when `normalize`: Mixtral), and gets `sum_j w_j * (silu(x @ gate_w[e_j]) * (x @
        up_w[e_j])) @ down_w[e_j]`.  A shared expert (`shared_gate_w`, `shared_up_w` `[D, S]`,
        `shared_down_w` `[S, D]`, all three or none) is added for every token, scaled by
        `sigmoid(x @ shared_expert_gate)` when that `[D, 1]` gate is given (Qwen2-MoE).  The
        `direct` policy runs only the chosen experts (rows bucketed by expert,
        `rlx.grouped_matmul`, `rlx.scatter_add`); `fusable` runs every expert on every token.
        A stack with a GGUF scheme (`gate_scheme`, `up_scheme`, `down_scheme`) is packed, `u8 [E,
        out, bytes]` (`rlx.dequant_grouped_matmul`'s layout: per expert `quant.quantize(w_e.T,
        scheme)`), decoded inside the products.
        """
        attrs = {"shared_gate_w": shared_gate_w, "shared_up_w": shared_up_w, "shared_down_w": shared_down_w,
                 "shared_expert_gate": shared_expert_gate, "top_k": top_k, "scoring": scoring, "normalize": normalize,
                 "gate_scheme": gate_scheme, "up_scheme": up_scheme, "down_scheme": down_scheme}
        return self._hir(rlx_hir.MoeFfnOp, [x, router_w, gate_w, up_w, down_w], attrs, out_shape)

    def residual_rms_norm(self, x, residual, gamma, beta, eps=DEFAULT_EPS, *, out_shape=None) -> Tensor:
        """RMSNorm of `h = x + residual` over the last axis, `h / sqrt(mean(h^2) + eps) * gamma + beta`
        (`rlx_hir.residual_rms_norm`): `x`, `residual` `[..., D]`, `gamma`, `beta` `[D]` (zeros for no
        shift); `eps` defaults to 1e-6 (`rlx.norm.DEFAULT_EPS`, as in the dialect). Returns the normalised `h`."""
        return self._hir(rlx_hir.ResidualRmsNormOp, [x, residual, gamma, beta], {"eps": eps}, out_shape)

    def rms_norm(self, x, gamma, beta, eps=DEFAULT_EPS, *, out_shape=None) -> Tensor:
        """`x / sqrt(mean(x^2) + eps) * gamma + beta` over the last axis (`rlx_hir.rms_norm`): `x` `[..., D]`,
        `gamma`, `beta` `[D]` (zeros for no shift); `eps` defaults to 1e-6 (`rlx.norm.DEFAULT_EPS`)."""
        return self._hir(rlx_hir.RmsNormOp, [x, gamma, beta], {"eps": eps}, out_shape)

    def attention(self, q, k, v, mask=None, *, num_heads, head_dim, mask_kind="none", window=None,
                  score_scale=None, softcap=None, out_shape=None) -> Tensor:
        """Multi-head scaled dot-product attention (`rlx_hir.attention`, the semantics of `rlx.attention`):
        `q` `[B, Sq, num_heads * head_dim]`, `k`, `v` `[B, Sk, Hkv * head_dim]` with `Hkv` dividing
        `num_heads` (grouped-query heads); result `[B, Sq, num_heads * head_dim]`. `mask_kind`: "none"
        (default), "causal" (aligned to the end of the keys), "sliding_window" (with `window`), "custom"
        (`mask` `[B, Sk]`, nonzero = key valid) or "bias" (`mask` `[B, num_heads, Sq, Sk]` added to the
        scores). `score_scale` defaults to `1 / sqrt(head_dim)`; `softcap` caps scores as `c * tanh(s / c)`."""
        attrs = {"mask": mask, "num_heads": num_heads, "head_dim": head_dim, "mask_kind": mask_kind,
                 "window": window, "score_scale": score_scale, "softcap": softcap}
        return self._hir(rlx_hir.AttentionOp, [q, k, v], attrs, out_shape)

    def rope(self, x, cos, sin, head_dim, n_rot=None, *, out_shape=None) -> Tensor:
        """Rotary position embedding, NeoX rotate-half form, per head (`rlx_hir.rope`): `x` `[B, S, H * head_dim]`,
        `cos`, `sin` `[S, n_rot / 2]`; the first `n_rot` features of each head rotate (default: all
        `head_dim`), feature `i` paired with `i + n_rot / 2`. Result: `x`'s shape."""
        attrs = {"head_dim": head_dim, "n_rot": head_dim if n_rot is None else n_rot}
        return self._hir(rlx_hir.RopeOp, [x, cos, sin], attrs, out_shape)

    def depthwise_conv1d_causal(self, x, weight, left_pad, kernel_size, *, out_shape=None) -> Tensor:
        """Causal depthwise 1-D convolution over the sequence (`rlx_hir.depthwise_conv1d_causal`): `x` `[B, S, C]`,
        `weight` `[C, 1, 1, K]` (RLX's grouped-conv layout, `K = kernel_size`), `left_pad` `[B, K - 1, C]`
        (the positions before this chunk; zeros at a stream's start); `out[b, s, c] = sum_k weight[c, 0, 0, k]
        * concat(left_pad, x)[b, s + k, c]`. Result `[B, S, C]`."""
        return self._hir(rlx_hir.DepthwiseConv1dCausalOp, [x, weight, left_pad], {"kernel_size": kernel_size}, out_shape)

    def gated_delta_net(self, q, k, v, g, beta, state_size=None, *, out_shape=None) -> Tensor:
        """Gated DeltaNet over `[b, s, h, n]` q/k/v, state starting at zeros; `state_size` defaults to `n`."""
        n = q.shape[-1] if state_size is None else state_size
        return self._hir(rlx_hir.GatedDeltaNetOp, [q, k, v, g, beta], {"state_size": n}, out_shape)

    def gated_delta_net_carry(self, q, k, v, g, beta, state, state_size=None) -> tuple[Tensor, Tensor]:
        """Gated DeltaNet continuing from `state` `[b, h, n, n]`: returns `(out, new_state)`."""
        n = q.shape[-1] if state_size is None else state_size
        return self._hir(rlx_hir.GatedDeltaNetCarryOp, [q, k, v, g, beta, state], {"state_size": n}, None, results=2)

    def llama_decoder_block(self, x, ln1_g, ln1_b, q_w, k_w, v_w, o_w, ln2_g, ln2_b, gate_w, up_w, down_w, cos, sin,
                            mask=None, *, num_heads, head_dim, num_kv_heads, eps=DEFAULT_EPS, mask_kind="causal",
                            window=None, out_shape=None) -> Tensor:
        """One Llama decoder layer (`rlx_hir.llama_decoder_block`), pre-norm attention and SwiGLU FFN, both residual:
        `x` `[B, S, D]`; `ln1_g`, `ln1_b`, `ln2_g`, `ln2_b` `[D]` (RMSNorm scale and shift, shift zeros for
        Llama); `q_w` `[D, num_heads * head_dim]`, `k_w`, `v_w` `[D, num_kv_heads * head_dim]`, `o_w`
        `[num_heads * head_dim, D]`; `gate_w`, `up_w` `[D, F]`, `down_w` `[F, D]` (weights `[in, out]`);
        `cos`, `sin` `[S, head_dim / 2]` (RoPE, rotate-half, every feature of a head). `eps` (both RMSNorms)
        defaults to 1e-6 (`rlx.norm.DEFAULT_EPS`, as in the dialect; pass a checkpoint's `rms_norm_eps`, e.g.
        1e-5, explicitly); `mask_kind` "causal" by default (see `attention`). Result `[B, S, D]`."""
        operands = [x, ln1_g, ln1_b, q_w, k_w, v_w, o_w, ln2_g, ln2_b, gate_w, up_w, down_w, cos, sin]
        attrs = {"mask": mask, "num_heads": num_heads, "head_dim": head_dim, "num_kv_heads": num_kv_heads,
                 "eps": eps, "mask_kind": mask_kind, "window": window}
        return self._hir(rlx_hir.LlamaDecoderBlockOp, operands, attrs, out_shape)

    # -- reverse mode ----------------------------------------------------------------------

    def grad(self, loss: Tensor, wrt: Sequence[Tensor]) -> list[Tensor]:
        """The gradients of the scalar `loss` with respect to the arguments `wrt`, as new Tensors.

        The backward ops are appended to this (MIR) function after the ops built so
        far (`transforms.autodiff`, as rlx-grad), so the gradients can feed further
        ops (an optimiser update) before `set_outputs`.  Raises BuildError for a
        non-scalar loss, a `wrt` that is not an argument, or an op without a
        derivative on a path from a `wrt` argument to the loss, naming the op.
        """
        if not isinstance(loss, Tensor) or loss.module is not self:
            self._check_differentiable("grad")
            raise BuildError("grad: the loss must be a Tensor of this GraphModule")
        wrt, names = self._differentiated("grad", [loss], wrt)
        return self._autodiff(lambda ip: gradients(list(self._block.operations), loss.value, [t.value for t in wrt], ip, names))

    def jvp(self, outputs: Outputs, wrt: Sequence[Tensor], tangents: Sequence[Tensor]) -> list[Tensor]:
        """Forward mode: the tangents of `outputs` (one Tensor or several) when each argument in
        `wrt` moves along its Tensor in `tangents` (of the argument's shape): the
        Jacobian-vector products `J t`, one per output, as new Tensors.

        The tangent ops are appended after the ops built so far (`transforms.autodiff.forward`,
        as rlx-jvp), so the tangents can feed further ops before `set_outputs`.  Raises
        BuildError for a `wrt` that is not an argument, a tangent of another shape, or an op
        without a derivative on a path from a `wrt` argument to an output, naming the op.
        """
        outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
        tangents = list(tangents)
        for index, t in enumerate([*outputs, *tangents]):
            if not isinstance(t, Tensor) or t.module is not self:
                self._check_differentiable("jvp")
                raise BuildError(f"jvp: {'output' if index < len(outputs) else 'tangent'} #{index if index < len(outputs) else index - len(outputs)} must be a Tensor of this GraphModule")
        wrt, names = self._differentiated("jvp", [*outputs, *tangents], wrt)
        if len(tangents) != len(wrt):
            raise BuildError(f"jvp: {len(wrt)} wrt arguments but {len(tangents)} tangents")
        for t, arg, name in zip(tangents, wrt, names):
            if t.shape != arg.shape or t.value.type != arg.value.type:
                raise BuildError(f"jvp: the tangent of '{name}' must be {arg!r}, got {t!r}")
        return self._autodiff(lambda ip: forward_tangents(
            list(self._block.operations), [t.value for t in outputs], [t.value for t in wrt],
            [t.value for t in tangents], ip, names))

    def _check_differentiable(self, what: str) -> None:
        self._check_open()
        if self._stage != "mir":
            raise BuildError(
                f"{what} differentiates MIR ops; '{self.name}' is at stage '{self._stage}' (build it with GraphModule.mir)"
            )

    def _differentiated(self, what: str, tensors: Sequence[Tensor], wrt: Sequence[Tensor]) -> tuple[list, list[str]]:
        """The `wrt` Tensors checked to be arguments of this function, and their names."""
        self._check_differentiable(what)
        wrt = list(wrt)
        names = []
        for index, t in enumerate(wrt):
            if not isinstance(t, Tensor) or t.module is not self:
                raise BuildError(f"{what}: wrt #{index} must be a Tensor of this GraphModule")
            if not isinstance(t.value, ir.BlockArgument):
                raise BuildError(f"{what}: wrt #{index} ({t!r}) is not an argument of '{self.name}': "
                                 f"{'gradients' if what == 'grad' else 'derivatives'} are taken with respect to arguments")
            names.append(self._names[t.value.arg_number])
        if any(t.value in self._symbolic for t in (*tensors, *wrt)):
            raise BuildError(f"{what}: symbolic shapes are not supported; bind_dims() first")
        return wrt, names

    def _autodiff(self, build) -> list[Tensor]:
        """Runs `build(ip)` (a transforms.autodiff entry point) at the end of the body; its values as Tensors."""
        try:
            with self.context:
                values = build(ir.InsertionPoint(self._block))
        except GradError as error:
            where = f"{error.op.location}: " if error.op is not None else ""
            raise BuildError(f"{where}{error.message}") from None
        return [Tensor(self, v) for v in values]

    def hvp(self, loss: Tensor, wrt: Sequence[Tensor], vectors: Sequence[Tensor]) -> list[Tensor]:
        """Hessian-vector products `H v` of the scalar `loss` for the arguments `wrt` and one
        vector per argument (of its shape): the tangents of the gradients `grad` built when the
        arguments move along `vectors`, i.e. forward mode over the backward ops (forward over
        reverse: one sweep over the backward graph, not a second reverse pass)."""
        wrt, vectors = list(wrt), list(vectors)
        if len(vectors) != len(wrt):
            raise BuildError(f"hvp: {len(wrt)} wrt arguments but {len(vectors)} vectors")
        for vector, argument in zip(vectors, wrt):
            if not isinstance(vector, Tensor) or not isinstance(argument, Tensor) or vector.shape != argument.shape:
                got = list(vector.shape) if isinstance(vector, Tensor) else type(vector).__name__
                want = list(argument.shape) if isinstance(argument, Tensor) else "?"
                raise BuildError(f"hvp: a vector of shape {got} for an argument of shape {want}")
        grads = self.grad(loss, wrt)
        return self.jvp(grads, wrt, vectors)

    def value_and_grad(self, loss: Tensor, wrt: Sequence[Tensor]) -> tuple[Tensor, list[Tensor]]:
        """`(loss, grad(loss, wrt))`."""
        return loss, self.grad(loss, wrt)

    # -- batching ---------------------------------------------------------------------------

    def vmap(self, batched: Sequence[Union[str, Tensor]], size: int) -> "GraphModule":
        """Batches the finished function in place over a new leading axis of `size` (RLX's
        `vmap`, as rlx-vmap): the arguments in `batched` (names or argument Tensors) and every
        output gain that axis, so that output `[i]` is the function of the arguments' `[i]`,
        the other arguments shared (`transforms.autodiff.batching`).  An HIR module is lowered
        first.  Returns self.  Raises BuildError for a name that is no argument, or an op
        without a batching rule reading a batched value, naming the op."""
        self._require_finished("vmap()")
        self._require_static("vmap()")
        if self._stage == "lir":
            raise BuildError("vmap() rewrites MIR: call it before plan()")
        positions = []
        for item in batched:
            if isinstance(item, Tensor) and item.module is self and isinstance(item.value, ir.BlockArgument):
                positions.append(item.value.arg_number)
            elif isinstance(item, str) and item in self._names:
                positions.append(self._names.index(item))
            else:
                raise BuildError(f"vmap: {item!r} is not an argument of '{self.name}' (arguments: {', '.join(self._names)})")
        self.lower()
        with self.context:
            clone = self._func.operation.clone(ip=ir.InsertionPoint.after(self._func))
            try:
                results = vectorize(clone.regions[0].blocks[0], sorted(set(positions)), size, self._names)
            except BatchingError as error:
                clone.erase()
                where = f"{error.op.location}: " if error.op is not None else ""
                raise BuildError(f"{where}{error.message}") from None
            self._func.operation.erase()
            self._func = clone.opview
            self._block = clone.regions[0].blocks[0]
        self._update_signature([r.type for r in results])
        return self

    # -- finishing, lowering, output ---------------------------------------------------------

    def set_outputs(self, outputs: Outputs) -> None:
        """Ends the function with `outputs` (one Tensor or several)."""
        self._check_open()
        tensors = [outputs] if isinstance(outputs, Tensor) else list(outputs)
        if not tensors:
            raise BuildError("set_outputs needs at least one output")
        for t in tensors:
            if not isinstance(t, Tensor) or t.module is not self:
                raise BuildError("set_outputs takes Tensors of this GraphModule")
        with self.context, ir.Location.unknown(), ir.InsertionPoint(self._block):
            func.ReturnOp([t.value for t in tensors])
        self._update_signature([t.value.type for t in tensors])
        self._finished = True

    def tie_outputs(self, ties: dict[int, str]) -> None:
        """Marks outputs as inputs updated in place (`rlx.tied`, e.g. a KV cache written by
        `rlx.kv_cache_write`): `ties` maps an output's position to the name of the input it is,
        which must have its type.  The compiled function then writes that input's buffer and
        returns it as the output.  Replaces any earlier ties; call after `set_outputs`."""
        self._require_finished("tie_outputs()")
        results = list(self._func.type.results)
        arguments = {name: argument for name, argument in zip(self._names, self._block.arguments)}
        with self.context:
            i64 = ir.IntegerType.get_signless(64)
            attrs = [{} for _ in results]
            for position, name in ties.items():
                if not isinstance(position, int) or not 0 <= position < len(results):
                    raise BuildError(f"tie_outputs: output #{position} does not exist ('{self.name}' has {len(results)})")
                if name not in arguments:
                    raise BuildError(f"tie_outputs: '{self.name}' has no input named {name!r}")
                if arguments[name].type != results[position]:
                    raise BuildError(f"tie_outputs: output #{position} is {results[position]}, but input '{name}' "
                                     f"is {arguments[name].type}")
                attrs[position] = {TIED_ATTR: ir.IntegerAttr.get(i64, arguments[name].arg_number)}
            self._func.attributes["res_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in attrs])

    def reopen(self) -> list[Tensor]:
        """Takes the outputs back (the inverse of `set_outputs`): returns them as Tensors and
        lets more ops be built on them, e.g. a loss on a model's logits, then `set_outputs` again."""
        self._require_finished("reopen()")
        if self._stage == "lir":
            raise BuildError(f"GraphModule '{self.name}' is planned (LIR): reopen it before plan()")
        ret = list(self._block.operations)[-1]
        outputs = [Tensor(self, v) for v in ret.operands]
        ret.erase()
        self._finished = False
        self._update_signature([])
        return outputs

    def _update_signature(self, results=None) -> None:
        """Sets the function type from the block's arguments and `results` (the current results if None)."""
        with self.context:
            if results is None:
                results = ir.FunctionType(ir.TypeAttr(self._func.attributes["function_type"]).value).results
            inputs = [a.type for a in self._block.arguments]
            self._func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))
            self._func.attributes["arg_attrs"] = ir.ArrayAttr.get(self._arg_attrs)

    def _check_open(self) -> None:
        if self._finished:
            raise BuildError(f"GraphModule '{self.name}' is finished (set_outputs was called)")

    def _require_finished(self, what: str) -> None:
        if not self._finished:
            raise BuildError(f"GraphModule '{self.name}' has no outputs yet: call set_outputs before {what}")

    def _require_static(self, what: str) -> None:
        if self.symbols:
            raise BuildError(
                f"GraphModule '{self.name}' has symbolic dimensions ({', '.join(self.symbols)}): "
                f"call bind_dims() before {what}, or compile() it to specialise at run time"
            )

    @property
    def symbols(self) -> list[str]:
        """The symbols the module's shapes mention (empty for a static module)."""
        return function_symbols(self._func.operation) if is_dynamic(self._func.operation) else []

    def bind_dims(self, binding) -> "GraphModule":
        """Binds every symbol (a `{symbol: size}` dict or a `ModelVariant`) in place: the module becomes static.

        Raises BuildError naming the symbol for an unknown or unbound symbol, a
        non-positive size, or a size that makes an op invalid.
        """
        self._require_finished("bind_dims()")
        if isinstance(binding, ModelVariant):
            binding = binding.binding_for(self.symbols)
        with self.context:
            try:
                bind_module(self.module.operation, dict(binding))
            except DimError as error:
                raise BuildError(error.message) from None
        self._symbolic.clear()
        return self

    def lower(self) -> "GraphModule":
        """HIR → MIR in place (rlx-hir-to-mir under the module's fusion policy); a no-op past HIR."""
        if self._stage != "hir":
            return self
        self._require_finished("lower()")
        with Compilation(self.context) as job:
            job.run(self.module, HirToMir(), "rlx-hir-to-mir failed")
        self._stage = "mir"
        # The HIR results are gone; only the arguments keep their symbolic shapes.
        self._symbolic = {v: d for v, d in self._symbolic.items() if isinstance(v, ir.BlockArgument)}
        return self

    def plan(self, alignment: int = 64) -> "GraphModule":
        """MIR → LIR in place (rlx-mir-to-lir): the schedule, arena slots, views, phases and fingerprint."""
        if self._stage == "lir":
            return self
        self._require_finished("plan()")
        self._require_static("plan()")
        self.lower()
        with Compilation(self.context) as job:
            job.run(self.module, MirToLir(alignment=alignment), "rlx-mir-to-lir failed")
        self._stage = "lir"
        return self

    def optimize(self) -> "GraphModule":
        """Lowers to MIR if needed, then runs rlx-optimize-mir (CSE, folding, fusions, DCE).

        What fused and what did not, and why, is kept in `fusion_report` and
        shown by `inspect()`.
        """
        if self._stage == "lir":
            raise BuildError("optimize() rewrites MIR: call it before plan()")
        self._require_finished("optimize()")
        self._require_static("optimize()")
        self.lower()
        with Compilation(self.context) as job, fusion_report.collect() as report:
            job.run(self.module, OptimizeMir(), "rlx-optimize-mir failed")
        self.fusion_report = report
        return self

    def compile(self, target: str = "cpu", **options):
        """Compiles the module (any stage) into an `Executable`, as `rlx_mlir.compile`."""
        self._require_finished("compile()")
        return jit_compile(self.module, entry=self.name, target=target, **options)

    def __str__(self) -> str:
        return self.text()

    def text(self, locations: bool = False) -> str:
        """The module as MLIR text (what `rlx-opt` reads); `locations=True` prints the named blocks too."""
        return self.module.operation.get_asm(enable_debug_info=locations)

    def inspect(self) -> str:
        """A readable summary of the module at its stage: signature, ops by block, op counts."""
        return summarize(self)
