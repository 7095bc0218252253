"""rlx-optimize-mir: RLX's MIR clean-up and fusion, in RLX's order.

Clean up (CSE, constant folding), fuse SwiGLU before merging shared-input
matmuls (so SwiGLU pairs stay whole), fuse matmul + bias + activation and the
residual norms, then erase what the fusions left unused.
"""

from __future__ import annotations

import dataclasses

from ..passmanager.base import RlxPipeline
from ..transforms.mir.cse import CommonSubexpressionElimination
from ..transforms.mir.dce import DeadCodeElimination
from ..transforms.mir.fold_constants import FoldConstants
from ..transforms.mir.fuse_matmul_bias_act import FuseMatmulBiasAct
from ..transforms.mir.fuse_residual_norm import FuseResidualNorm
from ..transforms.mir.fuse_shared_matmul import FuseSharedMatmul
from ..transforms.mir.fuse_swiglu import FuseSwiglu


@dataclasses.dataclass(frozen=True)
class OptimizeMir(RlxPipeline):
    name = "rlx-optimize-mir"
    summary = "MIR clean-up and fusion: CSE, constant folding, the four fusions, DCE"

    def elements(self):
        return [
            CommonSubexpressionElimination(),
            FoldConstants(),
            FuseSwiglu(),
            FuseSharedMatmul(),
            FuseMatmulBiasAct(),
            FuseResidualNorm(),
            DeadCodeElimination(),
        ]
