// rlx-dce removes unused side-effect-free RLX ops, chains included; upstream
// canonicalize cannot, since IRDL ops declare no memory effects.
// RUN: rlx-opt %s --rlx-dce | FileCheck %s
// RUN: rlx-opt %s --canonicalize | FileCheck %s --check-prefix=UPSTREAM

// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %{{.*}}: tensor<4x4xf32>)
// CHECK-NEXT: %[[R:.*]] = "rlx.relu"(%[[A]])
// CHECK-NEXT: return %[[R]]
// UPSTREAM-LABEL: func.func @f
// UPSTREAM: "rlx.matmul"
// UPSTREAM: "rlx.exp"
func.func @f(%a: tensor<4xf32>, %m: tensor<4x4xf32>) -> tensor<4xf32> {
  %dead0 = "rlx.matmul"(%m, %m) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %dead1 = "rlx.exp"(%dead0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %dead2 = "rlx.transpose"(%dead1) {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %0 = "rlx.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
