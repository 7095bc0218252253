// rlx.dequant_gather lowers to a loop over the picked rows (indices flattened): each index is
// clamped to [0, rows - 1], then that row's blocks (and their sub-blocks) are decoded with
// rlx.dequant_matmul's decoders and written into the row of the result (vector.transfer_write of
// a sub-block's weights).  Only the picked rows of the table are read; the result is reshaped to
// indices.shape + [K] at the end.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @q8_0
// CHECK-SAME: %[[T:.*]]: tensor<5x68xi8>, %[[I:.*]]: tensor<2x3xi64>) -> tensor<2x3x64xf32>
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[I]] {{\[\[}}0, 1]] : tensor<2x3xi64> into tensor<6xi64>
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<6x64xf32>
// CHECK: %[[ROWS:.*]] = scf.for %[[N:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[EMPTY]]) -> (tensor<6x64xf32>)
// CHECK: %[[IDX:.*]] = tensor.extract %[[FLAT]][%[[N]]] : tensor<6xi64>
// CHECK: %[[CAST:.*]] = arith.index_cast %[[IDX]] : i64 to index
// CHECK: %[[LOW:.*]] = arith.maxsi %[[CAST]], %{{.*}} : index
// CHECK: %[[ROW:.*]] = arith.minsi %[[LOW]], %[[C4:.*]] : index
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step
// CHECK: vector.transfer_read %[[T]][%[[ROW]], %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<5x68xi8>, vector<32xi8>
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%[[N]], %{{.*}}] {in_bounds = [true]} : vector<32xf32>, tensor<6x64xf32>
// CHECK: tensor.expand_shape %{{.*}} output_shape [2, 3, 64] : tensor<384xf32> into tensor<2x3x64xf32>
func.func @q8_0(%t: tensor<5x68xui8>, %i: tensor<2x3xi64>) -> tensor<2x3x64xf32> {
  %0 = "rlx.dequant_gather"(%t, %i) {scheme = "q8_0"} : (tensor<5x68xui8>, tensor<2x3xi64>) -> tensor<2x3x64xf32>
  return %0 : tensor<2x3x64xf32>
}

// Q4_K decodes a whole block at once: 8 sub-blocks of 32 weights written per block.
// CHECK-LABEL: func.func @q4_k
// CHECK: scf.for
// CHECK: scf.for
// CHECK-COUNT-8: vector.transfer_write %{{.*}} : vector<32xf32>, tensor<1x256xf32>
func.func @q4_k(%t: tensor<3x144xui8>, %i: tensor<1xi32>) -> tensor<1x256xf32> {
  %0 = "rlx.dequant_gather"(%t, %i) {scheme = "q4_k"} : (tensor<3x144xui8>, tensor<1xi32>) -> tensor<1x256xf32>
  return %0 : tensor<1x256xf32>
}
