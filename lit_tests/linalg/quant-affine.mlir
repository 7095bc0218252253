// rlx.dequant_matmul with a side-tensor scheme lowers to one linalg.generic over (panel p of
// output columns, K block b, k j in the block, row m of x, byte c of the panel's row of codes,
// code h in the byte) whose body decodes its one code (nibble h of the byte for int4), subtracts
// the block's zero point, applies the scale and adds x * weight into out[p, m, c, h]: the
// innermost loops run along N, where LLVM vectorises.  No f32 copy of the weight.  From
// GEMM_ROWS = 48 rows of x on, the weight is decoded once into f32 [K, N] by an all-parallel
// generic with the same body and multiplied by linalg.matmul (the f32 GEMM kernel).
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// CHECK-DAG: #[[W_MAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d2, d0, d4)>
// CHECK-DAG: #[[SIDE_MAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d0, d4, d5)>
// CHECK-DAG: #[[X_MAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d1, d2)>
// CHECK-DAG: #[[OUT_MAP:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d4, d5)>
// CHECK-DAG: #[[DEC_W:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[DEC_SIDE:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3, d4)>
// CHECK-DAG: #[[DEC_OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[SCALE_IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3, d2)>
// CHECK-DAG: #[[SCALE_OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[NW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d2, d0, d5)>

// int4/32, M = 1, K = 64, N = 32 (16 bytes a row): panels of 2 columns (16 panels); w viewed as
// [K/B, B, N/P, P/2] bytes, scale and zp as [K/B, N/P, P/2, 2], x as [M, K/B, B].
// CHECK-LABEL: func.func @int4
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x64xf32>, %[[W:[^:]*]]: tensor<64x16xi8>, %[[S:[^:]*]]: tensor<2x32xf32>, %[[Z:[^:]*]]: tensor<2x32xf32>) -> tensor<1x32xf32>
// CHECK: %[[WV:.*]] = tensor.expand_shape %{{.*}} output_shape [2, 32, 16, 1] : tensor<1024xi8> into tensor<2x32x16x1xi8>
// CHECK: %[[SV:.*]] = tensor.expand_shape %{{.*}} output_shape [2, 16, 1, 2] : tensor<64xf32> into tensor<2x16x1x2xf32>
// CHECK: %[[ZV:.*]] = tensor.expand_shape %{{.*}} output_shape [2, 16, 1, 2] : tensor<64xf32> into tensor<2x16x1x2xf32>
// CHECK: %[[XV:.*]] = tensor.expand_shape %{{.*}} output_shape [1, 2, 32] : tensor<64xf32> into tensor<1x2x32xf32>
// CHECK: %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<16x1x1x2xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[W_MAP]], #[[SIDE_MAP]], #[[SIDE_MAP]], #[[X_MAP]], #[[OUT_MAP]]], iterator_types = ["parallel", "reduction", "reduction", "parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[WV]], %[[SV]], %[[ZV]], %[[XV]] : tensor<2x32x16x1xi8>, tensor<2x16x1x2xf32>, tensor<2x16x1x2xf32>, tensor<1x2x32xf32>) outs(%[[ACC]] : tensor<16x1x1x2xf32>)
// CHECK: ^bb0(%[[BYTE:.*]]: i8, %[[SCALE:.*]]: f32, %[[ZP:.*]]: f32, %[[XE:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK: %[[H:.*]] = linalg.index 5 : index
// CHECK: %[[H32:.*]] = arith.index_cast %[[H]] : index to i32
// CHECK: %[[B32:.*]] = arith.extui %[[BYTE]] : i8 to i32
// CHECK: %[[SHIFT:.*]] = arith.muli %[[H32]], %{{.*}} : i32
// CHECK: %[[SHIFTED:.*]] = arith.shrui %[[B32]], %[[SHIFT]] : i32
// CHECK: %[[CODE:.*]] = arith.andi %[[SHIFTED]], %{{.*}} : i32
// CHECK: %[[CF:.*]] = arith.uitofp %[[CODE]] : i32 to f32
// CHECK: %[[CENTRED:.*]] = arith.subf %[[CF]], %[[ZP]] : f32
// CHECK: %[[WEIGHT:.*]] = arith.mulf %[[CENTRED]], %[[SCALE]] : f32
// CHECK: %[[PRODUCT:.*]] = arith.mulf %[[XE]], %[[WEIGHT]] fastmath<contract> : f32
// CHECK: %[[SUM:.*]] = arith.addf %[[OUT]], %[[PRODUCT]] fastmath<contract> : f32
// CHECK: linalg.yield %[[SUM]] : f32
// CHECK: tensor.collapse_shape %{{.*}} : tensor<16x1x1x2xf32> into tensor<32xf32>
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @int4(%x: tensor<1x64xf32>, %w: tensor<64x16xui8>, %s: tensor<2x32xf32>, %z: tensor<2x32xf32>) -> tensor<1x32xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w, %s, %z) {scheme = "int4/32"} : (tensor<1x64xf32>, tensor<64x16xui8>, tensor<2x32xf32>, tensor<2x32xf32>) -> tensor<1x32xf32>
  return %0 : tensor<1x32xf32>
}

