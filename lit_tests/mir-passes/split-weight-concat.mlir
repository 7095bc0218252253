// rlx-split-weight-concat: x @ concat(Wa, Wb, axis 1) becomes concat(x @ Wa, x @ Wb):
// the (per-call) copy of the weights becomes a copy of the smaller products.
// Three weights split recursively; a concat with another use, or along rows, stays.
// RUN: rlx-opt %s --split-input-file --rlx-split-weight-concat | FileCheck %s

// CHECK-LABEL: func.func @swiglu_weights(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4x8xf32>, %[[U:[^:]*]]: tensor<8x16xf32>, %[[G:[^:]*]]: tensor<8x16xf32>
// CHECK-NEXT: %[[XU:.*]] = "rlx.matmul"(%[[X]], %[[U]]) : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[XG:.*]] = "rlx.matmul"(%[[X]], %[[G]])
// CHECK-NEXT: %[[C:.*]] = "rlx.concat"(%[[XU]], %[[XG]]) {axis = 2 : i64} : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x32xf32>
// CHECK-NEXT: %[[S:.*]] = "rlx.fused_swiglu"(%[[C]])
// CHECK-NEXT: return %[[S]]
func.func @swiglu_weights(%x: tensor<2x4x8xf32>, %u: tensor<8x16xf32>, %g: tensor<8x16xf32>) -> tensor<2x4x16xf32> {
  %w = "rlx.concat"(%u, %g) {axis = 1 : i64} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x32xf32>
  %p = "rlx.matmul"(%x, %w) : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  %s = "rlx.fused_swiglu"(%p) : (tensor<2x4x32xf32>) -> tensor<2x4x16xf32>
  return %s : tensor<2x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @qkv(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32>, %[[Q:[^:]*]]: tensor<8x8xf32>, %[[K:[^:]*]]: tensor<8x4xf32>, %[[V:[^:]*]]: tensor<8x4xf32>
// CHECK-NEXT: %[[XQ:.*]] = "rlx.matmul"(%[[X]], %[[Q]])
// CHECK-NEXT: %[[XK:.*]] = "rlx.matmul"(%[[X]], %[[K]])
// CHECK-NEXT: %[[QK:.*]] = "rlx.concat"(%[[XQ]], %[[XK]]) {axis = 1 : i64}
// CHECK-NEXT: %[[XV:.*]] = "rlx.matmul"(%[[X]], %[[V]])
// CHECK-NEXT: %[[ALL:.*]] = "rlx.concat"(%[[QK]], %[[XV]]) {axis = 1 : i64} : (tensor<4x12xf32>, tensor<4x4xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: return %[[ALL]]
func.func @qkv(%x: tensor<4x8xf32>, %q: tensor<8x8xf32>, %k: tensor<8x4xf32>, %v: tensor<8x4xf32>) -> tensor<4x16xf32> {
  %qk = "rlx.concat"(%q, %k) {axis = 1 : i64} : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x12xf32>
  %w = "rlx.concat"(%qk, %v) {axis = -1 : i64} : (tensor<8x12xf32>, tensor<8x4xf32>) -> tensor<8x16xf32>
  %p = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %p : tensor<4x16xf32>
}

// -----

// CHECK-LABEL: func.func @kept(
// CHECK: %[[W:.*]] = "rlx.concat"
// CHECK: "rlx.matmul"(%{{.*}}, %[[W]])
// CHECK: %[[R:.*]] = "rlx.concat"(%{{.*}}, %{{.*}}) {axis = 0 : i64}
// CHECK: "rlx.matmul"(%{{.*}}, %[[R]])
func.func @kept(%x: tensor<4x8xf32>, %a: tensor<8x4xf32>, %b: tensor<8x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x4xf32>) {
  %w = "rlx.concat"(%a, %b) {axis = 1 : i64} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
  %p = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = "rlx.concat"(%y, %y) {axis = 0 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %s = "rlx.matmul"(%x, %r) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  return %p, %w, %s : tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x4xf32>
}
