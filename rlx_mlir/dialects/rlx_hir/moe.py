"""Mixture-of-experts blocks: the routed SwiGLU feed-forward."""

from __future__ import annotations

from typing import Optional

from mlir import ir

from ...dsl import BoolAttr, I64Attr, Pure, StrEnumAttr, TensorOf, VerifyError, attribute, operand, result
from ...ir.shapes import DYNAMIC, format_shape, shape_of
from ..rlx.quant import GGUF_SCHEMES, check_weight_bytes
from .dialect import RlxHir, activations_shape, check_positive, check_shape, fits, same_size

__all__ = ["MoeFfnOp", "SCORINGS"]

F32Tensor = TensorOf(("f32",))
ExpertStack = TensorOf(("f32", "ui8"))
SCORINGS = ("softmax", "sigmoid")


class MoeFfnOp(RlxHir.Operation, name="moe_ffn", traits=[Pure]):
    """Routed mixture-of-experts SwiGLU feed-forward (Mixtral, Qwen2-MoE, DeepSeek-style).

    With `x` `[..., D]` (each of its `T` rows a token), `E` experts of
    hidden size `F`, `k = top_k`:

        p      = scoring(x @ router_w)                 [T, E]   softmax over E, or sigmoid
        top    = the k largest p of each token          [T, k]   expert ids, best first
        w[t,j] = p[t, top[t,j]]   (divided by sum_j w[t,j] when `normalize`)
        out[t] = sum_j w[t,j] * expert_{top[t,j]}(x[t])
        expert_e(v) = (silu(v @ gate_w[e]) * (v @ up_w[e])) @ down_w[e]

    plus, with a shared expert (Qwen2-MoE, DeepSeek), `shared(x) = (silu(x @
    shared_gate_w) * (x @ shared_up_w)) @ shared_down_w`, scaled per token by
    `sigmoid(x @ shared_expert_gate)` when that gate is given (Qwen2-MoE), and
    added.  Experts are ranked as `rlx.topk` ranks: by `p`, equal
    probabilities to the lower expert id.  The result is `[..., D]` like `x`.
    Mixtral is `scoring = softmax, normalize = true` (its softmax over the
    top-k logits is the same weights); Qwen2-MoE `softmax` with its
    `norm_topk_prob` as `normalize`.

    Expansion (RLX's routing: `TopK`, `GroupedMatMul`, `ScatterAdd`): under
    both policies the router is `rlx.matmul`, `rlx.softmax` (or
    `rlx.sigmoid`), `rlx.topk`, and the chosen probabilities are picked by
    comparing the ids with the constant `[0 .. E)` (`rlx.compare`,
    `rlx.where`, `rlx.reduce`).  Under `direct` only the chosen experts run:
    each token's row is repeated `k` times (`rlx.expand`, one row per
    (token, choice)), `rlx.grouped_matmul` with `gate_w`, `up_w` (rows
    bucketed by expert inside), `rlx.silu`, `rlx.mul`, `rlx.grouped_matmul`
    with `down_w`, each row scaled by its weight and `rlx.scatter_add`ed into
    its token.  Under `fusable` the reference form: every expert on every
    token (per expert `e`, its weights `rlx.narrow`ed out of the stacks and the
    SwiGLU chain of `rlx.matmul`s), weighted by column `e` of a dense `[T, E]`
    matrix that is zero off the chosen experts, summed with `rlx.add`.  The
    shared expert is the `rlx_hir.swiglu_ffn` expansion of the policy.

    Quantised experts: a stack with a scheme (`gate_scheme`, `up_scheme`,
    `down_scheme`, GGUF block formats) is `ui8`, each expert's weight packed
    in `rlx.dequant_grouped_matmul`'s layout, `W_e [out, in]` (the transpose
    of the f32 stack's `[in, out]` slab): `gate_w` and `up_w` `ui8 [E, F, D /
    block * block_bytes]`, `down_w` `ui8 [E, D, F / block * block_bytes]`.
    Under `direct` such a stack's products are `rlx.dequant_grouped_matmul`
    (blocks decoded inside the product, only the chosen experts' slabs read);
    under `fusable` each expert's slab is `rlx.narrow`ed out of the stack and
    multiplied by `rlx.dequant_matmul`.  No f32 copy of an expert is built.
    """

    x = operand(F32Tensor, "the tokens, `[..., D]`")
    router_w = operand(F32Tensor, "router (gate) projection, `[D, E]`")
    gate_w = operand(ExpertStack, "experts' gate projections, `[E, D, F]` (packed: `ui8 [E, F, D bytes]`)")
    up_w = operand(ExpertStack, "experts' up projections, `[E, D, F]` (packed: `ui8 [E, F, D bytes]`)")
    down_w = operand(ExpertStack, "experts' down projections, `[E, F, D]` (packed: `ui8 [E, D, F bytes]`)")
    shared_gate_w = operand(F32Tensor, "shared expert's gate projection, `[D, S]`", optional=True)
    shared_up_w = operand(F32Tensor, "shared expert's up projection, `[D, S]`", optional=True)
    shared_down_w = operand(F32Tensor, "shared expert's down projection, `[S, D]`", optional=True)
    shared_expert_gate = operand(
        F32Tensor, "the shared expert's sigmoid gate, `[D, 1]` (Qwen2-MoE); only with a shared expert", optional=True
    )
    top_k = attribute(I64Attr, "`k`, experts per token, `0 < k <= E`")
    scoring = attribute(StrEnumAttr(*SCORINGS), "router scores: `softmax` over the experts or `sigmoid` of each", default="softmax")
    normalize = attribute(BoolAttr, "divide the k chosen probabilities by their sum", default=False)
    gate_scheme = attribute(StrEnumAttr(*GGUF_SCHEMES), "GGUF block format of a packed `gate_w`", optional=True)
    up_scheme = attribute(StrEnumAttr(*GGUF_SCHEMES), "GGUF block format of a packed `up_w`", optional=True)
    down_scheme = attribute(StrEnumAttr(*GGUF_SCHEMES), "GGUF block format of a packed `down_w`", optional=True)
    result = result(F32Tensor, "`[..., D]`, like `x`")

    @classmethod
    def infer_result_type(
        cls,
        x: ir.Type,
        router_w: ir.Type,
        gate_w: ir.Type,
        up_w: ir.Type,
        down_w: ir.Type,
        shared_gate_w: Optional[ir.Type],
        shared_up_w: Optional[ir.Type],
        shared_down_w: Optional[ir.Type],
        shared_expert_gate: Optional[ir.Type],
        top_k: int,
        scoring: str,
        normalize: bool,
        gate_scheme: Optional[str] = None,
        up_scheme: Optional[str] = None,
        down_scheme: Optional[str] = None,
    ) -> ir.Type:
        xs = activations_shape("x", x)
        d = xs[-1]
        router = shape_of(router_w)
        if len(router) != 2 or not fits(router[:1], [d]):
            raise VerifyError(f"router_w {format_shape(router)} must be [D, E] with D = {d} (the last dimension of x)")
        e = router[1]
        check_positive("top_k", top_k)
        if top_k > e:
            raise VerifyError(f"top_k {top_k} is larger than the number of experts E = {e} (router_w {format_shape(router)})")
        gate = shape_of(gate_w)
        if gate_scheme is not None or _is_packed(gate_w):
            f = _packed_stack("gate_w", gate_w, gate_scheme, e, d, None)
        else:
            if len(gate) != 3 or not fits(gate[:2], [e, d]):
                raise VerifyError(f"gate_w {format_shape(gate)} must be [E, D, F] with E = {e} (router_w's columns) and D = {d}")
            f = gate[2]
        if up_scheme is not None or _is_packed(up_w):
            _packed_stack("up_w", up_w, up_scheme, e, d, f)
        else:
            check_shape("up_w", up_w, [e, d, f], "[E, D, F] (the shape of gate_w)")
        if down_scheme is not None or _is_packed(down_w):
            _packed_stack("down_w", down_w, down_scheme, e, f, d)
        else:
            check_shape("down_w", down_w, [e, f, d], "[E, F, D]")
        shared = (shared_gate_w, shared_up_w, shared_down_w)
        if any(t is not None for t in shared):
            if any(t is None for t in shared):
                raise VerifyError("a shared expert needs all of shared_gate_w, shared_up_w and shared_down_w")
            sg = shape_of(shared_gate_w)
            if len(sg) != 2 or not fits(sg[:1], [d]):
                raise VerifyError(f"shared_gate_w {format_shape(sg)} must be [D, S] with D = {d}")
            check_shape("shared_up_w", shared_up_w, [d, sg[1]], "[D, S] (the shape of shared_gate_w)")
            check_shape("shared_down_w", shared_down_w, [sg[1], d], "[S, D]")
        if shared_expert_gate is not None:
            if shared_gate_w is None:
                raise VerifyError("shared_expert_gate gates the shared expert, but there is none (no shared_gate_w)")
            check_shape("shared_expert_gate", shared_expert_gate, [d, 1], "[D, 1]")
        return ir.RankedTensorType.get(list(xs), ir.F32Type.get())


