// rlx.lora_matmul prints and parses back unchanged; its result type is inferred from x, w, a, b.
// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s

// CHECK-LABEL: func.func @lora
// CHECK-SAME: %[[X:.*]]: tensor<2x3x64xf32>, %[[W:.*]]: tensor<64x32xf32>, %[[A:.*]]: tensor<64x4xf32>, %[[B:.*]]: tensor<4x32xf32>
// CHECK: "rlx.lora_matmul"(%[[X]], %[[W]], %[[A]], %[[B]]) {scale = 5.000000e-01 : f32} : (tensor<2x3x64xf32>, tensor<64x32xf32>, tensor<64x4xf32>, tensor<4x32xf32>) -> tensor<2x3x32xf32>
func.func @lora(%x: tensor<2x3x64xf32>, %w: tensor<64x32xf32>, %a: tensor<64x4xf32>, %b: tensor<4x32xf32>) -> tensor<2x3x32xf32> {
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 0.5 : f32} : (tensor<2x3x64xf32>, tensor<64x32xf32>, tensor<64x4xf32>, tensor<4x32xf32>) -> tensor<2x3x32xf32>
  return %0 : tensor<2x3x32xf32>
}

// CHECK-LABEL: func.func @bf16
// CHECK: "rlx.lora_matmul"(%{{.*}}) {scale = 2.000000e+00 : f32} : (tensor<5x8xbf16>, tensor<8x6xbf16>, tensor<8x1xbf16>, tensor<1x6xbf16>) -> tensor<5x6xbf16>
func.func @bf16(%x: tensor<5x8xbf16>, %w: tensor<8x6xbf16>, %a: tensor<8x1xbf16>, %b: tensor<1x6xbf16>) -> tensor<5x6xbf16> {
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 2.0 : f32} : (tensor<5x8xbf16>, tensor<8x6xbf16>, tensor<8x1xbf16>, tensor<1x6xbf16>) -> tensor<5x6xbf16>
  return %0 : tensor<5x6xbf16>
}
