// A decode step updates its KV caches in place: rlx.kv_cache_write bufferizes
// into the cache argument's buffer (it is planned as a view of the cache, so it
// gets no arena slot), rlx-drop-tied-results removes the results tied to the
// caches (rlx.tied), and buffer-results-to-out-params adds an output only for
// the attention output.  No buffer of the cache's size is allocated or copied:
// each step copies its one new row into a subview of the cache.  Arguments that
// no result is tied to are read-only (rlx-readonly-arguments): writing into
// one copies it first, so the caller's input never changes.
// The steps of rlx-lower-to-llvm around bufferization, in its order:
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-lir,rlx-lir-to-linalg,inline,symbol-dce,eliminate-empty-tensors,canonicalize,rlx-distinct-results,rlx-readonly-arguments,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},canonicalize,rlx-drop-tied-results,buffer-results-to-out-params{hoist-static-allocs modify-public-functions},canonicalize)' | FileCheck %s
// The whole pipeline: the C interface takes x, the two caches, pos and one output.
// RUN: rlx-opt %s --rlx-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %[[X:[^:]*]]: memref<1x1x8xf32>, %[[KC:[^:]*]]: memref<1x16x8xf32>, %[[VC:[^:]*]]: memref<1x16x8xf32>, %[[POS:[^:]*]]: memref<i64>, %{{[^:]*}}: memref<8x8xf32>, %{{[^:]*}}: memref<8x8xf32>, %[[OUT:[^:]*]]: memref<1x1x8xf32>)
// CHECK-NOT: memref<1x16x8xf32>)
// CHECK-NOT: memref.alloc{{.*}}memref<1x16x8xf32>
// CHECK: %[[KROW:.*]] = memref.subview %[[KC]][0, %{{.*}}, 0] [1, 1, 8] [1, 1, 1] : memref<1x16x8xf32> to memref<1x1x8xf32, strided<[128, 8, 1], offset: ?>>
// CHECK: memref.copy %{{.*}}, %[[KROW]] : memref<1x1x8xf32{{.*}}> to memref<1x1x8xf32, strided<[128, 8, 1], offset: ?>>
// CHECK: %[[VROW:.*]] = memref.subview %[[VC]][0, %{{.*}}, 0] [1, 1, 8] [1, 1, 1]
// CHECK: memref.copy %{{.*}}, %[[VROW]]
// CHECK-NOT: memref.copy %[[KC]]
// CHECK-NOT: memref.copy %[[VC]]
// CHECK-NOT: memref.alloc{{.*}}memref<1x16x8xf32>
// The attention reads the first p + 1 positions of the caches themselves.
// CHECK: memref.subview %{{.*}}[0, 0, 0, 0] [1, %{{.*}}, 2, 4]
// CHECK-NOT: memref.alloc{{.*}}memref<1x16x8xf32>
// CHECK-NOT: memref.copy %[[KC]]
// CHECK-NOT: memref.copy %[[VC]]
// CHECK: return{{$}}

// LLVM-LABEL: llvm.func @_mlir_ciface_decode(
// LLVM-SAME: %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr)
// LLVM-SAME: attributes {llvm.emit_c_interface, rlx.arena = array<i64: 128, 64>}
func.func @decode(%x: tensor<1x1x8xf32>, %k_cache: tensor<1x16x8xf32>, %v_cache: tensor<1x16x8xf32>, %pos: tensor<i64>,
                  %wk: tensor<8x8xf32>, %wv: tensor<8x8xf32>)
    -> (tensor<1x1x8xf32>, tensor<1x16x8xf32> {rlx.tied = 1 : i64}, tensor<1x16x8xf32> {rlx.tied = 2 : i64}) {
  %k = "rlx.matmul"(%x, %wk) : (tensor<1x1x8xf32>, tensor<8x8xf32>) -> tensor<1x1x8xf32>
  %v = "rlx.matmul"(%x, %wv) : (tensor<1x1x8xf32>, tensor<8x8xf32>) -> tensor<1x1x8xf32>
  %kc = "rlx.kv_cache_write"(%k_cache, %k, %pos) : (tensor<1x16x8xf32>, tensor<1x1x8xf32>, tensor<i64>) -> tensor<1x16x8xf32>
  %vc = "rlx.kv_cache_write"(%v_cache, %v, %pos) : (tensor<1x16x8xf32>, tensor<1x1x8xf32>, tensor<i64>) -> tensor<1x16x8xf32>
  %o = "rlx.cached_attention"(%x, %kc, %vc, %pos) {num_heads = 2 : i64, head_dim = 4 : i64} : (tensor<1x1x8xf32>, tensor<1x16x8xf32>, tensor<1x16x8xf32>, tensor<i64>) -> tensor<1x1x8xf32>
  return %o, %kc, %vc : tensor<1x1x8xf32>, tensor<1x16x8xf32>, tensor<1x16x8xf32>
}

// Not tied: the cache argument is read-only, so the write goes to a copy of it,
// which is the function's result.
// CHECK-LABEL: func.func @untied(
// CHECK-SAME: %[[CACHE:[^:]*]]: memref<1x16x8xf32>, %[[ROW:[^:]*]]: memref<1x1x8xf32>, %[[P:[^:]*]]: memref<i64>, %[[RESULT:[^:]*]]: memref<1x16x8xf32>)
// CHECK: memref.copy %[[CACHE]], %[[RESULT]] : memref<1x16x8xf32> to memref<1x16x8xf32>
// CHECK: %[[DEST:.*]] = memref.subview %[[RESULT]][0, %{{.*}}, 0] [1, 1, 8] [1, 1, 1]
// CHECK: memref.copy %[[ROW]], %[[DEST]]
// CHECK: return{{$}}
func.func @untied(%cache: tensor<1x16x8xf32>, %row: tensor<1x1x8xf32>, %pos: tensor<i64>) -> tensor<1x16x8xf32> {
  %0 = "rlx.kv_cache_write"(%cache, %row, %pos) : (tensor<1x16x8xf32>, tensor<1x1x8xf32>, tensor<i64>) -> tensor<1x16x8xf32>
  return %0 : tensor<1x16x8xf32>
}
