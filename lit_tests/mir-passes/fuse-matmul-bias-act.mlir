// rlx-fuse-matmul-bias-act: matmul by a 2-D weight + [N] bias (+ one activation)
// into rlx.fused_matmul_bias_act.
// RUN: rlx-opt %s --rlx-fuse-matmul-bias-act | FileCheck %s

// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[F:.*]] = "rlx.fused_matmul_bias_act"(%[[X]], %[[W]], %[[B]]) {activation = "gelu"} : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: return %[[F]]
func.func @gelu(%x: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<2x4x16xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %2 = "rlx.gelu"(%1) : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %2 : tensor<2x4x16xf32>
}

// Bias first; no activation.
// CHECK-LABEL: func.func @bias_first
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf16>, %[[W:.*]]: tensor<8x16xf16>, %[[B:.*]]: tensor<16xf16>)
// CHECK-NEXT: %[[F:.*]] = "rlx.fused_matmul_bias_act"(%[[X]], %[[W]], %[[B]]) {activation = "none"}
// CHECK-NEXT: return %[[F]]
func.func @bias_first(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>, %b: tensor<16xf16>) -> tensor<4x16xf16> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %1 = "rlx.add"(%b, %0) : (tensor<16xf16>, tensor<4x16xf16>) -> tensor<4x16xf16>
  return %1 : tensor<4x16xf16>
}

// Every supported activation; exp is not one, so it stays after a fused "none".
// CHECK-LABEL: func.func @activations
// CHECK: activation = "relu"
// CHECK: activation = "gelu_approx"
// CHECK: activation = "silu"
// CHECK: activation = "sigmoid"
// CHECK: activation = "tanh"
// CHECK: %[[N:.*]] = "rlx.fused_matmul_bias_act"{{.*}}activation = "none"
// CHECK-NEXT: "rlx.exp"(%[[N]])
// CHECK-NOT: "rlx.matmul"
// CHECK-NOT: "rlx.add"
func.func @activations(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.relu"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.matmul"(%2, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %4 = "rlx.add"(%3, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %5 = "rlx.gelu_approx"(%4) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = "rlx.matmul"(%5, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %7 = "rlx.add"(%6, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %8 = "rlx.silu"(%7) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %9 = "rlx.matmul"(%8, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %10 = "rlx.add"(%9, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %11 = "rlx.sigmoid"(%10) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %12 = "rlx.matmul"(%11, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %13 = "rlx.add"(%12, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %14 = "rlx.tanh"(%13) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %15 = "rlx.matmul"(%14, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %16 = "rlx.add"(%15, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %17 = "rlx.exp"(%16) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %17 : tensor<4x8xf32>
}

// The biased sum has a second use: the add fuses, the activation stays.
// CHECK-LABEL: func.func @sum_used_twice
// CHECK-NEXT: %[[F:.*]] = "rlx.fused_matmul_bias_act"{{.*}}activation = "none"
// CHECK-NEXT: %[[R:.*]] = "rlx.relu"(%[[F]])
// CHECK-NEXT: return %[[R]], %[[F]]
func.func @sum_used_twice(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.relu"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// Left alone: a product with another use, a batched weight, a bias that is not
// [N], a full-shape addend.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: rlx.fused_matmul_bias_act
// CHECK-COUNT-4: "rlx.matmul"
// CHECK-NOT: rlx.fused_matmul_bias_act
func.func @not_fused(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %wb: tensor<2x8x8xf32>, %b: tensor<8xf32>,
                     %b2: tensor<1x8xf32>, %full: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.add"(%0, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.matmul"(%x, %wb) : (tensor<4x8xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32>
  %3 = "rlx.add"(%2, %b) : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %4 = "rlx.matmul"(%1, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %5 = "rlx.add"(%4, %b2) : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %6 = "rlx.matmul"(%5, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %7 = "rlx.add"(%6, %full) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1, %3, %5, %7 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
