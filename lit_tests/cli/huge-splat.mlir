// A splat constant costs no memory when folded, however large its type (4 PB here: more
// than any address space, so a regression fails at once, whatever the overcommit policy):
// slicing it folds to a small constant instead of an out-of-memory internal error.
// RUN: rlx-opt %s --rlx-fold-constants | FileCheck %s
// CHECK-LABEL: func.func @narrow_of_huge_splat
// CHECK-NEXT: %[[C:.*]] = "rlx.constant"() {value = dense<1.500000e+00> : tensor<3xf32>}
// CHECK-NEXT: return %[[C]]
func.func @narrow_of_huge_splat() -> tensor<3xf32> {
  %c = "rlx.constant"() {value = dense<1.5> : tensor<1000000000000000xf32>} : () -> tensor<1000000000000000xf32>
  %0 = "rlx.narrow"(%c) {axis = 0 : i64, start = 7 : i64, len = 3 : i64} : (tensor<1000000000000000xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// i1 and integer splats keep their value.
// CHECK-LABEL: func.func @integer_splats
// CHECK-DAG: "rlx.constant"() {value = dense<-5> : tensor<2xi32>}
// CHECK-DAG: "rlx.constant"() {value = dense<true> : tensor<2xi1>}
// CHECK-DAG: "rlx.constant"() {value = dense<-9000000000000> : tensor<2xi64>}
func.func @integer_splats() -> (tensor<2xi32>, tensor<2xi1>, tensor<2xi64>) {
  %a = "rlx.constant"() {value = dense<-5> : tensor<4xi32>} : () -> tensor<4xi32>
  %b = "rlx.constant"() {value = dense<true> : tensor<4xi1>} : () -> tensor<4xi1>
  %d = "rlx.constant"() {value = dense<-9000000000000> : tensor<4xi64>} : () -> tensor<4xi64>
  %0 = "rlx.narrow"(%a) {axis = 0 : i64, start = 1 : i64, len = 2 : i64} : (tensor<4xi32>) -> tensor<2xi32>
  %1 = "rlx.narrow"(%b) {axis = 0 : i64, start = 1 : i64, len = 2 : i64} : (tensor<4xi1>) -> tensor<2xi1>
  %3 = "rlx.narrow"(%d) {axis = 0 : i64, start = 1 : i64, len = 2 : i64} : (tensor<4xi64>) -> tensor<2xi64>
  return %0, %1, %3 : tensor<2xi32>, tensor<2xi1>, tensor<2xi64>
}

// Compiled, such a constant would be data in the code: a clear error at the op instead of
// LLVM exhausting memory.
// RUN: not rlx-opt %s --rlx-lower-to-llvm 2>&1 | FileCheck %s --check-prefix=EMBED
// RUN: not rlx-run %s --entry narrow_of_huge_splat 2>&1 | FileCheck %s --check-prefix=EMBED
// EMBED: huge-splat.mlir:{{[0-9]+}}:8: error: 'rlx.constant' op of type tensor<1000000000000000xf32> is 4000000000000000 bytes, too large to embed in the compiled code (at most 2147483648 bytes); pass it as an argument
// EMBED-NOT: internal error

// Folding a result larger than max-elements is not attempted; one that runs out of memory
// anyway is a diagnostic naming the pass and the size, not an internal error.
// RUN: not rlx-opt %s --rlx-fold-constants=max-elements=1000000000000000 2>&1 | FileCheck %s --check-prefix=OOM
// OOM: error: pass 'rlx-fold-constants' ran out of memory: Unable to allocate 3.55 PiB for an array with shape (1000000000000000,) and data type float32
// OOM-NOT: internal error
// CHECK-LABEL: func.func @negate_huge_splat
// CHECK: "rlx.neg"
func.func @negate_huge_splat() -> tensor<1000000000000000xf32> {
  %c = "rlx.constant"() {value = dense<1.5> : tensor<1000000000000000xf32>} : () -> tensor<1000000000000000xf32>
  %0 = "rlx.neg"(%c) : (tensor<1000000000000000xf32>) -> tensor<1000000000000000xf32>
  return %0 : tensor<1000000000000000xf32>
}
