// rlx-vmap adds @f_vmap: the batched arguments and every result gain a leading axis of `size`;
// a batched activation against a shared 2-D weight stays one matmul, axes shift by one, and an
// unbatched result is broadcast.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-vmap{size=4})' | FileCheck %s

// CHECK-LABEL: func.func @f(
// CHECK-LABEL: func.func @f_vmap
// CHECK-SAME: (%[[X:.*]]: tensor<4x3x5xf32> {rlx.name = "x"}, %[[W:.*]]: tensor<5x2xf32> {rlx.name = "w", rlx.param})
// CHECK-SAME: -> (tensor<4x2xf32>, tensor<4x5x2xf32>)
// CHECK-NEXT: %[[C:.*]] = "rlx.constant"
// CHECK-NEXT: %[[H:.*]] = "rlx.matmul"(%[[X]], %[[W]]) : (tensor<4x3x5xf32>, tensor<5x2xf32>) -> tensor<4x3x2xf32>
// CHECK-NEXT: %[[S:.*]] = "rlx.softmax"(%[[H]]) {axis = 1 : i64} : (tensor<4x3x2xf32>) -> tensor<4x3x2xf32>
// CHECK-NEXT: %[[R:.*]] = "rlx.reduce"(%[[S]]) {axes = array<i64: 1>, keep_dim = false, kind = "sum"} : (tensor<4x3x2xf32>) -> tensor<4x2xf32>
//       the bias [2] broadcasts against [4, 2] from the right, as it did against [2]
// CHECK-NEXT: %[[B:.*]] = "rlx.add"(%[[R]], %[[C]]) : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
//       w does not depend on x: broadcast to the batch
// CHECK-NEXT: %[[W1:.*]] = "rlx.reshape"(%[[W]]) : (tensor<5x2xf32>) -> tensor<1x5x2xf32>
// CHECK-NEXT: %[[WB:.*]] = "rlx.expand"(%[[W1]]) {shape = array<i64: 4, 5, 2>}
// CHECK-NEXT: return %[[B]], %[[WB]]
func.func @f(%x: tensor<3x5xf32> {rlx.name = "x"}, %w: tensor<5x2xf32> {rlx.name = "w", rlx.param}) -> (tensor<2xf32>, tensor<5x2xf32>) {
  %c = "rlx.constant"() {value = dense<0.5> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "rlx.matmul"(%x, %w) : (tensor<3x5xf32>, tensor<5x2xf32>) -> tensor<3x2xf32>
  %1 = "rlx.softmax"(%0) {axis = 0 : i64} : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %2 = "rlx.reduce"(%1) {axes = array<i64: 0>, keep_dim = false, kind = "sum"} : (tensor<3x2xf32>) -> tensor<2xf32>
  %3 = "rlx.add"(%2, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %3, %w : tensor<2xf32>, tensor<5x2xf32>
}
