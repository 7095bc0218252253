// rlx_hir.dequant_linear with a side-tensor scheme: the operands after w are the scheme's side
// tensors (no bias), passed on to rlx.dequant_matmul with the scheme (and nvfp4's global_scale),
// then the activation, under both policies.
// RUN: rlx-opt %s --rlx-hir-to-mir | FileCheck %s --implicit-check-not=rlx_hir.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-hir-to-mir{policy=fusable})' | FileCheck %s --implicit-check-not=rlx_hir.

// CHECK-LABEL: func.func @int4
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x64xf32>, %[[W:[^:]*]]: tensor<64x6xui8>, %[[S:[^:]*]]: tensor<2x12xf32>, %[[Z:[^:]*]]: tensor<2x12xf32>)
// CHECK-NEXT: %[[M:.*]] = "rlx.dequant_matmul"(%[[X]], %[[W]], %[[S]], %[[Z]]) {scheme = "int4/32"} : (tensor<2x64xf32>, tensor<64x6xui8>, tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
// CHECK-NEXT: %[[R:.*]] = "rlx.relu"(%[[M]])
// CHECK-NEXT: return %[[R]]
func.func @int4(%x: tensor<2x64xf32>, %w: tensor<64x6xui8>, %s: tensor<2x12xf32>, %z: tensor<2x12xf32>) -> tensor<2x12xf32> {
  %0 = "rlx_hir.dequant_linear"(%x, %w, %s, %z) {scheme = "int4/32", activation = "relu"} : (tensor<2x64xf32>, tensor<64x6xui8>, tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  return %0 : tensor<2x12xf32>
}

// CHECK-LABEL: func.func @nvfp4
// CHECK-NEXT: %[[M:.*]] = "rlx.dequant_matmul"(%{{.*}}, %{{.*}}, %{{.*}}) {global_scale = 2.500000e-01 : f32, scheme = "nvfp4"} : (tensor<32xf32>, tensor<32x4xui8>, tensor<2x8xui8>) -> tensor<8xf32>
// CHECK-NEXT: return %[[M]]
func.func @nvfp4(%x: tensor<32xf32>, %w: tensor<32x4xui8>, %s: tensor<2x8xui8>) -> tensor<8xf32> {
  %0 = "rlx_hir.dequant_linear"(%x, %w, %s) {scheme = "nvfp4", global_scale = 0.25 : f32, activation = "none"} : (tensor<32xf32>, tensor<32x4xui8>, tensor<2x8xui8>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
