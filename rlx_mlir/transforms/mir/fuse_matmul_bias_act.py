"""rlx-fuse-matmul-bias-act: a linear layer's matmul, bias and activation into one op.

    %p = rlx.matmul(%x, %w)          %w: [K, N]
    %s = rlx.add(%p, %b)             %b: [N], either operand order
    %y = rlx.gelu(%s)                optional: relu, gelu, gelu_approx, silu, sigmoid, tanh
  ->
    %y = rlx.fused_matmul_bias_act(%x, %w, %b) {activation = "gelu"}

Conditions: the weight is 2-D (a batched weight is left alone), the product
is used only by the add, the bias has shape `[N]` and all shapes are static.
The activation joins when it is the add's only use; otherwise the add alone
fuses (`activation = "none"`) and the activation stays.  The fused op is
built where the last matched op was, with a fused location whose first part
is the matmul's.

f32 results are unchanged: the fused lowering adds the bias to the same
product and applies the same activation formula.  f16 / bf16 results can
differ in the last bit, since the fused op rounds once where the separate
ops round the product, the sum and the activation.

Every candidate (a matmul whose result feeds an rlx.add) is recorded in the
fusion report, fused or not, with the reason.
"""

from __future__ import annotations

import dataclasses

from mlir import ir

from ...dialects import rlx
from ...ir.shapes import shape_of
from ...passmanager.base import RlxPass
from . import fusion_report as report

ACTIVATIONS: dict[type, str] = {
    rlx.ReluOp: "relu",
    rlx.GeluOp: "gelu",
    rlx.GeluApproxOp: "gelu_approx",
    rlx.SiluOp: "silu",
    rlx.SigmoidOp: "sigmoid",
    rlx.TanhOp: "tanh",
}


def _adds_using(value: ir.Value) -> list:
    return [use.owner for use in value.uses if isinstance(use.owner, rlx.AddOp)]


@dataclasses.dataclass(frozen=True)
class FuseMatmulBiasAct(RlxPass):
    name = "rlx-fuse-matmul-bias-act"
    summary = "Fuse rlx.matmul + rlx.add of a [N] bias (+ activation) into rlx.fused_matmul_bias_act"

    def run(self, module: ir.Operation) -> None:
        for matmul in report.ops_of(module, rlx.MatmulOp):
            report.guarded(self.name, matmul, self._try)

    def _miss(self, op, reason: str) -> None:
        report.record_missed(self.name, op, reason)

    def _try(self, matmul) -> None:
        product = matmul.result
        adds = _adds_using(product)
        if not adds:
            return  # not a linear layer with a bias: nothing to consider
        uses = report.use_count(product)
        if uses != 1:
            self._miss(matmul, f"product has {uses} uses")
            return
        add = adds[0]
        if len(shape_of(matmul.rhs.type)) != 2:
            self._miss(matmul, f"weight is batched {report.describe_shape(matmul.rhs)}")
            return
        w_shape = report.static_shape(matmul.rhs)
        if w_shape is None or report.static_shape(matmul.lhs) is None:
            self._miss(matmul, "dynamic shapes")
            return
        bias = add.rhs if add.lhs == product else add.lhs
        n = w_shape[1]
        if report.static_shape(bias) != (n,):
            self._miss(matmul, f"bias shape {report.describe_shape(bias)} is not [{n}]")
            return
        if add.result.type != product.type:
            self._miss(matmul, f"the add broadcasts the product to {report.describe_shape(add.result)}")
            return
        activation, root = "none", add
        user = report.single_user(add.result)
        if type(user) in ACTIVATIONS:
            activation, root = ACTIVATIONS[type(user)], user
        else:
            skipped = [u.owner.name for u in add.result.uses if type(u.owner) in ACTIVATIONS]
            if skipped:
                uses = report.use_count(add.result)
                self._miss(matmul, f"{skipped[0]} not fused: the biased sum has {uses} uses")
        matched = [matmul, add] + ([root] if root is not add else [])
        fused = rlx.FusedMatmulBiasActOp(
            matmul.lhs,
            matmul.rhs,
            bias,
            activation=activation,
            loc=report.fused_location(*matched),
            ip=ir.InsertionPoint(root),
        )
        report.record_fused(self.name, matmul, f"rlx.fused_matmul_bias_act (activation {activation})")
        root.result.replace_all_uses_with(fused.result)
        for op in reversed(matched):
            op.operation.erase()
