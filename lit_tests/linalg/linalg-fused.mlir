// rlx.dot_general lowers to GEMMs: each operand transposed (where needed) to
// [batch..., free..., contracting...] / [batch..., contracting..., free...], folded to
// [B, M, K] / [B, K, N], and one 2-D linalg.matmul per batch (the GEMM kernel's input);
// rlx.fused_matmul_bias_act to the matmul's lowering plus one generic for bias and activation.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s
// RUN: rlx-opt %s --rlx-mir-to-linalg --canonicalize | FileCheck %s --check-prefix=CANON

// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW2:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[ROW3:.*]] = affine_map<(d0, d1, d2) -> (d2)>

// A plain matrix product: one linalg.matmul on the operands.
// CANON-LABEL: func.func @dot_general_matmul
// CANON-SAME: (%[[A:.*]]: tensor<3x4xf32>, %[[B:.*]]: tensor<4x5xf32>)
// CANON: %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3x5xf32>)
// CANON: %[[R:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<3x4xf32>, tensor<4x5xf32>) outs(%[[ACC]] : tensor<3x5xf32>)
// CANON-NOT: linalg.generic
// CANON: return %[[R]]
func.func @dot_general_matmul(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: 1>, rhs_contracting = array<i64: 0>, lhs_batch = array<i64>, rhs_batch = array<i64>} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// Batch dim 0, contraction over lhs (2, 3) against rhs (2, 1): lhs is already
// [batch, free, contracting] (folded to 2x3x20); rhs is transposed to [0, 2, 1, 3] so its
// contracting dims come in lhs's order before its free dim (folded to 2x20x6).  Two batches
// (fewer than 4): an scf.for of GEMMs.
// CANON-LABEL: func.func @dot_general_batch_two_contracting
// CANON-SAME: (%[[A:.*]]: tensor<2x3x4x5xf32>, %[[B:.*]]: tensor<2x5x4x6xf32>)
// CANON: %[[A3:.*]] = tensor.collapse_shape %[[A]] {{\[\[}}0], [1], [2, 3]] : tensor<2x3x4x5xf32> into tensor<2x3x20xf32>
// CANON: %[[BT:.*]] = linalg.transpose ins(%[[B]] : tensor<2x5x4x6xf32>) outs(%{{.*}} : tensor<2x4x5x6xf32>) permutation = [0, 2, 1, 3]
// CANON: %[[B3:.*]] = tensor.collapse_shape %[[BT]] {{\[\[}}0], [1, 2], [3]] : tensor<2x4x5x6xf32> into tensor<2x20x6xf32>
// CANON: scf.for %[[I:.*]] = {{.*}} iter_args(%[[OUT:.*]] = %{{.*}}) -> (tensor<2x3x6xf32>)
// CANON: %[[AI:.*]] = tensor.extract_slice %[[A3]][%[[I]], 0, 0] [1, 3, 20] [1, 1, 1] : tensor<2x3x20xf32> to tensor<3x20xf32>
// CANON: %[[BI:.*]] = tensor.extract_slice %[[B3]][%[[I]], 0, 0] [1, 20, 6] [1, 1, 1] : tensor<2x20x6xf32> to tensor<20x6xf32>
// CANON: %[[P:.*]] = linalg.matmul ins(%[[AI]], %[[BI]] : tensor<3x20xf32>, tensor<20x6xf32>)
// CANON: tensor.insert_slice %[[P]] into %[[OUT]][%[[I]], 0, 0] [1, 3, 6] [1, 1, 1] : tensor<3x6xf32> into tensor<2x3x6xf32>
func.func @dot_general_batch_two_contracting(%a: tensor<2x3x4x5xf32>, %b: tensor<2x5x4x6xf32>) -> tensor<2x3x6xf32> {
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: 2, 3>, rhs_contracting = array<i64: 2, 1>, lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>} : (tensor<2x3x4x5xf32>, tensor<2x5x4x6xf32>) -> tensor<2x3x6xf32>
  return %0 : tensor<2x3x6xf32>
}

// Contraction over the leading dims: lhs transposed to [free, contracting]; bf16 accumulates
// in f32 (linalg.matmul on bf16 operands into an f32 accumulator) and rounds once.
// CANON-LABEL: func.func @dot_general_leading_bf16
// CANON: %[[AT:.*]] = linalg.transpose ins(%{{.*}} : tensor<4x3xbf16>) outs(%{{.*}} : tensor<3x4xbf16>) permutation = [1, 0]
// CANON: %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3x5xf32>)
// CANON: %[[P:.*]] = linalg.matmul ins(%[[AT]], %{{.*}} : tensor<3x4xbf16>, tensor<4x5xbf16>) outs(%[[ACC]] : tensor<3x5xf32>)
// CANON: linalg.generic
// CANON-SAME: ins(%[[P]] : tensor<3x5xf32>) outs(%{{.*}} : tensor<3x5xbf16>)
// CANON: arith.truncf %{{.*}} : f32 to bf16
func.func @dot_general_leading_bf16(%a: tensor<4x3xbf16>, %b: tensor<4x5xbf16>) -> tensor<3x5xbf16> {
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: 0>, rhs_contracting = array<i64: 0>, lhs_batch = array<i64>, rhs_batch = array<i64>} : (tensor<4x3xbf16>, tensor<4x5xbf16>) -> tensor<3x5xbf16>
  return %0 : tensor<3x5xbf16>
}

