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
from ..dialects.rlx_hir.dialect import FUSION_POLICIES
from ..dims import derive as dynamic_builder
from ..dims.dynamic import DimError, bind_module, dims_attr, function_symbols, is_dynamic
from ..dims.expr import DimExpr, format_dims
from ..dims.variants import ModelVariant
from ..driver import Compilation
from ..dsl import element_type_from_name
from ..errors import RlxError
from ..ir import dtypes
from ..ir.attrs import DIMS_ATTR, FUSION_POLICY_ATTR, NAME_ATTR, PARAM_ATTR
from ..ir.shapes import format_shape, shape_of
from ..pipelines.optimize_mir import OptimizeMir
from ..runtime.jit import compile as jit_compile
from ..transforms.mir import fusion_report
from .inspection import summarize

STAGES = ("hir", "mir", "lir")
# The RLX dtypes `constant` infers from a numpy array's dtype; not float64 (numpy's default for
# floats), which must be asked for with dtype="f64".
_INFERRED_DTYPES = ("f32", "f16", "i8", "ui8", "i32", "i64", "i1")


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
        self._update_signature([])
        return Tensor(self, value)

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

    def op(self, op_class: type, *operands: Tensor, out_shape: Optional[Sequence[int]] = None, **attributes) -> Tensor:
        """Any MIR op, e.g. `g.op(rlx.SoftmaxOp, x, axis=-1)`; in an HIR module this is RLX's escape hatch."""
        return self._emit(op_class, operands, attributes, out_shape)

    hir_mir = op  # RLX's name for the escape hatch

    def _hir(self, op_class: type, operands, attributes, out_shape, results: int = 1):
        if self._stage != "hir":
            raise BuildError(f"'{op_class.OPERATION_NAME}' is an HIR block; this module is at stage '{self._stage}'")
        return self._emit(op_class, operands, attributes, out_shape, results)

    def _emit(self, op_class, operands, attributes, out_shape, results: int = 1):
        self._check_open()
        values = []
        for index, operand in enumerate(operands):
            if operand is not None and not isinstance(operand, Tensor):
                raise BuildError(f"{op_class.OPERATION_NAME}: operand #{index} must be a Tensor, got {type(operand).__name__}")
            if operand is not None and operand.module is not self:
                raise BuildError(f"{op_class.OPERATION_NAME}: operand #{index} belongs to another GraphModule")
            values.append(operand.value if operand is not None else None)
        keywords = {k: (v.value if isinstance(v, Tensor) else v) for k, v in attributes.items()}
        tensors = [t for t in (*operands, *attributes.values()) if isinstance(t, Tensor)]
        if any(t.value in self._symbolic for t in tensors) or dynamic_builder.has_symbolic_attributes(op_class, attributes):
            return self._emit_symbolic(op_class, operands, attributes, out_shape, results)
        try:
            with self.context, self._location(), ir.InsertionPoint(self._block):
                if results == 1:
                    op = op_class(*values, **keywords)
                else:
                    op = op_class.build(*values, **keywords)
        except (ValueError, TypeError) as error:
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
        return self._hir(rlx_hir.LinearOp, [x, w], {"bias": bias, "activation": activation or "none"}, out_shape)

    def linear_fused(self, x, w, bias, activation=None, *, out_shape=None) -> Tensor:
        return self._hir(rlx_hir.LinearFusedOp, [x, w, bias], {"activation": activation or "none"}, out_shape)

    def dequant_linear(self, x, w, scheme, bias=None, activation=None, *, out_shape=None) -> Tensor:
        """`act(x @ dequant(w).T [+ bias])` with `w` GGUF blocks (`u8 [N, bytes]`), an HIR block."""
        attrs = {"bias": bias, "scheme": scheme, "activation": activation or "none"}
        return self._hir(rlx_hir.DequantLinearOp, [x, w], attrs, out_shape)

    def dequant_matmul(self, x, w, scheme, *, out_shape=None) -> Tensor:
        """`x @ dequant(w).T` with `w` GGUF blocks (`u8 [N, bytes]`): `rlx.dequant_matmul`, at any stage."""
        return self._emit(rlx.DequantMatmulOp, [x, w], {"scheme": scheme}, out_shape)

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

    def dequant_moe_weights(self, w, scheme, *, out_shape=None) -> Tensor:
        """`rlx.dequant_moe_weights`: packed experts `u8 [E, N, bytes]` decoded to f32 `[E, K, N]`."""
        return self._emit(rlx.DequantMoeWeightsOp, [w], {"scheme": scheme}, out_shape)

    def shared_linear_pair(self, x, w_first, w_second) -> tuple[Tensor, Tensor]:
        return self._hir(rlx_hir.SharedLinearPairOp, [x, w_first, w_second], {}, None, results=2)

    def swiglu_ffn(self, x, up_w, gate_w, down_w, *, out_shape=None) -> Tensor:
        return self._hir(rlx_hir.SwigluFfnOp, [x, up_w, gate_w, down_w], {}, out_shape)

    def moe_ffn(self, x, router_w, gate_w, up_w, down_w, *, top_k, scoring="softmax", normalize=False,
                shared_gate_w=None, shared_up_w=None, shared_down_w=None, shared_expert_gate=None,
                out_shape=None) -> Tensor:
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
        """
        attrs = {"shared_gate_w": shared_gate_w, "shared_up_w": shared_up_w, "shared_down_w": shared_down_w,
                 "shared_expert_gate": shared_expert_gate, "top_k": top_k, "scoring": scoring, "normalize": normalize}
        return self._hir(rlx_hir.MoeFfnOp, [x, router_w, gate_w, up_w, down_w], attrs, out_shape)

    def residual_rms_norm(self, x, residual, gamma, beta, eps=1e-6, *, out_shape=None) -> Tensor:
        return self._hir(rlx_hir.ResidualRmsNormOp, [x, residual, gamma, beta], {"eps": eps}, out_shape)

    def rms_norm(self, x, gamma, beta, eps=1e-6, *, out_shape=None) -> Tensor:
        return self._hir(rlx_hir.RmsNormOp, [x, gamma, beta], {"eps": eps}, out_shape)

    def attention(self, q, k, v, mask=None, *, num_heads, head_dim, mask_kind="none", window=None,
                  score_scale=None, softcap=None, out_shape=None) -> Tensor:
        attrs = {"mask": mask, "num_heads": num_heads, "head_dim": head_dim, "mask_kind": mask_kind,
                 "window": window, "score_scale": score_scale, "softcap": softcap}
        return self._hir(rlx_hir.AttentionOp, [q, k, v], attrs, out_shape)

    def rope(self, x, cos, sin, head_dim, n_rot=None, *, out_shape=None) -> Tensor:
        attrs = {"head_dim": head_dim, "n_rot": head_dim if n_rot is None else n_rot}
        return self._hir(rlx_hir.RopeOp, [x, cos, sin], attrs, out_shape)

    def depthwise_conv1d_causal(self, x, weight, left_pad, kernel_size, *, out_shape=None) -> Tensor:
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
                            mask=None, *, num_heads, head_dim, num_kv_heads, eps=1e-5, mask_kind="causal",
                            window=None, out_shape=None) -> Tensor:
        operands = [x, ln1_g, ln1_b, q_w, k_w, v_w, o_w, ln2_g, ln2_b, gate_w, up_w, down_w, cos, sin]
        attrs = {"mask": mask, "num_heads": num_heads, "head_dim": head_dim, "num_kv_heads": num_kv_heads,
                 "eps": eps, "mask_kind": mask_kind, "window": window}
        return self._hir(rlx_hir.LlamaDecoderBlockOp, operands, attrs, out_shape)

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

    def _update_signature(self, results) -> None:
        with self.context:
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
