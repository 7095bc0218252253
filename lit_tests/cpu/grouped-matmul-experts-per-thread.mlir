// rlx.grouped_matmul on more than one thread (rlx-mir-to-linalg{threads}; 8-row tiles, at least one
// expert per thread, N whole 16-float vectors): the threads share out the experts, not the columns.
// One scf.forall over the threads; each first splits the experts into contiguous ranges where their
// costs balance (2 per tile plus 7 for reading an expert with rows, in half tiles; an expert goes to
// the range its cost's midpoint falls in, min(1, 2 * (2 * before + cost) / (2 * total))), then takes
// its range's slots (a dynamic slice of ys, zeroed), and multiplies each of its experts' tiles by
// blocks of whole weight rows (128 KiB: [64, 512], one contiguous run of memory), read in place.
// One thread (the count known) takes the same path, its loops reordered (ONE below).
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg{threads=2})' | FileCheck %s
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-lir,rlx-lir-to-linalg{threads=2})' | FileCheck %s
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg{threads=1})' | FileCheck %s --check-prefix=ONE

// CHECK-LABEL: func.func @grouped
// CHECK: %[[TILES:.*]]:3 = scf.for
// CHECK: arith.ceildivui
// CHECK: scf.forall (%[[W:.*]]) in (2) shared_outs(%[[YS:.*]] = %{{.*}}) -> (tensor<88x512xf32>)
// CHECK: %[[TOTAL:.*]] = scf.for
// CHECK: %[[COUNT:.*]] = tensor.extract %[[TILES]]#1
// CHECK: %[[HAS:.*]] = arith.cmpi ugt, %[[COUNT]], %[[ZERO:.*]] : index
// CHECK: %[[TWICE:.*]] = arith.addi %[[COUNT]], %[[COUNT]] : index
// CHECK: arith.select %[[HAS]], %c7, %[[ZERO]] : index
// CHECK: %[[SCALE:.*]] = arith.maxui
// CHECK: %[[SHARE:.*]]:5 = scf.for
// CHECK: %[[WORKER:.*]] = arith.divui %{{.*}}, %[[SCALE]] : index
// CHECK: %[[CLAMPED:.*]] = arith.minui %[[WORKER]], %c1{{.*}} : index
// CHECK: arith.cmpi ult, %[[CLAMPED]], %[[W]] : index
// CHECK: arith.cmpi ule, %[[CLAMPED]], %[[W]] : index
// CHECK: %[[FIRST:.*]] = arith.muli %[[SHARE]]#3, %c8
// CHECK: %[[SPAN:.*]] = arith.subi %[[SHARE]]#4, %[[SHARE]]#3
// CHECK: %[[SIZE:.*]] = arith.muli %[[SPAN]], %c8
// CHECK: %[[PART:.*]] = tensor.extract_slice %[[YS]][%[[FIRST]], 0] [%[[SIZE]], 512] [1, 1] : tensor<88x512xf32> to tensor<?x512xf32>
// CHECK: %[[ZEROED:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[PART]] : tensor<?x512xf32>)
// CHECK: %[[OUT:.*]] = scf.for %[[E:.*]] = %[[SHARE]]#1 to %[[SHARE]]#2 step %{{.*}} iter_args(%{{.*}} = %[[ZEROED]])
// CHECK: scf.if
// CHECK: scf.for %[[B:.*]] = %c0{{.*}} to %c4{{.*}} step
// CHECK: %[[ROW:.*]] = arith.muli %[[B]], %c64
// Each tile's product is register_tile.accumulate's, reading the block of the weight in place and
// prefetching the next block (the next 64 rows, or past K = 256 the next expert's first 64; the
// last expert, 3, stands for those past the end).
// CHECK: %[[WEIGHT:.*]] = bufferization.to_buffer %arg1 read_only
// CHECK: %[[FOLLOWING:.*]] = arith.addi %[[ROW]], %c64
// CHECK: %[[PAST:.*]] = arith.cmpi uge, %[[FOLLOWING]], %c256
// CHECK: %[[STEP:.*]] = arith.select %[[PAST]], %c1{{.*}}, %c0{{.*}} : index
// CHECK: %[[AFTER:.*]] = arith.addi %[[E]], %[[STEP]] : index
// CHECK: %[[NEXT_E:.*]] = arith.minui %[[AFTER]], %c3
// CHECK: %[[WRAPPED:.*]] = arith.subi %[[FOLLOWING]], %c256
// CHECK: %[[SELECTED:.*]] = arith.select %[[PAST]], %[[WRAPPED]], %[[FOLLOWING]] : index
// CHECK: %[[NEXT_ROW:.*]] = arith.minui %[[SELECTED]], %c192
// CHECK: scf.for %[[T:[^ ]+]] =
// CHECK: %[[SLOT:.*]] = arith.muli %[[T]], %c8
// CHECK: scf.if
// CHECK: arith.subi %[[SLOT]], %[[FIRST]] : index
// An expert's last tile with at most 4 rows: 4 rows x 4 vectors, 8 groups of 64 columns.  C's
// tile is loaded once, stays in registers down all 64 rows of the block (16 steps of 4 rows: no
// read or write of ys inside), and is stored once.
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step
// CHECK-COUNT-16: vector.transfer_read %{{.*}} : tensor<?x512xf32>, vector<16xf32>
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<16xf32>,
// CHECK-NOT: tensor<?x512xf32>
// CHECK: vector.transfer_read %arg1[%[[E]], %{{.*}}, %{{.*}}]{{.*}} : tensor<4x256x512xf32>, vector<16xf32>
// CHECK-NOT: tensor<?x512xf32>
// CHECK: memref.prefetch %[[WEIGHT]][%[[NEXT_E]], %{{.*}}, %{{.*}}], read, locality<2>, data
// CHECK-NOT: tensor<?x512xf32>
// CHECK: vector.fma
// CHECK-NOT: tensor<?x512xf32>
// CHECK: scf.yield
// CHECK-COUNT-16: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<?x512xf32>
// A whole tile: 8 rows x 2 vectors, 16 groups of 32 columns, the same loop down the block.
// CHECK: } else {
// CHECK: arith.subi %[[SLOT]], %[[FIRST]] : index
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step
// CHECK-COUNT-16: vector.transfer_read %{{.*}} : tensor<?x512xf32>, vector<16xf32>
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<16xf32>,
// CHECK-NOT: tensor<?x512xf32>
// CHECK: scf.yield
// CHECK-COUNT-16: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<?x512xf32>
// CHECK-NOT: linalg.matmul
// CHECK-NOT: rlx.gemv_rows
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[OUT]] into %[[YS]][%[[FIRST]], 0] [%[[SIZE]], 512] [1, 1] : tensor<?x512xf32> into tensor<88x512xf32>
// One thread: the same path on one worker, its loops reordered (`_expert_pieces`): per block of
// 32 whole weight rows, per piece of 512 columns, every tile of the expert (the piece feeds them
// all from L1); the rows of xs and ys 16 floats longer than K and N (272, 528), read to K and N.
// ONE-LABEL: func.func @grouped
// ONE: %[[XS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<88x272xf32>)
// ONE: arith.minui %{{.*}}, %c255 : index
// ONE: scf.forall (%{{.*}}) in (1) shared_outs(%[[YS:.*]] = %{{.*}}) -> (tensor<88x528xf32>)
// ONE: %[[PART:.*]] = tensor.extract_slice %[[YS]][%{{.*}}, 0] [%{{.*}}, 512] [1, 1] : tensor<88x528xf32> to tensor<?x512xf32>
// ONE: scf.for %[[E:.*]] = %{{.*}}#1 to %{{.*}}#2
// ONE: scf.if
// ONE: scf.for %[[B:.*]] = %c0{{.*}} to %c8{{.*}} step
// ONE: %[[ROW:.*]] = arith.muli %[[B]], %c32
// ONE: scf.for %[[C:.*]] = %c0{{.*}} to %c1{{.*}} step
// ONE: %[[COLUMN:.*]] = arith.muli %[[C]], %c512
// ONE: bufferization.to_buffer %arg1 read_only
// ONE: scf.for
// ONE: vector.transfer_read %{{.*}}[%{{.*}}, %{{.*}}]{{.*}} : tensor<?x512xf32>, vector<16xf32>
// ONE: scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<16xf32>,
// ONE-NOT: tensor<?x512xf32>
// ONE: vector.transfer_read %arg1[%[[E]], %{{.*}}, %{{.*}}]{{.*}} : tensor<4x256x512xf32>, vector<16xf32>
// ONE-NOT: tensor<?x512xf32>
// ONE: memref.prefetch
// ONE-NOT: tensor<?x512xf32>
// ONE: scf.yield
// ONE: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<?x512xf32>
// ONE-NOT: linalg.matmul
// ONE: scf.forall.in_parallel
// ONE-NEXT: tensor.parallel_insert_slice %{{.*}} into %[[YS]][%{{.*}}, 0] [%{{.*}}, 512] [1, 1] : tensor<?x512xf32> into tensor<88x528xf32>
// ONE: linalg.generic {{.*}} outs(%{{.*}} : tensor<64x512xf32>)
func.func @grouped(%x: tensor<64x256xf32>, %w: tensor<4x256x512xf32>, %idx: tensor<64xi64>) -> tensor<64x512xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<64x256xf32>, tensor<4x256x512xf32>, tensor<64xi64>) -> tensor<64x512xf32>
  return %0 : tensor<64x512xf32>
}

