// rlx.rope is one linalg.generic over (b, s, h, t, j) that reads the two rotated halves of each
// head (slices of x viewed as [B, S, H, head_dim]) and writes half t of the rotated features,
// every map a projected permutation; rlx.attention is a chain of
// generics and reductions over [B, H, Sq, Sk] f32 scores, with the kv head
// of query head h chosen by the map h floordiv (H / Hkv).
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// rope: the halves and the output over (b, s, h, t, j); the tables over (s, j).  The halves'
// map (d0, d1, d2, d4) is the same map as the attention scores' (SCORES below).
// CHECK-DAG: #[[TABLE:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>
// CHECK-DAG: #[[ID5:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// attention: scores over (b, h, i, d, j) against the transposed keys kt[b, kv, d, j], P.V over
// (b, i, h, j, d): the innermost loop is parallel and contiguous in both (it vectorizes).
// The query map of the scores is also the probabilities' map in P.V, and the scores' map the output's.
// CHECK-DAG: #[[QMAP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d3)>
// CHECK-DAG: #[[KGQA:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 2, d3, d4)>
// CHECK-DAG: #[[KMHA:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
// CHECK-DAG: #[[SCORES:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[KEYMASK:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
// CHECK-DAG: #[[VGQA:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d2 floordiv 2, d4)>
// CHECK-DAG: #[[VMHA:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d2, d4)>
// CHECK-DAG: #[[OUTROW:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1)>

// head_dim 8, n_rot 4 (half 2): features 0-1 and 2-3 of each head rotate, 4-7 are copied
// (the rotated ones are inserted into x).
// CHECK-LABEL: func.func @rope_partial
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x16xf32>, %[[COS:.*]]: tensor<3x2xf32>, %[[SIN:.*]]: tensor<3x2xf32>)
// CHECK: %[[HEADS:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 3, 2, 8] : tensor<2x3x16xf32> into tensor<2x3x2x8xf32>
// CHECK: %[[X1:.*]] = tensor.extract_slice %[[HEADS]][0, 0, 0, 0] [2, 3, 2, 2] [1, 1, 1, 1]
// CHECK: %[[X2:.*]] = tensor.extract_slice %[[HEADS]][0, 0, 0, 2] [2, 3, 2, 2] [1, 1, 1, 1]
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x3x2x2x2xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[SCORES]], #[[SCORES]], #[[TABLE]], #[[TABLE]], #[[ID5]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[X1]], %[[X2]], %[[COS]], %[[SIN]] : {{.*}}) outs(%[[INIT]] : tensor<2x3x2x2x2xf32>)
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[T:.*]] = linalg.index 3 : index
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[T]], %{{.*}} : index
// CHECK: %[[AC:.*]] = arith.mulf %[[A]], %[[C]] : f32
// CHECK: %[[BS:.*]] = arith.mulf %[[B]], %[[S]] : f32
// CHECK: %[[LOW:.*]] = arith.subf %[[AC]], %[[BS]] : f32
// CHECK: %[[BC:.*]] = arith.mulf %[[B]], %[[C]] : f32
// CHECK: %[[AS:.*]] = arith.mulf %[[A]], %[[S]] : f32
// CHECK: %[[HIGH:.*]] = arith.addf %[[BC]], %[[AS]] : f32
// CHECK: %[[OUT:.*]] = arith.select %[[FIRST]], %[[LOW]], %[[HIGH]] : f32
// CHECK: linalg.yield %[[OUT]] : f32
// CHECK: %[[ROT:.*]] = tensor.collapse_shape %[[R]] {{\[\[}}0], [1], [2], [3, 4]] : tensor<2x3x2x2x2xf32> into tensor<2x3x2x4xf32>
// CHECK: %[[ALL:.*]] = tensor.insert_slice %[[ROT]] into %[[HEADS]][0, 0, 0, 0] [2, 3, 2, 4] [1, 1, 1, 1]
// CHECK: %[[RES:.*]] = tensor.collapse_shape %[[ALL]] {{\[\[}}0], [1], [2, 3]] : tensor<2x3x2x8xf32> into tensor<2x3x16xf32>
// CHECK: return %[[RES]]
func.func @rope_partial(%x: tensor<2x3x16xf32>, %cos: tensor<3x2xf32>, %sin: tensor<3x2xf32>) -> tensor<2x3x16xf32> {
  %0 = "rlx.rope"(%x, %cos, %sin) {head_dim = 8, n_rot = 4} : (tensor<2x3x16xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<2x3x16xf32>
  return %0 : tensor<2x3x16xf32>
}

// bf16: widened to f32 in the body, rounded once.  All 8 features rotate: the [B, S, H, 2, 4]
// result is the heads themselves (collapsed, no insert).
// CHECK-LABEL: func.func @rope_bf16
// CHECK: linalg.generic {indexing_maps = [#[[SCORES]], #[[SCORES]], #[[TABLE]], #[[TABLE]], #[[ID5]]]
// CHECK: ^bb0(%[[XE:.*]]: bf16, %[[PE:.*]]: bf16, %{{.*}}: bf16, %{{.*}}: bf16, %{{.*}}: bf16):
// CHECK: arith.extf %[[XE]] : bf16 to f32
// CHECK: arith.extf %[[PE]] : bf16 to f32
// CHECK: %[[R:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK: linalg.yield %[[R]] : bf16
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3, 4]] : tensor<1x2x1x2x4xbf16> into tensor<1x2x8xbf16>
// CHECK-NOT: tensor.insert_slice
// CHECK: return
func.func @rope_bf16(%x: tensor<1x2x8xbf16>, %cos: tensor<2x4xbf16>, %sin: tensor<2x4xbf16>) -> tensor<1x2x8xbf16> {
  %0 = "rlx.rope"(%x, %cos, %sin) {head_dim = 8, n_rot = 8} : (tensor<1x2x8xbf16>, tensor<2x4xbf16>, tensor<2x4xbf16>) -> tensor<1x2x8xbf16>
  return %0 : tensor<1x2x8xbf16>
}

