// rlx-run specialises a dynamic function for the sizes given with --bind.
// RUN: rlx-run %s --random-inputs --bind BATCH=2,SEQ=3 | FileCheck %s
// RUN: not rlx-run %s --random-inputs 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not rlx-run %s --random-inputs --bind BATCH=2,SEQ=0 2>&1 | FileCheck %s --check-prefix=ZERO

// CHECK: result0: tensor<2x3x4xf32>
// MISSING: rlx-run: error: @f has symbolic dimensions (BATCH, SEQ): give their sizes with --bind BATCH=...,SEQ=...
// ZERO: rlx-run: error: --bind: @f: symbol 'SEQ' must be bound to a positive integer, got 0
func.func @f(%x: tensor<?x?x8xf32> {rlx.dims = ["BATCH", "SEQ", 8]}, %w: tensor<8x4xf32>) -> tensor<?x?x4xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<?x?x8xf32>, tensor<8x4xf32>) -> tensor<?x?x4xf32>
  return %0 : tensor<?x?x4xf32>
}
