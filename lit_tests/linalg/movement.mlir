// Data movement: narrow is one tensor.extract_slice, concat is tensor.concat,
// expand collapses stretched size-1 dims away and uses linalg.broadcast, gather
// is a linalg.generic whose body clamps the index and reads the table.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// The affine maps of @gather, printed at the top of the module.
// CHECK-DAG: #[[IDX:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d2)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @narrow
// CHECK-SAME: (%[[X:.*]]: tensor<4x5xf32>)
// CHECK: %[[S:.*]] = tensor.extract_slice %[[X]][0, 3] [4, 2] [1, 1] : tensor<4x5xf32> to tensor<4x2xf32>
// CHECK-NEXT: return %[[S]]
func.func @narrow(%x: tensor<4x5xf32>) -> tensor<4x2xf32> {
  %0 = "rlx.narrow"(%x) {axis = -1 : i64, start = 3 : i64, len = 2 : i64} : (tensor<4x5xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// CHECK-LABEL: func.func @narrow_first_axis
// CHECK: tensor.extract_slice %{{.*}}[2, 0, 0] [1, 1, 6] [1, 1, 1] : tensor<3x1x6xf16> to tensor<1x1x6xf16>
func.func @narrow_first_axis(%x: tensor<3x1x6xf16>) -> tensor<1x1x6xf16> {
  %0 = "rlx.narrow"(%x) {axis = 0 : i64, start = 2 : i64, len = 1 : i64} : (tensor<3x1x6xf16>) -> tensor<1x1x6xf16>
  return %0 : tensor<1x1x6xf16>
}

// An empty slice (even at the end, where extract_slice would reject the offset) reads nothing.
// CHECK-LABEL: func.func @narrow_empty
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<4x0xf32>
// CHECK-NEXT: return %[[E]]
func.func @narrow_empty(%x: tensor<4x5xf32>) -> tensor<4x0xf32> {
  %0 = "rlx.narrow"(%x) {axis = 1 : i64, start = 5 : i64, len = 0 : i64} : (tensor<4x5xf32>) -> tensor<4x0xf32>
  return %0 : tensor<4x0xf32>
}

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xbf16>, %[[B:.*]]: tensor<1x3xbf16>)
// CHECK: %[[R:.*]] = tensor.concat dim(0) %[[A]], %[[B]] : (tensor<2x3xbf16>, tensor<1x3xbf16>) -> tensor<3x3xbf16>
// CHECK-NEXT: return %[[R]]
func.func @concat(%a: tensor<2x3xbf16>, %b: tensor<1x3xbf16>) -> tensor<3x3xbf16> {
  %0 = "rlx.concat"(%a, %b) {axis = -2 : i64} : (tensor<2x3xbf16>, tensor<1x3xbf16>) -> tensor<3x3xbf16>
  return %0 : tensor<3x3xbf16>
}

// CHECK-LABEL: func.func @expand
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x1xf32>)
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1, 2]] : tensor<1x3x1xf32> into tensor<3xf32>
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x4x3x5xf32>
// CHECK: %[[R:.*]] = linalg.broadcast ins(%[[C]] : tensor<3xf32>) outs(%[[INIT]] : tensor<2x4x3x5xf32>) dimensions = [0, 1, 3]
// CHECK: return %[[R]]
func.func @expand(%x: tensor<1x3x1xf32>) -> tensor<2x4x3x5xf32> {
  %0 = "rlx.expand"(%x) {shape = array<i64: 2, 4, 3, 5>} : (tensor<1x3x1xf32>) -> tensor<2x4x3x5xf32>
  return %0 : tensor<2x4x3x5xf32>
}

// Every dimension stretches: collapse to rank 0.
// CHECK-LABEL: func.func @expand_all_ones
// CHECK: %[[C:.*]] = tensor.collapse_shape %{{.*}} [] : tensor<1x1xf16> into tensor<f16>
// CHECK: linalg.broadcast ins(%[[C]] : tensor<f16>) outs(%{{.*}} : tensor<2x3xf16>) dimensions = [0, 1]
func.func @expand_all_ones(%x: tensor<1x1xf16>) -> tensor<2x3xf16> {
  %0 = "rlx.expand"(%x) {shape = array<i64: 2, 3>} : (tensor<1x1xf16>) -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// Only new leading dimensions: no collapse.
// CHECK-LABEL: func.func @expand_leading
// CHECK-SAME: (%[[X:.*]]: tensor<3xbf16>)
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.broadcast ins(%[[X]] : tensor<3xbf16>) outs(%{{.*}} : tensor<2x3xbf16>) dimensions = [0]
func.func @expand_leading(%x: tensor<3xbf16>) -> tensor<2x3xbf16> {
  %0 = "rlx.expand"(%x) {shape = array<i64: 2, 3>} : (tensor<3xbf16>) -> tensor<2x3xbf16>
  return %0 : tensor<2x3xbf16>
}

// CHECK-LABEL: func.func @expand_identity
// CHECK-SAME: (%[[X:.*]]: tensor<4x1xf32>)
// CHECK-NEXT: return %[[X]]
func.func @expand_identity(%x: tensor<4x1xf32>) -> tensor<4x1xf32> {
  %0 = "rlx.expand"(%x) {shape = array<i64: 4, 1>} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// The indices map to the result dims they occupy (d1, d2); the table read
// takes the other dims from linalg.index and the clamped index for axis 1.
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[T:.*]]: tensor<3x7x2xbf16>, %[[I:.*]]: tensor<4x5xi64>)
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<3x4x5x2xbf16>
// CHECK: linalg.generic {indexing_maps = [#[[IDX]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[I]] : tensor<4x5xi64>) outs(%[[INIT]] : tensor<3x4x5x2xbf16>)
// CHECK: ^bb0(%[[IN:.*]]: i64, %{{.*}}: bf16):
// CHECK: %[[P:.*]] = arith.index_cast %[[IN]] : i64 to index
// CHECK: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: %[[LO:.*]] = arith.maxsi %[[P]], %[[ZERO]] : index
// CHECK: %[[LAST:.*]] = arith.constant 6 : index
// CHECK: %[[HI:.*]] = arith.minsi %[[LO]], %[[LAST]] : index
// CHECK: %[[D0:.*]] = linalg.index 0 : index
// CHECK: %[[D3:.*]] = linalg.index 3 : index
// CHECK: %[[V:.*]] = tensor.extract %[[T]][%[[D0]], %[[HI]], %[[D3]]] : tensor<3x7x2xbf16>
// CHECK: linalg.yield %[[V]] : bf16
func.func @gather(%t: tensor<3x7x2xbf16>, %i: tensor<4x5xi64>) -> tensor<3x4x5x2xbf16> {
  %0 = "rlx.gather"(%t, %i) {axis = 1 : i64} : (tensor<3x7x2xbf16>, tensor<4x5xi64>) -> tensor<3x4x5x2xbf16>
  return %0 : tensor<3x4x5x2xbf16>
}

// Embedding lookup (axis 0) with i32 ids.
// CHECK-LABEL: func.func @embedding
// CHECK: linalg.generic
// CHECK: arith.index_cast %{{.*}} : i32 to index
// CHECK: arith.constant 9 : index
// CHECK: %[[D1:.*]] = linalg.index 1 : index
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %[[D1]]] : tensor<10x4xf32>
func.func @embedding(%t: tensor<10x4xf32>, %i: tensor<6xi32>) -> tensor<6x4xf32> {
  %0 = "rlx.gather"(%t, %i) {axis = 0 : i64} : (tensor<10x4xf32>, tensor<6xi32>) -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}
