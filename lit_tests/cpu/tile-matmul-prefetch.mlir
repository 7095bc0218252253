// rlx-tile-matmul: a kernel whose B panels are a function argument (bound weights, packed once by
// rlx-hoist-param-packing) prefetches the next panel while it multiplies the current one: each K
// step (4 rows of B) of row block i prefetches one 64-byte line of panel min(p + 1, last), line
// (i mod 8) * (K/4) + k/4 of the 2K lines of its K block (row line/2, column (line mod 2) * 16).
// Bound weights come from memory at every call; without it the first row block of each panel
// waited for it.  B packed in the function (no pack-params) is in cache: no prefetch.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul{pack-params},rlx-hoist-param-packing,canonicalize,rlx-tile-matmul,canonicalize)' | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul,canonicalize,rlx-tile-matmul)' | FileCheck %s --check-prefix=UNBOUND
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-llvm{threads=1 prepack-params=true})' | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @mm(
// CHECK-SAME: %[[PANELS:[a-z0-9]+]]: tensor<3x64x32xf32> {rlx.name = "w:panels0"})
// CHECK: %[[BUF:.*]] = bufferization.to_buffer %[[PANELS]] read_only : tensor<3x64x32xf32> to memref<3x64x32xf32>
// CHECK: scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}}) -> (vector<8x32xf32>)
// CHECK: %[[NEXT:.*]] = arith.addi %[[P]], %c1
// CHECK: %[[CLAMPED:.*]] = arith.minui %[[NEXT]], %c2
// CHECK: %[[PASS:.*]] = arith.remui %[[I]], %c8
// CHECK: %[[BASE:.*]] = arith.muli %[[PASS]], %c16
// CHECK: %[[STEP:.*]] = arith.divui %[[K]], %c4
// CHECK: %[[LINE:.*]] = arith.addi %[[BASE]], %[[STEP]]
// CHECK: %[[ROW:.*]] = arith.divui %[[LINE]], %c2
// CHECK: %[[HALF:.*]] = arith.remui %[[LINE]], %c2
// CHECK: %[[COL:.*]] = arith.muli %[[HALF]], %c16
// CHECK: memref.prefetch %[[BUF]][%[[CLAMPED]], %[[ROW]], %[[COL]]], read, locality<3>, data : memref<3x64x32xf32>
// CHECK-COUNT-32: vector.fma
// CHECK: scf.yield %{{.*}} : vector<8x32xf32>
// CHECK-NOT: memref.prefetch
// CHECK-LABEL: func.func @mm__pack0(

// UNBOUND-LABEL: func.func @mm(
// UNBOUND-NOT: memref.prefetch
// UNBOUND-NOT: bufferization.to_buffer
// UNBOUND: return

// LLVM-LABEL: llvm.func @mm(
// LLVM: "llvm.intr.prefetch"(%{{.*}}) <{cache = 1 : i32, hint = 3 : i32, rw = 0 : i32}> : (!llvm.ptr) -> ()
// LLVM-COUNT-32: llvm.intr.fmuladd
func.func @mm(%x: tensor<32x64xf32> {rlx.name = "x"}, %w: tensor<64x96xf32> {rlx.name = "w", rlx.param}) -> tensor<32x96xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<32x64xf32>, tensor<64x96xf32>) -> tensor<32x96xf32>
  return %y : tensor<32x96xf32>
}
