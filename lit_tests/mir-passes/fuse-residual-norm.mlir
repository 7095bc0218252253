// rlx-fuse-residual-norm: rlx.add of equal shapes (+ a [D] bias) feeding a norm
// over the last axis into rlx.fused_residual_{rms,layer}_norm.
// RUN: rlx-opt %s --rlx-fuse-residual-norm | FileCheck %s

// CHECK-LABEL: func.func @rms
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[R:.*]]: tensor<2x4x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[F:.*]] = "rlx.fused_residual_rms_norm"(%[[X]], %[[R]], %[[G]], %[[B]]) {eps = 9.99999974E-6 : f32} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: return %[[F]]
func.func @rms(%x: tensor<2x4x8xf32>, %r: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %0 = "rlx.add"(%x, %r) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %1 = "rlx.rms_norm"(%0, %g, %b) {axis = -1 : i64, eps = 1.0e-5 : f32} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %1 : tensor<2x4x8xf32>
}

// LayerNorm with the axis given as rank - 1; the residual sum has another use
// and stays for it.
// CHECK-LABEL: func.func @layer_kept_sum
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf16>, %[[R:.*]]: tensor<4x8xf16>, %[[G:.*]]: tensor<8xf16>, %[[B:.*]]: tensor<8xf16>)
// CHECK-NEXT: %[[S:.*]] = "rlx.add"(%[[X]], %[[R]])
// CHECK-NEXT: %[[F:.*]] = "rlx.fused_residual_layer_norm"(%[[X]], %[[R]], %[[G]], %[[B]]) {eps = 9.99999997E-7 : f32}
// CHECK-NEXT: return %[[F]], %[[S]]
func.func @layer_kept_sum(%x: tensor<4x8xf16>, %r: tensor<4x8xf16>, %g: tensor<8xf16>, %b: tensor<8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  %0 = "rlx.add"(%x, %r) : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %1 = "rlx.layer_norm"(%0, %g, %b) {axis = 1 : i64, eps = 1.0e-6 : f32} : (tensor<4x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
  return %1, %0 : tensor<4x8xf16>, tensor<4x8xf16>
}

// A [D] bias on the sum (either operand order) becomes the fused op's bias.
// CHECK-LABEL: func.func @bias
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[R:.*]]: tensor<4x8xf32>, %[[D:.*]]: tensor<8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[F1:.*]] = "rlx.fused_residual_rms_norm"(%[[X]], %[[R]], %[[D]], %[[G]], %[[B]])
// CHECK-NEXT: %[[F2:.*]] = "rlx.fused_residual_layer_norm"(%[[R]], %[[X]], %[[D]], %[[G]], %[[B]])
// CHECK-NEXT: return %[[F1]], %[[F2]]
func.func @bias(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %d: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = "rlx.add"(%x, %r) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.add"(%0, %d) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.rms_norm"(%1, %g, %b) {axis = -1 : i64, eps = 1.0e-6 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.add"(%r, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "rlx.add"(%d, %3) : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = "rlx.layer_norm"(%4, %g, %b) {axis = -1 : i64, eps = 1.0e-6 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %2, %5 : tensor<4x8xf32>, tensor<4x8xf32>
}

// Left alone: a norm over another axis, a broadcasting add, a bias that is not [D].
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: fused_residual
// CHECK: "rlx.rms_norm"
// CHECK-NOT: fused_residual
// CHECK: "rlx.rms_norm"
// CHECK-NOT: fused_residual
// CHECK: "rlx.layer_norm"
// CHECK-NOT: fused_residual
func.func @not_fused(%x: tensor<8x8xf32>, %r: tensor<8x8xf32>, %row: tensor<1x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = "rlx.add"(%x, %r) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = "rlx.rms_norm"(%0, %g, %b) {axis = 0 : i64, eps = 1.0e-6 : f32} : (tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %2 = "rlx.add"(%x, %row) : (tensor<8x8xf32>, tensor<1x8xf32>) -> tensor<8x8xf32>
  %3 = "rlx.rms_norm"(%2, %g, %b) {axis = -1 : i64, eps = 1.0e-6 : f32} : (tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %4 = "rlx.add"(%0, %row) : (tensor<8x8xf32>, tensor<1x8xf32>) -> tensor<8x8xf32>
  %5 = "rlx.layer_norm"(%4, %g, %b) {axis = -1 : i64, eps = 1.0e-6 : f32} : (tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  return %1, %3, %5 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}
