// A failing pass prints the IR it failed on with --mlir-print-ir-after-failure.
// Dynamic dimensions cannot be lowered yet: the pass fails with a diagnostic.
// RUN: not rlx-opt %s --rlx-mir-to-linalg --mlir-print-ir-after-failure 2>&1 | FileCheck %s

// CHECK: // -----// IR Dump After rlx-mir-to-linalg Failed (rlx-mir-to-linalg) ('builtin.module' operation) //----- //
// CHECK: "rlx.relu"
// CHECK: print-after-failure.mlir:9:8: error: 'rlx.relu' op has dynamic dimensions (tensor<?xf32>); bind them before lowering
func.func @f(%a: tensor<?xf32>) -> tensor<?xf32> {
  %0 = "rlx.relu"(%a) : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
