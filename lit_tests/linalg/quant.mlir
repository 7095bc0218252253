// rlx.dequant_matmul lowers to one linalg.generic over (row panel p of the weight, chunk c of K,
// tile r of x's rows, row i of the panel) whose body sums x[rows of the tile, chunk] * weight row
// p * panel + i in one vector accumulator per row of the tile: an scf.for over the chunk's blocks
// (and one over the sub-blocks of a block) reads what a sub-block shares (scales, mins) from the
// weight's bytes as scalars (tensor.extract), its codes as one vector of bytes
// (vector.transfer_read), decodes them lane-wise once and adds x * weight with vector.fma per
// row; one vector.reduction per accumulator at the end adds into the partial sum of the earlier
// chunks.  No f32 copy of the weight.  x and w are also inputs (at a body's first elements) so the
// op shows its size; the products [N / panel, M / tile, panel] are put together and transposed
// into [M, N] at the end (reshaped when M = 1).  ui8 tensors and vectors become i8 holding the
// same bits; the decoders read them unsigned.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// CHECK-DAG: #[[X_MAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d1, 0, 0, 0)>
// CHECK-DAG: #[[W_MAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0 * 5 + d3, d1 * 36)>
// CHECK-DAG: #[[OUT_MAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[TWO_ROWS_W:.*]] = affine_map<(d0, d1, d2, d3) -> (d0 * 6 + d3 * 2, d1 * 288)>
// CHECK-DAG: #[[FOUR_ROWS_W:.*]] = affine_map<(d0, d1, d2, d3) -> (d0 * 8 + d3 * 4, d1 * 288)>
// CHECK-DAG: #[[NIBBLE_ORDER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d5, d3, d6, d4)>
// CHECK-DAG: #[[IDENTITY7:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>

