// Norms lower to their statistics in f32 (linalg.reduce, or a generic with a
// reduction iterator when the normalised value is computed from several
// operands), then one elementwise generic; fused SwiGLU to two slices and one
// generic.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROWSTAT2:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[PARAM2:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[MIDSTAT3:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[MIDPARAM3:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-DAG: #[[VEC:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0) -> ()>

// RMSNorm: sum of squares by linalg.reduce, then x / sqrt(sum / D + eps) * gamma + beta.
// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK: %[[INIT:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[SS:.*]] = linalg.reduce ins(%[[X]] : tensor<4x8xf32>) outs(%[[INIT]] : tensor<4xf32>) dimensions = [1]
// CHECK-NEXT: (%[[E:.*]]: f32, %[[ACC:.*]]: f32) {
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[E]], %[[E]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.addf %[[ACC]], %[[SQ]] : f32
// CHECK-NEXT: linalg.yield %[[T]]
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROWSTAT2]], #[[PARAM2]], #[[PARAM2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[SS]], %[[G]], %[[B]] : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK: ^bb0(%[[XE:.*]]: f32, %[[S:.*]]: f32, %[[GE:.*]]: f32, %[[BE:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[D:.*]] = arith.constant 8.000000e+00 : f32
// CHECK-NEXT: %[[MS:.*]] = arith.divf %[[S]], %[[D]] : f32
// CHECK-NEXT: %[[EPS:.*]] = arith.constant 9.99999997E-7 : f32
// CHECK-NEXT: %[[V:.*]] = arith.addf %[[MS]], %[[EPS]] : f32
// CHECK-NEXT: %[[RT:.*]] = math.sqrt %[[V]] : f32
// CHECK-NEXT: %[[N:.*]] = arith.divf %[[XE]], %[[RT]] : f32
// CHECK-NEXT: %[[SC:.*]] = arith.mulf %[[N]], %[[GE]] : f32
// CHECK-NEXT: %[[Y:.*]] = arith.addf %[[SC]], %[[BE]] : f32
// CHECK-NEXT: linalg.yield %[[Y]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @rms_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.rms_norm"(%x, %g, %b) {axis = -1 : i64, eps = 1.0e-6 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// A middle axis: statistics drop d1, gamma and beta read d1; f16 widens to f32
// in the reduction and rounds once at the end.
// CHECK-LABEL: func.func @rms_norm_f16_axis1
// CHECK: %[[SS:.*]] = linalg.reduce ins(%{{.*}} : tensor<2x3x4xf16>) outs(%{{.*}} : tensor<2x4xf32>) dimensions = [1]
// CHECK-NEXT: (%[[E:.*]]: f16, %[[ACC:.*]]: f32) {
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[E]] : f16 to f32
// CHECK-NEXT: arith.mulf %[[W]], %[[W]] : f32
// CHECK: linalg.generic {indexing_maps = [#[[ID3]], #[[MIDSTAT3]], #[[MIDPARAM3]], #[[MIDPARAM3]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%{{.*}}, %[[SS]], %{{.*}}, %{{.*}} : tensor<2x3x4xf16>, tensor<2x4xf32>, tensor<3xf16>, tensor<3xf16>) outs(%{{.*}} : tensor<2x3x4xf16>)
// CHECK: arith.constant 3.000000e+00 : f32
// CHECK: arith.constant 9.99999974E-6 : f32
// CHECK: %[[Y:.*]] = arith.truncf %{{.*}} : f32 to f16
// CHECK-NEXT: linalg.yield %[[Y]] : f16
func.func @rms_norm_f16_axis1(%x: tensor<2x3x4xf16>, %g: tensor<3xf16>, %b: tensor<3xf16>) -> tensor<2x3x4xf16> {
  %0 = "rlx.rms_norm"(%x, %g, %b) {axis = 1 : i64, eps = 1.0e-5 : f32} : (tensor<2x3x4xf16>, tensor<3xf16>, tensor<3xf16>) -> tensor<2x3x4xf16>
  return %0 : tensor<2x3x4xf16>
}

