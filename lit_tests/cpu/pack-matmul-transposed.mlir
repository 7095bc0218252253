// rlx-pack-matmul reads a transposed operand where it lies: a dot_general contracting A's
// first dimension (the weight gradient x^T dy) or B's last (dy w^T) lowers to a
// linalg.transpose feeding linalg.matmul; the kernel views X of A = X^T as [K, M/8, 8]
// (map (d2, d0, d3): one A column's 8 values contiguous) and packs B = Y^T's panels straight
// from Y (inner_dims_pos = [0]: Y's rows become the panel columns), no transposed copy left.
// (canonicalize first, as rlx-lower-to-llvm's inliner does: the lowering's reshapes folded away)
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg,canonicalize,rlx-pack-matmul,canonicalize)' | FileCheck %s

// CHECK-DAG: #[[AT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d0, d3)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d4)>
// CHECK-LABEL: func.func @a_transposed(
// CHECK-SAME: %[[X:[^:]*]]: tensor<130x300xf32>, %[[DY:[^:]*]]: tensor<130x70xf32>
// CHECK-NOT: linalg.transpose
// CHECK: %[[DYP:.*]] = tensor.pad %[[DY]] low[0, 0] high[2, 0]
// CHECK: %[[PANELS:.*]] = linalg.pack %[[DYP]] padding_value(%{{.*}} : f32) outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [32] into %{{.*}} : tensor<132x70xf32> -> tensor<3x132x32xf32>
// CHECK: %[[XP:.*]] = tensor.pad %[[X]] low[0, 0] high[2, 4]
// CHECK: %[[XV:.*]] = tensor.expand_shape %[[XP]] {{\[}}[0], [1, 2]] output_shape [132, 38, 8] : tensor<132x304xf32> into tensor<132x38x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[AT]], #[[B]], #{{.*}}]
// CHECK-SAME: ins(%[[XV]], %[[PANELS]] : tensor<132x38x8xf32>, tensor<3x132x32xf32>)
// CHECK-SAME: rlx.microkernel
// CHECK-NOT: linalg.transpose
func.func @a_transposed(%x: tensor<130x300xf32>, %dy: tensor<130x70xf32>) -> tensor<300x70xf32> {
  %0 = "rlx.dot_general"(%x, %dy) {lhs_batch = array<i64>, lhs_contracting = array<i64: 0>, rhs_batch = array<i64>, rhs_contracting = array<i64: 0>} : (tensor<130x300xf32>, tensor<130x70xf32>) -> tensor<300x70xf32>
  return %0 : tensor<300x70xf32>
}

// -----

// A transposed B is packed even with few rows of A (it cannot be read in place).
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d2)>
// CHECK-DAG: #[[BP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d4)>
// CHECK-LABEL: func.func @b_transposed(
// CHECK-SAME: %[[W:[^:]*]]: tensor<60x90xf32>, %[[DY:[^:]*]]: tensor<70x90xf32>
// CHECK-NOT: linalg.transpose
// CHECK: %[[DYP:.*]] = tensor.pad %[[DY]] low[0, 0] high[0, 2]
// CHECK: %[[PANELS:.*]] = linalg.pack %[[DYP]] padding_value(%{{.*}} : f32) outer_dims_perm = [0, 1] inner_dims_pos = [0] inner_tiles = [32] into %{{.*}} : tensor<70x92xf32> -> tensor<3x92x32xf32>
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[BP]], #{{.*}}]
// CHECK-SAME: ins(%{{.*}}, %[[PANELS]] : tensor<8x8x92xf32>, tensor<3x92x32xf32>)
// CHECK-NOT: linalg.transpose
func.func @b_transposed(%w: tensor<60x90xf32>, %dy: tensor<70x90xf32>) -> tensor<60x70xf32> {
  %0 = "rlx.dot_general"(%w, %dy) {lhs_batch = array<i64>, lhs_contracting = array<i64: 1>, rhs_batch = array<i64>, rhs_contracting = array<i64: 1>} : (tensor<60x90xf32>, tensor<70x90xf32>) -> tensor<60x70xf32>
  return %0 : tensor<60x70xf32>
}

// -----

// Both transposed: C = X^T Y^T, X read as [K, M/8, 8], panels packed from Y's rows.
// CHECK-LABEL: func.func @both_transposed(
// CHECK-SAME: %[[X:[^:]*]]: tensor<64x64xf32>, %[[Y:[^:]*]]: tensor<64x64xf32>
// CHECK-NOT: linalg.transpose
// CHECK-DAG: linalg.pack %[[Y]] outer_dims_perm = [0, 1] inner_dims_pos = [0] inner_tiles = [32]
// CHECK-DAG: tensor.expand_shape %[[X]] {{\[}}[0], [1, 2]] output_shape [64, 8, 8]
// CHECK: rlx.microkernel
func.func @both_transposed(%x: tensor<64x64xf32>, %y: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = "rlx.dot_general"(%x, %y) {lhs_batch = array<i64>, lhs_contracting = array<i64: 0>, rhs_batch = array<i64>, rhs_contracting = array<i64: 1>} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
