// rlx.grouped_matmul buckets its rows by expert (a counting sort) and multiplies each expert's
// weight into its own rows only: scf.for loops count the rows per expert, give each expert
// ceil(count / 8) tiles of 8 rows (8 = the GEMM kernel's rows; 5 rows over 3 experts need at
// most ceil(5 / 8) + 3 - 1 = 3 tiles, 24 slots) and each row its slot; a generic gathers the
// rows into slot order, then per chunk of output columns (one scf.forall; the chunk of the slot
// rows zeroed), per expert with rows, per block of the expert's weight rows (read in place), per
// tile of that expert a static 8 x depth linalg.matmul adds into the tile's slot rows, and a
// generic reads each row back from its slot (zeros for an out-of-range expert: slot -1).
// rlx.scatter_add is an scf.for over the update rows adding each into its destination row in
// place (out-of-range indices add zero).
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @grouped
// CHECK-SAME: %[[X:.*]]: tensor<5x16xf32>, %[[W:.*]]: tensor<3x16x8xf32>, %[[IDX:.*]]: tensor<5xi64>
// CHECK: %[[COUNTS:.*]] = scf.for %{{.*}} = %{{.*}} to %c5 {{.*}} -> (tensor<3xindex>)
// CHECK: arith.cmpi ult, %{{.*}}, %c3_i64 : i64
// CHECK: %[[TILES:.*]]:3 = scf.for {{.*}} -> (tensor<3xindex>, tensor<3xindex>, index)
// CHECK: arith.ceildivui %{{.*}}, %c8 : index
// CHECK: %[[SLOTS:.*]]:3 = scf.for {{.*}} -> (tensor<5xindex>, tensor<24xindex>, tensor<3xindex>)
// CHECK: %[[XS:.*]] = linalg.generic {{.*}} ins(%[[SLOTS]]#1 : tensor<24xindex>) outs(%{{.*}} : tensor<24x16xf32>)
// CHECK: tensor.extract %[[X]][%{{.*}}, %{{.*}}] : tensor<5x16xf32>
// CHECK: %[[YS:.*]] = scf.forall (%[[C:.*]]) in (1) shared_outs(%[[ALL:.*]] = %{{.*}}) -> (tensor<24x8xf32>)
// CHECK: %[[COLUMN:.*]] = arith.muli %[[C]], %c8 : index
// CHECK: %[[COLUMNS:.*]] = tensor.extract_slice %[[ALL]][0, %[[COLUMN]]] [24, 8] [1, 1]
// CHECK: %[[ZEROED:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[COLUMNS]] : tensor<24x8xf32>)
// CHECK: %[[BY_EXPERT:.*]] = scf.for %[[E:[^ ]*]] = %{{.*}} to %c3{{.*}} iter_args(%[[ACC:.*]] = %[[ZEROED]]) -> (tensor<24x8xf32>)
// CHECK: %[[TILE_COUNT:.*]] = tensor.extract %[[TILES]]#1[%[[E]]] : tensor<3xindex>
// CHECK: %[[HAS_ROWS:.*]] = arith.cmpi ugt, %[[TILE_COUNT]], %{{.*}} : index
// CHECK: scf.if %[[HAS_ROWS]] -> (tensor<24x8xf32>)
// CHECK: scf.for %[[B:[^ ]*]] = %{{.*}} to %c1{{.*}} iter_args(%[[BACC:.*]] = %[[ACC]])
// CHECK: %[[ROW:.*]] = arith.muli %[[B]], %c16 : index
// CHECK: %[[BLOCK:.*]] = tensor.extract_slice %[[W]][%[[E]], %[[ROW]], %[[COLUMN]]] [1, 16, 8] [1, 1, 1] : tensor<3x16x8xf32> to tensor<16x8xf32>
// CHECK: %[[FIRST:.*]] = tensor.extract %[[TILES]]#0[%[[E]]] : tensor<3xindex>
// CHECK: %[[COUNT:.*]] = tensor.extract %[[TILES]]#1[%[[E]]] : tensor<3xindex>
// CHECK: %[[LAST:.*]] = arith.addi %[[FIRST]], %[[COUNT]] : index
// CHECK: scf.for %[[T:.*]] = %[[FIRST]] to %[[LAST]] {{.*}} iter_args(%[[TACC:.*]] = %[[BACC]])
// CHECK: %[[SLOT:.*]] = arith.muli %[[T]], %c8{{.*}} : index
// CHECK: %[[PARTIAL:.*]] = tensor.extract_slice %[[TACC]][%[[SLOT]], 0] [8, 8] [1, 1] : tensor<24x8xf32> to tensor<8x8xf32>
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %[[XS]][%[[SLOT]], %[[ROW]]] [8, 16] [1, 1] : tensor<24x16xf32> to tensor<8x16xf32>
// CHECK-NOT: linalg.copy
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[ROWS]], %[[BLOCK]] : tensor<8x16xf32>, tensor<16x8xf32>) outs(%[[PARTIAL]] : tensor<8x8xf32>)
// CHECK: tensor.insert_slice %[[P]] into %[[TACC]][%[[SLOT]], 0] [8, 8] [1, 1] : tensor<8x8xf32> into tensor<24x8xf32>
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[ACC]] : tensor<24x8xf32>
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %[[BY_EXPERT]] into %[[ALL]][0, %[[COLUMN]]] [24, 8] [1, 1]
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[SLOTS]]#0 : tensor<5xindex>) outs(%{{.*}} : tensor<5x8xf32>)
// CHECK: tensor.extract %[[YS]][%{{.*}}, %{{.*}}] : tensor<24x8xf32>
// CHECK: return %[[Y]]
func.func @grouped(%x: tensor<5x16xf32>, %w: tensor<3x16x8xf32>, %idx: tensor<5xi64>) -> tensor<5x8xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<5x16xf32>, tensor<3x16x8xf32>, tensor<5xi64>) -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}

