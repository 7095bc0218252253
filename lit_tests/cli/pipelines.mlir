// RLX passes and upstream passes mix in one pipeline, or as flags in order.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg,canonicalize,cse)' | FileCheck %s
// RUN: rlx-opt %s --rlx-mir-to-linalg --canonicalize --cse | FileCheck %s
// RUN: rlx-opt %s -rlx-mir-to-linalg -canonicalize -cse | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='rlx-mir-to-linalg,func.func(canonicalize)' | FileCheck %s --check-prefix=NESTED
// RUN: rlx-opt < %s - --rlx-mir-to-linalg -o %t.mlir && FileCheck %s --check-prefix=NESTED --input-file=%t.mlir

// cse merges the two tensor.empty of equal shape that the lowering creates.
// CHECK-LABEL: func.func @f
// CHECK-COUNT-1: tensor.empty
// CHECK-NOT: tensor.empty
// CHECK: return
// NESTED-LABEL: func.func @f
// NESTED: linalg.generic
// NESTED-NOT: rlx.
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "rlx.relu"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
