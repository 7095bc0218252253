// --verify-diagnostics fails, naming the line, when an expected diagnostic is
// missing or an unexpected one appears; line numbers survive --split-input-file.
// RUN: not rlx-opt %S/Inputs/wrong-expectations.mlir --split-input-file --verify-diagnostics 2>&1 | FileCheck %s

// CHECK: wrong-expectations.mlir:5:8: error: unexpected error: 'rlx.matmul' op contracting dimensions differ
// CHECK: wrong-expectations.mlir:4:{{.*}}: error: expected error "K is wrong" was not produced
// CHECK: wrong-expectations.mlir:12:{{.*}}: error: expected error "never emitted" was not produced
// CHECK-NOT: error
