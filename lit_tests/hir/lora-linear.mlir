// rlx_hir.lora_linear expands to rlx.lora_matmul, then the bias add and the activation, under
// both policies; a rank-1 x goes through [1, K].
// RUN: rlx-opt %s --rlx-hir-to-mir | FileCheck %s --implicit-check-not=rlx_hir.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-hir-to-mir{policy=fusable})' | FileCheck %s --implicit-check-not=rlx_hir.

// CHECK-LABEL: func.func @bias_act
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x16xf32>, %[[W:.*]]: tensor<16x8xf32>, %[[A:.*]]: tensor<16x2xf32>, %[[B:.*]]: tensor<2x8xf32>, %[[BIAS:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[M:.*]] = "rlx.lora_matmul"(%[[X]], %[[W]], %[[A]], %[[B]]) {scale = 2.500000e-01 : f32} : (tensor<2x5x16xf32>, tensor<16x8xf32>, tensor<16x2xf32>, tensor<2x8xf32>) -> tensor<2x5x8xf32>
// CHECK-NEXT: %[[S:.*]] = "rlx.add"(%[[M]], %[[BIAS]]) : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
// CHECK-NEXT: %[[R:.*]] = "rlx.gelu"(%[[S]])
// CHECK-NEXT: return %[[R]]
func.func @bias_act(%x: tensor<2x5x16xf32>, %w: tensor<16x8xf32>, %a: tensor<16x2xf32>, %b: tensor<2x8xf32>, %bias: tensor<8xf32>) -> tensor<2x5x8xf32> {
  %0 = "rlx_hir.lora_linear"(%x, %w, %a, %b, %bias) {scale = 0.25 : f32, activation = "gelu"} : (tensor<2x5x16xf32>, tensor<16x8xf32>, tensor<16x2xf32>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  return %0 : tensor<2x5x8xf32>
}

// CHECK-LABEL: func.func @vector
// CHECK-NEXT: %[[ROW:.*]] = "rlx.reshape"(%{{.*}}) : (tensor<16xf32>) -> tensor<1x16xf32>
// CHECK-NEXT: %[[M:.*]] = "rlx.lora_matmul"(%[[ROW]], %{{.*}}, %{{.*}}, %{{.*}}) {scale = 1.000000e+00 : f32} : (tensor<1x16xf32>, tensor<16x8xf32>, tensor<16x2xf32>, tensor<2x8xf32>) -> tensor<1x8xf32>
// CHECK-NEXT: %[[R:.*]] = "rlx.reshape"(%[[M]]) : (tensor<1x8xf32>) -> tensor<8xf32>
// CHECK-NEXT: return %[[R]]
func.func @vector(%x: tensor<16xf32>, %w: tensor<16x8xf32>, %a: tensor<16x2xf32>, %b: tensor<2x8xf32>) -> tensor<8xf32> {
  %0 = "rlx_hir.lora_linear"(%x, %w, %a, %b) {scale = 1.0 : f32, activation = "none"} : (tensor<16xf32>, tensor<16x8xf32>, tensor<16x2xf32>, tensor<2x8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
