// Tile choices on sizes with no divisor near the tile limit (a prime N or K): full-size tiles and
// one static tail, never 1-wide tiles (1-column chunks, 1-row weight blocks or panels were 1.6x to
// 26x the time per element).  Sizes that divide keep their tiles (the other lit tests).
// RUN: rlx-opt %s --split-input-file --rlx-mir-to-linalg | FileCheck %s

// rlx.grouped_matmul, N = 331 (prime): 4 chunks of 80 columns in the forall and a tail chunk of
// 11 after it; K = 1031 (prime): a weight block of 816 rows and a tail block of the last 215.
// CHECK-LABEL: func.func @grouped
// CHECK: scf.forall (%{{.*}}) in (4) shared_outs(%{{.*}}) -> (tensor<72x331xf32>)
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<72x80xf32>)
// CHECK: tensor.extract_slice %arg1[%{{.*}}, %{{.*}}, %{{.*}}] [1, 816, 80] [1, 1, 1]
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x816xf32>, tensor<816x80xf32>)
// CHECK: tensor.extract_slice %arg1[%{{.*}}, 816, %{{.*}}] [1, 215, 80] [1, 1, 1]
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x215xf32>, tensor<215x80xf32>)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, %{{.*}}] [72, 80] [1, 1]
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<72x11xf32>)
// CHECK: tensor.extract_slice %arg1[%{{.*}}, %{{.*}}, 320] [1, 816, 11] [1, 1, 1]
// CHECK: tensor.extract_slice %arg1[%{{.*}}, 816, 320] [1, 215, 11] [1, 1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 320] [72, 11] [1, 1] : tensor<72x11xf32> into tensor<72x331xf32>
// CHECK-NOT: x1xf32>
// CHECK: return
func.func @grouped(%x: tensor<45x1031xf32>, %w: tensor<4x1031x331xf32>, %idx: tensor<45xi64>) -> tensor<45x331xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<45x1031xf32>, tensor<4x1031x331xf32>, tensor<45xi64>) -> tensor<45x331xf32>
  return %0 : tensor<45x331xf32>
}

// -----

// rlx.dequant_grouped_matmul, N = 131 (prime): one block of 128 slab rows in the forall, a tail
// block of 3 after it.
// CHECK-LABEL: func.func @dequant_grouped
// CHECK: scf.forall (%{{.*}}) in (1) shared_outs(%{{.*}}) -> (tensor<48x131xf32>)
// CHECK: tensor.extract_slice %arg1[%{{.*}}, %{{.*}}, 0] [1, 128, 68] [1, 1, 1] : tensor<4x131x68xi8> to tensor<128x68xi8>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, %{{.*}}] [48, 128] [1, 1]
// CHECK: tensor.extract_slice %arg1[%{{.*}}, 128, 0] [1, 3, 68] [1, 1, 1] : tensor<4x131x68xi8> to tensor<3x68xi8>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 128] [48, 3] [1, 1] : tensor<48x3xf32> into tensor<48x131xf32>
// CHECK: return
func.func @dequant_grouped(%x: tensor<21x64xf32>, %w: tensor<4x131x68xui8>, %idx: tensor<21xi64>) -> tensor<21x131xf32> {
  %0 = "rlx.dequant_grouped_matmul"(%x, %w, %idx) {scheme = "q8_0"} : (tensor<21x64xf32>, tensor<4x131x68xui8>, tensor<21xi64>) -> tensor<21x131xf32>
  return %0 : tensor<21x131xf32>
}

// -----

// rlx.dequant_matmul, N = 67 (prime) with two row tiles of 8: the first 64 weight rows (one panel
// of 64) and the last 3 (one panel of 3) as two products, side by side in the result.
// CHECK-LABEL: func.func @dequant
// CHECK: %[[HEAD:.*]] = tensor.extract_slice %arg1[0, 0] [64, 272] [1, 1] : tensor<67x272xi8> to tensor<64x272xi8>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[HEAD]] : tensor<16x1x8x1x32xf32>, tensor<64x272xi8>) outs({{.*}} : tensor<1x2x64xf32>,
// CHECK: %[[FIRST:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [16, 64] [1, 1] : tensor<16x64xf32> into tensor<16x67xf32>
// CHECK: %[[TAIL:.*]] = tensor.extract_slice %arg1[64, 0] [3, 272] [1, 1] : tensor<67x272xi8> to tensor<3x272xi8>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[TAIL]] : tensor<16x1x8x1x32xf32>, tensor<3x272xi8>) outs({{.*}} : tensor<1x2x3xf32>,
// CHECK: %[[BOTH:.*]] = tensor.insert_slice %{{.*}} into %[[FIRST]][0, 64] [16, 3] [1, 1] : tensor<16x3xf32> into tensor<16x67xf32>
// CHECK: return %[[BOTH]]
func.func @dequant(%x: tensor<16x256xf32>, %w: tensor<67x272xui8>) -> tensor<16x67xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q8_0"} : (tensor<16x256xf32>, tensor<67x272xui8>) -> tensor<16x67xf32>
  return %0 : tensor<16x67xf32>
}

// -----

// One row of x (one row tile): the panels cost nothing more when 1 row wide, and a second product
// would; N = 67 stays one generic.
// CHECK-LABEL: func.func @dequant_one_row
// CHECK-NOT: tensor.extract_slice %arg1
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %arg1 : tensor<1x1x8x1x32xf32>, tensor<67x272xi8>)
// CHECK-NOT: linalg.generic {{.*}}xi8>)
// CHECK: return
func.func @dequant_one_row(%x: tensor<1x256xf32>, %w: tensor<67x272xui8>) -> tensor<1x67xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q8_0"} : (tensor<1x256xf32>, tensor<67x272xui8>) -> tensor<1x67xf32>
  return %0 : tensor<1x67xf32>
}
