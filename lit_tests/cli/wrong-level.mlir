// rlx-mir-to-linalg takes MIR: HIR and planned (LIR) input are errors naming the pass to run.
// RUN: not rlx-opt %s --rlx-mir-to-linalg 2>&1 | FileCheck %s --check-prefix=HIR
// HIR: wrong-level.mlir:16:10: error: 'rlx_hir.linear' op is HIR: run rlx-hir-to-mir before rlx-mir-to-linalg (rlx-lower-to-llvm runs both)
// HIR-NOT: func.func
// RUN: rlx-opt %s --rlx-hir-to-mir --rlx-mir-to-linalg | FileCheck %s --check-prefix=LOWERED
// LOWERED: linalg.matmul
// LOWERED-NOT: rlx

// RUN: not rlx-opt %s --rlx-hir-to-mir --rlx-mir-to-lir --rlx-mir-to-linalg 2>&1 | FileCheck %s --check-prefix=LIR
// LIR: wrong-level.mlir:15:3: error: this function is planned (rlx-mir-to-lir ran): lower it with rlx-lir-to-linalg after rlx-mir-to-lir, not with rlx-mir-to-linalg
// LIR-NOT: has no offset
// RUN: rlx-opt %s --rlx-hir-to-mir --rlx-mir-to-lir --rlx-lir-to-linalg | FileCheck %s --check-prefix=LOWERED

module attributes {rlx_hir.fusion_policy = "direct"} {
  func.func @f(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x4xf32> {
    %0 = "rlx_hir.linear"(%x, %w) {activation = "gelu"} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
}
