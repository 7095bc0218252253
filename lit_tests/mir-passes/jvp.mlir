// rlx-jvp adds @f_jvp: @f's arguments and a tangent per wrt argument (tangent_<name>), results
// [@f's results, their tangents]: the forward ops, then the tangent ops reading them.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-jvp{wrt=x,w})' | FileCheck %s
// RUN: rlx-opt %s --rlx-jvp | FileCheck %s --check-prefix=PARAMS

// CHECK-LABEL: func.func @f(
// CHECK-LABEL: func.func @f_jvp
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xf32> {rlx.name = "x"}, %[[W:.*]]: tensor<4x5xf32> {rlx.name = "w", rlx.param},
// CHECK-SAME: %[[TX:.*]]: tensor<3x4xf32> {rlx.name = "tangent_x"}, %[[TW:.*]]: tensor<4x5xf32> {rlx.name = "tangent_w"})
// CHECK-SAME: -> (tensor<3x5xf32>, tensor<f32>, tensor<3x5xf32>, tensor<f32>)
// CHECK-NEXT: %[[H:.*]] = "rlx.matmul"(%[[X]], %[[W]])
// CHECK-NEXT: %[[T:.*]] = "rlx.tanh"(%[[H]])
// CHECK-NEXT: %[[L:.*]] = "rlx.reduce"(%[[T]]) {axes = array<i64: 0, 1>, keep_dim = false, kind = "sum"}
//       matmul is bilinear: dh = tx @ w + x @ tw
// CHECK-NEXT: %[[D1:.*]] = "rlx.matmul"(%[[TX]], %[[W]])
// CHECK-NEXT: %[[D2:.*]] = "rlx.matmul"(%[[X]], %[[TW]])
// CHECK-NEXT: %[[DH:.*]] = "rlx.add"(%[[D1]], %[[D2]])
//       tanh' = 1 - y^2, from the forward result (the VJP rule's factor: a diagonal Jacobian)
// CHECK-NEXT: %[[ONE:.*]] = "rlx.constant"() {value = dense<1.000000e+00> : tensor<f32>}
// CHECK-NEXT: %[[Y2:.*]] = "rlx.mul"(%[[T]], %[[T]])
// CHECK-NEXT: %[[D:.*]] = "rlx.sub"(%[[ONE]], %[[Y2]])
// CHECK-NEXT: %[[DT:.*]] = "rlx.mul"(%[[DH]], %[[D]])
//       a sum is linear: the same reduce of the tangent
// CHECK-NEXT: %[[DL:.*]] = "rlx.reduce"(%[[DT]]) {axes = array<i64: 0, 1>, keep_dim = false, kind = "sum"}
// CHECK-NEXT: return %[[T]], %[[L]], %[[DT]], %[[DL]]

// Without wrt, the rlx.param arguments: one tangent, x @ tw only.
// PARAMS-LABEL: func.func @f_jvp
// PARAMS-SAME: %arg2: tensor<4x5xf32> {rlx.name = "tangent_w"})
// PARAMS-NOT: "rlx.matmul"(%arg2, %arg1)
// PARAMS: %[[D:.*]] = "rlx.matmul"(%arg0, %arg2)
// PARAMS-NEXT: "rlx.constant"
func.func @f(%x: tensor<3x4xf32> {rlx.name = "x"}, %w: tensor<4x5xf32> {rlx.name = "w", rlx.param}) -> (tensor<3x5xf32>, tensor<f32>) {
  %0 = "rlx.matmul"(%x, %w) : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %1 = "rlx.tanh"(%0) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %2 = "rlx.reduce"(%1) {axes = array<i64: 0, 1>, keep_dim = false, kind = "sum"} : (tensor<3x5xf32>) -> tensor<f32>
  return %1, %2 : tensor<3x5xf32>, tensor<f32>
}
