// rlx-tile-matmul: a GEMM kernel whose C starts as zeros (the plain product) runs no fill pass
// (no linalg.fill, so no memset, before the kernel): each 8x32 register tile starts from zero
// accumulators in the first K block (K = 2048: two blocks of 1024; 512 rows, more than one cache
// block of rows, which alone makes K blocked) and is stored whole, and is
// loaded from C and added to in the later blocks. Serial and split across threads (the forall
// indexes C: only the K-block loop decides). A matmul whose init is a real tensor (a bias, an
// accumulation) still loads it in every K block and adds into it.
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul,canonicalize,rlx-tile-matmul)' | FileCheck %s
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul,canonicalize,rlx-tile-matmul{threads=2})' | FileCheck %s --check-prefixes=CHECK,PAR

// CHECK-LABEL: func.func @two_k_blocks(
// CHECK-NOT: linalg.fill
// CHECK: %[[C:.*]] = tensor.expand_shape {{.*}} output_shape [64, 8, 2, 32]
// CHECK-NOT: linalg.fill
// PAR: scf.forall ({{.*}}) in (2) shared_outs(%{{.*}} = %[[C]])
// CHECK: scf.for %[[KB:.*]] = %[[K0:.*]] to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<64x8x{{[12]}}x32xf32>)
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[KB]], %[[K0]] : index
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK-NEXT: %[[TILE:.*]] = scf.if %[[FIRST]] -> (vector<8x32xf32>) {
// CHECK-NEXT: scf.yield %[[ZERO]] : vector<8x32xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[LOADED:.*]] = vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK-NEXT: scf.yield %[[LOADED]] : vector<8x32xf32>
// CHECK: %[[SUM:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[TILE]]) -> (vector<8x32xf32>)
// CHECK: vector.fma
// CHECK: vector.transfer_write %[[SUM]]
// CHECK-NOT: linalg.fill
// CHECK: return
func.func @two_k_blocks(%x: tensor<512x2048xf32>, %w: tensor<2048x64xf32>) -> tensor<512x64xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<512x2048xf32>, tensor<2048x64xf32>) -> tensor<512x64xf32>
  return %y : tensor<512x64xf32>
}

// -----

// CHECK-LABEL: func.func @bias(
// CHECK-SAME: %{{.*}}: tensor<64x2048xf32>, %{{.*}}: tensor<2048x64xf32>, %[[BIAS:[a-z0-9]+]]: tensor<64x64xf32>)
// CHECK: %[[C:.*]] = tensor.expand_shape %[[BIAS]] {{.*}} output_shape [8, 8, 2, 32]
// CHECK-NOT: scf.if
// CHECK: %[[TILE:.*]] = vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK-NEXT: scf.for {{.*}} iter_args(%{{.*}} = %[[TILE]]) -> (vector<8x32xf32>)
// CHECK-NOT: scf.if
// CHECK: return
func.func @bias(%a: tensor<64x2048xf32>, %b: tensor<2048x64xf32>, %c: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x2048xf32>, tensor<2048x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}

// -----

// A fill of -0.0 is no zero start (-0 + -0 is -0, where the zero accumulators would give +0): kept.
// CHECK-LABEL: func.func @negative_zero(
// CHECK: linalg.fill
// CHECK-NOT: scf.if
// CHECK: vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK: return
func.func @negative_zero(%a: tensor<64x2048xf32>, %b: tensor<2048x64xf32>) -> tensor<64x64xf32> {
  %z = arith.constant -0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<64x2048xf32>, tensor<2048x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
