// --split-input-file processes chunks independently and re-emits the separator;
// --mlir-print-ir-after-all shows each pass, RLX and upstream, by name.
// RUN: rlx-opt %s --split-input-file | FileCheck %s
// RUN: rlx-opt %s --split-input-file --rlx-mir-to-linalg --cse --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=AFTER-ALL

// CHECK-LABEL: func.func @first
// CHECK: "rlx.neg"
// CHECK-NEXT: return
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: // -----
// CHECK-NEXT: module {
// CHECK-NEXT: func.func @second
// CHECK: "rlx.abs"

// AFTER-ALL: // -----// IR Dump After rlx-mir-to-linalg (rlx-mir-to-linalg) ('builtin.module' operation) //----- //
// AFTER-ALL: arith.negf
// AFTER-ALL: // -----// IR Dump After CSE (cse) ('builtin.module' operation) //----- //
// AFTER-ALL: // -----// IR Dump After rlx-mir-to-linalg (rlx-mir-to-linalg) ('builtin.module' operation) //----- //
// AFTER-ALL: math.absf
func.func @first(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @second(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.abs"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
