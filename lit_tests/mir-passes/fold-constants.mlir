// rlx-fold-constants evaluates RLX ops on constant operands (rlx.constant or a
// tensor arith.constant) into rlx.constant, down whole chains, and erases the
// operand constants left unused.
// RUN: rlx-opt %s --rlx-fold-constants | FileCheck %s
// RUN: rlx-opt %s --rlx-fold-constants=max-elements=3 | FileCheck %s --check-prefix=SMALL

// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[C:.*]] = "rlx.constant"() {value = dense<{{\[}}[2.000000e+00, 2.500000e+00], [3.000000e+00, -1.000000e+00]]> : tensor<2x2xf16>}
// CHECK-NEXT: return %[[C]]
// SMALL-LABEL: func.func @chain
// SMALL: "rlx.add"
// SMALL: "rlx.transpose"
// SMALL: "rlx.cast"
func.func @chain() -> tensor<2x2xf16> {
  %a = "rlx.constant"() {value = dense<[[1.0, 2.0], [1.5, -2.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %b = arith.constant dense<1.0> : tensor<2x2xf32>
  %0 = "rlx.add"(%a, %b) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = "rlx.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %2 = "rlx.cast"(%1) : (tensor<2x2xf32>) -> tensor<2x2xf16>
  return %2 : tensor<2x2xf16>
}

// Movement, comparison and select; an operand constant still used elsewhere stays.
// CHECK-LABEL: func.func @movement
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>)
// CHECK-DAG: %[[A:.*]] = "rlx.constant"() {value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>}
// CHECK-DAG: %[[E:.*]] = "rlx.constant"() {value = dense<{{\[}}[2.000000e+00, 3.000000e+00], [2.000000e+00, 3.000000e+00]]> : tensor<2x2xf32>}
// CHECK-DAG: %[[C:.*]] = "rlx.constant"() {value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<6xf32>}
// CHECK-DAG: %[[P:.*]] = "rlx.constant"() {value = dense<[false, true, true]> : tensor<3xi1>}
// CHECK-DAG: %[[W:.*]] = "rlx.constant"() {value = dense<[0.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>}
// CHECK-DAG: %[[S:.*]] = "rlx.add"(%[[X]], %[[A]])
// CHECK-NOT: "rlx.narrow"
// CHECK-NOT: "rlx.concat"
// CHECK: return %[[E]], %[[C]], %[[P]], %[[W]], %[[S]]
func.func @movement(%x: tensor<3xf32>) -> (tensor<2x2xf32>, tensor<6xf32>, tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) {
  %a = "rlx.constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %z = "rlx.constant"() {value = dense<-0.0> : tensor<3xf32>} : () -> tensor<3xf32>
  %h = "rlx.constant"() {value = dense<1.5> : tensor<3xf32>} : () -> tensor<3xf32>
  %0 = "rlx.narrow"(%a) {axis = 0 : i64, start = 1 : i64, len = 2 : i64} : (tensor<3xf32>) -> tensor<2xf32>
  %1 = "rlx.expand"(%0) {shape = array<i64: 2, 2>} : (tensor<2xf32>) -> tensor<2x2xf32>
  %2 = "rlx.concat"(%a, %a) {axis = 0 : i64} : (tensor<3xf32>, tensor<3xf32>) -> tensor<6xf32>
  %3 = "rlx.compare"(%a, %h) {predicate = "gt"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %4 = "rlx.where"(%3, %a, %z) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %5 = "rlx.relu"(%4) : (tensor<3xf32>) -> tensor<3xf32>
  %6 = "rlx.add"(%x, %a) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %1, %2, %3, %5, %6 : tensor<2x2xf32>, tensor<6xf32>, tensor<3xi1>, tensor<3xf32>, tensor<3xf32>
}

// Transcendental ops fold too (float64 rounded once to the result type).
// CHECK-LABEL: func.func @transcendental
// CHECK-NEXT: "rlx.constant"() {value = dense<[1.000000e+00, 2.71828175]> : tensor<2xf32>}
func.func @transcendental() -> tensor<2xf32> {
  %a = "rlx.constant"() {value = dense<[0.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "rlx.exp"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// Not folded: bf16 (no NumPy type), float-to-integer casts of values out of
// range (unspecified at run time), ops NumPy does not evaluate here (matmul).
// CHECK-LABEL: func.func @not_folded
// CHECK: "rlx.cast"{{.*}} -> tensor<2xf32>
// CHECK: "rlx.cast"{{.*}} -> tensor<2xi32>
// CHECK: "rlx.matmul"
func.func @not_folded() -> (tensor<2xf32>, tensor<2xi32>, tensor<2x2xf32>) {
  %b = "rlx.constant"() {value = dense<1.0> : tensor<2xbf16>} : () -> tensor<2xbf16>
  %0 = "rlx.cast"(%b) : (tensor<2xbf16>) -> tensor<2xf32>
  %f = "rlx.constant"() {value = dense<[1.0, 3.0e9]> : tensor<2xf32>} : () -> tensor<2xf32>
  %1 = "rlx.cast"(%f) : (tensor<2xf32>) -> tensor<2xi32>
  %m = "rlx.constant"() {value = dense<1.0> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %2 = "rlx.matmul"(%m, %m) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0, %1, %2 : tensor<2xf32>, tensor<2xi32>, tensor<2x2xf32>
}
