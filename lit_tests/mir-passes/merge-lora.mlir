// rlx-merge-lora: an rlx.lora_matmul whose w, a and b are constants (a frozen adapter) becomes an
// rlx.matmul by one constant W + scale * A @ B, folded at compile time; the old constants go.
// Adapters passed as arguments are left alone.
// RUN: rlx-opt %s --rlx-merge-lora | FileCheck %s

// W + 0.5 * A @ B with A = [1, 0, 2, 0.5]^T and B = [2, -1].
// CHECK-LABEL: func.func @frozen
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[M:.*]] = "rlx.constant"() {value = dense<{{\[\[}}2.000000e+00, 1.500000e+00], [3.000000e+00, 4.000000e+00], [7.000000e+00, 5.000000e+00], [7.500000e+00, 7.750000e+00]]> : tensor<4x2xf32>}
// CHECK-NEXT: %[[Y:.*]] = "rlx.matmul"(%[[X]], %[[M]]) : (tensor<2x3x4xf32>, tensor<4x2xf32>) -> tensor<2x3x2xf32>
// CHECK-NEXT: %[[Z:.*]] = "rlx.matmul"(%[[X]], %[[M]])
// CHECK-NEXT: return %[[Y]], %[[Z]]
func.func @frozen(%x: tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xf32>) {
  %w = "rlx.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>} : () -> tensor<4x2xf32>
  %a = "rlx.constant"() {value = dense<[[1.0], [0.0], [2.0], [0.5]]> : tensor<4x1xf32>} : () -> tensor<4x1xf32>
  %b = "rlx.constant"() {value = dense<[[2.0, -1.0]]> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 0.5 : f32} : (tensor<2x3x4xf32>, tensor<4x2xf32>, tensor<4x1xf32>, tensor<1x2xf32>) -> tensor<2x3x2xf32>
  %1 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 0.5 : f32} : (tensor<2x3x4xf32>, tensor<4x2xf32>, tensor<4x1xf32>, tensor<1x2xf32>) -> tensor<2x3x2xf32>
  return %0, %1 : tensor<2x3x2xf32>, tensor<2x3x2xf32>
}

// A splat adapter in f16 (r = 2): W + 2 * (A @ B) = 1 + 2 * (2 * 0.25 * 0.5) = 1.5 everywhere.
// CHECK-LABEL: func.func @splat_f16
// CHECK-NEXT: %[[M:.*]] = "rlx.constant"() {value = dense<1.500000e+00> : tensor<3x2xf16>}
// CHECK-NEXT: "rlx.matmul"(%{{.*}}, %[[M]])
func.func @splat_f16(%x: tensor<5x3xf16>) -> tensor<5x2xf16> {
  %w = "rlx.constant"() {value = dense<1.0> : tensor<3x2xf16>} : () -> tensor<3x2xf16>
  %a = "rlx.constant"() {value = dense<0.25> : tensor<3x2xf16>} : () -> tensor<3x2xf16>
  %b = "rlx.constant"() {value = dense<0.5> : tensor<2x2xf16>} : () -> tensor<2x2xf16>
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 2.0 : f32} : (tensor<5x3xf16>, tensor<3x2xf16>, tensor<3x2xf16>, tensor<2x2xf16>) -> tensor<5x2xf16>
  return %0 : tensor<5x2xf16>
}

// The base weight is frozen, the adapter is not (it may change between calls): unchanged.
// CHECK-LABEL: func.func @trainable
// CHECK: "rlx.lora_matmul"
// CHECK-NOT: "rlx.matmul"
func.func @trainable(%x: tensor<3x4xf32>, %a: tensor<4x1xf32>, %b: tensor<1x2xf32>) -> tensor<3x2xf32> {
  %w = "rlx.constant"() {value = dense<1.0> : tensor<4x2xf32>} : () -> tensor<4x2xf32>
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 0.5 : f32} : (tensor<3x4xf32>, tensor<4x2xf32>, tensor<4x1xf32>, tensor<1x2xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// The adapter is frozen, the base weight is an argument: merging would form W + A @ B per call.
// CHECK-LABEL: func.func @base_argument
// CHECK: "rlx.lora_matmul"
// CHECK-NOT: "rlx.matmul"
func.func @base_argument(%x: tensor<3x4xf32>, %w: tensor<4x2xf32>) -> tensor<3x2xf32> {
  %a = "rlx.constant"() {value = dense<1.0> : tensor<4x1xf32>} : () -> tensor<4x1xf32>
  %b = "rlx.constant"() {value = dense<1.0> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 0.5 : f32} : (tensor<3x4xf32>, tensor<4x2xf32>, tensor<4x1xf32>, tensor<1x2xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
