// The side-tensor schemes of rlx.dequant_matmul print and parse back unchanged: the side tensors
// follow w (one variadic operand, no operandSegmentSizes), nvfp4's global scale is an attribute.
// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s

// CHECK-LABEL: func.func @schemes
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3x64xf32>, %[[W8:[^:]*]]: tensor<64x6xi8>, %[[U8:[^:]*]]: tensor<64x6xui8>, %[[S:[^:]*]]: tensor<2x6xf32>, %[[S4:[^:]*]]: tensor<2x12xf32>, %[[E4M3:[^:]*]]: tensor<4x12xui8>
// CHECK: "rlx.dequant_matmul"(%[[X]], %[[W8]], %[[S]]) {scheme = "int8/32"} : (tensor<2x3x64xf32>, tensor<64x6xi8>, tensor<2x6xf32>) -> tensor<2x3x6xf32>
// CHECK: "rlx.dequant_matmul"(%[[X]], %[[U8]], %[[S]], %[[S]]) {scheme = "int8_asym/32"} : (tensor<2x3x64xf32>, tensor<64x6xui8>, tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x3x6xf32>
// CHECK: "rlx.dequant_matmul"(%[[X]], %[[U8]], %[[S4]], %[[S4]]) {scheme = "int4/32"} : (tensor<2x3x64xf32>, tensor<64x6xui8>, tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x3x12xf32>
// CHECK: "rlx.dequant_matmul"(%[[X]], %[[U8]], %[[E4M3]]) {global_scale = 5.000000e-01 : f32, scheme = "nvfp4"} : (tensor<2x3x64xf32>, tensor<64x6xui8>, tensor<4x12xui8>) -> tensor<2x3x12xf32>
func.func @schemes(%x: tensor<2x3x64xf32>, %w8: tensor<64x6xi8>, %u8: tensor<64x6xui8>, %s: tensor<2x6xf32>, %s4: tensor<2x12xf32>, %e: tensor<4x12xui8>)
    -> (tensor<2x3x6xf32>, tensor<2x3x6xf32>, tensor<2x3x12xf32>, tensor<2x3x12xf32>) {
  %0 = "rlx.dequant_matmul"(%x, %w8, %s) {scheme = "int8/32"} : (tensor<2x3x64xf32>, tensor<64x6xi8>, tensor<2x6xf32>) -> tensor<2x3x6xf32>
  %1 = "rlx.dequant_matmul"(%x, %u8, %s, %s) {scheme = "int8_asym/32"} : (tensor<2x3x64xf32>, tensor<64x6xui8>, tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x3x6xf32>
  %2 = "rlx.dequant_matmul"(%x, %u8, %s4, %s4) {scheme = "int4/32"} : (tensor<2x3x64xf32>, tensor<64x6xui8>, tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x3x12xf32>
  %3 = "rlx.dequant_matmul"(%x, %u8, %e) {scheme = "nvfp4", global_scale = 0.5 : f32} : (tensor<2x3x64xf32>, tensor<64x6xui8>, tensor<4x12xui8>) -> tensor<2x3x12xf32>
  return %0, %1, %2, %3 : tensor<2x3x6xf32>, tensor<2x3x6xf32>, tensor<2x3x12xf32>, tensor<2x3x12xf32>
}
