// The matmul VJP's d x = dy @ w^T: with fewer rows than the weight has, computed as
// (w @ dy^T)^T so the weight stays in place as the GEMM's row operand and only the
// activation-sized matrices are transposed; with more rows, the weight is the transposed operand.
// dy^T and w^T are no rlx.transpose of their own but a dot_general contracting dy's (w's) last
// dimension: rlx-pack-matmul packs the GEMM's panels from dy (w) read transposed.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-grad{func=few_rows wrt=x,w})' | FileCheck %s --check-prefix=FEW
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-grad{func=many_rows wrt=x,w})' | FileCheck %s --check-prefix=MANY

// FEW-LABEL: func.func @few_rows_grad
// FEW-SAME: (%[[X:.*]]: tensor<1x2x8xf32> {rlx.name = "x"}, %[[W:.*]]: tensor<8x16xf32>
// FEW: %[[Y2:.*]] = "rlx.mul"(%{{.*}}, %{{.*}})
// FEW: %[[DH:.*]] = "rlx.mul"(%{{.*}}, %{{.*}})
// FEW-NEXT: %[[FLAT:.*]] = "rlx.reshape"(%[[DH]]) : (tensor<1x2x16xf32>) -> tensor<2x16xf32>
// FEW-NEXT: %[[DXT:.*]] = "rlx.dot_general"(%[[W]], %[[FLAT]]) {lhs_batch = array<i64>, lhs_contracting = array<i64: 1>, rhs_batch = array<i64>, rhs_contracting = array<i64: 1>} : (tensor<8x16xf32>, tensor<2x16xf32>) -> tensor<8x2xf32>
// FEW-NEXT: %[[DX2:.*]] = "rlx.transpose"(%[[DXT]]) {perm = array<i64: 1, 0>} : (tensor<8x2xf32>) -> tensor<2x8xf32>
// FEW-NEXT: %[[DX:.*]] = "rlx.reshape"(%[[DX2]]) : (tensor<2x8xf32>) -> tensor<1x2x8xf32>
// FEW-NOT: "rlx.transpose"(%[[W]])
// FEW: return %{{.*}}, %[[DX]], %{{.*}}
func.func @few_rows(%x: tensor<1x2x8xf32> {rlx.name = "x"}, %w: tensor<8x16xf32> {rlx.name = "w", rlx.param}) -> tensor<f32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<1x2x8xf32>, tensor<8x16xf32>) -> tensor<1x2x16xf32>
  %1 = "rlx.tanh"(%0) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32>
  %2 = "rlx.reduce"(%1) {axes = array<i64: 0, 1, 2>, keep_dim = false, kind = "sum"} : (tensor<1x2x16xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// MANY-LABEL: func.func @many_rows_grad
// MANY-SAME: (%[[X:.*]]: tensor<16x4xf32> {rlx.name = "x"}, %[[W:.*]]: tensor<4x2xf32>
// MANY-NOT: "rlx.transpose"
// MANY: %[[DX:.*]] = "rlx.dot_general"(%{{.*}}, %[[W]]) {lhs_batch = array<i64>, lhs_contracting = array<i64: 1>, rhs_batch = array<i64>, rhs_contracting = array<i64: 1>} : (tensor<16x2xf32>, tensor<4x2xf32>) -> tensor<16x4xf32>
func.func @many_rows(%x: tensor<16x4xf32> {rlx.name = "x"}, %w: tensor<4x2xf32> {rlx.name = "w", rlx.param}) -> tensor<f32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<16x4xf32>, tensor<4x2xf32>) -> tensor<16x2xf32>
  %1 = "rlx.tanh"(%0) : (tensor<16x2xf32>) -> tensor<16x2xf32>
  %2 = "rlx.reduce"(%1) {axes = array<i64: 0, 1>, keep_dim = false, kind = "sum"} : (tensor<16x2xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}