// Q4_0: x viewed as [M, K chunks, 32-blocks of a chunk, 2 nibble halves, 16]; d is the f16 at bytes 0-1 of the block, the
// codes the nibbles (selected by the half) of bytes 2..17.  M = 3: row tiles of 1, K in one chunk
// of 2 blocks, N = 5 in one panel.
// CHECK-LABEL: func.func @q4_0
// CHECK-SAME: %[[X:.*]]: tensor<3x64xf32>, %[[W:.*]]: tensor<5x36xi8>) -> tensor<3x5xf32>
// CHECK: %[[XV:.*]] = tensor.expand_shape %{{.*}} output_shape [3, 1, 2, 2, 16] : tensor<192xf32> into tensor<3x1x2x2x16xf32>
// CHECK: %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x3x5xf32>)
// CHECK: %[[PRODUCT:.*]] = linalg.generic {indexing_maps = [#[[X_MAP]], #[[W_MAP]], #[[OUT_MAP]]], iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[XV]], %[[W]] : tensor<3x1x2x2x16xf32>, tensor<5x36xi8>) outs(%[[ACC]] : tensor<1x3x5xf32>)
// CHECK: ^bb0(%{{.*}}: f32, %{{.*}}: i8, %[[OUT:.*]]: f32):
// CHECK: %[[P:.*]] = linalg.index 0 : index
// CHECK: %[[C:.*]] = linalg.index 1 : index
// CHECK: %[[ROWTILE:.*]] = linalg.index 2 : index
// CHECK: %[[I:.*]] = linalg.index 3 : index
// CHECK: %[[PANEL:.*]] = arith.muli %[[P]], %c5{{(_[0-9]+)?}} : index
// CHECK: %[[N:.*]] = arith.addi %[[PANEL]], %[[I]] : index
// CHECK: %[[FIRST_ROW:.*]] = arith.muli %[[ROWTILE]], %c1{{(_[0-9]+)?}} : index
// CHECK: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK: %[[SUMS:.*]] = scf.for %[[BC:.*]] = %{{.*}} to %c2 step %{{.*}} iter_args(%[[BSUMS:.*]] = %[[ZEROS]]) -> (vector<16xf32>)
// CHECK: %[[BLOCK_SUMS:.*]] = scf.for %[[S:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[SSUMS:.*]] = %[[BSUMS]]) -> (vector<16xf32>)
// CHECK: %[[CHUNK_START:.*]] = arith.muli %[[C]], %c2{{(_[0-9]+)?}} : index
// CHECK: %[[B:.*]] = arith.addi %[[CHUNK_START]], %[[BC]] : index
// CHECK: %[[BASE:.*]] = arith.muli %[[B]], %c18 : index
// CHECK: tensor.extract %[[W]][%[[N]], %{{.*}}] : tensor<5x36xi8>
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.bitcast %{{.*}} : i16 to f16
// CHECK: %[[D:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK: %[[BYTES:.*]] = vector.transfer_read %[[W]][%[[N]], %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<5x36xi8>, vector<16xi8>
// CHECK: arith.extui %[[BYTES]] : vector<16xi8> to vector<16xi32>
// CHECK: arith.shrui %{{.*}} : vector<16xi32>
// CHECK: arith.andi %{{.*}} : vector<16xi32>
// CHECK: arith.subi %{{.*}} : vector<16xi32>
// CHECK: %[[DS:.*]] = vector.broadcast %[[D]] : f32 to vector<16xf32>
// CHECK: %[[CODES:.*]] = arith.sitofp %{{.*}} : vector<16xi32> to vector<16xf32>
// CHECK: %[[WEIGHTS:.*]] = arith.mulf %[[DS]], %[[CODES]] : vector<16xf32>
// CHECK: %[[ROW:.*]] = arith.addi %[[FIRST_ROW]], %{{.*}} : index
// CHECK: %[[XS:.*]] = vector.transfer_read %[[XV]][%[[ROW]], %[[C]], %[[BC]], %[[S]], %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<3x1x2x2x16xf32>, vector<16xf32>
// CHECK: %[[NEXT:.*]] = vector.fma %[[XS]], %[[WEIGHTS]], %[[SSUMS]] : vector<16xf32>
// CHECK: scf.yield %[[NEXT]] : vector<16xf32>
// CHECK: scf.yield %[[BLOCK_SUMS]] : vector<16xf32>
// CHECK: %[[R:.*]] = vector.reduction <add>, %[[SUMS]], %[[OUT]] fastmath<reassoc,contract> : vector<16xf32> into f32
// CHECK: linalg.yield %[[R]] : f32
// CHECK: linalg.transpose ins(%[[PRODUCT]] : tensor<1x3x5xf32>) outs(%{{.*}} : tensor<3x1x5xf32>) permutation = [1, 0, 2]
// CHECK: return
// CHECK-NOT: tensor<5x64xf32>
func.func @q4_0(%x: tensor<3x64xf32>, %w: tensor<5x36xui8>) -> tensor<3x5xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_0"} : (tensor<3x64xf32>, tensor<5x36xui8>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// Q4_K with one row of x per body (a GEMV) factors the scales out of the sums:
// sum_s d sc_s (x_s . code_s) - dmin m_s sum(x_s).  The sums of x over each sub-block of 32 are
// one small reduction before the kernel; per block, the 8 scales and mins are decoded lane-wise
// from the 12 scale bytes (vector.shuffle, shifts and masks on vector<8xi32>: ggml's
// get_scale_min_k4 for all sub-blocks at once), the mins meet the sums of x in one
// vector<8xf32> FMA.  The 128 bytes of nibbles are read as two vector<64xi8> viewed as 16 i32
// words; nibble 2 k + high of each word is taken where it lies (a mask, then uitofp: the code
// times 2^(8 k + 4 high), no shift) and meets x rearranged once per call (a linalg.generic that
// moves x to [block, h, high, k, 16] and scales it by 2^(28 - 8 k - 4 high): exponent bits
// 155 - 8 k - 4 high) so that lanes 0-7 hold sub-block 4 h + high and lanes 8-15 sub-block
// 4 h + 2 + high, every product 2^28 times x * code; the scales' d is scaled by 2^-28
// (3.7252903E-9).  x . codes takes a multiply and three FMAs per 32 such pairs of sub-blocks,
// their two scales (one vector.shuffle of the decoded scales) one more FMA into the accumulator
// of `high`.
// CHECK-LABEL: func.func @q4_k_rank1
// CHECK-SAME: tensor<7x288xi8>
// CHECK: tensor.expand_shape %{{.*}} output_shape [1, 1, 2, 8, 32] : tensor<512xf32> into tensor<1x1x2x8x32xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}} : tensor<1x16x32xf32>) outs(%{{.*}} : tensor<1x16xf32>)
// CHECK: arith.addf
// CHECK: %[[XSUMS_VIEW:.*]] = tensor.expand_shape %{{.*}} output_shape [1, 1, 2, 8] : tensor<16xf32> into tensor<1x1x2x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[NIBBLE_ORDER]], #[[IDENTITY7]]], {{.*}} ins(%{{.*}} : tensor<1x2x2x2x2x8x4xf32>) outs(%{{.*}} : tensor<1x2x2x2x4x2x8xf32>)
// CHECK: %[[K:.*]] = linalg.index 4 : index
// CHECK: %[[HIGH:.*]] = linalg.index 3 : index
// CHECK: arith.constant 155 : i32
// CHECK: %[[POWER:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.mulf %{{.*}}, %[[POWER]] : f32
// CHECK: %[[XNIB:.*]] = tensor.expand_shape %{{.*}} output_shape [1, 1, 2, 2, 2, 4, 16] : tensor<512xf32> into tensor<1x1x2x2x2x4x16xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<1x1x2x8x32xf32>, tensor<7x288xi8>) outs(%{{.*}} : tensor<1x1x7xf32>)
// CHECK: scf.for %{{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<8xf32>)
// CHECK: arith.muli %{{.*}}, %c144 : index
// CHECK: %[[SCALE_BYTES:.*]] = vector.transfer_read %{{.*}} : tensor<7x288xi8>, vector<12xi8>
// CHECK: vector.shuffle %[[SCALE_BYTES]], %[[SCALE_BYTES]] [0, 1, 2, 3, 8, 9, 10, 11]
// CHECK: arith.extui %{{.*}} : vector<8xi8> to vector<8xi32>
// CHECK-NOT: arith.select
// CHECK: %[[D:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK: arith.mulf %[[D]], %{{.*}} : f32
// CHECK: %[[SCALES:.*]] = arith.mulf %{{.*}} : vector<8xf32>
// CHECK: %[[MINS:.*]] = arith.mulf %{{.*}} : vector<8xf32>
// CHECK: %[[SUMS:.*]] = vector.transfer_read %[[XSUMS_VIEW]]{{.*}} : tensor<1x1x2x8xf32>, vector<8xf32>
// CHECK: vector.fma %[[MINS]], %[[SUMS]], %{{.*}} : vector<8xf32>
// CHECK: vector.transfer_read %{{.*}} : tensor<7x288xi8>, vector<64xi8>
// CHECK: %[[WORDS:.*]] = vector.bitcast %{{.*}} : vector<64xi8> to vector<16xi32>
// CHECK: %[[X0:.*]] = vector.transfer_read %[[XNIB]]{{.*}} : tensor<1x1x2x2x2x4x16xf32>, vector<16xf32>
// CHECK: %[[NIBBLE0:.*]] = arith.constant dense<15> : vector<16xi32>
// CHECK: arith.andi %[[WORDS]], %[[NIBBLE0]] : vector<16xi32>
// CHECK: arith.uitofp %{{.*}} : vector<16xi32> to vector<16xf32>
// CHECK: arith.mulf %[[X0]], %{{.*}} : vector<16xf32>
// CHECK: %[[NIBBLE2:.*]] = arith.constant dense<3840> : vector<16xi32>
// CHECK: arith.andi %[[WORDS]], %[[NIBBLE2]] : vector<16xi32>
// CHECK: arith.uitofp %{{.*}} : vector<16xi32> to vector<16xf32>
// CHECK: vector.fma %{{.*}} : vector<16xf32>
// CHECK: vector.shuffle %[[SCALES]], %[[SCALES]] [0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2] : vector<8xf32>, vector<8xf32>
// CHECK: vector.fma %{{.*}} : vector<16xf32>
// CHECK-NOT: vector.extract %[[SCALES]]
// CHECK-NOT: arith.subf
// CHECK-NOT: arith.shrui %{{.*}} : vector<16xi32>
// CHECK: vector.reduction <add>
// CHECK: vector.reduction <add>, %{{.*}}, %{{.*}} fastmath<reassoc,contract> : vector<8xf32> into f32
// CHECK: linalg.yield
// CHECK-NOT: linalg.transpose
// CHECK: tensor.collapse_shape %{{.*}} : tensor<1x1x7xf32> into tensor<7xf32>
func.func @q4_k_rank1(%x: tensor<512xf32>, %w: tensor<7x288xui8>) -> tensor<7xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_k"} : (tensor<512xf32>, tensor<7x288xui8>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// Q8_0: one sub-block per block, so one scf.for (over the blocks), no loop over sub-blocks.
// Q4_K GEMV with a panel of 6 (4 rows per body do not divide it, 2 do): each body takes two
// weight rows (n = p * 6 + 2 i and n + 1), one
// result per row; the two blocks' 12 scale bytes are read side by side (vector<24xi8>) and their
// scales and mins decoded in one vector<16> (lanes 0-7 the first row's sub-blocks, 8-15 the
// second's); the sums of x meet both rows' mins in one vector<16xf32> FMA; each row keeps its two
// accumulators and its lanes of the mins; a last generic interleaves the rows' results.
// CHECK-LABEL: func.func @q4_k_two_rows
// CHECK: %[[PAIR:.*]]:2 = linalg.generic {indexing_maps = [#{{.*}}, #[[TWO_ROWS_W]], #{{.*}}, #{{.*}}]
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<1x1x3xf32>, tensor<1x1x3xf32>)
// CHECK: %[[FIRST:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[SECOND:.*]] = arith.addi %[[FIRST]], %c1{{(_[0-9]+)?}} : index
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: %[[A:.*]] = vector.transfer_read %{{.*}}[%[[FIRST]], %{{.*}}], %{{.*}} : tensor<6x288xi8>, vector<12xi8>
// CHECK: %[[B:.*]] = vector.transfer_read %{{.*}}[%[[SECOND]], %{{.*}}], %{{.*}} : tensor<6x288xi8>, vector<12xi8>
// CHECK: %[[BOTH:.*]] = vector.shuffle %[[A]], %[[B]] [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23]
// CHECK: vector.shuffle %[[BOTH]], %[[BOTH]] [0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23]
// CHECK: arith.extui %{{.*}} : vector<16xi8> to vector<16xi32>
// CHECK: %[[SCALES:.*]] = arith.mulf %{{.*}} : vector<16xf32>
// CHECK: %[[MINS:.*]] = arith.mulf %{{.*}} : vector<16xf32>
// CHECK: %[[SUMS:.*]] = vector.transfer_read %{{.*}} : tensor<1x1x2x8xf32>, vector<8xf32>
// CHECK: %[[SUMS2:.*]] = vector.shuffle %[[SUMS]], %[[SUMS]] [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7]
// CHECK: vector.fma %[[MINS]], %[[SUMS2]], %{{.*}} : vector<16xf32>
// CHECK: vector.shuffle %[[SCALES]], %[[SCALES]] [0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2] : vector<16xf32>, vector<16xf32>
// CHECK: vector.shuffle %[[SCALES]], %[[SCALES]] [8, 8, 8, 8, 8, 8, 8, 8, 10, 10, 10, 10, 10, 10, 10, 10] : vector<16xf32>, vector<16xf32>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [8], strides = [1]} : vector<16xf32> to vector<8xf32>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [8], sizes = [8], strides = [1]} : vector<16xf32> to vector<8xf32>
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f32, f32
// CHECK: linalg.generic {{.*}} ins(%[[PAIR]]#0, %[[PAIR]]#1 : tensor<1x1x3xf32>, tensor<1x1x3xf32>) outs(%{{.*}} : tensor<1x1x3x2xf32>)
// CHECK: linalg.index 3 : index
// CHECK: arith.select
// CHECK: tensor.collapse_shape %{{.*}} : tensor<1x1x3x2xf32> into tensor<6xf32>
// CHECK-NOT: tensor.insert_slice
func.func @q4_k_two_rows(%x: tensor<1x512xf32>, %w: tensor<6x288xui8>) -> tensor<1x6xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_k"} : (tensor<1x512xf32>, tensor<6x288xui8>) -> tensor<1x6xf32>
  return %0 : tensor<1x6xf32>
}

