// Elementwise binaries lower to one linalg.generic each, broadcasting through
// the indexing maps (no materialised broadcast).
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg)' | FileCheck %s

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d0, 0)>

// CHECK-LABEL: func.func @add_broadcast
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<3xf32>) outs(%[[INIT]] : tensor<2x3xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK-NOT: rlx.
func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "rlx.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @size_one_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[COL]], #[[ID]]]
// CHECK: arith.subf
func.func @size_one_broadcast(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %0 = "rlx.sub"(%a, %b) : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @every_binary
// CHECK: arith.mulf
// CHECK: arith.divf
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: math.powf
func.func @every_binary(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.mul"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "rlx.div"(%0, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = "rlx.max"(%1, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = "rlx.min"(%2, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = "rlx.pow"(%3, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %4 : tensor<4xf32>
}

// f16 computes in f32 and rounds once.
// CHECK-LABEL: func.func @add_f16
// CHECK: ^bb0(%[[X:.*]]: f16, %[[Y:.*]]: f16, %{{.*}}: f16):
// CHECK-NEXT: %[[XW:.*]] = arith.extf %[[X]] : f16 to f32
// CHECK-NEXT: %[[YW:.*]] = arith.extf %[[Y]] : f16 to f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[XW]], %[[YW]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.truncf %[[S]] : f32 to f16
// CHECK-NEXT: linalg.yield %[[R]] : f16
func.func @add_f16(%a: tensor<8xf16>, %b: tensor<8xf16>) -> tensor<8xf16> {
  %0 = "rlx.add"(%a, %b) : (tensor<8xf16>, tensor<8xf16>) -> tensor<8xf16>
  return %0 : tensor<8xf16>
}
