// rlx-lower-to-llvm runs rlx-approximate-math after the MIR -> linalg lowering: no libm call and
// no tanh/exp/log intrinsic (each a scalar libm call in LLVM) is left for the f32 activations, softmax and log.
// RUN: rlx-opt %s --rlx-lower-to-llvm | FileCheck %s --implicit-check-not=@tanhf --implicit-check-not=llvm.intr.tanh --implicit-check-not=@erff --implicit-check-not=@expf --implicit-check-not=@logf --implicit-check-not=llvm.intr.exp --implicit-check-not=llvm.intr.log
// With the approximation turned off the same function calls libm and the exp/log intrinsics.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-llvm{approximate-math=false})' | FileCheck %s --check-prefix=LIBM

// CHECK-LABEL: llvm.func @activations(
// CHECK: llvm.intr.fma
// CHECK: llvm.return
// LIBM-LABEL: llvm.func @activations(
// LIBM-DAG: llvm.call @erff
// LIBM-DAG: llvm.intr.tanh
// LIBM-DAG: llvm.intr.exp
// LIBM-DAG: llvm.intr.log
// LIBM: llvm.return
func.func @activations(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.gelu"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.gelu_approx"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.tanh"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.exp"(%2) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "rlx.sigmoid"(%3) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = "rlx.silu"(%4) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = "rlx.softmax"(%5) {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %7 = "rlx.log"(%6) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %7 : tensor<4x8xf32>
}
