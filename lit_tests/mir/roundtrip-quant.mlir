// Quantised weights in MIR: ui8 (and i8) tensors and rlx.dequant_matmul print and parse back unchanged.
// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s

// CHECK-LABEL: func.func @gguf
// CHECK-SAME: %[[X:.*]]: tensor<2x3x512xf32>, %[[W:.*]]: tensor<7x288xui8>, %[[W6:.*]]: tensor<7x420xui8>
// CHECK: %[[A:.*]] = "rlx.dequant_matmul"(%[[X]], %[[W]]) {scheme = "q4_k"} : (tensor<2x3x512xf32>, tensor<7x288xui8>) -> tensor<2x3x7xf32>
// CHECK: %[[B:.*]] = "rlx.dequant_matmul"(%[[X]], %[[W6]]) {scheme = "q6_k"} : (tensor<2x3x512xf32>, tensor<7x420xui8>) -> tensor<2x3x7xf32>
func.func @gguf(%x: tensor<2x3x512xf32>, %w: tensor<7x288xui8>, %w6: tensor<7x420xui8>) -> (tensor<2x3x7xf32>, tensor<2x3x7xf32>) {
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_k"} : (tensor<2x3x512xf32>, tensor<7x288xui8>) -> tensor<2x3x7xf32>
  %1 = "rlx.dequant_matmul"(%x, %w6) {scheme = "q6_k"} : (tensor<2x3x512xf32>, tensor<7x420xui8>) -> tensor<2x3x7xf32>
  return %0, %1 : tensor<2x3x7xf32>, tensor<2x3x7xf32>
}

// CHECK-LABEL: func.func @casts
// CHECK: "rlx.cast"(%{{.*}}) : (tensor<4xui8>) -> tensor<4xf32>
// CHECK: "rlx.cast"(%{{.*}}) : (tensor<4xf32>) -> tensor<4xi8>
func.func @casts(%b: tensor<4xui8>) -> tensor<4xi8> {
  %0 = "rlx.cast"(%b) : (tensor<4xui8>) -> tensor<4xf32>
  %1 = "rlx.cast"(%0) : (tensor<4xf32>) -> tensor<4xi8>
  return %1 : tensor<4xi8>
}

// CHECK-LABEL: func.func @gather
// CHECK: "rlx.dequant_gather"(%{{.*}}, %{{.*}}) {scheme = "q6_k"} : (tensor<97x210xui8>, tensor<1x7xi64>) -> tensor<1x7x256xf32>
func.func @gather(%t: tensor<97x210xui8>, %i: tensor<1x7xi64>) -> tensor<1x7x256xf32> {
  %0 = "rlx.dequant_gather"(%t, %i) {scheme = "q6_k"} : (tensor<97x210xui8>, tensor<1x7xi64>) -> tensor<1x7x256xf32>
  return %0 : tensor<1x7x256xf32>
}
