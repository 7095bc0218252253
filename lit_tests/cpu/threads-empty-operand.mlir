// Threads: an op with a zero-size operand (a matmul with K = 0: a loop with no iterations) is
// left serial by rlx-parallelize-linalg, though its result is large enough to split; MLIR's
// tiling aborted the process on such an op (an assertion in computeAllSliceParameters). The
// zero fill of the result, with no empty operand, is still split.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-parallelize-linalg{threads=2})' | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-llvm{threads=2})' | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @k_empty(
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK: linalg.fill
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<128x0xf32>, tensor<0x256xf32>)
// CHECK-NOT: scf.forall
// CHECK: return

// LLVM-LABEL: llvm.func @k_empty(
func.func @k_empty(%a: tensor<128x0xf32>, %b: tensor<0x256xf32>) -> tensor<128x256xf32> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<128x0xf32>, tensor<0x256xf32>) -> tensor<128x256xf32>
  return %0 : tensor<128x256xf32>
}
