// KV cache ops: the runtime position is read from its rank-0 tensor, clamped
// into range and used as a dynamic offset (kv_cache_write: tensor.insert_slice;
// rope_at: tensor.extract_slice of the tables, then rlx.rope's generic) or as a
// dynamic size (cached_attention reads only the first p + S cache positions).
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// CHECK-DAG: #[[QMAP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>
// CHECK-DAG: #[[KGQA:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1 floordiv 2, d4)>
// CHECK-DAG: #[[SCORES:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[ID4:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// P.V over (b, i, h, j, d): the head feature d innermost.
// CHECK-DAG: #[[PMAP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d3)>
// CHECK-DAG: #[[VGQA:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d2 floordiv 2, d4)>
// CHECK-DAG: #[[ACCMAP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>

// p = clamp(pos, 0, C - S) = clamp(pos, 0, 8 - 3), then one insert_slice of the 3 new rows.
// CHECK-LABEL: func.func @write
// CHECK-SAME: (%[[CACHE:.*]]: tensor<2x8x6xf32>, %[[NEW:.*]]: tensor<2x3x6xf32>, %[[POS:.*]]: tensor<i64>)
// CHECK: %[[RAW:.*]] = tensor.extract %[[POS]][] : tensor<i64>
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: %[[LOW:.*]] = arith.maxsi %[[RAW]], %[[ZERO]] : i64
// CHECK: %[[MAX:.*]] = arith.constant 5 : i64
// CHECK: %[[CLAMPED:.*]] = arith.minsi %[[LOW]], %[[MAX]] : i64
// CHECK: %[[P:.*]] = arith.index_cast %[[CLAMPED]] : i64 to index
// CHECK: %[[OUT:.*]] = tensor.insert_slice %[[NEW]] into %[[CACHE]][0, %[[P]], 0] [2, 3, 6] [1, 1, 1] : tensor<2x3x6xf32> into tensor<2x8x6xf32>
// CHECK: return %[[OUT]]
func.func @write(%cache: tensor<2x8x6xf32>, %new: tensor<2x3x6xf32>, %pos: tensor<i64>) -> tensor<2x8x6xf32> {
  %0 = "rlx.kv_cache_write"(%cache, %new, %pos) : (tensor<2x8x6xf32>, tensor<2x3x6xf32>, tensor<i64>) -> tensor<2x8x6xf32>
  return %0 : tensor<2x8x6xf32>
}

// Rows p .. p + 1 of 10-row tables (p <= 10 - 2), fed to the rope generic.
// CHECK-LABEL: func.func @rope
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x16xf32>, %[[COS:.*]]: tensor<10x4xf32>, %[[SIN:.*]]: tensor<10x4xf32>, %[[POS:.*]]: tensor<i64>)
// CHECK: arith.constant 8 : i64
// CHECK: %[[P:.*]] = arith.index_cast
// CHECK: %[[COS_ROWS:.*]] = tensor.extract_slice %[[COS]][%[[P]], 0] [2, 4] [1, 1] : tensor<10x4xf32> to tensor<2x4xf32>
// CHECK: %[[SIN_ROWS:.*]] = tensor.extract_slice %[[SIN]][%[[P]], 0] [2, 4] [1, 1] : tensor<10x4xf32> to tensor<2x4xf32>
// CHECK: %[[HEADS:.*]] = tensor.expand_shape %[[X]]
// CHECK: %[[X1:.*]] = tensor.extract_slice %[[HEADS]][0, 0, 0, 0]
// CHECK: %[[X2:.*]] = tensor.extract_slice %[[HEADS]][0, 0, 0, 4]
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[X1]], %[[X2]], %[[COS_ROWS]], %[[SIN_ROWS]] : {{.*}})
// CHECK-NOT: rlx.
// CHECK: return
func.func @rope(%x: tensor<1x2x16xf32>, %cos: tensor<10x4xf32>, %sin: tensor<10x4xf32>, %pos: tensor<i64>) -> tensor<1x2x16xf32> {
  %0 = "rlx.rope_at"(%x, %cos, %sin, %pos) {head_dim = 8 : i64, n_rot = 8 : i64} : (tensor<1x2x16xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<i64>) -> tensor<1x2x16xf32>
  return %0 : tensor<1x2x16xf32>
}

