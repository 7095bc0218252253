// rlx-opt --emit-irdl prints the dialect definition, identical to the checked-in file.
// RUN: rlx-opt --emit-irdl | FileCheck %s
// RUN: rlx-opt --emit-irdl | FileCheck %s --check-prefix=PERM
// RUN: rlx-opt --emit-irdl -o %t.irdl.mlir && mlir-opt --irdl-file=%t.irdl.mlir %S/mlir-opt-interop.mlir | FileCheck %s --check-prefix=LOADS

// CHECK: irdl.dialect @rlx {
// CHECK: irdl.operation @matmul {
// CHECK-NEXT: %[[L:.*]] = irdl.base "!builtin.tensor"
// CHECK-NEXT: %[[R:.*]] = irdl.base "!builtin.tensor"
// CHECK-NEXT: %[[O:.*]] = irdl.base "!builtin.tensor"
// CHECK-NEXT: irdl.operands(lhs: %[[L]], rhs: %[[R]])
// CHECK-NEXT: irdl.results(result: %[[O]])

// PERM: irdl.dialect @rlx {
// PERM: irdl.operation @transpose {
// PERM: %[[P:.*]] = irdl.base "#builtin.dense_array"
// PERM: irdl.attributes {"perm" = %[[P]]}
// LOADS: "rlx.matmul"
