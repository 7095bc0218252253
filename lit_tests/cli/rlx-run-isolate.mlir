// rlx-run --isolate generates code in a child process first (an LLVM fatal
// error there becomes an error message); the results are the same.
// RUN: %python -c "import numpy as np; np.save('%t.x.npy', np.arange(1, 5, dtype=np.float32))"
// RUN: rlx-run %s --input %t.x.npy --isolate | FileCheck %s
// RUN: not rlx-run %s --random-inputs --repeat 0 2>&1 | FileCheck %s --check-prefix=REPEAT

// CHECK: result0: tensor<4xf32>
// CHECK-NEXT: [-2. -4. -6. -8.]
// REPEAT: rlx-run: error: argument --repeat: expected a positive integer, got 0
func.func @double_neg(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "rlx.add"(%0, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
