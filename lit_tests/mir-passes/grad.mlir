// rlx-grad adds @f_grad: the forward ops, then the backward ops reading the forward values
// (residuals), results [loss, d x, d w].  The unused cotangent work is erased.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-grad{wrt=x,w})' | FileCheck %s
// RUN: rlx-opt %s --rlx-grad | FileCheck %s --check-prefix=PARAMS

// CHECK-LABEL: func.func @f(
// CHECK-LABEL: func.func @f_grad
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xf32> {rlx.name = "x"}, %[[W:.*]]: tensor<4x5xf32> {rlx.name = "w", rlx.param})
// CHECK-SAME: -> (tensor<f32>, tensor<3x4xf32>, tensor<4x5xf32>)
// CHECK-NEXT: %[[H:.*]] = "rlx.matmul"(%[[X]], %[[W]])
// CHECK-NEXT: %[[T:.*]] = "rlx.tanh"(%[[H]])
// CHECK-NEXT: %[[L:.*]] = "rlx.reduce"(%[[T]]) {axes = array<i64: 0, 1>, keep_dim = false, kind = "sum"}
//       the seed d loss = 1, spread over the reduced axes
// CHECK-NEXT: %[[ONE:.*]] = "rlx.constant"() {value = dense<1.000000e+00> : tensor<f32>}
// CHECK-NEXT: %[[R:.*]] = "rlx.reshape"(%[[ONE]]) : (tensor<f32>) -> tensor<1x1xf32>
// CHECK-NEXT: %[[DT:.*]] = "rlx.expand"(%[[R]]) {shape = array<i64: 3, 5>}
//       tanh' = 1 - y^2, from the forward result
// CHECK-NEXT: %[[ONE2:.*]] = "rlx.constant"() {value = dense<1.000000e+00> : tensor<f32>}
// CHECK-NEXT: %[[Y2:.*]] = "rlx.mul"(%[[T]], %[[T]])
// CHECK-NEXT: %[[D:.*]] = "rlx.sub"(%[[ONE2]], %[[Y2]])
// CHECK-NEXT: %[[DH:.*]] = "rlx.mul"(%[[DT]], %[[D]])
//       d x = dh @ w^T, d w = x^T @ dh: products contracting w's columns and x's rows, no
//       transposed copy (the GEMM reads the operand transposed)
// CHECK-NEXT: %[[DX:.*]] = "rlx.dot_general"(%[[DH]], %[[W]]) {lhs_batch = array<i64>, lhs_contracting = array<i64: 1>, rhs_batch = array<i64>, rhs_contracting = array<i64: 1>}
// CHECK-NEXT: %[[DW:.*]] = "rlx.dot_general"(%[[X]], %[[DH]]) {lhs_batch = array<i64>, lhs_contracting = array<i64: 0>, rhs_batch = array<i64>, rhs_contracting = array<i64: 0>}
// CHECK-NEXT: return %[[L]], %[[DX]], %[[DW]]

// Without wrt, the rlx.param arguments; d x is never built.
// PARAMS-LABEL: func.func @f_grad
// PARAMS-SAME: -> (tensor<f32>, tensor<4x5xf32>)
// PARAMS-NOT: "rlx.transpose"
// PARAMS: %[[DW:.*]] = "rlx.dot_general"(%arg0, %{{.*}}) {lhs_batch = array<i64>, lhs_contracting = array<i64: 0>, rhs_batch = array<i64>, rhs_contracting = array<i64: 0>}
// PARAMS-NEXT: return %{{.*}}, %[[DW]]
func.func @f(%x: tensor<3x4xf32> {rlx.name = "x"}, %w: tensor<4x5xf32> {rlx.name = "w", rlx.param}) -> tensor<f32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %1 = "rlx.tanh"(%0) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %2 = "rlx.reduce"(%1) {axes = array<i64: 0, 1>, keep_dim = false, kind = "sum"} : (tensor<3x5xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}
