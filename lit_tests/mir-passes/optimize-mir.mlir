// rlx-optimize-mir runs CSE, folding and the fusions in order, then DCE: a
// primitive MLP layer with a duplicated matmul becomes one fused op.
// RUN: rlx-opt %s --rlx-optimize-mir | FileCheck %s

// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[F:.*]] = "rlx.fused_matmul_bias_act"(%[[X]], %[[W]], %[[B]]) {activation = "gelu"}
// CHECK-NEXT: return %[[F]], %[[F]]
func.func @layer(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = "rlx.gelu"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %3 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %4 = "rlx.add"(%3, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %5 = "rlx.gelu"(%4) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %2, %5 : tensor<4x16xf32>, tensor<4x16xf32>
}
