// rlx-tile-matmul's cache blocks of K: when the rows fit one cache block of rows (MC = 256) and B
// is panels the function is given (bound weights: rlx-pack-matmul{pack-params} and
// rlx-hoist-param-packing), each B panel's K block is multiplied by every row block in turn and
// never again, so KC need only keep it in L2 for those passes: up to 2048 (K = 2048: one K loop
// over all of K per register tile, C stored once).  With more rows than one cache block (512) a K
// block is reused by the next row block: KC = 1024, two K blocks.  Where B is packed per call
// (PERCALL) KC stays 1024 (the larger block made a per-call prefill slower).
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul{pack-params},rlx-hoist-param-packing,canonicalize,rlx-tile-matmul)' | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul,canonicalize,rlx-tile-matmul)' | FileCheck %s --check-prefix=PERCALL

// CHECK-LABEL: func.func @rows_in_one_block(
// CHECK-DAG: %[[K:.*]] = arith.constant 2048 : index
// CHECK-DAG: %[[STEP:.*]] = arith.constant 4 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<32x8x2x32xf32>)
// CHECK-NEXT: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<32x8x2x32xf32>)
// CHECK-NOT: scf.for
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[K]] step %[[STEP]] iter_args(%{{.*}}) -> (vector<8x32xf32>)
// CHECK-LABEL: func.func @rows_in_two_blocks(
// CHECK-DAG: %[[KC:.*]] = arith.constant 1024 : index
// CHECK-DAG: %[[K2:.*]] = arith.constant 2048 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[K2]] step %[[KC]] iter_args(%{{.*}} = %{{.*}}) -> (tensor<64x8x2x32xf32>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[KC]] step %{{.*}} iter_args(%{{.*}}) -> (vector<8x32xf32>)
// PERCALL-LABEL: func.func @rows_in_one_block(
// PERCALL-DAG: %[[KC:.*]] = arith.constant 1024 : index
// PERCALL-DAG: %[[K2:.*]] = arith.constant 2048 : index
// PERCALL: scf.for %{{.*}} = %{{.*}} to %[[K2]] step %[[KC]] iter_args(%{{.*}} = %{{.*}}) -> (tensor<32x8x2x32xf32>)
// PERCALL: scf.for %{{.*}} = %{{.*}} to %[[KC]] step %{{.*}} iter_args(%{{.*}}) -> (vector<8x32xf32>)
func.func @rows_in_one_block(%x: tensor<256x2048xf32>, %w: tensor<2048x64xf32> {rlx.param}) -> tensor<256x64xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<256x2048xf32>, tensor<2048x64xf32>) -> tensor<256x64xf32>
  return %y : tensor<256x64xf32>
}
func.func @rows_in_two_blocks(%x: tensor<512x2048xf32>, %w: tensor<2048x64xf32> {rlx.param}) -> tensor<512x64xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<512x2048xf32>, tensor<2048x64xf32>) -> tensor<512x64xf32>
  return %y : tensor<512x64xf32>
}
