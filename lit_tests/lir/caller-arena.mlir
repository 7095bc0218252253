// rlx-lir-to-linalg{caller-arena}: the arena is the caller's, the last argument of every function
// that needs one (a memref<?xi8>), sized in rlx.arena = array<i64: bytes, alignment>. @inner's
// slots take 256 bytes; @outer's own take 256 and its callee's arena follows them: 512 in all,
// passed to each call of @inner as a view at byte 256. No global holds an arena.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-lir,rlx-lir-to-linalg{caller-arena=true})' | FileCheck %s

// CHECK-NOT: memref.global
// CHECK-LABEL: func.func private @inner(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x8xf32>, %[[ARENA:.*]]: memref<?xi8>) -> tensor<4x8xf32>
// CHECK-SAME: attributes {rlx.arena = array<i64: 256, 64>}
// CHECK: memref.view %[[ARENA]][%{{.*}}][] : memref<?xi8> to memref<4x8xf32>
// CHECK-LABEL: func.func @outer(
// CHECK-SAME: %[[ARENA:[^:]*]]: memref<?xi8>) -> tensor<4x8xf32> attributes {rlx.arena = array<i64: 512, 64>}
// CHECK: %[[AT:.*]] = arith.constant 256 : index
// CHECK: %[[SIZE:.*]] = arith.constant 256 : index
// CHECK: %[[PART:.*]] = memref.view %[[ARENA]][%[[AT]]][%[[SIZE]]] : memref<?xi8> to memref<?xi8>
// CHECK: call @inner(%{{.*}}, %{{.*}}, %[[PART]]) {no_inline}
// CHECK: memref.view %[[ARENA]][%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xi8>
// CHECK: call @inner(
// CHECK-NOT: memref.get_global
func.func private @inner(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.matmul"(%0, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.matmul"(%1, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
func.func @outer(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.matmul"(%0, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %2 = func.call @inner(%1, %w) {no_inline} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %3 = func.call @inner(%2, %w) {no_inline} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %4 = "rlx.matmul"(%3, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}