// With a panel of 8, four weight rows per body (their rows of bytes stream side by side): the
// four blocks' scale bytes concatenated pairwise into one vector<48xi8>, scales and mins in
// vector<32>, 2 accumulators per row and the mins, four results.  Block b of the rows n .. n + 3
// prefetches (into L2: locality 2) the b-th 576 bytes (4 x 144) of the rows two groups further,
// n + 8 .. n + 11, clamped to the last group (rows 4 .. 7): one memref.prefetch per 64 bytes,
// 9, on the weight's buffer (a read-only view, no copy).
// CHECK-LABEL: func.func @q4_k_four_rows
// CHECK-SAME: %[[W4:[a-z0-9_]+]]: tensor<8x288xi8>
// CHECK: %[[WBUF:.*]] = bufferization.to_buffer %[[W4]] read_only : tensor<8x288xi8> to memref<8x288xi8, strided<[?, ?], offset: ?>>
// CHECK: %[[FOUR:.*]]:4 = linalg.generic {indexing_maps = [#{{.*}}, #[[FOUR_ROWS_W]], #{{.*}}, #{{.*}}, #{{.*}}, #{{.*}}]
// CHECK-SAME: outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x1x2xf32>, tensor<1x1x2xf32>, tensor<1x1x2xf32>, tensor<1x1x2xf32>)
// CHECK: %[[N4:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: scf.for %[[B4:[a-z0-9_]+]] = {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<32xf32>)
// CHECK: %[[AHEAD:.*]] = arith.addi %[[N4]], %c8{{(_[0-9]+)?}} : index
// CHECK: %[[START:.*]] = arith.minui %[[AHEAD]], %c4{{(_[0-9]+)?}} : index
// CHECK: %[[SLICE:.*]] = arith.muli %[[B4]], %c576{{(_[0-9]+)?}} : index
// CHECK: %[[ROWS_IN:.*]] = arith.divui %[[SLICE]], %c288{{(_[0-9]+)?}} : index
// CHECK: %[[ROW4:.*]] = arith.addi %[[START]], %[[ROWS_IN]] : index
// CHECK: %[[COLUMN4:.*]] = arith.remui %[[SLICE]], %c288{{(_[0-9]+)?}} : index
// CHECK: memref.prefetch %[[WBUF]][%[[ROW4]], %[[COLUMN4]]], read, locality<2>, data
// CHECK-COUNT-7: memref.prefetch %[[WBUF]]
// CHECK: arith.addi %{{.*}}, %c512{{(_[0-9]+)?}} : index
// CHECK: memref.prefetch %[[WBUF]]
// CHECK-NOT: memref.prefetch
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [{{.*}}] : vector<24xi8>, vector<24xi8>
// CHECK: %[[SCALES4:.*]] = arith.mulf %{{.*}} : vector<32xf32>
// CHECK: vector.shuffle %[[SCALES4]], %[[SCALES4]] [24, 24, 24, 24, 24, 24, 24, 24, 26, 26, 26, 26, 26, 26, 26, 26] : vector<32xf32>, vector<32xf32>
// CHECK: linalg.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f32, f32, f32, f32
// CHECK: tensor.collapse_shape %{{.*}} : tensor<1x1x2x4xf32> into tensor<8xf32>
func.func @q4_k_four_rows(%x: tensor<1x512xf32>, %w: tensor<8x288xui8>) -> tensor<1x8xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_k"} : (tensor<1x512xf32>, tensor<8x288xui8>) -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}