// -----

// N = 8192, past 4096 columns: each expert in chunks of 4096 columns (16 KiB of every weight row),
// blocks of 8 rows (128 KiB), each chunk a slice of the worker's ys that the kernel adds into.
// CHECK-LABEL: func.func @wide
// CHECK: scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}}) -> (tensor<24x8192xf32>)
// CHECK: tensor.extract_slice %{{.*}} : tensor<24x8192xf32> to tensor<?x8192xf32>
// CHECK: scf.if
// CHECK: scf.for %[[C:[^ ]+]] = %c0{{[^ ]*}} to %c2{{[^ ]*}} step
// CHECK: %[[COLUMN:.*]] = arith.muli %[[C]], %c4096
// CHECK: tensor.extract_slice %{{.*}}[0, %[[COLUMN]]] [%{{.*}}, 4096] [1, 1] : tensor<?x8192xf32> to tensor<?x4096xf32>
// CHECK: vector.transfer_read %{{.*}} : tensor<?x4096xf32>, vector<16xf32>
// CHECK: vector.transfer_read %arg1[%{{.*}}, %{{.*}}, %{{.*}}]{{.*}} : tensor<2x64x8192xf32>, vector<16xf32>
// CHECK: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<?x4096xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, %[[COLUMN]]] [%{{.*}}, 4096] [1, 1] : tensor<?x4096xf32> into tensor<?x8192xf32>
func.func @wide(%x: tensor<16x64xf32>, %w: tensor<2x64x8192xf32>, %idx: tensor<16xi64>) -> tensor<16x8192xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<16x64xf32>, tensor<2x64x8192xf32>, tensor<16xi64>) -> tensor<16x8192xf32>
  return %0 : tensor<16x8192xf32>
}