def _is_packed(stack: ir.Type) -> bool:
    return isinstance(ir.RankedTensorType(stack).element_type, ir.IntegerType)


def _packed_stack(name: str, stack: ir.Type, scheme: Optional[str], e: int, k: int, n: Optional[int]) -> int:
    """Checks a packed stack of `E` weights `W_e [N, K]`, `ui8 [E, N, bytes of K]` in `scheme`,
    and returns its `N`; a packed stack without a scheme (or a scheme on an f32 stack) is an error."""
    packed = _is_packed(stack)
    if packed != (scheme is not None):
        raise VerifyError(f"{name} is {'ui8' if packed else 'f32'}, but {name[:-2]}_scheme is "
                          f"{'absent' if scheme is None else repr(scheme)}: a packed (ui8) stack takes a scheme, an f32 one none")
    shape = shape_of(stack)
    if len(shape) != 3 or not same_size(shape[0], e) or (n is not None and not same_size(shape[1], n)):
        wanted = format_shape([e, "N" if n is None else n, "bytes"])
        raise VerifyError(f"{name} {format_shape(shape)} must be [E, N, bytes per row] = {wanted} "
                          f"(packed {scheme}, each expert's W [N, K] with K = {k})")
    check_weight_bytes(scheme, k, shape[2])
    return shape[1] if shape[1] != DYNAMIC or n is None else n