// LayerNorm, two passes: the sum (linalg.reduce), the sum of squared
// deviations from sum / D (a generic with a reduction iterator), then the
// elementwise generic.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK: %[[SUM:.*]] = linalg.reduce { arith.addf } ins(%[[X]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<4xf32>) dimensions = [1]
// CHECK: %[[SS:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROWSTAT2]], #[[ROWSTAT2]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: ins(%[[X]], %[[SUM]] : tensor<4x8xf32>, tensor<4xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: ^bb0(%[[XE:.*]]: f32, %[[S:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[D:.*]] = arith.constant 8.000000e+00 : f32
// CHECK-NEXT: %[[MEAN:.*]] = arith.divf %[[S]], %[[D]] : f32
// CHECK-NEXT: %[[DEV:.*]] = arith.subf %[[XE]], %[[MEAN]] : f32
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[DEV]], %[[DEV]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.addf %[[ACC]], %[[SQ]] : f32
// CHECK-NEXT: linalg.yield %[[T]]
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROWSTAT2]], #[[ROWSTAT2]], #[[PARAM2]], #[[PARAM2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[SUM]], %[[SS]], %[[G]], %[[B]] :
// CHECK: ^bb0(%[[XE:.*]]: f32, %[[S:.*]]: f32, %[[Q:.*]]: f32, %[[GE:.*]]: f32, %[[BE:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[MEAN:.*]] = arith.divf %[[S]], %{{.*}} : f32
// CHECK: %[[VAR:.*]] = arith.divf %[[Q]], %{{.*}} : f32
// CHECK-NEXT: %[[DEV:.*]] = arith.subf %[[XE]], %[[MEAN]] : f32
// CHECK-NEXT: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK-NEXT: %[[V:.*]] = arith.addf %[[VAR]], %[[EPS]] : f32
// CHECK-NEXT: %[[RT:.*]] = math.sqrt %[[V]] : f32
// CHECK-NEXT: %[[N:.*]] = arith.divf %[[DEV]], %[[RT]] : f32
// CHECK-NEXT: %[[SC:.*]] = arith.mulf %[[N]], %[[GE]] : f32
// CHECK-NEXT: %[[Y:.*]] = arith.addf %[[SC]], %[[BE]] : f32
// CHECK-NEXT: linalg.yield %[[Y]]
// CHECK: return %[[R]]
func.func @layer_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.layer_norm"(%x, %g, %b) {axis = 1 : i64, eps = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Rank 1: the statistics are rank-0 tensors; bf16 computes in f32.
// CHECK-LABEL: func.func @layer_norm_bf16_rank1
// CHECK: %[[SUM:.*]] = linalg.reduce ins(%{{.*}} : tensor<8xbf16>) outs(%{{.*}} : tensor<f32>) dimensions = [0]
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: linalg.generic {indexing_maps = [#[[VEC]], #[[SCALAR]], #[[SCALAR]]], iterator_types = ["reduction"]}
// CHECK-SAME: ins(%{{.*}}, %[[SUM]] : tensor<8xbf16>, tensor<f32>) outs(%{{.*}} : tensor<f32>)
// CHECK: linalg.generic {indexing_maps = [#[[VEC]], #[[SCALAR]], #[[SCALAR]], #[[VEC]], #[[VEC]], #[[VEC]]], iterator_types = ["parallel"]}
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @layer_norm_bf16_rank1(%x: tensor<8xbf16>, %g: tensor<8xbf16>, %b: tensor<8xbf16>) -> tensor<8xbf16> {
  %0 = "rlx.layer_norm"(%x, %g, %b) {axis = 0 : i64, eps = 1.0e-5 : f32} : (tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<8xbf16>
  return %0 : tensor<8xbf16>
}

// The residual sum h = x + residual + bias is never materialised: both the
// statistics generic and the elementwise generic read x, residual and bias
// and form h in f32 in their bodies.
// CHECK-LABEL: func.func @fused_residual_rms_norm_bias
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xbf16>, %[[RES:.*]]: tensor<2x8xbf16>, %[[BIAS:.*]]: tensor<8xbf16>, %[[G:.*]]: tensor<8xbf16>, %[[B:.*]]: tensor<8xbf16>)
// CHECK: %[[SS:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]], #[[PARAM2]], #[[ROWSTAT2]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: ins(%[[X]], %[[RES]], %[[BIAS]] : tensor<2x8xbf16>, tensor<2x8xbf16>, tensor<8xbf16>) outs(%{{.*}} : tensor<2xf32>)
// CHECK: ^bb0(%[[XE:.*]]: bf16, %[[RE:.*]]: bf16, %[[CE:.*]]: bf16, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[XW:.*]] = arith.extf %[[XE]] : bf16 to f32
// CHECK-NEXT: %[[RW:.*]] = arith.extf %[[RE]] : bf16 to f32
// CHECK-NEXT: %[[H0:.*]] = arith.addf %[[XW]], %[[RW]] : f32
// CHECK-NEXT: %[[CW:.*]] = arith.extf %[[CE]] : bf16 to f32
// CHECK-NEXT: %[[H:.*]] = arith.addf %[[H0]], %[[CW]] : f32
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[H]], %[[H]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.addf %[[ACC]], %[[SQ]] : f32
// CHECK-NEXT: linalg.yield %[[T]]
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]], #[[PARAM2]], #[[ROWSTAT2]], #[[PARAM2]], #[[PARAM2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[RES]], %[[BIAS]], %[[SS]], %[[G]], %[[B]] :
// CHECK-SAME: outs(%{{.*}} : tensor<2x8xbf16>)
// CHECK: math.sqrt
// CHECK: %[[Y:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT: linalg.yield %[[Y]] : bf16
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @fused_residual_rms_norm_bias(%x: tensor<2x8xbf16>, %r: tensor<2x8xbf16>, %bias: tensor<8xbf16>, %g: tensor<8xbf16>, %b: tensor<8xbf16>) -> tensor<2x8xbf16> {
  %0 = "rlx.fused_residual_rms_norm"(%x, %r, %bias, %g, %b) {eps = 1.0e-6 : f32} : (tensor<2x8xbf16>, tensor<2x8xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> tensor<2x8xbf16>
  return %0 : tensor<2x8xbf16>
}

// Without a bias: h = x + residual; two statistics generics, one elementwise generic.
// CHECK-LABEL: func.func @fused_residual_layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %[[RES:.*]]: tensor<2x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]], #[[ROWSTAT2]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: ins(%[[X]], %[[RES]] : tensor<2x8xf32>, tensor<2x8xf32>)
// CHECK: ^bb0(%[[XE:.*]]: f32, %[[RE:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[H:.*]] = arith.addf %[[XE]], %[[RE]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.addf %[[ACC]], %[[H]] : f32
// CHECK-NEXT: linalg.yield %[[T]]
// CHECK: %[[SS:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]], #[[ROWSTAT2]], #[[ROWSTAT2]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: ins(%[[X]], %[[RES]], %[[SUM]] :
// CHECK: arith.subf
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]], #[[ROWSTAT2]], #[[ROWSTAT2]], #[[PARAM2]], #[[PARAM2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[RES]], %[[SUM]], %[[SS]], %[[G]], %[[B]] :
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @fused_residual_layer_norm(%x: tensor<2x8xf32>, %r: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = "rlx.fused_residual_layer_norm"(%x, %r, %g, %b) {eps = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// SwiGLU: up = x[..., :N] and gate = x[..., N:] as slices, then up * silu(gate).
// CHECK-LABEL: func.func @fused_swiglu_bf16
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x8xbf16>)
// CHECK: %[[UP:.*]] = tensor.extract_slice %[[X]][0, 0, 0] [2, 3, 4] [1, 1, 1] : tensor<2x3x8xbf16> to tensor<2x3x4xbf16>
// CHECK: %[[GATE:.*]] = tensor.extract_slice %[[X]][0, 0, 4] [2, 3, 4] [1, 1, 1] : tensor<2x3x8xbf16> to tensor<2x3x4xbf16>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ID3]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[UP]], %[[GATE]] : tensor<2x3x4xbf16>, tensor<2x3x4xbf16>) outs(%{{.*}} : tensor<2x3x4xbf16>)
// CHECK: ^bb0(%[[U:.*]]: bf16, %[[GT:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[UW:.*]] = arith.extf %[[U]] : bf16 to f32
// CHECK-NEXT: %[[GW:.*]] = arith.extf %[[GT]] : bf16 to f32
// CHECK: %[[N:.*]] = arith.negf %[[GW]] : f32
// CHECK-NEXT: %[[E:.*]] = math.exp %[[N]] : f32
// CHECK: %[[SIG:.*]] = arith.divf
// CHECK-NEXT: %[[SILU:.*]] = arith.mulf %[[GW]], %[[SIG]] : f32
// CHECK-NEXT: %[[Y:.*]] = arith.mulf %[[UW]], %[[SILU]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[Y]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[T]]
// CHECK: return %[[R]]
func.func @fused_swiglu_bf16(%x: tensor<2x3x8xbf16>) -> tensor<2x3x4xbf16> {
  %0 = "rlx.fused_swiglu"(%x) : (tensor<2x3x8xbf16>) -> tensor<2x3x4xbf16>
  return %0 : tensor<2x3x4xbf16>
}