// 4 query heads on 2 kv heads, decoding 3 queries against 7 keys (offset 4).
// CHECK-LABEL: func.func @attention_causal_gqa
// CHECK-SAME: (%[[Q:.*]]: tensor<2x3x16xf32>, %[[K:.*]]: tensor<2x7x8xf32>, %[[V:.*]]: tensor<2x7x8xf32>)
// CHECK: %[[Q4:.*]] = tensor.expand_shape %[[Q]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 3, 4, 4] : tensor<2x3x16xf32> into tensor<2x3x4x4xf32>
// CHECK: %[[K4:.*]] = tensor.expand_shape %[[K]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 7, 2, 4] : tensor<2x7x8xf32> into tensor<2x7x2x4xf32>
// CHECK: %[[V4:.*]] = tensor.expand_shape %[[V]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 7, 2, 4]
// CHECK: %[[KT:.*]] = linalg.transpose ins(%[[K4]] : tensor<2x7x2x4xf32>) outs(%{{.*}} : tensor<2x2x4x7xf32>) permutation = [0, 2, 3, 1]
// CHECK: %[[ZS:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x4x3x7xf32>)
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[QMAP]], #[[KGQA]], #[[SCORES]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[Q4]], %[[KT]] : tensor<2x3x4x4xf32>, tensor<2x2x4x7xf32>) outs(%[[ZS]] : tensor<2x4x3x7xf32>)
// CHECK: ^bb0(%[[QE:.*]]: f32, %[[KE:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[QK:.*]] = arith.mulf %[[QE]], %[[KE]] : f32
// CHECK: arith.addf %[[ACC]], %[[QK]] : f32
// CHECK: %[[L:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[ID4]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[S]] : tensor<2x4x3x7xf32>)
// CHECK: ^bb0(%[[SE:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[SCALED:.*]] = arith.mulf %[[SE]], %{{.*}} : f32
// CHECK: %[[I:.*]] = linalg.index 2 : index
// CHECK: %[[OFFSET:.*]] = arith.constant 4 : index
// CHECK: %[[POS:.*]] = arith.addi %[[I]], %[[OFFSET]] : index
// CHECK: %[[J:.*]] = linalg.index 3 : index
// CHECK: %[[VIS:.*]] = arith.cmpi sle, %[[J]], %[[POS]] : index
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[MASKED:.*]] = arith.select %[[VIS]], %[[SCALED]], %[[NEGINF]] : f32
// CHECK: linalg.yield %[[MASKED]]
// CHECK: %[[MAXINIT:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x4x3xf32>)
// CHECK: %[[MAX:.*]] = linalg.reduce ins(%[[L]] : tensor<2x4x3x7xf32>) outs(%[[MAXINIT]] : tensor<2x4x3xf32>) dimensions = [3]
// CHECK: arith.maximumf
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[ROW]], #[[ID4]]], {{.*}} ins(%[[L]], %[[MAX]] : tensor<2x4x3x7xf32>, tensor<2x4x3xf32>)
// CHECK: ^bb0(%[[LE:.*]]: f32, %[[ME:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[EMPTYROW:.*]] = arith.cmpf oeq, %[[ME]], %{{.*}} : f32
// CHECK: %[[D:.*]] = arith.subf %[[LE]], %[[ME]] : f32
// CHECK: %[[E:.*]] = math.exp %[[D]] : f32
// CHECK: arith.select %[[EMPTYROW]], %{{.*}}, %[[E]] : f32
// CHECK: %[[SUM:.*]] = linalg.reduce ins(%[[P]] : tensor<2x4x3x7xf32>) outs(%{{.*}} : tensor<2x4x3xf32>) dimensions = [3]
// CHECK: arith.addf
// CHECK: %[[ZO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x3x4x4xf32>)
// CHECK: %[[PV:.*]] = linalg.generic {indexing_maps = [#[[QMAP]], #[[VGQA]], #[[SCORES]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[P]], %[[V4]] : tensor<2x4x3x7xf32>, tensor<2x7x2x4xf32>) outs(%[[ZO]] : tensor<2x3x4x4xf32>)
// CHECK: %[[N:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[OUTROW]], #[[ID4]]], {{.*}} ins(%[[PV]], %[[SUM]] : tensor<2x3x4x4xf32>, tensor<2x4x3xf32>)
// CHECK: ^bb0(%[[OE:.*]]: f32, %[[TE:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[ZERO:.*]] = arith.cmpf oeq, %[[TE]], %{{.*}} : f32
// CHECK: %[[DIV:.*]] = arith.divf %[[OE]], %[[TE]] : f32
// CHECK: arith.select %[[ZERO]], %{{.*}}, %[[DIV]] : f32
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[N]] {{\[\[}}0], [1], [2, 3]] : tensor<2x3x4x4xf32> into tensor<2x3x16xf32>
// CHECK: return %[[R]]
func.func @attention_causal_gqa(%q: tensor<2x3x16xf32>, %k: tensor<2x7x8xf32>, %v: tensor<2x7x8xf32>) -> tensor<2x3x16xf32> {
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 4, mask_kind = "causal"} : (tensor<2x3x16xf32>, tensor<2x7x8xf32>, tensor<2x7x8xf32>) -> tensor<2x3x16xf32>
  return %0 : tensor<2x3x16xf32>
}

