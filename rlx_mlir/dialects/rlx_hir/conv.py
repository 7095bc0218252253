"""Convolution blocks: the causal depthwise 1-D convolution of streaming models."""

from __future__ import annotations

from mlir import ir

from ...dsl import Pure, VerifyError, same_as
from ...ir.shapes import format_shape, shape_of
from ..rlx import recurrent as mir_recurrent
from ..rlx.dialect import same_element_type
from .dialect import RlxHir, check_positive, check_shape

__all__ = ["DepthwiseConv1dCausalOp"]


class DepthwiseConv1dCausalOp(RlxHir.Operation, name="depthwise_conv1d_causal", traits=[Pure]):
    """Causal depthwise 1-D convolution over the sequence, left context from a pad state.

    `input` is `[B, S, C]`, `weight` `[C, 1, 1, K]` (RLX's grouped-conv
    layout, `K = kernel_size`) and `left_pad` `[B, K - 1, C]`, the last
    `K - 1` positions before this chunk (zeros at the start of a stream; the
    state carried between chunks when streaming).  With
    `xp = concat(left_pad, input)` along the sequence (`[B, S + K - 1, C]`):

        out[b, s, c] = sum_{k < K} weight[c, 0, 0, k] * xp[b, s + k, c]

    so output `s` sees inputs `s - K + 1 .. s` of its own channel only
    (PyTorch's `conv1d(groups = C)` over `xp` without padding, i.e.
    cross-correlation).  The result is `[B, S, C]`.

    Expansion (both policies; RLX lowers to a grouped `Conv`): one
    `rlx.depthwise_conv1d_causal` with the same operands and `kernel_size`
    (the MIR op has exactly these semantics).
    """

    input = same_as(mir_recurrent.DepthwiseConv1dCausalOp.x, doc="the sequence, `[B, S, C]`")
    weight = same_as(mir_recurrent.DepthwiseConv1dCausalOp.weight, doc="per-channel taps, `[C, 1, 1, K]`")
    left_pad = same_as(
        mir_recurrent.DepthwiseConv1dCausalOp.left_pad, doc="the `K - 1` positions before the sequence, `[B, K - 1, C]`"
    )
    kernel_size = same_as(mir_recurrent.DepthwiseConv1dCausalOp.kernel_size, doc="`K`, taps per channel, positive")
    result = same_as(mir_recurrent.DepthwiseConv1dCausalOp.result, doc="`[B, S, C]`")

    @classmethod
    def infer_result_type(cls, input: ir.Type, weight: ir.Type, left_pad: ir.Type, kernel_size: int) -> ir.Type:
        element = same_element_type(input, weight, left_pad)
        check_positive("kernel_size", kernel_size)
        shape = shape_of(input)
        if len(shape) != 3:
            raise VerifyError(f"input must have rank 3 ([B, S, C]), got {format_shape(shape)}")
        b, _, c = shape
        check_shape("weight", weight, [c, 1, 1, kernel_size], "[C, 1, 1, kernel_size]")
        check_shape("left_pad", left_pad, [b, kernel_size - 1, c], "[B, kernel_size - 1, C]")
        return ir.RankedTensorType.get(list(shape), element)
