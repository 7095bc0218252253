// rlx-lir-to-linalg executes the plan: one private, aligned memref.global
// arena per planned function, every intermediate computed into a memref.view
// of it at its planned byte offset, views (reshape, narrow) as memref views of
// their root. After bufferization nothing is allocated per call: results go
// to the caller's out-params, intermediates to the arena.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-lir,rlx-lir-to-linalg,eliminate-empty-tensors,canonicalize,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},buffer-results-to-out-params{hoist-static-allocs modify-public-functions},canonicalize)' -o %t.mlir
// RUN: FileCheck %s --input-file=%t.mlir
// RUN: FileCheck %s --input-file=%t.mlir --check-prefix=WHOLE
// Before bufferization: each op's tensor result is materialized into its view.
// RUN: rlx-opt %s --rlx-mir-to-lir --rlx-lir-to-linalg | FileCheck %s --check-prefix=TENSOR
// The direct path (no plan) allocates each intermediate instead.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg,eliminate-empty-tensors,canonicalize,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},buffer-results-to-out-params{hoist-static-allocs modify-public-functions},canonicalize)' | FileCheck %s --check-prefix=DIRECT

// Three arenas (none for @no_arena, whose only value is its result), sized
// and aligned as planned; no allocation and no plan attribute anywhere.
// WHOLE-DAG: memref.global "private" @__rlx_arena_elementwise : memref<384xi8> = uninitialized {alignment = 64 : i64}
// WHOLE-DAG: memref.global "private" @__rlx_arena_mlp : memref<256xi8> = uninitialized {alignment = 64 : i64}
// WHOLE-DAG: memref.global "private" @__rlx_arena_views : memref<192xi8> = uninitialized {alignment = 64 : i64}
// WHOLE-NOT: memref.global
// WHOLE-NOT: memref.alloc
// WHOLE-NOT: memref.dealloc
// WHOLE-NOT: rlx_lir
// WHOLE-NOT: bufferization.

// Slots 0, 128, 256 (the add result is read by the mul, so three values are
// live at once); the last op writes the caller's buffer.
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[Y:.*]]: memref<4x8xf32>, %[[OUT:.*]]: memref<4x8xf32>)
// CHECK-NOT: memref.alloc
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG: %[[ARENA:.*]] = memref.get_global @__rlx_arena_elementwise : memref<384xi8>
// CHECK-NOT: memref.alloc
// CHECK: %[[S0:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<384xi8> to memref<4x8xf32>
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[X]], %[[Y]] : memref<4x8xf32>, memref<4x8xf32>) outs(%[[S0]] : memref<4x8xf32>)
// CHECK: arith.addf
// CHECK-NOT: memref.alloc
// CHECK: %[[S1:.*]] = memref.view %[[ARENA]][%[[C128]]][] : memref<384xi8> to memref<4x8xf32>
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[S0]] : memref<4x8xf32>) outs(%[[S1]] : memref<4x8xf32>)
// CHECK: math.exp
// CHECK-NOT: memref.alloc
// CHECK: %[[S2:.*]] = memref.view %[[ARENA]][%[[C256]]][] : memref<384xi8> to memref<4x8xf32>
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[S1]], %[[S0]] : memref<4x8xf32>, memref<4x8xf32>) outs(%[[S2]] : memref<4x8xf32>)
// CHECK: arith.mulf
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic {{.*}} ins(%[[S2]] : memref<4x8xf32>) outs(%[[OUT]] : memref<4x8xf32>)
// CHECK: arith.negf
// CHECK-NOT: memref.alloc
// CHECK: return
// TENSOR-LABEL: func.func @elementwise
// TENSOR: %[[ARENA:.*]] = memref.get_global @__rlx_arena_elementwise : memref<384xi8>
// TENSOR: %[[ADD:.*]] = linalg.generic
// TENSOR: %[[C0:.*]] = arith.constant 0 : index
// TENSOR-NEXT: %[[S0:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<384xi8> to memref<4x8xf32>
// TENSOR-NEXT: bufferization.materialize_in_destination %[[ADD]] in restrict writable %[[S0]] : (tensor<4x8xf32>, memref<4x8xf32>) -> ()
// TENSOR: arith.constant 128 : index
// TENSOR: arith.constant 256 : index
// TENSOR-NEXT: memref.view %[[ARENA]]
// TENSOR-NEXT: bufferization.materialize_in_destination
// The result (the neg) is not materialized in the arena, but into a tensor of
// its own when it is computed (the caller's buffer after bufferization: see
// the CHECK lines), and returned from there.
// TENSOR-NOT: materialize_in_destination {{.*}}memref
// TENSOR: %[[OWN:.*]] = bufferization.materialize_in_destination %{{.*}} in %{{.*}} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// TENSOR-NEXT: return %[[OWN]]
// DIRECT-LABEL: func.func @elementwise
// DIRECT-NOT: memref.get_global
// DIRECT: memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
func.func @elementwise(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.add"(%x, %y) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "rlx.exp"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "rlx.mul"(%1, %0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "rlx.neg"(%2) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// Matmuls fill and accumulate in their slot; the second matmul's 32 B result
// reuses offset 0 once the first matmul's result is dead.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: memref<2x8xf32>, %[[W1:.*]]: memref<8x16xf32>, %[[W2:.*]]: memref<16x4xf32>, %[[OUT:.*]]: memref<2x4xf32>)
// CHECK-NOT: memref.alloc
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[ARENA:.*]] = memref.get_global @__rlx_arena_mlp : memref<256xi8>
// CHECK-NOT: memref.alloc
// CHECK: %[[H:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<256xi8> to memref<2x16xf32>
// CHECK-NEXT: linalg.fill ins(%[[ZERO]] : f32) outs(%[[H]] : memref<2x16xf32>)
// CHECK-NEXT: linalg.matmul ins(%[[X]], %[[W1]] : memref<2x8xf32>, memref<8x16xf32>) outs(%[[H]] : memref<2x16xf32>)
// CHECK-NEXT: %[[A:.*]] = memref.view %[[ARENA]][%[[C128]]][] : memref<256xi8> to memref<2x16xf32>
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[H]] : memref<2x16xf32>) outs(%[[A]] : memref<2x16xf32>)
// CHECK: math.exp
// CHECK-NOT: memref.alloc
// CHECK: %[[Z:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<256xi8> to memref<2x4xf32>
// CHECK-NEXT: linalg.fill ins(%[[ZERO]] : f32) outs(%[[Z]] : memref<2x4xf32>)
// CHECK-NEXT: linalg.matmul ins(%[[A]], %[[W2]] : memref<2x16xf32>, memref<16x4xf32>) outs(%[[Z]] : memref<2x4xf32>)
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[Z]] : memref<2x4xf32>) outs(%[[OUT]] : memref<2x4xf32>)
// CHECK: arith.negf
// CHECK-NOT: memref.alloc
// CHECK: return
// DIRECT-LABEL: func.func @mlp
// DIRECT: memref.alloc
func.func @mlp(%x: tensor<2x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x4xf32>) -> tensor<2x4xf32> {
  %h = "rlx.matmul"(%x, %w1) : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
  %a = "rlx.exp"(%h) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %y = "rlx.matmul"(%a, %w2) : (tensor<2x16xf32>, tensor<16x4xf32>) -> tensor<2x4xf32>
  %o = "rlx.neg"(%y) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %o : tensor<2x4xf32>
}

