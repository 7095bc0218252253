// rlx-pack-matmul: a static f32 matmul becomes the B-packed, register-blocked GEMM
// form: A padded to a multiple of 8 rows and viewed as [M/8, 8, K], B packed into
// 32-wide column panels [N/32, K, 32] (the pack pads the last panel), C padded and
// viewed as [M/8, 8, N/32, 32], one 5-D generic, then C sliced back.
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul{min-flops=0})' | FileCheck %s
// pack-rows=0 packs every B.
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul{pack-rows=0})' | FileCheck %s --check-prefix=PACKED
// Below min-flops multiply-adds (M·N·K; default 32768) the matmul is left alone.
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul{min-flops=500000})' | FileCheck %s --check-prefix=SMALL

// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d4)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>
// CHECK-LABEL: func.func @odd(
// CHECK-SAME: %[[X:.*]]: tensor<100x60xf32>, %[[W:.*]]: tensor<60x70xf32>
// CHECK: %[[PANELS:.*]] = linalg.pack %[[W]] padding_value(%{{.*}} : f32) outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [32] into %{{.*}} : tensor<60x70xf32> -> tensor<3x60x32xf32>
// CHECK: %[[XP:.*]] = tensor.pad %[[X]] low[0, 0] high[4, 0]
// CHECK: } : tensor<100x60xf32> to tensor<104x60xf32>
// CHECK: %[[CP:.*]] = tensor.pad %{{.*}} low[0, 0] high[4, 26]
// CHECK: %[[XV:.*]] = tensor.expand_shape %[[XP]] {{\[}}[0, 1], [2]] output_shape [13, 8, 60]
// CHECK: %[[CV:.*]] = tensor.expand_shape %[[CP]] {{\[}}[0, 1], [2, 3]] output_shape [13, 8, 3, 32]
// CHECK: %[[K:.*]] = linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[XV]], %[[PANELS]] : tensor<13x8x60xf32>, tensor<3x60x32xf32>) outs(%[[CV]] : tensor<13x8x3x32xf32>)
// CHECK-SAME: rlx.microkernel
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[K]] {{\[}}[0, 1], [2, 3]] : tensor<13x8x3x32xf32> into tensor<104x96xf32>
// CHECK: %[[R:.*]] = tensor.extract_slice %[[FLAT]][0, 0] [100, 70] [1, 1]
// CHECK: return %[[R]]
// SMALL-LABEL: func.func @odd(
// SMALL: linalg.matmul
func.func @odd(%x: tensor<100x60xf32>, %w: tensor<60x70xf32>) -> tensor<100x70xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<100x60xf32>, tensor<60x70xf32>) -> tensor<100x70xf32>
  return %y : tensor<100x70xf32>
}

// -----

// Shapes that divide the tiles are not padded. With fewer than pack-rows (256) rows
// of A, B is not packed but read in place, viewed as [K, N/32, 32].
// CHECK-DAG: #[[A2:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d2)>
// CHECK-DAG: #[[BV:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d1, d4)>
// CHECK-DAG: #[[C2:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>
// CHECK-LABEL: func.func @even(
// CHECK-SAME: %[[X:[^:]*]]: tensor<64x64xf32>, %[[W:[^:]*]]: tensor<64x64xf32>
// CHECK-NOT: tensor.pad
// CHECK-NOT: linalg.pack
// CHECK-DAG: %[[WV:.*]] = tensor.expand_shape %[[W]] {{\[}}[0], [1, 2]] output_shape [64, 2, 32]
// CHECK-DAG: %[[XV:.*]] = tensor.expand_shape %[[X]] {{\[}}[0, 1], [2]] output_shape [8, 8, 64]
// CHECK: linalg.generic {indexing_maps = [#[[A2]], #[[BV]], #[[C2]]]
// CHECK-SAME: ins(%[[XV]], %[[WV]] : tensor<8x8x64xf32>, tensor<64x2x32xf32>)
// CHECK-NOT: tensor.extract_slice
// CHECK: return
// PACKED-LABEL: func.func @even(
// PACKED: linalg.pack
// PACKED: linalg.generic
// PACKED-SAME: ins(%{{.*}}, %{{.*}} : tensor<8x8x64xf32>, tensor<2x64x32xf32>)
// SMALL-LABEL: func.func @even(
// SMALL: linalg.matmul
func.func @even(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}

// -----

// CHECK-LABEL: func.func @odd_depth(
// CHECK: tensor.pad %{{.*}} low[0, 0] high[2, 0]
// CHECK: } : tensor<62x64xf32> to tensor<64x64xf32>
// CHECK: linalg.pack
// CHECK: tensor.pad %{{.*}} low[0, 0] high[0, 2]
// CHECK: } : tensor<64x62xf32> to tensor<64x64xf32>
func.func @odd_depth(%x: tensor<64x62xf32>, %w: tensor<62x64xf32>) -> tensor<64x64xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<64x62xf32>, tensor<62x64xf32>) -> tensor<64x64xf32>
  return %y : tensor<64x64xf32>
}

// -----

// f16 matmuls (f32 accumulation) keep the scalar loops.
// CHECK-LABEL: func.func @half(
// CHECK: linalg.matmul
// CHECK-NOT: linalg.pack
func.func @half(%x: tensor<64x64xf16>, %w: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %y = "rlx.matmul"(%x, %w) : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  return %y : tensor<64x64xf16>
}
