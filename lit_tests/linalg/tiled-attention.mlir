// rlx-mir-to-linalg{tiled-attention} (the CPU pipeline's choice): attention as a loop nest over
// key x query tiles with an online softmax.  One scf.forall over (batch, head, query block); per
// query block two scf.for over the key blocks it can see, carrying the running max, sum and
// (transposed) output accumulator: first the blocks below the diagonal, which every query sees
// whole (no mask), then the diagonal ones, masked row by row.  Both products are register tiles
// (16 vector accumulators, vector.fma down K): scores^T = keys @ queries^T, out^T = out^T * c +
// values^T @ probs^T (the rescaling in the product's prologue), so the
// per-query max and sum are vectors down the rows (one lane per query, scf.for carrying a
// vector).  No [B, H, Sq, Sk] score tensor exists.  The keys and (each block transposed) values
// are packed once per kv head, by an scf.forall over the key blocks before it, not per query
// block; tiles are transposed 16 x 16 in registers (vector.shuffle).  Small score matrices keep
// the plain lowering.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-linalg{tiled-attention=true})' | FileCheck %s
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s --check-prefix=PLAIN

// CHECK-LABEL: func.func @causal
// CHECK-NOT: tensor<1x2x128x128xf32>
// Packing: one kv head, 2 key blocks; keys into [1, 1, 128, 16], value block kb transposed into [1, 1, 2, 16, 64].
// CHECK: %[[PACKED:.*]]:2 = scf.forall (%{{.*}}, %{{.*}}, %[[PKB:.*]]) in (1, 1, %{{.*}}) shared_outs(%[[KOUT:.*]] = %{{.*}}, %[[VOUT:.*]] = %{{.*}}) -> (tensor<1x1x128x16xf32>, tensor<1x1x2x16x64xf32>)
// The keys copied a row (one vector) at a time: as a linalg copy it would bufferize to a
// memref.copy of strided views, scalar moves.
// CHECK: %[[KSLICE:.*]] = tensor.extract_slice %{{.*}} [1, 64, 1, 16] [1, 1, 1, 1] : tensor<1x128x1x16xf32> to tensor<64x16xf32>
// CHECK: scf.for {{.*}} -> (tensor<64x16xf32>)
// CHECK: vector.transfer_read %[[KSLICE]][%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<64x16xf32>, vector<16xf32>
// CHECK: tensor.extract_slice %{{.*}} [1, 64, 1, 16] [1, 1, 1, 1] : tensor<1x128x1x16xf32> to tensor<64x16xf32>
// CHECK: vector.shuffle
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[KOUT]]{{.*}} [1, 1, 64, 16] [1, 1, 1, 1] : tensor<64x16xf32> into tensor<1x1x128x16xf32>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[VOUT]][%{{.*}}, %{{.*}}, %[[PKB]], 0, 0] [1, 1, 1, 16, 64] [1, 1, 1, 1, 1] : tensor<16x64xf32> into tensor<1x1x2x16x64xf32>
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]], %[[J:.*]]) in (1, 2, 2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<1x128x2x16xf32>)
// Query blocks from both ends in turn (0, n - 1, 1, n - 2, ...): a thread's contiguous range of
// iterations holds short and long rows of the causal triangle alike.
// CHECK: %[[HALF:.*]] = arith.floordivsi %[[J]], %{{.*}} : index
// CHECK: %[[ODD:.*]] = arith.cmpi ne, %{{.*}}, %{{.*}} : index
// CHECK: %[[FROM_END:.*]] = arith.subi %{{.*}}, %[[HALF]] : index
// CHECK: %[[QB:.*]] = arith.select %[[ODD]], %[[FROM_END]], %[[HALF]] : index
// CHECK: %[[Q0:.*]] = arith.muli %[[QB]], %{{.*}} : index
// CHECK: tensor.extract_slice %{{.*}}[%[[B]], %[[Q0]], %[[H]], 0] [1, 64, 1, 16] [1, 1, 1, 1] : tensor<1x128x2x16xf32> to tensor<64x16xf32>
// The queries scaled by 1/sqrt(16) * log2(e) (the scores in log2 units, for exp2), then transposed
// in registers: [16, 64], one query per column.
// CHECK: arith.constant 0.360673755 : f32
// CHECK: %[[QT:.*]] = scf.for {{.*}} -> (tensor<16x64xf32>)
// CHECK: vector.shuffle
// Grouped-query heads: kv head h floordiv 2.
// CHECK: %[[KVH:.*]] = arith.floordivsi %[[H]], %{{.*}} : index
// Causal: the key blocks end after the block of the query block's last query; those before the
// block of the first query's position + 1 are seen whole.
// CHECK: %[[END:.*]] = arith.minsi
// CHECK: %[[BELOW:.*]] = arith.floordivsi
// CHECK: %[[FIRST_MASKED:.*]] = arith.minsi %{{.*}}, %[[END]] : index
// CHECK: %[[SEEN:.*]]:3 = scf.for %[[KB:.*]] = %{{.*}} to %[[FIRST_MASKED]] step %{{.*}} iter_args({{.*}}, %[[ACC:[a-z0-9_]+]] = %{{.*}}) -> (tensor<64xf32>, tensor<64xf32>, tensor<16x64xf32>)
// The key block: a view of the packed keys, no copy inside the loop.
// CHECK: %[[KEYS:.*]] = tensor.extract_slice %[[PACKED]]#0[%[[B]], %[[KVH]], %{{.*}}, 0] [1, 1, 64, 16] [1, 1, 1, 1] : tensor<1x1x128x16xf32> to tensor<64x16xf32>
// The scores: 4 key rows x 64 queries a time, 16 accumulators from zero (no zero-filled tile)
// carried down D: a row of the queries loaded, a key element broadcast, fma; the block's max per
// query (4 vectors of 16) carried beside the tile, taken from the accumulators as they are
// written, no pass over the tile of its own.
// CHECK-NOT: linalg.fill
// CHECK: %[[SCORES:.*]]:5 = scf.for {{.*}} -> (tensor<64x64xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: arith.constant 0.000000e+00 : f32
// CHECK-NEXT: vector.broadcast %{{.*}} : f32 to vector<16xf32>
// CHECK: %[[TILE:.*]]:16 = scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: vector.transfer_read %[[QT]]
// CHECK: tensor.extract %[[KEYS]]
// CHECK: vector.fma
// CHECK: vector.transfer_write %[[TILE]]#0
// CHECK-NEXT: arith.cmpf ogt, %[[TILE]]#0, %{{.*}} : vector<16xf32>
// CHECK: vector.insert_strided_slice %[[SCORES]]#4, %{{.*}} {offsets = [48], strides = [1]} : vector<16xf32> into vector<64xf32>
// CHECK-NOT: scf.for {{.*}} -> (vector<64xf32>)
// The correction exp2(m - m') and the weights' exp2(s - m') are of x <= 0: marked so, for
// rlx-approximate-math's shorter expansion.  The weights are 2^(s - m'), with m' taken as 0 where
// a query has seen no key (its logits are all -inf: weights 0), selected once per block, not per weight.
// CHECK: %[[UNSEEN:.*]] = arith.cmpf oeq, %[[NEW_PEAK:[^,]*]], %{{.*}} : vector<64xf32>
// CHECK: math.exp2 %{{.*}} {rlx.nonpositive} : vector<64xf32>
// CHECK: %[[REFERENCE:.*]] = arith.select %[[UNSEEN]], %{{.*}}, %[[NEW_PEAK]] : vector<64xi1>, vector<64xf32>
// The weights (written row by row) and their sum (a vector).
// CHECK: %[[PROBS:.*]]:2 = scf.for {{.*}} -> (tensor<64x64xf32>, vector<64xf32>)
// CHECK: %[[ROW:.*]] = vector.transfer_read
// CHECK-NEXT: %[[SHIFTED:.*]] = arith.subf %[[ROW]], %[[REFERENCE]] : vector<64xf32>
// CHECK-NEXT: %[[WEIGHT:.*]] = math.exp2 %[[SHIFTED]] {rlx.nonpositive} : vector<64xf32>
// CHECK-NOT: arith.select
// CHECK: vector.transfer_write %[[WEIGHT]]
// CHECK: %[[VALUES:.*]] = tensor.extract_slice %[[PACKED]]#1[%[[B]], %[[KVH]], %[[KB]], 0, 0] [1, 1, 1, 16, 64] [1, 1, 1, 1, 1] : tensor<1x1x2x16x64xf32> to tensor<16x64xf32>
// The output's product: each register tile of the accumulator read and rescaled (its prologue,
// no pass of its own), then the weights' rows loaded and the value elements broadcast down the keys.
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [48], sizes = [16], strides = [1]} : vector<64xf32> to vector<16xf32>
// CHECK: scf.for {{.*}} iter_args(%[[OUT:.*]] = %[[ACC]]) -> (tensor<16x64xf32>)
// CHECK: vector.transfer_read %[[OUT]]
// CHECK-NEXT: arith.mulf
// CHECK: scf.for {{.*}} -> (vector<16xf32>, {{.*}})
// CHECK: vector.transfer_read %[[PROBS]]#0
// CHECK: tensor.extract %[[VALUES]]
// CHECK: vector.fma
// CHECK: scf.yield
// The diagonal blocks, from where the first loop ended: the same step with the causal mask.
// Here (Bq = Bk, no offset) that is the one block whose keys sit at the query block's positions:
// key row j hides query column i < j, and both products skip the 16-wide strips only hidden
// pairs fill.  The scores in bands of 16 key rows, band t over the query columns from 16 t on
// (the rest of the band left undefined: the mask hides it).
// CHECK: %[[ALL:.*]]:3 = scf.for %{{.*}} = %[[FIRST_MASKED]] to %[[END]] step %{{.*}} iter_args(%{{.*}} = %[[SEEN]]#0, %{{.*}} = %[[SEEN]]#1, %[[DACC:[a-z0-9_]+]] = %[[SEEN]]#2)
// CHECK: %[[DKEYS:.*]] = tensor.extract_slice %[[PACKED]]#0{{.*}} to tensor<64x16xf32>
// CHECK: tensor.extract_slice %[[DKEYS]][0, 0] [16, 16] [1, 1] : tensor<64x16xf32> to tensor<16x16xf32>
// CHECK: tensor.extract_slice %[[QT]][0, 0] [16, 64] [1, 1] : tensor<16x64xf32> to tensor<16x64xf32>
// CHECK: vector.fma
// CHECK: %[[BAND0:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [16, 64] [1, 1] : tensor<16x64xf32> into tensor<64x64xf32>
// CHECK: tensor.extract_slice %[[DKEYS]][16, 0] [16, 16] [1, 1] : tensor<64x16xf32> to tensor<16x16xf32>
// CHECK: tensor.extract_slice %[[QT]][0, 16] [16, 48] [1, 1] : tensor<16x64xf32> to tensor<16x48xf32>
// CHECK: vector.fma
// CHECK: %[[BAND1:.*]] = tensor.insert_slice %{{.*}} into %[[BAND0]][16, 16] [16, 48] [1, 1] : tensor<16x48xf32> into tensor<64x64xf32>
// CHECK: tensor.extract_slice %[[QT]][0, 32] [16, 32] [1, 1] : tensor<16x64xf32> to tensor<16x32xf32>
// CHECK: %[[BAND2:.*]] = tensor.insert_slice %{{.*}} into %[[BAND1]][32, 32] [16, 32] [1, 1] : tensor<16x32xf32> into tensor<64x64xf32>
// CHECK: tensor.extract_slice %[[QT]][0, 48] [16, 16] [1, 1] : tensor<16x64xf32> to tensor<16x16xf32>
// CHECK: %[[DSCORES:.*]] = tensor.insert_slice %{{.*}} into %[[BAND2]][48, 48] [16, 16] [1, 1] : tensor<16x16xf32> into tensor<64x64xf32>
// CHECK: scf.for {{.*}} -> (vector<64xf32>)
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : vector<64xi32>
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<64xi1>, vector<64xf32>
// CHECK: %[[DPROBS:.*]]:2 = scf.for {{.*}} iter_args(%{{.*}} = %[[DSCORES]], %{{.*}} = %{{.*}}) -> (tensor<64x64xf32>, vector<64xf32>)
// The output in strips of 16 query columns, strip s over the keys up to its last query, 16 (s + 1),
// each read and written in place in its columns of the carried accumulator (no extract_slice /
// insert_slice of a strip: hoisted out of the key loop, those bufferized to copies out and back).
// CHECK: %[[DVALUES:.*]] = tensor.extract_slice %[[PACKED]]#1{{.*}} to tensor<16x64xf32>
// CHECK: tensor.extract_slice %[[DVALUES]][0, 0] [16, 16] [1, 1] : tensor<16x64xf32> to tensor<16x16xf32>
// CHECK: tensor.extract_slice %[[DPROBS]]#0[0, 0] [16, 16] [1, 1] : tensor<64x64xf32> to tensor<16x16xf32>
// CHECK-NOT: tensor.extract_slice %[[DACC]]
// CHECK: %[[STRIP0:.*]] = scf.for {{.*}} iter_args(%[[S0:.*]] = %[[DACC]]) -> (tensor<16x64xf32>)
// CHECK: vector.transfer_read %[[S0]][%{{.*}}, %c0{{.*}}]
// CHECK: vector.fma
// CHECK: vector.transfer_write %{{.*}}, %[[S0]][%{{.*}}, %c0{{.*}}]
// CHECK: tensor.extract_slice %[[DVALUES]][0, 0] [16, 32] [1, 1] : tensor<16x64xf32> to tensor<16x32xf32>
// CHECK: tensor.extract_slice %[[DPROBS]]#0[0, 16] [32, 16] [1, 1] : tensor<64x64xf32> to tensor<32x16xf32>
// CHECK: %[[STRIP1:.*]] = scf.for {{.*}} iter_args(%[[S1:.*]] = %[[STRIP0]]) -> (tensor<16x64xf32>)
// CHECK: vector.transfer_read %[[S1]][%{{.*}}, %c16{{.*}}]
// CHECK: vector.transfer_write %{{.*}}, %[[S1]][%{{.*}}, %c16{{.*}}]
// CHECK: tensor.extract_slice %[[DPROBS]]#0[0, 32] [48, 16] [1, 1] : tensor<64x64xf32> to tensor<48x16xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[STRIP1]]) -> (tensor<16x64xf32>)
// CHECK: tensor.extract_slice %[[DPROBS]]#0[0, 48] [64, 16] [1, 1] : tensor<64x64xf32> to tensor<64x16xf32>
// CHECK: vector.fma
// CHECK: vector.transfer_write %{{.*}}[%{{.*}}, %c48{{.*}}]
// CHECK-NOT: tensor.insert_slice
// CHECK: scf.yield
// Normalised, transposed back to [64, 16] in registers, inserted.
// CHECK: linalg.generic {{.*}} ins(%[[ALL]]#2, %[[ALL]]#1 : tensor<16x64xf32>, tensor<64xf32>)
// CHECK: vector.shuffle
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[B]], %[[Q0]], %[[H]], 0] [1, 64, 1, 16] [1, 1, 1, 1] : tensor<64x16xf32> into tensor<1x128x2x16xf32>
// PLAIN-LABEL: func.func @causal
// PLAIN: tensor<1x2x128x128xf32>
func.func @causal(%q: tensor<1x128x32xf32>, %k: tensor<1x128x16xf32>, %v: tensor<1x128x16xf32>) -> tensor<1x128x32xf32> {
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 2 : i64, head_dim = 16 : i64, mask_kind = "causal"} : (tensor<1x128x32xf32>, tensor<1x128x16xf32>, tensor<1x128x16xf32>) -> tensor<1x128x32xf32>
  return %0 : tensor<1x128x32xf32>
}