// int8/32 with M = 48: the weight decoded once (code * scale, all parallel) into f32 [64, 32],
// then linalg.matmul.
// CHECK-LABEL: func.func @gemm
// CHECK-SAME: %[[X:[^:]*]]: tensor<48x64xf32>
// CHECK: %[[DECODED:.*]] = linalg.generic {indexing_maps = [#[[DEC_W]], #[[DEC_SIDE]], #[[DEC_OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME: tensor<2x32x16x2xi8>, tensor<2x16x2x1xf32>
// CHECK: ^bb0(%[[CODE:.*]]: i8, %[[SCALE:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[CF:.*]] = arith.sitofp %[[CODE]] : i8 to f32
// CHECK: %[[WEIGHT:.*]] = arith.mulf %[[CF]], %[[SCALE]] : f32
// CHECK: linalg.yield %[[WEIGHT]] : f32
// CHECK: %[[W32:.*]] = tensor.expand_shape %{{.*}} output_shape [64, 32] : tensor<2048xf32> into tensor<64x32xf32>
// CHECK: linalg.matmul ins(%[[X]], %[[W32]] : tensor<48x64xf32>, tensor<64x32xf32>)
func.func @gemm(%x: tensor<48x64xf32>, %w: tensor<64x32xi8>, %s: tensor<2x32xf32>) -> tensor<48x32xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w, %s) {scheme = "int8/32"} : (tensor<48x64xf32>, tensor<64x32xi8>, tensor<2x32xf32>) -> tensor<48x32xf32>
  return %0 : tensor<48x32xf32>
}

// nvfp4, M = 1, K = 32, N = 32 (panels of 2): the E4M3 scales decoded once into f32 [K/16, N/P, 2,
// P/2] (even columns of a panel, then odd), then the kernel over (p, b, j, m, h, c) with the
// nibble h outside the contiguous byte loop c, and its [N/P, M, 2, P/2] transposed into [M, N].
// CHECK-LABEL: func.func @nvfp4
// CHECK: %[[SCALES:.*]] = linalg.generic {indexing_maps = [#[[SCALE_IN]], #[[SCALE_OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}} : tensor<2x16x1x2xi8>) outs(%{{.*}} : tensor<2x16x2x1xf32>)
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: %[[K:.*]] = linalg.generic {indexing_maps = [#[[NW]], #[[SIDE_MAP]], #[[X_MAP]], #[[OUT_MAP]]], iterator_types = ["parallel", "reduction", "reduction", "parallel", "parallel", "parallel"]} ins(%{{.*}}, %[[SCALES]], %{{.*}} : tensor<2x16x16x1xi8>, tensor<2x16x2x1xf32>, tensor<1x2x16xf32>) outs(%{{.*}} : tensor<16x1x2x1xf32>)
// CHECK: linalg.index 4 : index
// CHECK: linalg.transpose ins(%[[K]] : tensor<16x1x2x1xf32>) outs(%{{.*}} : tensor<1x16x1x2xf32>) permutation = [1, 0, 3, 2]
func.func @nvfp4(%x: tensor<1x32xf32>, %w: tensor<32x16xui8>, %s: tensor<2x32xui8>) -> tensor<1x32xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w, %s) {scheme = "nvfp4", global_scale = 0.5 : f32} : (tensor<1x32xf32>, tensor<32x16xui8>, tensor<2x32xui8>) -> tensor<1x32xf32>
  return %0 : tensor<1x32xf32>
}
