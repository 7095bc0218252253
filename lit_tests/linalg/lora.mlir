// rlx.lora_matmul lowers to three 2-D linalg.matmuls sharing one accumulator: the skinny x @ a
// ([M, r]), scaled; (scale * x @ a) @ b initialises the [M, N] accumulator; x @ w accumulates into
// it.  w + scale * a @ b is never formed (no matmul of a with b).  Batch dims fold into M.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s --implicit-check-not=linalg.matmul

// CHECK-LABEL: func.func @batched
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x64xf32>, %[[W:.*]]: tensor<64x32xf32>, %[[A:.*]]: tensor<64x4xf32>, %[[B:.*]]: tensor<4x32xf32>)
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<2x3x64xf32> into tensor<6x64xf32>
// CHECK: %[[Z1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<6x4xf32>)
// CHECK: %[[DOWN:.*]] = linalg.matmul ins(%[[ROWS]], %[[A]] : tensor<6x64xf32>, tensor<64x4xf32>) outs(%[[Z1]] : tensor<6x4xf32>)
// CHECK: %[[SCALE:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[SCALED:.*]] = linalg.generic
// CHECK-SAME: ins(%[[DOWN]] : tensor<6x4xf32>)
// CHECK: arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK: %[[Z2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<6x32xf32>)
// CHECK: %[[UP:.*]] = linalg.matmul ins(%[[SCALED]], %[[B]] : tensor<6x4xf32>, tensor<4x32xf32>) outs(%[[Z2]] : tensor<6x32xf32>)
// CHECK: %[[Y:.*]] = linalg.matmul ins(%[[ROWS]], %[[W]] : tensor<6x64xf32>, tensor<64x32xf32>) outs(%[[UP]] : tensor<6x32xf32>)
// CHECK: %[[R:.*]] = tensor.expand_shape %[[Y]] {{\[\[}}0, 1], [2]] output_shape [2, 3, 32] : tensor<6x32xf32> into tensor<2x3x32xf32>
// CHECK: return %[[R]]
func.func @batched(%x: tensor<2x3x64xf32>, %w: tensor<64x32xf32>, %a: tensor<64x4xf32>, %b: tensor<4x32xf32>) -> tensor<2x3x32xf32> {
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 0.5 : f32} : (tensor<2x3x64xf32>, tensor<64x32xf32>, tensor<64x4xf32>, tensor<4x32xf32>) -> tensor<2x3x32xf32>
  return %0 : tensor<2x3x32xf32>
}

// f16: every product accumulates in f32 (x @ a stays f32) and the result rounds once.
// CHECK-LABEL: func.func @f16
// CHECK: %[[DOWN:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<5x8xf16>, tensor<8x2xf16>) outs(%{{.*}} : tensor<5x2xf32>)
// CHECK: %[[UP:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<5x2xf32>, tensor<2x6xf16>) outs(%{{.*}} : tensor<5x6xf32>)
// CHECK: %[[Y:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<5x8xf16>, tensor<8x6xf16>) outs(%[[UP]] : tensor<5x6xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[Y]] : tensor<5x6xf32>) outs(%{{.*}} : tensor<5x6xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @f16(%x: tensor<5x8xf16>, %w: tensor<8x6xf16>, %a: tensor<8x2xf16>, %b: tensor<2x6xf16>) -> tensor<5x6xf16> {
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 2.0 : f32} : (tensor<5x8xf16>, tensor<8x6xf16>, tensor<8x2xf16>, tensor<2x6xf16>) -> tensor<5x6xf16>
  return %0 : tensor<5x6xf16>
}