// Sliding window of 3 keys on 4 queries against 4 keys: j <= i and j > i - 3.
// CHECK-LABEL: func.func @attention_sliding_window
// CHECK: %[[POS:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[J:.*]] = linalg.index 3 : index
// CHECK: %[[CAUSAL:.*]] = arith.cmpi sle, %[[J]], %[[POS]] : index
// CHECK: %[[W:.*]] = arith.constant 3 : index
// CHECK: %[[OLDEST:.*]] = arith.subi %[[POS]], %[[W]] : index
// CHECK: %[[RECENT:.*]] = arith.cmpi sgt, %[[J]], %[[OLDEST]] : index
// CHECK: %[[VIS:.*]] = arith.andi %[[CAUSAL]], %[[RECENT]] : i1
// CHECK: arith.select %[[VIS]]
func.func @attention_sliding_window(%q: tensor<1x4x8xf32>, %k: tensor<1x4x8xf32>, %v: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 2, head_dim = 4, mask_kind = "sliding_window", window = 3} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %0 : tensor<1x4x8xf32>
}

// A key padding mask read at (b, j), a custom scale; plain multi-head maps.
// CHECK-LABEL: func.func @attention_custom
// CHECK-SAME: %[[M:[^:]*]]: tensor<2x5xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[QMAP]], #[[KMHA]], #[[SCORES]]]
// CHECK: linalg.generic {indexing_maps = [#[[ID4]], #[[KEYMASK]], #[[ID4]]], {{.*}} ins(%{{.*}}, %[[M]] : tensor<2x2x3x5xf32>, tensor<2x5xf32>)
// CHECK: ^bb0(%[[SE:.*]]: f32, %[[ME:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[SCALE:.*]] = arith.constant 2.500000e-01 : f32
// CHECK: %[[SCALED:.*]] = arith.mulf %[[SE]], %[[SCALE]] : f32
// CHECK: %[[VALID:.*]] = arith.cmpf une, %[[ME]], %{{.*}} : f32
// CHECK: arith.select %[[VALID]], %[[SCALED]], %{{.*}} : f32
// CHECK: linalg.generic {indexing_maps = [#[[QMAP]], #[[VMHA]], #[[SCORES]]]
func.func @attention_custom(%q: tensor<2x3x8xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x8xf32>, %m: tensor<2x5xf32>) -> tensor<2x3x8xf32> {
  %0 = "rlx.attention"(%q, %k, %v, %m) {num_heads = 2, head_dim = 4, mask_kind = "custom", score_scale = 0.25 : f32} : (tensor<2x3x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<2x5xf32>) -> tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}