// CHECK-LABEL: func.func @q8_0
// CHECK: scf.for %{{.*}} iter_args(%{{.*}}) -> (vector<32xf32>)
// CHECK-NOT: scf.for
// CHECK: vector.transfer_read %{{.*}} : tensor<2x34xi8>, vector<32xi8>
// CHECK: arith.extsi %{{.*}} : vector<32xi8> to vector<32xi32>
// CHECK: vector.fma %{{.*}} : vector<32xf32>
// CHECK: vector.reduction <add>
func.func @q8_0(%x: tensor<1x32xf32>, %w: tensor<2x34xui8>) -> tensor<1x2xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q8_0"} : (tensor<1x32xf32>, tensor<2x34xui8>) -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// M = 16: two tiles of 8 rows; a decoded sub-block feeds 8 accumulators (8 vector.fma).  K = 1024
// (32 Q8_0 blocks) in 2 chunks of 16 blocks (8 rows x 512 f32 of x: 16 KiB), N = 72 in 2 panels of
// 36 rows.  The 8 products [2, 2, 36] go into [2, 2, 36, 8], transposed to [2 row tiles, 8, 2, 36].
// CHECK-LABEL: func.func @q8_0_rows
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #[[OUT_MAP]], #[[OUT_MAP]], #[[OUT_MAP]], #[[OUT_MAP]], #[[OUT_MAP]], #[[OUT_MAP]], #[[OUT_MAP]], #[[OUT_MAP]]], iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<16x2x16x1x32xf32>, tensor<72x1088xi8>)
// CHECK: scf.for %{{.*}} iter_args({{.*}}) -> (vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>)
// CHECK: vector.transfer_read %{{.*}} : tensor<72x1088xi8>, vector<32xi8>
// CHECK-COUNT-8: vector.fma %{{.*}} : vector<32xf32>
// CHECK-NOT: vector.fma
// CHECK-COUNT-8: vector.reduction <add>
// CHECK: linalg.yield
// CHECK-SAME: f32, f32, f32, f32, f32, f32, f32, f32
// CHECK-COUNT-8: tensor.insert_slice %{{.*}}[0, 0, 0, {{[0-7]}}] [2, 2, 36, 1] [1, 1, 1, 1] : tensor<2x2x36xf32> into tensor<2x2x36x8xf32>
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x2x36x8xf32>) outs(%{{.*}} : tensor<2x8x2x36xf32>) permutation = [1, 3, 0, 2]
func.func @q8_0_rows(%x: tensor<16x1024xf32>, %w: tensor<72x1088xui8>) -> tensor<16x72xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q8_0"} : (tensor<16x1024xf32>, tensor<72x1088xui8>) -> tensor<16x72xf32>
  return %0 : tensor<16x72xf32>
}

