// rlx.grouped_matmul: an expert's last tile with at most 4 of its 8 slots holding rows multiplies
// only its first 4 slots (the padding slots after them are zero in xs and never read back), so the
// padding computed per expert is at most 3 rows instead of 7.  Per tile: the rows left in the
// expert (its end slot, first tile * 8 + count, minus the tile's slot) against 4; both matmuls sit
// in the loop tagged `rlx.gemv_rows = 8`, so rlx-tile-gemv gives them the same passes of 8 weight
// rows (each sum runs over k in the same order: the same bits either way).
// RUN: rlx-opt %s --split-input-file --rlx-mir-to-linalg | FileCheck %s
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-tile-gemv)' | FileCheck %s --check-prefix=GEMV

// CHECK-LABEL: func.func @tail
// CHECK: scf.forall (%{{.*}}) in (4)
// CHECK: %[[BLOCK:.*]] = tensor.extract_slice %{{.*}} [1, 256, 128] [1, 1, 1] : tensor<3x256x512xf32> to tensor<256x128xf32>
// CHECK: %[[FIRST:.*]] = arith.muli %{{.*}}, %c8{{.*}} : index
// CHECK: %[[END:.*]] = arith.addi %[[FIRST]], %{{.*}} : index
// CHECK: scf.for %[[T:[^ ]*]] = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<56x128xf32>)
// CHECK: %[[SLOT:.*]] = arith.muli %[[T]], %c8{{.*}} : index
// CHECK: %[[LEFT:.*]] = arith.subi %[[END]], %[[SLOT]] : index
// CHECK: %[[FEW:.*]] = arith.cmpi ule, %[[LEFT]], %c4{{.*}} : index
// CHECK: scf.if %[[FEW]] -> (tensor<56x128xf32>)
// CHECK: tensor.extract_slice %[[ACC]][%[[SLOT]], 0] [4, 128] [1, 1]
// CHECK: linalg.matmul ins(%{{.*}}, %[[BLOCK]] : tensor<4x256xf32>, tensor<256x128xf32>) outs(%{{.*}} : tensor<4x128xf32>)
// CHECK: } else {
// CHECK: tensor.extract_slice %[[ACC]][%[[SLOT]], 0] [8, 128] [1, 1]
// CHECK: linalg.matmul ins(%{{.*}}, %[[BLOCK]] : tensor<8x256xf32>, tensor<256x128xf32>) outs(%{{.*}} : tensor<8x128xf32>)
// CHECK: } {rlx.gemv_rows = 8 : i64}

// GEMV-LABEL: func.func @tail
// GEMV-NOT: linalg.matmul
// GEMV: scf.for %{{.*}} = %{{.*}} to %c256 step %c8 iter_args(%{{.*}}) -> (tensor<4x128xf32>)
// GEMV: scf.for %{{.*}} = %{{.*}} to %c256 step %c8 iter_args(%{{.*}}) -> (tensor<8x128xf32>)
// GEMV-NOT: linalg.matmul
// GEMV: return
func.func @tail(%x: tensor<40x256xf32>, %w: tensor<3x256x512xf32>, %idx: tensor<40xi64>) -> tensor<40x512xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<40x256xf32>, tensor<3x256x512xf32>, tensor<40xi64>) -> tensor<40x512xf32>
  return %0 : tensor<40x512xf32>
}

// -----

// A 4-row tile whose product is under rlx-tile-gemv's 32^3 multiply-adds (4 x 16 x 8) would leave
// the GEMV kernel: every tile keeps its 8 rows.
// CHECK-LABEL: func.func @small
// CHECK-NOT: arith.cmpi ule
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x8xf32>)
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @small(%x: tensor<5x16xf32>, %w: tensor<3x16x8xf32>, %idx: tensor<5xi64>) -> tensor<5x8xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<5x16xf32>, tensor<3x16x8xf32>, tensor<5xi64>) -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}