// Views move no data: reshape and narrow are memref views of the root's slot
// (rows 2..4 of the 6x4 reshape, 32 bytes in); the narrow stays alive while
// the add reads it, so the exp result goes to 128, not over the root.
// CHECK-LABEL: func.func @views
// CHECK-SAME: (%[[X:.*]]: memref<4x6xf32>, %[[OUT:.*]]: memref<3x4xf32>)
// CHECK-NOT: memref.alloc
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[ARENA:.*]] = memref.get_global @__rlx_arena_views : memref<192xi8>
// CHECK: %[[ROOT:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<192xi8> to memref<4x6xf32>
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[X]] : memref<4x6xf32>) outs(%[[ROOT]] : memref<4x6xf32>)
// CHECK: arith.negf
// CHECK-NOT: memref.alloc
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[ROOT]] {{\[\[}}0, 1]] : memref<4x6xf32> into memref<24xf32>
// CHECK-NEXT: %[[RE:.*]] = memref.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [6, 4] : memref<24xf32> into memref<6x4xf32>
// CHECK-NEXT: %[[ROWS:.*]] = memref.subview %[[RE]][2, 0] [3, 4] [1, 1] : memref<6x4xf32> to memref<3x4xf32, strided<[4, 1], offset: 8>>
// CHECK-NEXT: %[[E:.*]] = memref.view %[[ARENA]][%[[C128]]][] : memref<192xi8> to memref<3x4xf32>
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[ROWS]] : memref<3x4xf32, strided<[4, 1], offset: 8>>) outs(%[[E]] : memref<3x4xf32>)
// CHECK: math.exp
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic {{.*}} ins(%[[E]], %[[ROWS]] : memref<3x4xf32>, memref<3x4xf32, strided<[4, 1], offset: 8>>) outs(%[[OUT]] : memref<3x4xf32>)
// CHECK-NOT: memref.alloc
// CHECK: return
func.func @views(%x: tensor<4x6xf32>) -> tensor<3x4xf32> {
  %0 = "rlx.neg"(%x) : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %1 = "rlx.reshape"(%0) : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %2 = "rlx.narrow"(%1) {axis = 0 : i64, start = 2 : i64, len = 3 : i64} : (tensor<6x4xf32>) -> tensor<3x4xf32>
  %3 = "rlx.exp"(%2) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %4 = "rlx.add"(%3, %2) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %4 : tensor<3x4xf32>
}

// An empty arena: no global, no get_global; the op writes the out-param.
// CHECK-LABEL: func.func @no_arena
// CHECK-SAME: (%[[X:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>)
// CHECK-NOT: memref.get_global
// CHECK: linalg.generic {{.*}} ins(%[[X]] : memref<4xf32>) outs(%[[OUT]] : memref<4xf32>)
// CHECK-NOT: memref.get_global
// CHECK: return
func.func @no_arena(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "rlx.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