// One query (S = 1), 4 query heads over 2 kv heads (G = 2), capacity 12: the caches
// are sliced to L = p + 1 positions, scores are [1, 4, 1, L], key j is masked
// (-inf) when j > p + i.
// CHECK-LABEL: func.func @attend
// CHECK-SAME: (%[[Q:.*]]: tensor<1x1x16xf32>, %[[K:.*]]: tensor<1x12x8xf32>, %[[V:.*]]: tensor<1x12x8xf32>, %[[POS:.*]]: tensor<i64>)
// CHECK: arith.constant 11 : i64
// CHECK: %[[P:.*]] = arith.index_cast
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[L:.*]] = arith.addi %[[P]], %[[ONE]] : index
// CHECK: %[[Q4:.*]] = tensor.expand_shape %[[Q]] {{.*}} into tensor<1x1x4x4xf32>
// CHECK: %[[K4:.*]] = tensor.expand_shape %[[K]] {{.*}} into tensor<1x12x2x4xf32>
// CHECK: %[[KL:.*]] = tensor.extract_slice %[[K4]][0, 0, 0, 0] [1, %[[L]], 2, 4] [1, 1, 1, 1] : tensor<1x12x2x4xf32> to tensor<1x?x2x4xf32>
// CHECK: %[[V4:.*]] = tensor.expand_shape %[[V]]
// CHECK: %[[VL:.*]] = tensor.extract_slice %[[V4]][0, 0, 0, 0] [1, %[[L]], 2, 4]
// CHECK: tensor.empty(%[[L]]) : tensor<1x4x1x?xf32>
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[QMAP]], #[[KGQA]], #[[SCORES]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[Q4]], %[[KL]] : {{.*}})
// CHECK: %[[LOGITS:.*]] = linalg.generic {indexing_maps = [#[[ID4]], #[[ID4]]], {{.*}} ins(%[[S]] : tensor<1x4x1x?xf32>)
// CHECK: %[[J:.*]] = linalg.index 3 : index
// CHECK: %[[I:.*]] = linalg.index 2 : index
// CHECK: %[[QPOS:.*]] = arith.addi %[[I]], %[[P]] : index
// CHECK: %[[VISIBLE:.*]] = arith.cmpi sle, %[[J]], %[[QPOS]] : index
// CHECK: %[[SCALE:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[SCALED:.*]] = arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK: %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: arith.select %[[VISIBLE]], %[[SCALED]], %[[NEG_INF]] : f32
// CHECK: %[[MAX:.*]] = linalg.reduce {{.*}}ins(%[[LOGITS]] : tensor<1x4x1x?xf32>)
// CHECK-SAME: dimensions = [3]
// CHECK: arith.maximumf
// CHECK: %[[P_EXP:.*]] = linalg.generic {{.*}} ins(%[[LOGITS]], %[[MAX]] :
// CHECK: math.exp
// CHECK: %[[SUM:.*]] = linalg.reduce {{.*}}ins(%[[P_EXP]] : tensor<1x4x1x?xf32>)
// CHECK: %[[ACC:.*]] = linalg.generic {indexing_maps = [#[[PMAP]], #[[VGQA]], #[[ACCMAP]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%[[P_EXP]], %[[VL]] : {{.*}}) outs({{.*}} : tensor<1x1x4x4xf32>)
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[ACC]], %[[SUM]] :
// CHECK: arith.divf
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[OUT]] {{.*}} into tensor<1x1x16xf32>
// CHECK: return %[[FLAT]]
func.func @attend(%q: tensor<1x1x16xf32>, %k: tensor<1x12x8xf32>, %v: tensor<1x12x8xf32>, %pos: tensor<i64>) -> tensor<1x1x16xf32> {
  %0 = "rlx.cached_attention"(%q, %k, %v, %pos) {num_heads = 4 : i64, head_dim = 4 : i64} : (tensor<1x1x16xf32>, tensor<1x12x8xf32>, tensor<1x12x8xf32>, tensor<i64>) -> tensor<1x1x16xf32>
  return %0 : tensor<1x1x16xf32>
}

// f16 caches are widened inside the generics, the output rounded once.
// CHECK-LABEL: func.func @attend_f16
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK: arith.truncf {{.*}} : f32 to f16
// CHECK: tensor.collapse_shape {{.*}} into tensor<1x2x8xf16>
func.func @attend_f16(%q: tensor<1x2x8xf16>, %k: tensor<1x5x8xf16>, %v: tensor<1x5x8xf16>, %pos: tensor<i64>) -> tensor<1x2x8xf16> {
  %0 = "rlx.cached_attention"(%q, %k, %v, %pos) {num_heads = 2 : i64, head_dim = 4 : i64, score_scale = 0.25 : f32} : (tensor<1x2x8xf16>, tensor<1x5x8xf16>, tensor<1x5x8xf16>, tensor<i64>) -> tensor<1x2x8xf16>
  return %0 : tensor<1x2x8xf16>
}
