// rlx.dequant_matmul lowers to one linalg.generic over (n, m), both parallel, whose body sums
// x[m, :] * weight row n in a vector accumulator: an scf.for over the blocks of the row (and one
// over the sub-blocks of a block) reads what a sub-block shares (scales, mins) from the weight's
// bytes as scalars (tensor.extract), its codes as one vector of bytes (vector.transfer_read),
// decodes them lane-wise and adds x * weight with vector.fma; one vector.reduction per output
// element at the end, not one per sub-block.  No f32 copy of the weight.  x and w are also inputs
// (at their rows' first elements) so the op shows its size; the product is [N, M], transposed at
// the end (reshaped when M = 1).  ui8 tensors and vectors become i8 holding the same bits; the
// decoders read them unsigned.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// CHECK-DAG: #[[X_MAP:.*]] = affine_map<(d0, d1) -> (d1, 0, 0, 0)>
// CHECK-DAG: #[[W_MAP:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: #[[OUT_MAP:.*]] = affine_map<(d0, d1) -> (d0, d1)>

// Q4_0: x viewed as [M, K/32, 2 nibble halves, 16]; d is the f16 at bytes 0-1 of the block, the
// codes the nibbles (selected by the half) of bytes 2..17.
// CHECK-LABEL: func.func @q4_0
// CHECK-SAME: %[[X:.*]]: tensor<3x64xf32>, %[[W:.*]]: tensor<5x36xi8>) -> tensor<3x5xf32>
// CHECK: %[[XV:.*]] = tensor.expand_shape %{{.*}} output_shape [3, 2, 2, 16] : tensor<192xf32> into tensor<3x2x2x16xf32>
// CHECK: %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<5x3xf32>)
// CHECK: %[[PRODUCT:.*]] = linalg.generic {indexing_maps = [#[[X_MAP]], #[[W_MAP]], #[[OUT_MAP]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[XV]], %[[W]] : tensor<3x2x2x16xf32>, tensor<5x36xi8>) outs(%[[ACC]] : tensor<5x3xf32>)
// CHECK: ^bb0(%{{.*}}: f32, %{{.*}}: i8, %[[OUT:.*]]: f32):
// CHECK: %[[N:.*]] = linalg.index 0 : index
// CHECK: %[[M:.*]] = linalg.index 1 : index
// CHECK: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK: %[[SUMS:.*]] = scf.for %[[B:.*]] = %{{.*}} to %c2 step %{{.*}} iter_args(%[[BSUMS:.*]] = %[[ZEROS]]) -> (vector<16xf32>)
// CHECK: %[[BLOCK_SUMS:.*]] = scf.for %[[S:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[SSUMS:.*]] = %[[BSUMS]]) -> (vector<16xf32>)
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
// CHECK: %[[XS:.*]] = vector.transfer_read %[[XV]][%[[M]], %[[B]], %[[S]], %{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<3x2x2x16xf32>, vector<16xf32>
// CHECK: %[[NEXT:.*]] = vector.fma %[[XS]], %[[WEIGHTS]], %[[SSUMS]] : vector<16xf32>
// CHECK: scf.yield %[[NEXT]] : vector<16xf32>
// CHECK: scf.yield %[[BLOCK_SUMS]] : vector<16xf32>
// CHECK: %[[R:.*]] = vector.reduction <add>, %[[SUMS]], %[[OUT]] fastmath<reassoc,contract> : vector<16xf32> into f32
// CHECK: linalg.yield %[[R]] : f32
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[PRODUCT]] : tensor<5x3xf32>) outs(%{{.*}} : tensor<3x5xf32>) permutation = [1, 0]
// CHECK: return %[[T]]
// CHECK-NOT: tensor<5x64xf32>
func.func @q4_0(%x: tensor<3x64xf32>, %w: tensor<5x36xui8>) -> tensor<3x5xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_0"} : (tensor<3x64xf32>, tensor<5x36xui8>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// CHECK-LABEL: func.func @q4_k_rank1
// CHECK-SAME: tensor<7x288xi8>
// CHECK: tensor.expand_shape %{{.*}} output_shape [1, 2, 8, 32] : tensor<512xf32> into tensor<1x2x8x32xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<1x2x8x32xf32>, tensor<7x288xi8>) outs(%{{.*}} : tensor<7x1xf32>)
// CHECK: arith.muli %{{.*}}, %c144 : index
// CHECK: arith.andi %{{.*}}, %c63_i32 : i32
// CHECK: arith.select
// CHECK: vector.transfer_read %{{.*}} : tensor<7x288xi8>, vector<32xi8>
// CHECK: arith.subf %{{.*}} : vector<32xf32>
// CHECK: vector.fma %{{.*}} : vector<32xf32>
// CHECK: vector.reduction <add>
// CHECK: linalg.yield
// CHECK-NOT: linalg.transpose
// CHECK: tensor.collapse_shape %{{.*}} : tensor<7x1xf32> into tensor<7xf32>
func.func @q4_k_rank1(%x: tensor<512xf32>, %w: tensor<7x288xui8>) -> tensor<7xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_k"} : (tensor<512xf32>, tensor<7x288xui8>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// Q8_0: one sub-block per block, so one scf.for (over the blocks), no loop over sub-blocks.
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
