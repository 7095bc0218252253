// rlx-reshape-stores: a reshaped result stored into an arena slot is stored unreshaped into the
// reshaped slot, so eliminate-empty-tensors lets its loop nest write the slot (no buffer, no copy).
// A store that is not restrict / writable, or of a reshape with another use, stays.
// RUN: rlx-opt %s --split-input-file --rlx-reshape-stores | FileCheck %s
// RUN: rlx-opt %s --split-input-file --rlx-reshape-stores --eliminate-empty-tensors | FileCheck %s --check-prefix=EMPTY

#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>

// CHECK-LABEL: func.func @rope_like(
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x4x2x2x8xf32>, %[[A:[^:]*]]: memref<?xi8>
// CHECK: %[[G:.*]] = linalg.generic
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[V:.*]] = memref.view %[[A]]
// CHECK-NEXT: %[[E:.*]] = memref.expand_shape %[[V]] {{\[}}[0], [1], [2, 3, 4]] output_shape [1, 4, 2, 2, 8] : memref<1x4x32xf32> into memref<1x4x2x2x8xf32>
// CHECK-NEXT: bufferization.materialize_in_destination %[[G]] in restrict writable %[[E]] : (tensor<1x4x2x2x8xf32>, memref<1x4x2x2x8xf32>)
// CHECK-NEXT: bufferization.to_tensor %[[V]] restrict
// EMPTY-LABEL: func.func @rope_like(
// EMPTY: %[[E:.*]] = memref.expand_shape
// EMPTY-NEXT: %[[T:.*]] = bufferization.to_tensor %[[E]] restrict writable
// EMPTY-NEXT: linalg.generic {{.*}} outs(%[[T]] : tensor<1x4x2x2x8xf32>)
func.func @rope_like(%x: tensor<1x4x2x2x8xf32>, %arena: memref<?xi8>) -> tensor<1x4x32xf32> {
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<1x4x2x2x8xf32>
  %g = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x4x2x2x8xf32>) outs(%e : tensor<1x4x2x2x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<1x4x2x2x8xf32>
  %r = tensor.collapse_shape %g [[0], [1], [2, 3, 4]] : tensor<1x4x2x2x8xf32> into tensor<1x4x32xf32>
  %v = memref.view %arena[%c0][] : memref<?xi8> to memref<1x4x32xf32>
  bufferization.materialize_in_destination %r in restrict writable %v : (tensor<1x4x32xf32>, memref<1x4x32xf32>) -> ()
  %t = bufferization.to_tensor %v restrict : memref<1x4x32xf32> to tensor<1x4x32xf32>
  return %t : tensor<1x4x32xf32>
}

// -----

// CHECK-LABEL: func.func @expanded(
// CHECK: %[[V:.*]] = memref.view
// CHECK-NEXT: %[[C:.*]] = memref.collapse_shape %[[V]] {{\[}}[0, 1], [2]] : memref<2x3x4xf32> into memref<6x4xf32>
// CHECK-NEXT: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[C]] : (tensor<6x4xf32>, memref<6x4xf32>)
func.func @expanded(%x: tensor<6x4xf32>, %arena: memref<?xi8>) -> tensor<2x3x4xf32> {
  %c0 = arith.constant 0 : index
  %r = tensor.expand_shape %x [[0, 1], [2]] output_shape [2, 3, 4] : tensor<6x4xf32> into tensor<2x3x4xf32>
  %v = memref.view %arena[%c0][] : memref<?xi8> to memref<2x3x4xf32>
  bufferization.materialize_in_destination %r in restrict writable %v : (tensor<2x3x4xf32>, memref<2x3x4xf32>) -> ()
  %t = bufferization.to_tensor %v restrict : memref<2x3x4xf32> to tensor<2x3x4xf32>
  return %t : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @kept(
// CHECK: %[[R:.*]] = tensor.collapse_shape
// CHECK: bufferization.materialize_in_destination %[[R]] in writable
// CHECK: %[[S:.*]] = tensor.collapse_shape
// CHECK: bufferization.materialize_in_destination %[[S]] in restrict writable
// CHECK-NOT: memref.expand_shape
func.func @kept(%x: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>, %arena: memref<?xi8>) -> (tensor<6x4xf32>, tensor<6x4xf32>) {
  %c0 = arith.constant 0 : index
  %c96 = arith.constant 96 : index
  %r = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
  %v = memref.view %arena[%c0][] : memref<?xi8> to memref<6x4xf32>
  bufferization.materialize_in_destination %r in writable %v : (tensor<6x4xf32>, memref<6x4xf32>) -> ()
  %s = tensor.collapse_shape %y [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
  %w = memref.view %arena[%c96][] : memref<?xi8> to memref<6x4xf32>
  bufferization.materialize_in_destination %s in restrict writable %w : (tensor<6x4xf32>, memref<6x4xf32>) -> ()
  return %r, %s : tensor<6x4xf32>, tensor<6x4xf32>
}