// A weight larger than a block (256 KiB): x [10, 1024] times [2, 1024, 512] experts is four chunks
// of 128 columns (at least four chunks for the threads), each in blocks of 512 weight rows
// (512 x 128 floats = 256 KiB) read in place: the tiles add block after block into their slot
// rows (outs the partial sum, not zeros), so each sum still runs over k in order.  No copy.
// CHECK-LABEL: func.func @grouped_blocks
// CHECK-SAME: %[[X:.*]]: tensor<10x1024xf32>, %[[W:.*]]: tensor<2x1024x512xf32>
// CHECK: scf.forall (%{{.*}}) in (4)
// CHECK: scf.if
// CHECK: scf.for %[[B:[^ ]*]] = %{{.*}} to %c2{{.*}} iter_args
// CHECK: %[[ROW:.*]] = arith.muli %[[B]], %c512 : index
// CHECK: %[[BLOCK:.*]] = tensor.extract_slice %[[W]][%{{.*}}, %[[ROW]], %{{.*}}] [1, 512, 128] [1, 1, 1] : tensor<2x1024x512xf32> to tensor<512x128xf32>
// CHECK-NOT: linalg.copy
// CHECK: scf.for
// CHECK: %[[PARTIAL:.*]] = tensor.extract_slice %{{.*}}[%{{.*}}, 0] [8, 128] [1, 1] : tensor<24x128xf32> to tensor<8x128xf32>
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %{{.*}}[%{{.*}}, %[[ROW]]] [8, 512] [1, 1] : tensor<24x1024xf32> to tensor<8x512xf32>
// CHECK: linalg.matmul ins(%[[ROWS]], %[[BLOCK]] : tensor<8x512xf32>, tensor<512x128xf32>) outs(%[[PARTIAL]] : tensor<8x128xf32>)
func.func @grouped_blocks(%x: tensor<10x1024xf32>, %w: tensor<2x1024x512xf32>, %idx: tensor<10xi64>) -> tensor<10x512xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<10x1024xf32>, tensor<2x1024x512xf32>, tensor<10xi64>) -> tensor<10x512xf32>
  return %0 : tensor<10x512xf32>
}

// CHECK-LABEL: func.func @scatter
// CHECK-SAME: %[[U:.*]]: tensor<4x3xf32>, %[[I:.*]]: tensor<4xi64>, %[[INIT:.*]]: tensor<6x3xf32>
// CHECK: %[[ZEROS:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK: %[[A:.*]] = scf.for %[[R:.*]] = %{{.*}} to %c4 step %{{.*}} iter_args(%[[ACC:.*]] = %[[ZEROS]]) -> (tensor<2x3xf32>)
// CHECK: %[[INDEX:.*]] = tensor.extract %[[I]][%[[R]]] : tensor<4xi64>
// CHECK: %[[VALID:.*]] = arith.cmpi ult, %[[INDEX]], %c2_i64 : i64
// CHECK: %[[ROW:.*]] = arith.select %[[VALID]], %[[INDEX]], %{{.*}} : i64
// CHECK: %[[DEST:.*]] = arith.index_cast %[[ROW]] : i64 to index
// CHECK: %[[OLD:.*]] = tensor.extract_slice %[[ACC]][%[[DEST]], 0] [1, 3] [1, 1]
// CHECK: %[[NEW:.*]] = tensor.extract_slice %[[U]][%[[R]], 0] [1, 3] [1, 1]
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[NEW]] : tensor<1x3xf32>) outs(%[[OLD]] : tensor<1x3xf32>)
// CHECK: arith.select %[[VALID]], %{{.*}}, %{{.*}} : f32
// CHECK: arith.addf
// CHECK: tensor.insert_slice %[[SUM]] into %[[ACC]][%[[DEST]], 0] [1, 3] [1, 1]
// CHECK: %[[B:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[INIT]]) -> (tensor<6x3xf32>)
// CHECK: return %[[A]], %[[B]]
func.func @scatter(%u: tensor<4x3xf32>, %i: tensor<4xi64>, %init: tensor<6x3xf32>) -> (tensor<2x3xf32>, tensor<6x3xf32>) {
  %0 = "rlx.scatter_add"(%u, %i) {out_dim = 2 : i64} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<2x3xf32>
  %1 = "rlx.scatter_add"(%u, %i, %init) : (tensor<4x3xf32>, tensor<4xi64>, tensor<6x3xf32>) -> tensor<6x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<6x3xf32>
}

