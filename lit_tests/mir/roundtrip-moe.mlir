// Mixture-of-experts ops in MIR: rlx.scatter_add (with out_dim or an init), rlx.grouped_matmul,
// rlx.dequant_grouped_matmul and rlx.dequant_moe_weights print and parse back unchanged.
// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s

// CHECK-LABEL: func.func @moe
// CHECK-SAME: %[[X:.*]]: tensor<5x64xf32>, %[[W:.*]]: tensor<3x64x8xf32>, %[[IDX:.*]]: tensor<5xi64>, %[[Q:.*]]: tensor<3x8x68xui8>, %[[INIT:.*]]: tensor<4x8xf32>
// CHECK: %[[G:.*]] = "rlx.grouped_matmul"(%[[X]], %[[W]], %[[IDX]]) : (tensor<5x64xf32>, tensor<3x64x8xf32>, tensor<5xi64>) -> tensor<5x8xf32>
// CHECK: %[[DG:.*]] = "rlx.dequant_grouped_matmul"(%[[X]], %[[Q]], %[[IDX]]) {scheme = "q8_0"} : (tensor<5x64xf32>, tensor<3x8x68xui8>, tensor<5xi64>) -> tensor<5x8xf32>
// CHECK: "rlx.dequant_moe_weights"(%[[Q]]) {scheme = "q8_0"} : (tensor<3x8x68xui8>) -> tensor<3x64x8xf32>
// CHECK: "rlx.scatter_add"(%[[G]], %[[IDX]]) {out_dim = 4 : i64} : (tensor<5x8xf32>, tensor<5xi64>) -> tensor<4x8xf32>
// CHECK: "rlx.scatter_add"(%[[DG]], %[[IDX]], %[[INIT]]) : (tensor<5x8xf32>, tensor<5xi64>, tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @moe(%x: tensor<5x64xf32>, %w: tensor<3x64x8xf32>, %idx: tensor<5xi64>, %q: tensor<3x8x68xui8>, %init: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<3x64x8xf32>) {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<5x64xf32>, tensor<3x64x8xf32>, tensor<5xi64>) -> tensor<5x8xf32>
  %1 = "rlx.dequant_grouped_matmul"(%x, %q, %idx) {scheme = "q8_0"} : (tensor<5x64xf32>, tensor<3x8x68xui8>, tensor<5xi64>) -> tensor<5x8xf32>
  %2 = "rlx.dequant_moe_weights"(%q) {scheme = "q8_0"} : (tensor<3x8x68xui8>) -> tensor<3x64x8xf32>
  %3 = "rlx.scatter_add"(%0, %idx) {out_dim = 4 : i64} : (tensor<5x8xf32>, tensor<5xi64>) -> tensor<4x8xf32>
  %4 = "rlx.scatter_add"(%1, %idx, %init) : (tensor<5x8xf32>, tensor<5xi64>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3, %4, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<3x64x8xf32>
}
