// rlx.grouped_matmul's loop over an expert's 8-row tiles is tagged `rlx.gemv_rows = 8`: the expert's block
// of weight rows is in L2 for all but its first tile, so rlx-tile-gemv's kernel steps K by 8 rows
// of B (C's tile loaded and stored once per 8 rows) where an untagged GEMV steps by 4.  Fewer rows
// per tile (a decode step: one row, tile of 1) keep the default 4.
// RUN: rlx-opt %s --split-input-file --rlx-mir-to-linalg | FileCheck %s --check-prefix=TAG
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-tile-gemv)' | FileCheck %s

// TAG-LABEL: func.func @tiles
// TAG: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x64xf32>, tensor<64x128xf32>)
// TAG: } {rlx.gemv_rows = 8 : i64}
// CHECK-LABEL: func.func @tiles
// CHECK-NOT: linalg.matmul
// CHECK: scf.for %{{.*}} = %{{.*}} to %c64 step %c8 iter_args(%{{.*}}) -> (tensor<8x128xf32>)
// CHECK: vector.transfer_read %{{.*}} : tensor<8x8xf32>, vector<8x8xf32>
// CHECK: vector.transfer_read %{{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK-COUNT-64: vector.fma %{{.*}} : vector<32xf32>
// CHECK-NOT: vector.fma
// CHECK: return
func.func @tiles(%x: tensor<64x64xf32>, %w: tensor<2x64x512xf32>, %idx: tensor<64xi64>) -> tensor<64x512xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<64x64xf32>, tensor<2x64x512xf32>, tensor<64xi64>) -> tensor<64x512xf32>
  return %0 : tensor<64x512xf32>
}

// -----

// TAG-LABEL: func.func @decode
// TAG-NOT: rlx.gemv_rows
// TAG: return
// CHECK-LABEL: func.func @decode
// CHECK-NOT: linalg.matmul
// CHECK: scf.for %{{.*}} = %{{.*}} to %c256 step %c4 iter_args
// CHECK: return
func.func @decode(%x: tensor<1x256xf32>, %w: tensor<2x256x1024xf32>, %idx: tensor<1xi64>) -> tensor<1x1024xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<1x256xf32>, tensor<2x256x1024xf32>, tensor<1xi64>) -> tensor<1x1024xf32>
  return %0 : tensor<1x1024xf32>
}
