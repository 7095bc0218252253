// rlx-memref-copy-to-linalg{only-strided}: copies between contiguous buffers stay
// memref.copy (a memcpy); a copy out of a strided view becomes linalg.copy, whose
// loops LLVM vectorizes (the runtime's generic memrefCopy walks element by element).
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-memref-copy-to-linalg{only-strided})' | FileCheck %s
// RUN: rlx-opt %s --rlx-memref-copy-to-linalg | FileCheck %s --check-prefix=ALL

// CHECK-LABEL: func.func @copies(
// CHECK-SAME: %[[A:[^:]*]]: memref<4x8xf32>, %[[B:[^:]*]]: memref<4x8xf32>, %[[C:[^:]*]]: memref<4x6xf32>
// CHECK: memref.copy %[[A]], %[[B]]
// CHECK: %[[V:.*]] = memref.subview %[[A]][0, 1] [4, 6] [1, 1]
// CHECK: linalg.copy {{.*}}ins(%[[V]] : memref<4x6xf32, strided<[8, 1], offset: 1>>) outs(%[[C]] : memref<4x6xf32>)
// CHECK-NOT: memref.copy
// ALL-LABEL: func.func @copies(
// ALL-NOT: memref.copy
// ALL-COUNT-2: linalg.copy
func.func @copies(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<4x6xf32>) {
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  %v = memref.subview %a[0, 1] [4, 6] [1, 1] : memref<4x8xf32> to memref<4x6xf32, strided<[8, 1], offset: 1>>
  memref.copy %v, %c : memref<4x6xf32, strided<[8, 1], offset: 1>> to memref<4x6xf32>
  return
}