// rlx.dequant_grouped_matmul: the same bucketing (3 rows over 2 experts, tiles of 4 rows: 8
// slots); per block of output columns (one scf.forall), per expert with rows, the block of its
// packed slab [block, bytes] is sliced out of the stack and each of its tiles goes through
// rlx.dequant_matmul's kernel (one multi-result generic over the slab's bytes, blocks
// decoded inside).  rlx.dequant_moe_weights decodes every sub-block with the same decoders into
// [E, N, K] (vector.transfer_write) and transposes to [E, K, N].  ui8 is retyped to i8.
// CHECK-LABEL: func.func @dequant
// CHECK-SAME: %[[X:.*]]: tensor<3x32xf32>, %[[Q:.*]]: tensor<2x4x34xi8>, %[[IDX:.*]]: tensor<3xi64>
// CHECK: %[[XS:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<8xindex>) outs(%{{.*}} : tensor<8x32xf32>)
// CHECK: %[[YS:.*]] = scf.forall (%[[B:.*]]) in (1) shared_outs(%{{.*}}) -> (tensor<8x4xf32>)
// CHECK: %[[COLUMN:.*]] = arith.muli %[[B]], %c4 : index
// CHECK: scf.for %[[E:[^ ]*]] = {{.*}} -> (tensor<8x4xf32>)
// CHECK: scf.if
// CHECK: %[[SLAB:.*]] = tensor.extract_slice %[[Q]][%[[E]], %[[COLUMN]], 0] [1, 4, 34] [1, 1, 1] : tensor<2x4x34xi8> to tensor<4x34xi8>
// CHECK: scf.for
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %[[XS]][%{{.*}}, 0] [4, 32] [1, 1] : tensor<8x32xf32> to tensor<4x32xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[SLAB]] : tensor<4x1x1x1x32xf32>, tensor<4x34xi8>)
// CHECK: vector.fma
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%{{.*}}, 0] [4, 4] [1, 1] : tensor<4x4xf32> into tensor<8x4xf32>
// CHECK: scf.forall.in_parallel
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<3xindex>) outs(%{{.*}} : tensor<3x4xf32>)
// CHECK: %[[DECODED:.*]] = scf.for {{.*}} -> (tensor<2x4x32xf32>)
// CHECK: tensor.extract_slice %[[Q]][%{{.*}}, 0, 0] [1, 4, 34] [1, 1, 1]
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] {in_bounds = [true]} : vector<32xf32>, tensor<2x4x32xf32>
// CHECK: %[[W:.*]] = linalg.transpose ins(%[[DECODED]] : tensor<2x4x32xf32>) outs(%{{.*}} : tensor<2x32x4xf32>) permutation = [0, 2, 1]
// CHECK: return %[[Y]], %[[W]]
func.func @dequant(%x: tensor<3x32xf32>, %q: tensor<2x4x34xui8>, %idx: tensor<3xi64>) -> (tensor<3x4xf32>, tensor<2x32x4xf32>) {
  %0 = "rlx.dequant_grouped_matmul"(%x, %q, %idx) {scheme = "q8_0"} : (tensor<3x32xf32>, tensor<2x4x34xui8>, tensor<3xi64>) -> tensor<3x4xf32>
  %1 = "rlx.dequant_moe_weights"(%q) {scheme = "q8_0"} : (tensor<2x4x34xui8>) -> tensor<2x32x4xf32>
  return %0, %1 : tensor<3x4xf32>, tensor<2x32x4xf32>
}