// A score matrix of one tile: the plain chain.
// CHECK-LABEL: func.func @small
// CHECK-NOT: scf.forall
// CHECK: tensor<1x2x8x8xf32>
func.func @small(%q: tensor<1x8x32xf32>, %k: tensor<1x8x32xf32>, %v: tensor<1x8x32xf32>) -> tensor<1x8x32xf32> {
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 2 : i64, head_dim = 16 : i64, mask_kind = "none"} : (tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x8x32xf32>
  return %0 : tensor<1x8x32xf32>
}

// Over a cache of 64 positions (key blocks of 64) the filled length L = p + 16 is a runtime value:
// the packing visits the ceil(L / 64) blocks below it and zeroes the value rows at or past L (the
// cache may hold anything there); the query blocks' loop reads only packed blocks.
// CHECK-LABEL: func.func @prefill_cached
// CHECK: %[[FILLED:.*]] = arith.ceildivsi %[[LEN:.*]], %{{.*}} : index
// CHECK: %[[PACKED:.*]]:2 = scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 2, %[[FILLED]])
// CHECK: arith.cmpi slt, %{{.*}}, %[[LEN]] : index
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK: scf.forall.in_parallel
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 4, 1)
// CHECK: arith.ceildivsi %[[LEN]], %{{.*}} : index
// CHECK: scf.for
// Query blocks of 16: one vector per row of a product, register tiles of 16 rows x 16 queries.
// CHECK: tensor.extract_slice %[[PACKED]]#0
// CHECK: scf.for {{.*}} -> (tensor<64x16xf32>)
// CHECK: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: scf.if
// CHECK: tensor.extract_slice %[[PACKED]]#1
// CHECK: scf.for {{.*}} -> (tensor<16x16xf32>)
// CHECK: vector.fma {{.*}} : vector<16xf32>
func.func @prefill_cached(%q: tensor<1x16x64xf32>, %k: tensor<1x64x32xf32>, %v: tensor<1x64x32xf32>, %pos: tensor<i64>) -> tensor<1x16x64xf32> {
  %0 = "rlx.cached_attention"(%q, %k, %v, %pos) {num_heads = 4 : i64, head_dim = 16 : i64} : (tensor<1x16x64xf32>, tensor<1x64x32xf32>, tensor<1x64x32xf32>, tensor<i64>) -> tensor<1x16x64xf32>
  return %0 : tensor<1x16x64xf32>
}

