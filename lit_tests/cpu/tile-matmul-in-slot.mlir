// rlx-tile-matmul: a GEMM kernel whose result the LIR plan stores to an arena slot (maybe through
// a reshape: rlx.reshape is a view of its operand's slot) accumulates in that slot: its C is the
// slot's memory, viewed as [M/MR, MR, N/NR, NR] (not zero-filled: its register tiles start from
// zeros and are stored whole). Not a heap buffer (memref.alloc)
// copied to the slot after the kernel, as eliminate-empty-tensors left it (it does not follow the
// blocked C's expand_shape / collapse_shape). Serial and split across threads (scf.forall); and
// a product returned by the function accumulates in the caller's output (OUT).
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-lir,rlx-lir-to-linalg{caller-arena=true},inline,rlx-pack-matmul,canonicalize,rlx-tile-matmul,eliminate-empty-tensors,canonicalize,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},canonicalize,cse,canonicalize)' | FileCheck %s
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-lir,rlx-lir-to-linalg{caller-arena=true},inline,rlx-pack-matmul,canonicalize,rlx-tile-matmul{threads=2},eliminate-empty-tensors,canonicalize,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},canonicalize,cse,canonicalize)' | FileCheck %s --check-prefixes=CHECK,PAR
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-lir,rlx-lir-to-linalg{caller-arena=true},inline,rlx-pack-matmul,canonicalize,rlx-tile-matmul,eliminate-empty-tensors,canonicalize,rlx-distinct-results,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},canonicalize,cse,canonicalize,buffer-results-to-out-params{hoist-static-allocs modify-public-functions})' | FileCheck %s --check-prefix=OUT

// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: %[[ARENA:[a-z0-9]+]]: memref<?xi8>)
// CHECK-NOT: memref.alloc
// CHECK: %[[SLOT:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<?xi8> to memref<64x64xf32>
// CHECK-NOT: memref.alloc
// CHECK: %[[C:.*]] = memref.expand_shape %[[SLOT]] {{\[\[}}0, 1], [2, 3]] output_shape [8, 8, 2, 32]
// CHECK-NOT: linalg.fill
// PAR: scf.forall
// CHECK: memref.subview %[[C]][
// CHECK-NOT: linalg.fill
// CHECK: vector.fma
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: %[[RELU:.*]] = memref.view %[[ARENA]]
// CHECK: linalg.generic {{.*}} ins(%[[SLOT]] : memref<64x64xf32>) outs(%[[RELU]] : memref<64x64xf32>)
// CHECK-NOT: memref.alloc
// The second product's slot is the first's again (its lifetime ended at the relu).
// CHECK-NOT: linalg.fill
// PAR: scf.forall
// CHECK: memref.subview %[[C]][
// CHECK-NOT: linalg.fill
// CHECK: vector.fma
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.copy
// CHECK: %[[VIEW3D:.*]] = memref.expand_shape %[[SLOT]] {{\[\[}}0, 1], [2]] output_shape [1, 64, 64]
// The function's result is the caller's (an allocation until buffer-results-to-out-params).
// CHECK: %[[RES:.*]] = memref.alloc() {{.*}} : memref<1x64x64xf32>
// CHECK: linalg.generic {{.*}} ins(%[[VIEW3D]] : memref<1x64x64xf32>) outs(%[[RES]] : memref<1x64x64xf32>)
// CHECK: return %[[RES]]
func.func @mlp(%x: tensor<64x96xf32>, %w: tensor<96x64xf32>, %w2: tensor<64x64xf32>) -> tensor<1x64x64xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<64x96xf32>, tensor<96x64xf32>) -> tensor<64x64xf32>
  %r = "rlx.relu"(%y) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %z = "rlx.matmul"(%r, %w2) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = "rlx.reshape"(%z) {out_shape = array<i64: 1, 64, 64>} : (tensor<64x64xf32>) -> tensor<1x64x64xf32>
  %t = "rlx.tanh"(%s) : (tensor<1x64x64xf32>) -> tensor<1x64x64xf32>
  return %t : tensor<1x64x64xf32>
}

// -----

// A product that is the function's result accumulates in the result's buffer, which becomes
// the caller's output (buffer-results-to-out-params): nothing allocated, nothing copied.
// OUT-LABEL: func.func @mm(
// OUT-SAME: %[[OUTPUT:[a-z0-9]+]]: memref<64x64xf32>)
// OUT-NOT: memref.alloc
// OUT: %[[C:.*]] = memref.expand_shape %[[OUTPUT]] {{\[\[}}0, 1], [2, 3]] output_shape [8, 8, 2, 32]
// OUT-NOT: linalg.fill
// OUT: memref.subview %[[C]][
// OUT-NOT: linalg.fill
// OUT: vector.fma
// OUT-NOT: memref.alloc
// OUT-NOT: memref.copy
// OUT: return
func.func @mm(%x: tensor<64x96xf32>, %w: tensor<96x64xf32>) -> tensor<64x64xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<64x96xf32>, tensor<96x64xf32>) -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}
