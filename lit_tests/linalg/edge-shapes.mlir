// Rank 0 and zero-size dimensions.  A transpose by the identity permutation, rank 0 included
// (a scalar's only permutation, for which linalg.transpose cannot be built), is a linalg.copy
// into a fresh allocation.
// An op whose result has no elements is a tensor.empty, whatever the op: nothing to compute,
// and no slice of a zero-size dimension (MLIR rejects any static offset into one, 0 included).
// A concat skips an operand without elements (a copy of the other).  Copies, not the operand
// itself: the LIR plan gives the result its own slot.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @transpose_rank0_f16
// CHECK-SAME: (%[[X:.*]]: tensor<f16>)
// CHECK-NEXT: %[[INIT:.*]] = bufferization.alloc_tensor() : tensor<f16>
// CHECK-NEXT: %[[R:.*]] = linalg.copy {{.*}} ins(%[[X]] : tensor<f16>) outs(%[[INIT]] : tensor<f16>)
// CHECK-NEXT: return %[[R]] : tensor<f16>
func.func @transpose_rank0_f16(%x: tensor<f16>) -> tensor<f16> {
  %0 = "rlx.transpose"(%x) {perm = array<i64>} : (tensor<f16>) -> tensor<f16>
  return %0 : tensor<f16>
}

// CHECK-LABEL: func.func @transpose_rank0_f32
// CHECK-SAME: (%[[X:.*]]: tensor<f32>)
// CHECK-NEXT: %[[INIT:.*]] = bufferization.alloc_tensor() : tensor<f32>
// CHECK-NEXT: %[[R:.*]] = linalg.copy {{.*}} ins(%[[X]] : tensor<f32>) outs(%[[INIT]] : tensor<f32>)
// CHECK-NEXT: return %[[R]] : tensor<f32>
func.func @transpose_rank0_f32(%x: tensor<f32>) -> tensor<f32> {
  %0 = "rlx.transpose"(%x) {perm = array<i64>} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[INIT:.*]] = bufferization.alloc_tensor() : tensor<2x3xf32>
// CHECK-NEXT: %[[R:.*]] = linalg.copy {{.*}} ins(%[[X]] : tensor<2x3xf32>) outs(%[[INIT]] : tensor<2x3xf32>)
// CHECK-NEXT: return %[[R]] : tensor<2x3xf32>
func.func @transpose_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "rlx.transpose"(%x) {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// A real permutation is still a linalg.transpose, size-1 and size-0 dimensions or not.
// CHECK-LABEL: func.func @transpose_size1
// CHECK: linalg.transpose ins(%{{.*}} : tensor<1x3xf32>) outs(%{{.*}} : tensor<3x1xf32>) permutation = [1, 0]
func.func @transpose_size1(%x: tensor<1x3xf32>) -> tensor<3x1xf32> {
  %0 = "rlx.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<1x3xf32>) -> tensor<3x1xf32>
  return %0 : tensor<3x1xf32>
}

// CHECK-LABEL: func.func @transpose_size0
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<3x0xf32>
// CHECK-NEXT: return %[[E]]
func.func @transpose_size0(%x: tensor<0x3xf32>) -> tensor<3x0xf32> {
  %0 = "rlx.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<0x3xf32>) -> tensor<3x0xf32>
  return %0 : tensor<3x0xf32>
}

// The fuzzer's seed 5117: two empty tensors joined along a non-empty axis.
// CHECK-LABEL: func.func @concat_empty
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<0x1x6xf32>
// CHECK-NEXT: return %[[E]]
func.func @concat_empty(%a: tensor<0x1x3xf32>, %b: tensor<0x1x3xf32>) -> tensor<0x1x6xf32> {
  %0 = "rlx.concat"(%a, %b) {axis = -1 : i64} : (tensor<0x1x3xf32>, tensor<0x1x3xf32>) -> tensor<0x1x6xf32>
  return %0 : tensor<0x1x6xf32>
}

// CHECK-LABEL: func.func @concat_empty_rhs
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %{{.*}}: tensor<0x3xf32>)
// CHECK-NEXT: %[[INIT:.*]] = bufferization.alloc_tensor() : tensor<2x3xf32>
// CHECK-NEXT: %[[R:.*]] = linalg.copy {{.*}} ins(%[[A]] : tensor<2x3xf32>) outs(%[[INIT]] : tensor<2x3xf32>)
// CHECK-NEXT: return %[[R]] : tensor<2x3xf32>
func.func @concat_empty_rhs(%a: tensor<2x3xf32>, %b: tensor<0x3xf32>) -> tensor<2x3xf32> {
  %0 = "rlx.concat"(%a, %b) {axis = 0 : i64} : (tensor<2x3xf32>, tensor<0x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @concat_empty_lhs
// CHECK-SAME: (%{{.*}}: tensor<4x0xbf16>, %[[B:.*]]: tensor<4x2xbf16>)
// CHECK-NEXT: %[[INIT:.*]] = bufferization.alloc_tensor() : tensor<4x2xbf16>
// CHECK-NEXT: %[[R:.*]] = linalg.copy {{.*}} ins(%[[B]] : tensor<4x2xbf16>) outs(%[[INIT]] : tensor<4x2xbf16>)
// CHECK-NEXT: return %[[R]] : tensor<4x2xbf16>
func.func @concat_empty_lhs(%a: tensor<4x0xbf16>, %b: tensor<4x2xbf16>) -> tensor<4x2xbf16> {
  %0 = "rlx.concat"(%a, %b) {axis = 1 : i64} : (tensor<4x0xbf16>, tensor<4x2xbf16>) -> tensor<4x2xbf16>
  return %0 : tensor<4x2xbf16>
}

// A slice of a tensor with a zero-size dimension elsewhere.
// CHECK-LABEL: func.func @narrow_of_empty
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<2x0xf32>
// CHECK-NEXT: return %[[E]]
func.func @narrow_of_empty(%x: tensor<3x0xf32>) -> tensor<2x0xf32> {
  %0 = "rlx.narrow"(%x) {axis = 0 : i64, start = 1 : i64, len = 2 : i64} : (tensor<3x0xf32>) -> tensor<2x0xf32>
  return %0 : tensor<2x0xf32>
}

// CHECK-LABEL: func.func @matmul_no_rows
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<0x5xf32>
// CHECK-NEXT: return %[[E]]
func.func @matmul_no_rows(%a: tensor<0x4xf32>, %b: tensor<4x5xf32>) -> tensor<0x5xf32> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<0x4xf32>, tensor<4x5xf32>) -> tensor<0x5xf32>
  return %0 : tensor<0x5xf32>
}

