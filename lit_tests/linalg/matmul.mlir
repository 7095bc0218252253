// rlx.matmul lowers to named linalg ops where one fits, a generic otherwise.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// The broadcast-batch generic's maps (printed at the top of the module).
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d4)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4, d3)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @matmul_2d
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x16xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<4x16xf32>
// CHECK: %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<4x16xf32>)
// CHECK: %[[R:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<4x8xf32>, tensor<8x16xf32>) outs(%[[ACC]] : tensor<4x16xf32>)
// CHECK: return %[[R]]
func.func @matmul_2d(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// Activations times a weight: the batch folds into M for one 2-D matmul.
// CHECK-LABEL: func.func @matmul_batched_weight
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[FLAT]], %{{.*}} : tensor<8x8xf32>, tensor<8x16xf32>)
// CHECK: tensor.expand_shape %[[P]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
func.func @matmul_batched_weight(%a: tensor<2x4x8xf32>, %b: tensor<8x16xf32>) -> tensor<2x4x16xf32> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// CHECK-LABEL: func.func @matmul_batch
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<3x4x8xf32>, tensor<3x8x16xf32>) outs(%{{.*}} : tensor<3x4x16xf32>)
func.func @matmul_batch(%a: tensor<3x4x8xf32>, %b: tensor<3x8x16xf32>) -> tensor<3x4x16xf32> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<3x4x8xf32>, tensor<3x8x16xf32>) -> tensor<3x4x16xf32>
  return %0 : tensor<3x4x16xf32>
}

// Broadcast batch dims: one generic, k as the reduction, size-1 batch read at 0.
// CHECK-LABEL: func.func @matmul_broadcast_batch
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[M]] : f32
// CHECK-NEXT: linalg.yield %[[S]]
func.func @matmul_broadcast_batch(%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x16xf32>) -> tensor<2x3x4x16xf32> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<2x1x4x8xf32>, tensor<3x8x16xf32>) -> tensor<2x3x4x16xf32>
  return %0 : tensor<2x3x4x16xf32>
}

// f16 operands accumulate in f32; the result rounds once to f16.
// CHECK-LABEL: func.func @matmul_f16
// CHECK: %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: %[[P:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<8x16xf16>) outs(%[[ACC]] : tensor<4x16xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[P]] : tensor<4x16xf32>) outs(%{{.*}} : tensor<4x16xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @matmul_f16(%a: tensor<4x8xf16>, %b: tensor<8x16xf16>) -> tensor<4x16xf16> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  return %0 : tensor<4x16xf16>
}
