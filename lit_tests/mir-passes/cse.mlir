// rlx-cse merges equal Pure RLX ops (same name, operands, attributes and result
// types) within a block, keeping the first; upstream cse cannot, since IRDL ops
// declare no memory effects.
// RUN: rlx-opt %s --rlx-cse | FileCheck %s
// RUN: rlx-opt %s --cse | FileCheck %s --check-prefix=UPSTREAM

// Equal ops merge, and merging cascades to their users.
// CHECK-LABEL: func.func @merge
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[C:.*]] = "rlx.constant"() {value = dense<2.000000e+00> : tensor<4xf32>}
// CHECK-NEXT: %[[S:.*]] = "rlx.add"(%[[A]], %[[B]])
// CHECK-NEXT: %[[M:.*]] = "rlx.mul"(%[[S]], %[[C]])
// CHECK-NEXT: %[[E:.*]] = "rlx.exp"(%[[M]])
// CHECK-NEXT: return %[[E]], %[[E]], %[[S]]
// UPSTREAM-LABEL: func.func @merge
// UPSTREAM-COUNT-2: "rlx.add"
func.func @merge(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c0 = "rlx.constant"() {value = dense<2.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %c1 = "rlx.constant"() {value = dense<2.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = "rlx.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "rlx.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = "rlx.mul"(%0, %c0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = "rlx.mul"(%1, %c1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = "rlx.exp"(%2) : (tensor<4xf32>) -> tensor<4xf32>
  %5 = "rlx.exp"(%3) : (tensor<4xf32>) -> tensor<4xf32>
  return %4, %5, %1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Different operands (or their order), attributes, result types or constant
// values keep ops apart; upstream ops are left alone.
// CHECK-LABEL: func.func @distinct
// CHECK-COUNT-2: "rlx.constant"
// CHECK-COUNT-2: "rlx.sub"
// CHECK: "rlx.transpose"{{.*}}array<i64: 1, 0>
// CHECK: "rlx.transpose"{{.*}}array<i64: 0, 1>
// CHECK: "rlx.reshape"{{.*}} -> tensor<16xf32>
// CHECK: "rlx.reshape"{{.*}} -> tensor<2x8xf32>
// CHECK: "rlx.compare"{{.*}}predicate = "lt"
// CHECK: "rlx.compare"{{.*}}predicate = "le"
// CHECK-COUNT-2: tensor.empty
func.func @distinct(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>)
    -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>,
        tensor<16xf32>, tensor<2x8xf32>, tensor<4x4xi1>, tensor<4x4xi1>, tensor<2xf32>, tensor<2xf32>) {
  %c0 = "rlx.constant"() {value = dense<2.0> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
  %c1 = "rlx.constant"() {value = dense<3.0> : tensor<4x4xf32>} : () -> tensor<4x4xf32>
  %0 = "rlx.sub"(%a, %b) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "rlx.sub"(%b, %a) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "rlx.transpose"(%a) {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %3 = "rlx.transpose"(%a) {perm = array<i64: 0, 1>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %4 = "rlx.reshape"(%a) : (tensor<4x4xf32>) -> tensor<16xf32>
  %5 = "rlx.reshape"(%a) : (tensor<4x4xf32>) -> tensor<2x8xf32>
  %6 = "rlx.compare"(%a, %b) {predicate = "lt"} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
  %7 = "rlx.compare"(%a, %b) {predicate = "le"} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
  %e0 = tensor.empty() : tensor<2xf32>
  %e1 = tensor.empty() : tensor<2xf32>
  return %c0, %c1, %0, %1, %2, %3, %4, %5, %6, %7, %e0, %e1 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<4x4xi1>, tensor<4x4xi1>, tensor<2xf32>, tensor<2xf32>
}

// Ops in different regions are never merged, nor are equal ops inside a region
// merged with ones outside it; within the region's block they are.
// CHECK-LABEL: func.func @regions
// CHECK: "rlx.neg"
// CHECK: scf.execute_region
// CHECK-NEXT: "rlx.neg"
// CHECK-NOT: "rlx.neg"
// CHECK: scf.yield
func.func @regions(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = "rlx.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1:2 = scf.execute_region -> (tensor<4xf32>, tensor<4xf32>) {
    %2 = "rlx.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %3 = "rlx.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %2, %3 : tensor<4xf32>, tensor<4xf32>
  }
  return %0, %1#0, %1#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