// Every dim contracted: a [1, 7] x [7, 1] GEMM, collapsed to the rank-0 result.
// CANON-LABEL: func.func @dot_general_vector
// CANON: %[[P:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<1x7xf32>, tensor<7x1xf32>) outs(%{{.*}} : tensor<1x1xf32>)
// CANON: tensor.collapse_shape %[[P]] [] : tensor<1x1xf32> into tensor<f32>
func.func @dot_general_vector(%a: tensor<7xf32>, %b: tensor<7xf32>) -> tensor<f32> {
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: 0>, rhs_contracting = array<i64: 0>, lhs_batch = array<i64>, rhs_batch = array<i64>} : (tensor<7xf32>, tensor<7xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// CHECK-LABEL: func.func @fused_relu
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[BIAS:.*]]: tensor<16xf32>)
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[X]], %[[W]] : tensor<4x8xf32>, tensor<8x16xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[P]], %[[BIAS]] : tensor<4x16xf32>, tensor<16xf32>)
// CHECK: ^bb0(%[[V:.*]]: f32, %[[C:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[H:.*]] = arith.addf %[[V]], %[[C]] : f32
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[A:.*]] = arith.maximumf %[[H]], %[[Z]] : f32
// CHECK-NEXT: linalg.yield %[[A]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @fused_relu(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = "relu"} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// Batched input: the matmul's fold of the batch into M, then the bias generic.
// CHECK-LABEL: func.func @fused_none_batched
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[FLAT]], %{{.*}} : tensor<8x8xf32>, tensor<8x16xf32>)
// CHECK: %[[E:.*]] = tensor.expand_shape %[[P]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 16]
// CHECK: linalg.generic {indexing_maps = [#[[ID3]], #[[ROW3]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[E]], %{{.*}} : tensor<2x4x16xf32>, tensor<16xf32>)
// CHECK: ^bb0(%[[V:.*]]: f32, %[[C:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[H:.*]] = arith.addf %[[V]], %[[C]] : f32
// CHECK-NEXT: linalg.yield %[[H]]
func.func @fused_none_batched(%x: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<2x4x16xf32> {
  %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = "none"} : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// bf16: the product stays f32 into the bias generic; one rounding at the end.
// CHECK-LABEL: func.func @fused_silu_bf16
// CHECK: %[[P:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[P]], %{{.*}} : tensor<4x16xf32>, tensor<16xbf16>) outs(%{{.*}} : tensor<4x16xbf16>)
// CHECK: ^bb0(%[[V:.*]]: f32, %[[C:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[CW:.*]] = arith.extf %[[C]] : bf16 to f32
// CHECK-NEXT: %[[H:.*]] = arith.addf %[[V]], %[[CW]] : f32
// CHECK: %[[N:.*]] = arith.negf %[[H]]
// CHECK: math.exp %[[N]]
// CHECK: %[[S:.*]] = arith.mulf %[[H]], %{{.*}} : f32
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[S]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[T]]
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @fused_silu_bf16(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xbf16>) -> tensor<4x16xbf16> {
  %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = "silu"} : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
  return %0 : tensor<4x16xbf16>
}

// The other activations reuse the activation ops' formulas.
// CHECK-LABEL: func.func @fused_gelu
// CHECK: linalg.matmul
// CHECK: arith.constant 0.707106769 : f32
// CHECK: math.erf
func.func @fused_gelu(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = "gelu"} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @fused_gelu_approx
// CHECK: arith.constant 4.471500e-02 : f32
// CHECK: arith.constant 0.797884583 : f32
// CHECK: math.tanh
func.func @fused_gelu_approx(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = "gelu_approx"} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @fused_sigmoid
// CHECK: ^bb0(%[[V:.*]]: f32, %[[C:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[H:.*]] = arith.addf %[[V]], %[[C]] : f32
// CHECK: %[[N:.*]] = arith.negf %[[H]]
// CHECK: %[[E:.*]] = math.exp %[[N]]
// CHECK: %[[D:.*]] = arith.addf %{{.*}}, %[[E]]
// CHECK: %[[S:.*]] = arith.divf %{{.*}}, %[[D]]
// CHECK-NEXT: linalg.yield %[[S]]
func.func @fused_sigmoid(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = "sigmoid"} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @fused_tanh
// CHECK: %[[H:.*]] = arith.addf
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[H]] : f32
// CHECK-NEXT: linalg.yield %[[T]]
func.func @fused_tanh(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = "tanh"} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
