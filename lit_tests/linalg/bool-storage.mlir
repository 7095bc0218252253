// rlx-bool-tensors-to-i8 stores i1 tensors as bytes (LLVM cannot load or
// store i1 memrefs): signatures, generics, constants and extracts change;
// scalars inside bodies stay i1.  The JIT path runs it (rlx-lower-to-llvm).
// RUN: rlx-opt %s --rlx-mir-to-linalg --rlx-bool-tensors-to-i8 | FileCheck %s
// RUN: rlx-opt %s --rlx-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @mask
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[KEEP:.*]]: tensor<4xi8>) -> (tensor<4xf32>, tensor<4xi8>)
// CHECK: %[[C:.*]] = arith.constant dense<[1, 0, 1, 0]> : tensor<4xi8>
// CHECK: %[[POS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4xi8>)
// CHECK: %[[CMP:.*]] = arith.cmpf ogt
// CHECK-NEXT: %[[BYTE:.*]] = arith.extui %[[CMP]] : i1 to i8
// CHECK-NEXT: linalg.yield %[[BYTE]] : i8
// CHECK: linalg.generic {{.*}} ins(%[[POS]], %[[KEEP]], %[[C]] : tensor<4xi8>, tensor<4xi8>, tensor<4xi8>)
// CHECK: ^bb0(%[[P:.*]]: i8, %[[K:.*]]: i8, %[[Q:.*]]: i8, %{{.*}}: i8):
// CHECK-DAG: arith.trunci %[[P]] : i8 to i1
// CHECK-DAG: arith.trunci %[[K]] : i8 to i1
// CHECK-DAG: arith.trunci %[[Q]] : i8 to i1
// LLVM-LABEL: llvm.func @mask(
// LLVM-NOT: i1>
func.func @mask(%x: tensor<4xf32>, %keep: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xi1>) {
  %zero = "rlx.constant"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %pattern = "rlx.constant"() {value = dense<[true, false, true, false]> : tensor<4xi1>} : () -> tensor<4xi1>
  %pos = "rlx.compare"(%x, %zero) {predicate = "gt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %both = "rlx.where"(%pos, %keep, %pattern) : (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %out = "rlx.where"(%both, %x, %zero) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %out, %both : tensor<4xf32>, tensor<4xi1>
}

// Named data-movement ops forward bytes: their bodies are retyped too.
// CHECK-LABEL: func.func @move_bools
// CHECK: linalg.broadcast ins(%{{.*}} : tensor<4xi8>) outs(%{{.*}} : tensor<3x4xi8>)
// CHECK: linalg.transpose ins(%{{.*}} : tensor<3x4xi8>) outs(%{{.*}} : tensor<4x3xi8>)
func.func @move_bools(%m: tensor<1x4xi1>) -> tensor<4x3xi1> {
  %0 = "rlx.expand"(%m) {shape = array<i64: 3, 4>} : (tensor<1x4xi1>) -> tensor<3x4xi1>
  %1 = "rlx.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<3x4xi1>) -> tensor<4x3xi1>
  return %1 : tensor<4x3xi1>
}
