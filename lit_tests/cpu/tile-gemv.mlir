// rlx-tile-gemv: an f32 matmul with few rows (M <= 8, N a multiple of 16) becomes the
// weight-streaming loop nest of a BLAS gemv_n kernel instead of the 8-row GEMM tile: M is not
// padded; K steps by 4 rows of B; inside, N steps by a tile of columns, and each step is 4
// broadcast values of A per row times a row of B (vector.fma per row of C), C's tile loaded and
// stored once per step (it stays in L1), every row of B read in contiguous runs.
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-tile-gemv)' | FileCheck %s
// With threads=2 the columns are split across an scf.forall, one chunk per thread.
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-tile-gemv{threads=2})' | FileCheck %s --check-prefix=PAR
// In the CPU pipeline the GEMV comes before rlx-pack-matmul, which sees no matmul left.
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-lower-to-llvm{threads=1})' | FileCheck %s --check-prefix=LLVM

// M = 3, K = 128, N = 96: K in 32 steps of 4, N in 2 tiles of 48 columns (3 rows x 3 vectors of 16).
// CHECK-LABEL: func.func @gemv(
// CHECK-NOT: linalg.matmul
// CHECK: scf.for %{{.*}} = %{{.*}} to %c128 step %c4 iter_args(%{{.*}}) -> (tensor<3x96xf32>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %c96 step %c48 iter_args(%{{.*}}) -> (tensor<3x96xf32>)
// CHECK: vector.transfer_read %{{.*}} : tensor<3x4xf32>, vector<3x4xf32>
// CHECK: vector.transfer_read %{{.*}} : tensor<4x48xf32>, vector<4x48xf32>
// CHECK: vector.transfer_read %{{.*}} : tensor<3x48xf32>, vector<3x48xf32>
// CHECK-COUNT-12: vector.fma %{{.*}} : vector<48xf32>
// CHECK-NOT: vector.fma
// CHECK: vector.transfer_write %{{.*}} : vector<3x48xf32>, tensor<3x48xf32>
// CHECK-NOT: rlx.microkernel
// CHECK: return
// PAR-LABEL: func.func @gemv(
// PAR: scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<3x96xf32>)
// PAR: scf.for %{{.*}} step %c4 iter_args(%{{.*}}) -> (tensor<3x48xf32>)
// PAR-COUNT-12: vector.fma %{{.*}} : vector<48xf32>
// PAR: scf.forall.in_parallel
// LLVM-LABEL: llvm.func @gemv(
// LLVM-COUNT-12: llvm.intr.fmuladd({{.*}}) : (vector<48xf32>, vector<48xf32>, vector<48xf32>) -> vector<48xf32>
func.func @gemv(%x: tensor<3x128xf32>, %w: tensor<128x96xf32>) -> tensor<3x96xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<3x128xf32>, tensor<128x96xf32>) -> tensor<3x96xf32>
  return %y : tensor<3x96xf32>
}

// -----

// M = 1: the unit row is folded away; a K of 30 steps by 3 (the largest divisor up to 4); N = 2048
// in tiles of 256 columns (16 vectors).
// CHECK-LABEL: func.func @row(
// CHECK: scf.for %{{.*}} = %{{.*}} to %c30 step %c3
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2048 step %c256
// CHECK: vector.transfer_read %{{.*}} : tensor<3x256xf32>, vector<3x256xf32>
// CHECK-COUNT-3: vector.fma %{{.*}} : vector<256xf32>
// CHECK-NOT: vector.fma
// CHECK: return
func.func @row(%x: tensor<1x30xf32>, %w: tensor<30x2048xf32>) -> tensor<1x2048xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<1x30xf32>, tensor<30x2048xf32>) -> tensor<1x2048xf32>
  return %y : tensor<1x2048xf32>
}

// -----

// Not a GEMV: 9 rows (more than max-rows), or N = 8 (less than one vector): left to rlx-pack-matmul.
// CHECK-LABEL: func.func @nine_rows(
// CHECK: linalg.matmul
// CHECK-NOT: vector.fma
// CHECK-LABEL: func.func @narrow(
// CHECK: linalg.matmul
// CHECK-NOT: vector.fma
// LLVM-LABEL: llvm.func @nine_rows(
// LLVM-COUNT-32: llvm.intr.fmuladd({{.*}}) : (vector<32xf32>, vector<32xf32>, vector<32xf32>) -> vector<32xf32>
func.func @nine_rows(%x: tensor<9x128xf32>, %w: tensor<128x96xf32>) -> tensor<9x96xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<9x128xf32>, tensor<128x96xf32>) -> tensor<9x96xf32>
  return %y : tensor<9x96xf32>
}
func.func @narrow(%x: tensor<2x4096xf32>, %w: tensor<4096x8xf32>) -> tensor<2x8xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<2x4096xf32>, tensor<4096x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// N = 100, not a multiple of 16: the first 96 columns are a GEMV, the last 4 a matmul of their
// own (for rlx-pack-matmul), both inserted into C.
// CHECK-LABEL: func.func @odd_columns(
// CHECK: %[[B:.*]] = tensor.extract_slice %{{.*}}[0, 0] [256, 96] [1, 1] : tensor<256x100xf32> to tensor<256x96xf32>
// CHECK: scf.for
// CHECK: vector.fma %{{.*}} : vector<96xf32>
// CHECK: %[[REST:.*]] = tensor.extract_slice %{{.*}}[0, 96] [256, 4] [1, 1] : tensor<256x100xf32> to tensor<256x4xf32>
// CHECK: %[[TAIL:.*]] = linalg.matmul ins(%{{.*}}, %[[REST]] : tensor<2x256xf32>, tensor<256x4xf32>)
// CHECK: tensor.insert_slice %[[TAIL]] into %{{.*}}[0, 96] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<2x100xf32>
// CHECK: return
func.func @odd_columns(%x: tensor<2x256xf32>, %w: tensor<256x100xf32>) -> tensor<2x100xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<2x256xf32>, tensor<256x100xf32>) -> tensor<2x100xf32>
  return %y : tensor<2x100xf32>
}