// Both results of a multi-result op without elements.
// CHECK-LABEL: func.func @gated_delta_net_no_batch
// CHECK-DAG: tensor.empty() : tensor<0x2x3x4xf32>
// CHECK-DAG: tensor.empty() : tensor<0x3x4x4xf32>
// CHECK-NOT: linalg
// CHECK: return
func.func @gated_delta_net_no_batch(%q: tensor<0x2x3x4xf32>, %k: tensor<0x2x3x4xf32>, %v: tensor<0x2x3x4xf32>, %g: tensor<0x2x3xf32>, %b: tensor<0x2x3xf32>, %s: tensor<0x3x4x4xf32>) -> (tensor<0x2x3x4xf32>, tensor<0x3x4x4xf32>) {
  %0:2 = "rlx.gated_delta_net"(%q, %k, %v, %g, %b, %s) {state_size = 4} : (tensor<0x2x3x4xf32>, tensor<0x2x3x4xf32>, tensor<0x2x3x4xf32>, tensor<0x2x3xf32>, tensor<0x2x3xf32>, tensor<0x3x4x4xf32>) -> (tensor<0x2x3x4xf32>, tensor<0x3x4x4xf32>)
  return %0#0, %0#1 : tensor<0x2x3x4xf32>, tensor<0x3x4x4xf32>
}

// A reduction over an empty axis has elements: the identity of its kind, computed as usual.
// CHECK-LABEL: func.func @reduce_empty_axis
// CHECK-SAME: (%[[X:.*]]: tensor<3x0xf32>)
// CHECK: %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[NEG_INF]] : f32) outs(%{{.*}} : tensor<3xf32>)
// CHECK: %[[R:.*]] = linalg.reduce { arith.maximumf } ins(%[[X]] : tensor<3x0xf32>) outs(%[[INIT]] : tensor<3xf32>) dimensions = [1]
// CHECK-NEXT: return %[[R]]
func.func @reduce_empty_axis(%x: tensor<3x0xf32>) -> tensor<3xf32> {
  %0 = "rlx.reduce"(%x) {kind = "max", axes = array<i64: 1>, keep_dim = false} : (tensor<3x0xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