// bf16 with a bias and a softcap: f32 compute (scores, bias, softmax, P.V), one truncf at the end.
// Default scale 1/sqrt(4) = 0.5; softcap 50 * tanh(s / 50) comes before the bias.
// CHECK-LABEL: func.func @attention_bias_bf16
// CHECK: ^bb0(%[[QE:.*]]: bf16, %[[KE:.*]]: bf16, %[[ACC:.*]]: f32):
// CHECK: %[[QW:.*]] = arith.extf %[[QE]] : bf16 to f32
// CHECK: %[[KW:.*]] = arith.extf %[[KE]] : bf16 to f32
// CHECK: arith.mulf %[[QW]], %[[KW]] : f32
// CHECK: linalg.generic {indexing_maps = [#[[ID4]], #[[ID4]], #[[ID4]]]
// CHECK: ^bb0(%[[SE:.*]]: f32, %[[BE:.*]]: bf16, %{{.*}}: f32):
// CHECK: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[SCALED:.*]] = arith.mulf %[[SE]], %[[HALF]] : f32
// CHECK: %[[CAP:.*]] = arith.constant 5.000000e+01 : f32
// CHECK: %[[RATIO:.*]] = arith.divf %[[SCALED]], %[[CAP]] : f32
// CHECK: %[[T:.*]] = math.tanh %[[RATIO]] : f32
// CHECK: %[[CAPPED:.*]] = arith.mulf %[[CAP]], %[[T]] : f32
// CHECK: %[[BW:.*]] = arith.extf %[[BE]] : bf16 to f32
// CHECK: %[[BIASED:.*]] = arith.addf %[[CAPPED]], %[[BW]] : f32
// CHECK: linalg.yield %[[BIASED]] : f32
// CHECK: ^bb0(%{{.*}}: f32, %[[VE:.*]]: bf16, %{{.*}}: f32):
// CHECK: arith.extf %[[VE]] : bf16 to f32
// CHECK: outs(%{{.*}} : tensor<1x2x2x4xbf16>)
// CHECK: %[[R:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK: linalg.yield %[[R]] : bf16
// CHECK: tensor.collapse_shape %{{.*}} : tensor<1x2x2x4xbf16> into tensor<1x2x8xbf16>
// CHECK-NOT: rlx.
func.func @attention_bias_bf16(%q: tensor<1x2x8xbf16>, %k: tensor<1x4x8xbf16>, %v: tensor<1x4x8xbf16>, %b: tensor<1x2x2x4xbf16>) -> tensor<1x2x8xbf16> {
  %0 = "rlx.attention"(%q, %k, %v, %b) {num_heads = 2, head_dim = 4, mask_kind = "bias", softcap = 50.0 : f32} : (tensor<1x2x8xbf16>, tensor<1x4x8xbf16>, tensor<1x4x8xbf16>, tensor<1x2x2x4xbf16>) -> tensor<1x2x8xbf16>
  return %0 : tensor<1x2x8xbf16>
}