// Q4_K with 2 rows per body: the block is decoded once (the scales and mins lane-wise, as above),
// into weights `code * (d sc) - dmin m` (one vector.fma per sub-block), which each row's
// accumulator takes in (2 vector.fma per sub-block); no sums of x.
// CHECK-LABEL: func.func @q4_k_rows
// CHECK-NOT: tensor<2x8xf32>
// CHECK: scf.for %{{.*}} iter_args({{.*}}) -> (vector<32xf32>, vector<32xf32>)
// CHECK: vector.shuffle
// CHECK-NOT: arith.select
// CHECK: vector.transfer_read %{{.*}} : tensor<3x144xi8>, vector<32xi8>
// CHECK-COUNT-3: vector.fma %{{.*}} : vector<32xf32>
// CHECK: vector.reduction <add>
func.func @q4_k_rows(%x: tensor<2x256xf32>, %w: tensor<3x144xui8>) -> tensor<2x3xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_k"} : (tensor<2x256xf32>, tensor<3x144xui8>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// Casts of unsigned bytes zero-extend (uitofp, extui); to bytes, floats truncate unsigned (fptoui).
// CHECK-LABEL: func.func @casts
// CHECK-SAME: (%{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4xi8>)
// CHECK: arith.uitofp %{{.*}} : i8 to f32
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.fptoui %{{.*}} : f32 to i8
// CHECK-NOT: ui8
func.func @casts(%b: tensor<4xui8>, %f: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4xui8>) {
  %0 = "rlx.cast"(%b) : (tensor<4xui8>) -> tensor<4xf32>
  %1 = "rlx.cast"(%b) : (tensor<4xui8>) -> tensor<4xi32>
  %2 = "rlx.cast"(%f) : (tensor<4xf32>) -> tensor<4xui8>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xi32>, tensor<4xui8>
}
