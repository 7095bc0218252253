// Every MIR op of an expansion carries the block's location, so a named block
// (RLX's `HirModule::named`, a NameLoc) names each op it becomes.
// RUN: rlx-opt %s --rlx-hir-to-mir --mlir-print-debuginfo | FileCheck %s
// RUN: rlx-opt %s --rlx-hir-to-mir=policy=fusable --mlir-print-debuginfo | FileCheck %s --check-prefix=FUSABLE

// CHECK-LABEL: func.func @named_blocks
// CHECK-NEXT: "rlx.concat"{{.*}} loc(#[[FFN:loc[0-9]+]])
// CHECK-NEXT: "rlx.matmul"{{.*}} loc(#[[FFN]])
// CHECK-NEXT: "rlx.fused_swiglu"{{.*}} loc(#[[FFN]])
// CHECK-NEXT: "rlx.matmul"{{.*}} loc(#[[FFN]])
// CHECK-NEXT: "rlx.exp"{{.*}} loc(#[[MIR:loc[0-9]+]])
// CHECK-NEXT: "rlx.fused_residual_rms_norm"{{.*}} loc(#[[NORM:loc[0-9]+]])
// CHECK-DAG: #[[FFN]] = loc("layers.0.ffn"(#{{loc[0-9]*}}))
// CHECK-DAG: #[[NORM]] = loc("layers.0.norm"(#{{loc[0-9]*}}))
// CHECK-DAG: #[[MIR]] = loc("{{.*}}locations.mlir":{{[0-9]+}}:8)
// FUSABLE-LABEL: func.func @named_blocks
// FUSABLE-NEXT: "rlx.matmul"{{.*}} loc(#[[FFN:loc[0-9]+]])
// FUSABLE-NEXT: "rlx.matmul"{{.*}} loc(#[[FFN]])
// FUSABLE-NEXT: "rlx.silu"{{.*}} loc(#[[FFN]])
// FUSABLE-NEXT: "rlx.mul"{{.*}} loc(#[[FFN]])
// FUSABLE-NEXT: "rlx.matmul"{{.*}} loc(#[[FFN]])
// FUSABLE-NEXT: "rlx.exp"
// FUSABLE-NEXT: "rlx.add"{{.*}} loc(#[[NORM:loc[0-9]+]])
// FUSABLE-NEXT: "rlx.rms_norm"{{.*}} loc(#[[NORM]])
// FUSABLE-DAG: #[[FFN]] = loc("layers.0.ffn"(#{{loc[0-9]*}}))
// FUSABLE-DAG: #[[NORM]] = loc("layers.0.norm"(#{{loc[0-9]*}}))
func.func @named_blocks(%x: tensor<3x8xf32>, %up: tensor<8x12xf32>, %gate: tensor<8x12xf32>, %down: tensor<12x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  %0 = "rlx_hir.swiglu_ffn"(%x, %up, %gate, %down) : (tensor<3x8xf32>, tensor<8x12xf32>, tensor<8x12xf32>, tensor<12x8xf32>) -> tensor<3x8xf32> loc("layers.0.ffn"("model.py":10:4))
  %1 = "rlx.exp"(%0) : (tensor<3x8xf32>) -> tensor<3x8xf32>
  %2 = "rlx_hir.residual_rms_norm"(%1, %x, %g, %b) {eps = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32> loc("layers.0.norm"("model.py":11:4))
  return %2 : tensor<3x8xf32>
}
