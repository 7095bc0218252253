// rlx-vectorize-transposes: a transpose of the last two dimensions, both multiples of 16, is
// tiled into 16x16 blocks, each read as 16 contiguous rows, transposed in registers (the
// shuffle_16x16 sequence) and written as 16 contiguous rows; other transposes are left alone.
// RUN: rlx-opt %s --split-input-file --rlx-vectorize-transposes | FileCheck %s

// CHECK-LABEL: func.func @blocked(
// CHECK-SAME: %[[X:.*]]: tensor<32x48xf32>
// CHECK-NOT: linalg.transpose
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %[[C16:.*]] iter_args
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %[[C16]] iter_args(%[[OUT:.*]] =
// CHECK: %[[IN:.*]] = tensor.extract_slice %[[X]][%[[J]], %[[I]]] [16, 16] [1, 1]
// CHECK: vector.transfer_read %[[IN]]{{.*}} : tensor<16x16xf32>, vector<16x16xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29] : vector<16xf32>, vector<16xf32>
// CHECK-NOT: rlx.transpose_blocks
// CHECK: vector.transfer_write %{{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK: tensor.insert_slice %{{.*}} into %[[OUT]][%[[I]], %[[J]]] [16, 16] [1, 1]
func.func @blocked(%x: tensor<32x48xf32>) -> tensor<48x32xf32> {
  %e = tensor.empty() : tensor<48x32xf32>
  %t = linalg.transpose ins(%x : tensor<32x48xf32>) outs(%e : tensor<48x32xf32>) permutation = [1, 0]
  return %t : tensor<48x32xf32>
}

// -----

// The lowered packing of a transposed GEMM operand ([panels, 32, K] -> [panels, K, 32]): one
// panel at a time, blocked the same way.
// CHECK-LABEL: func.func @panels(
// CHECK-NOT: linalg.transpose
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: vector.transfer_read %{{.*}} : tensor<1x16x16xf32>, vector<16x16xf32>
// CHECK: vector.shuffle
// CHECK: vector.transfer_write %{{.*}} : vector<16x16xf32>, tensor<1x16x16xf32>
func.func @panels(%x: tensor<3x32x64xf32>) -> tensor<3x64x32xf32> {
  %e = tensor.empty() : tensor<3x64x32xf32>
  %t = linalg.transpose ins(%x : tensor<3x32x64xf32>) outs(%e : tensor<3x64x32xf32>) permutation = [0, 2, 1]
  return %t : tensor<3x64x32xf32>
}

// -----

// Left alone: a dimension that is no multiple of 16, a permutation that moves a leading
// dimension, a non-f32 element type.
// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT: vector.
// CHECK: linalg.transpose ins(%{{.*}} : tensor<20x32xf32>) {{.*}} permutation = [1, 0]
// CHECK-NOT: rlx.transpose_blocks
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x32x16x64xf32>) {{.*}} permutation = [0, 2, 1, 3]
// CHECK: linalg.transpose ins(%{{.*}} : tensor<32x32xf64>) {{.*}} permutation = [1, 0]
func.func @left_alone(%a: tensor<20x32xf32>, %b: tensor<2x32x16x64xf32>, %c: tensor<32x32xf64>)
    -> (tensor<32x20xf32>, tensor<2x16x32x64xf32>, tensor<32x32xf64>) {
  %ea = tensor.empty() : tensor<32x20xf32>
  %ta = linalg.transpose ins(%a : tensor<20x32xf32>) outs(%ea : tensor<32x20xf32>) permutation = [1, 0]
  %eb = tensor.empty() : tensor<2x16x32x64xf32>
  %tb = linalg.transpose ins(%b : tensor<2x32x16x64xf32>) outs(%eb : tensor<2x16x32x64xf32>) permutation = [0, 2, 1, 3]
  %ec = tensor.empty() : tensor<32x32xf64>
  %tc = linalg.transpose ins(%c : tensor<32x32xf64>) outs(%ec : tensor<32x32xf64>) permutation = [1, 0]
  return %ta, %tb, %tc : tensor<32x20xf32>, tensor<2x16x32x64xf32>, tensor<32x32xf64>
}

// -----

// A transpose materialized in a function argument (an output tied to an input) is left alone:
// blocked, its loops would take the argument as their init, which bufferization rejects.
// CHECK-LABEL: func.func @into_argument(
// CHECK: linalg.transpose
// CHECK-NOT: scf.for
func.func @into_argument(%x: tensor<32x32xf32>, %z: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %e = tensor.empty() : tensor<32x32xf32>
  %t = linalg.transpose ins(%x : tensor<32x32xf32>) outs(%e : tensor<32x32xf32>) permutation = [1, 0]
  %r = bufferization.materialize_in_destination %t in %z : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}