// Query blocks of 24 (no whole vectors across them): both products by linalg.matmul (the GEMM
// kernel), the output's into a zero-filled tile of its own, then added.
// CHECK-LABEL: func.func @query_block_24
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (1, 2, 1)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x16xf32>, tensor<16x24xf32>) outs(%{{.*}} : tensor<64x24xf32>)
// CHECK: %[[ZERO:.*]] = linalg.fill {{.*}} -> tensor<16x24xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x64xf32>, tensor<64x24xf32>) outs(%[[ZERO]] : tensor<16x24xf32>)
// CHECK-NOT: vector.fma
// CHECK: return
func.func @query_block_24(%q: tensor<1x24x32xf32>, %k: tensor<1x256x32xf32>, %v: tensor<1x256x32xf32>) -> tensor<1x24x32xf32> {
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 2 : i64, head_dim = 16 : i64, mask_kind = "none"} : (tensor<1x24x32xf32>, tensor<1x256x32xf32>, tensor<1x256x32xf32>) -> tensor<1x24x32xf32>
  return %0 : tensor<1x24x32xf32>
}

// A decode step (one query per head): the plain chain, which reads the filled keys once.
// CHECK-LABEL: func.func @decode
// CHECK-NOT: scf.forall
// CHECK: return
func.func @decode(%q: tensor<1x1x64xf32>, %k: tensor<1x64x32xf32>, %v: tensor<1x64x32xf32>, %pos: tensor<i64>) -> tensor<1x1x64xf32> {
  %0 = "rlx.cached_attention"(%q, %k, %v, %pos) {num_heads = 4 : i64, head_dim = 16 : i64} : (tensor<1x1x64xf32>, tensor<1x64x32xf32>, tensor<1x64x32xf32>, tensor<i64>) -> tensor<1x1x64xf32>
  return %0 : tensor<1x1x64xf32>
}
