// rlx.matmul lowers to 2-D linalg.matmul ops (the GEMM kernel's input): batch dims fold into M
// against a 2-D weight; a batched product is one linalg.matmul per batch.
// RUN: rlx-opt %s --rlx-mir-to-linalg --canonicalize | FileCheck %s

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

// Three batches (fewer than 4): an scf.for, each batch's GEMM split across threads later.
// CHECK-LABEL: func.func @matmul_batch
// CHECK-SAME: (%[[A:.*]]: tensor<3x4x8xf32>, %[[B:.*]]: tensor<3x8x16xf32>)
// CHECK: scf.for %[[I:.*]] = {{.*}} iter_args(%[[OUT:.*]] = %{{.*}}) -> (tensor<3x4x16xf32>)
// CHECK: %[[AI:.*]] = tensor.extract_slice %[[A]][%[[I]], 0, 0] [1, 4, 8] [1, 1, 1] : tensor<3x4x8xf32> to tensor<4x8xf32>
// CHECK: %[[BI:.*]] = tensor.extract_slice %[[B]][%[[I]], 0, 0] [1, 8, 16] [1, 1, 1] : tensor<3x8x16xf32> to tensor<8x16xf32>
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[AI]], %[[BI]] : tensor<4x8xf32>, tensor<8x16xf32>)
// CHECK: tensor.insert_slice %[[P]] into %[[OUT]][%[[I]], 0, 0] [1, 4, 16] [1, 1, 1]
// CHECK-NOT: linalg.batch_matmul
func.func @matmul_batch(%a: tensor<3x4x8xf32>, %b: tensor<3x8x16xf32>) -> tensor<3x4x16xf32> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<3x4x8xf32>, tensor<3x8x16xf32>) -> tensor<3x4x16xf32>
  return %0 : tensor<3x4x16xf32>
}

// Broadcast batch dims: each operand broadcast to the result's [2, 3] batch (linalg.broadcast),
// folded to 6 batches; 6 >= 4 batches run in an scf.forall (threads share the batches).
// CHECK-LABEL: func.func @matmul_broadcast_batch
// CHECK: linalg.broadcast ins(%{{.*}} : tensor<2x4x8xf32>) outs(%{{.*}} : tensor<2x3x4x8xf32>) dimensions = [1]
// CHECK: linalg.broadcast ins(%{{.*}} : tensor<3x8x16xf32>) outs(%{{.*}} : tensor<2x3x8x16xf32>) dimensions = [0]
// CHECK: scf.forall (%[[I:.*]]) in (6) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<6x4x16xf32>)
// CHECK: %[[P:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>)
// CHECK: tensor.parallel_insert_slice %[[P]] into %[[OUT]][%[[I]], 0, 0] [1, 4, 16] [1, 1, 1] : tensor<4x16xf32> into tensor<6x4x16xf32>
// CHECK: tensor.expand_shape %{{.*}} output_shape [2, 3, 4, 16] : tensor<6x4x16xf32> into tensor<2x3x4x16xf32>
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
