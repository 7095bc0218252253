// Constants become arith.constant; casts, comparisons and select are one
// elementwise generic each.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @constant
// CHECK: %[[C:.*]] = arith.constant dense<[1.000000e+00, 2.500000e+00]> : tensor<2xf32>
// CHECK-NEXT: return %[[C]]
func.func @constant() -> tensor<2xf32> {
  %0 = "rlx.constant"() {value = dense<[1.0, 2.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// CHECK-LABEL: func.func @casts
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.sitofp %{{.*}} : i32 to f32
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK: arith.trunci %{{.*}} : i64 to i32
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: arith.cmpf une, %{{.*}}, %[[Z]] : f32
// CHECK: arith.uitofp %{{.*}} : i1 to f32
// CHECK: %[[ZI:.*]] = arith.constant 0 : i32
// CHECK: arith.cmpi ne, %{{.*}}, %[[ZI]] : i32
// CHECK: arith.extui %{{.*}} : i1 to i64
func.func @casts(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>, tensor<4xi64>) {
  %h = "rlx.cast"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  %f = "rlx.cast"(%h) : (tensor<4xf16>) -> tensor<4xf32>
  %n = "rlx.cast"(%f) : (tensor<4xf32>) -> tensor<4xi32>
  %g = "rlx.cast"(%n) : (tensor<4xi32>) -> tensor<4xf32>
  %l = "rlx.cast"(%i) : (tensor<4xi32>) -> tensor<4xi64>
  %t = "rlx.cast"(%l) : (tensor<4xi64>) -> tensor<4xi32>
  %b = "rlx.cast"(%g) : (tensor<4xf32>) -> tensor<4xi1>
  %bf = "rlx.cast"(%b) : (tensor<4xi1>) -> tensor<4xf32>
  %ib = "rlx.cast"(%t) : (tensor<4xi32>) -> tensor<4xi1>
  %bl = "rlx.cast"(%ib) : (tensor<4xi1>) -> tensor<4xi64>
  return %f, %g, %t, %bf, %bl : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>, tensor<4xi64>
}

// CHECK-LABEL: func.func @compare_and_where
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>, %[[I:.*]]: tensor<2x1xi32>)
// CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<2x3xi1>)
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf une
// CHECK: arith.cmpi sge
// CHECK: linalg.generic {{.*}} ins(%[[M]], %[[A]], %[[B]] : tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>)
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
func.func @compare_and_where(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<2x1xi32>) -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x1xi1>) {
  %lt = "rlx.compare"(%a, %b) {predicate = "lt"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %ne = "rlx.compare"(%a, %b) {predicate = "ne"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %ge = "rlx.compare"(%i, %i) {predicate = "ge"} : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x1xi1>
  %0 = "rlx.where"(%lt, %a, %b) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0, %ne, %ge : tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x1xi1>
}
