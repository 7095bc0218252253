// rlx_hir.dequant_linear expands to rlx.dequant_matmul, then the bias add and the activation,
// under both policies.
// RUN: rlx-opt %s --rlx-hir-to-mir | FileCheck %s --implicit-check-not=rlx_hir.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-hir-to-mir{policy=fusable})' | FileCheck %s --implicit-check-not=rlx_hir.

// CHECK-LABEL: func.func @bias_act
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x256xf32>, %[[W:.*]]: tensor<3x144xui8>, %[[B:.*]]: tensor<3xf32>)
// CHECK-NEXT: %[[M:.*]] = "rlx.dequant_matmul"(%[[X]], %[[W]]) {scheme = "q4_k"} : (tensor<2x5x256xf32>, tensor<3x144xui8>) -> tensor<2x5x3xf32>
// CHECK-NEXT: %[[A:.*]] = "rlx.add"(%[[M]], %[[B]]) : (tensor<2x5x3xf32>, tensor<3xf32>) -> tensor<2x5x3xf32>
// CHECK-NEXT: %[[R:.*]] = "rlx.silu"(%[[A]])
// CHECK-NEXT: return %[[R]]
func.func @bias_act(%x: tensor<2x5x256xf32>, %w: tensor<3x144xui8>, %b: tensor<3xf32>) -> tensor<2x5x3xf32> {
  %0 = "rlx_hir.dequant_linear"(%x, %w, %b) {scheme = "q4_k", activation = "silu"} : (tensor<2x5x256xf32>, tensor<3x144xui8>, tensor<3xf32>) -> tensor<2x5x3xf32>
  return %0 : tensor<2x5x3xf32>
}

// CHECK-LABEL: func.func @plain
// CHECK-NEXT: %[[M:.*]] = "rlx.dequant_matmul"(%{{.*}}, %{{.*}}) {scheme = "q8_0"} : (tensor<64xf32>, tensor<4x68xui8>) -> tensor<4xf32>
// CHECK-NEXT: return %[[M]]
func.func @plain(%x: tensor<64xf32>, %w: tensor<4x68xui8>) -> tensor<4xf32> {
  %0 = "rlx_hir.dequant_linear"(%x, %w) {activation = "none", scheme = "q8_0"} : (tensor<64xf32>, tensor<4x68xui8>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