// -----

// A decode step's rows (2: tiles of 2 rows) keep the chunks of columns on two threads.
// CHECK-LABEL: func.func @decode
// CHECK: scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}}) -> (tensor<4x512xf32>)
// CHECK: tensor<4x256x512xf32> to tensor<256x256xf32>
func.func @decode(%x: tensor<2x256xf32>, %w: tensor<4x256x512xf32>, %idx: tensor<2xi64>) -> tensor<2x512xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<2x256xf32>, tensor<4x256x512xf32>, tensor<2xi64>) -> tensor<2x512xf32>
  return %0 : tensor<2x512xf32>
}

// -----

// N = 1000 (not whole vectors: rlx-tile-gemv would give its last 8 columns to rlx-pack-matmul's
// kernel, whose sums may differ in the last bit from the chunks') keeps the chunks of columns.
// CHECK-LABEL: func.func @ragged
// CHECK: scf.forall (%{{.*}}) in (4) shared_outs(%{{.*}}) -> (tensor<88x1000xf32>)
// CHECK: tensor<4x64x1000xf32> to tensor<64x250xf32>
func.func @ragged(%x: tensor<64x64xf32>, %w: tensor<4x64x1000xf32>, %idx: tensor<64xi64>) -> tensor<64x1000xf32> {
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<64x64xf32>, tensor<4x64x1000xf32>, tensor<64xi64>) -> tensor<64x1000xf32>
  return %0 : tensor<64x1000xf32>
}
