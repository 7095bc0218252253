// rlx-tile-matmul: the packed GEMM kernel tiled to 8x32 register tiles (C kept in
// registers across the K loop, which steps by 4) and vectorized to vector.fma on
// vector<32xf32>: per K step, 4 rows of B panel x 8 broadcast A values = 32 FMAs.
// With threads=2 the N panels are split across an scf.forall (a packed B is packed
// by each thread for its own panels: see PACKED). rlx-lower-to-llvm takes it to llvm.intr.fmuladd on vector<32xf32> (an FMA instruction).
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul,canonicalize,rlx-tile-matmul)' | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul,canonicalize,rlx-tile-matmul{threads=2})' | FileCheck %s --check-prefix=PAR
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul{pack-rows=0},canonicalize,rlx-tile-matmul{threads=2})' | FileCheck %s --check-prefix=PACKED
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-lower-to-llvm{threads=1})' | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @mm(
// CHECK-NOT: linalg.generic
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<8x8x2x32xf32>)
// One K block (K = 96): each register tile starts from zeros, C is not read (tile-matmul-zero-start.mlir).
// CHECK-NOT: vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK-NOT: vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK: %[[SUM:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[C4:.*]] iter_args(%[[ACC:.*]] = %[[ZERO:.*]]) -> (vector<8x32xf32>)
// CHECK-COUNT-32: vector.fma {{.*}} : vector<32xf32>
// CHECK: scf.yield %{{.*}} : vector<8x32xf32>
// CHECK: vector.transfer_write %[[SUM]]
// CHECK-NOT: linalg.generic
// CHECK: return

// PAR-LABEL: func.func @mm(
// PAR: scf.forall (%{{.*}}) in (2) shared_outs
// PAR: vector.fma
// PAR: scf.forall.in_parallel

// PACKED-LABEL: func.func @mm(
// PACKED: scf.forall (%{{.*}}) in (2) shared_outs
// PACKED: linalg.transpose
// PACKED: vector.fma
// PACKED: scf.forall.in_parallel

// LLVM-LABEL: llvm.func @mm(
// LLVM-COUNT-32: llvm.intr.fmuladd({{.*}}) : (vector<32xf32>, vector<32xf32>, vector<32xf32>) -> vector<32xf32>
func.func @mm(%x: tensor<64x96xf32>, %w: tensor<96x64xf32>) -> tensor<64x64xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<64x96xf32>, tensor<96x64xf32>) -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}
