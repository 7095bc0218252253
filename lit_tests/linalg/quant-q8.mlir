// rlx.dequant_matmul {activations = "q8"} (q4_k): x is rounded to 8 bits per row and block of
// 256 before the kernel (the blocks' largest |x|, then roundeven(x * 127 / amax) into i8, stored
// [c, h, g', l] so that 64 bytes of x meet 64 bytes of nibbles), and the kernel's body multiplies
// the weight's nibbles by those bytes in i32 (widened products, 4 strided shuffles added: the
// pattern rlx-x86-byte-dot turns into vpdpbusd, x86-byte-dot.mlir), then scales each sub-block's
// lanes in f32.  The mins use the f32
// sums of x over each sub-block of 32.
// RUN: rlx-opt %s --rlx-mir-to-linalg | FileCheck %s

// CHECK-DAG: #[[PERMUTED:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d4, d3, d5)>
// CHECK-LABEL: func.func @q4_k_q8
// Largest |x| per block of 256:
// CHECK: linalg.generic
// CHECK: math.absf
// CHECK: arith.maximumf
// The codes, written in the permuted layout:
// CHECK: linalg.generic {{.*}}#[[PERMUTED]]
// CHECK: math.roundeven
// CHECK: arith.fptosi %{{.*}} : f32 to i8
// CHECK: -> tensor<1x2x2x2x2x32xi8>
// The sums of x over each sub-block of 32 (the mins):
// CHECK: tensor<1x16x32xf32>
// The kernel: per block 2 x 64 bytes of nibbles, low and high, times 64 bytes of x each.
// CHECK: linalg.generic
// CHECK: scf.for %{{.*}} iter_args(%{{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<8xf32>)
// CHECK: %[[NIBBLES:.*]] = vector.transfer_read %{{.*}} : tensor<3x288xi8>, vector<64xi8>
// CHECK: arith.andi %[[NIBBLES]]
// CHECK: arith.shrui %[[NIBBLES]]
// CHECK: vector.transfer_read %{{.*}} : tensor<1x1x2x2x2x64xi8>, vector<64xi8>
// CHECK: arith.extui %{{.*}} : vector<64xi8> to vector<64xi32>
// CHECK: arith.extsi %{{.*}} : vector<64xi8> to vector<64xi32>
// CHECK: %[[PRODUCTS:.*]] = arith.muli %{{.*}} : vector<64xi32>
// CHECK: vector.shuffle %[[PRODUCTS]], %[[PRODUCTS]] [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60]
// CHECK: vector.shuffle %[[PRODUCTS]], %[[PRODUCTS]] [1, 5, 9,
// CHECK: vector.shuffle %[[PRODUCTS]], %[[PRODUCTS]] [2, 6, 10,
// CHECK: vector.shuffle %[[PRODUCTS]], %[[PRODUCTS]] [3, 7, 11,
// CHECK: arith.sitofp %{{.*}} : vector<16xi32> to vector<16xf32>
// CHECK: vector.shuffle %{{.*}} [0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2] : vector<8xf32>, vector<8xf32>
// CHECK: vector.fma
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @q4_k_q8(%x: tensor<1x512xf32>, %w: tensor<3x288xui8>) -> tensor<1x3xf32> {
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_k", activations = "q8"} : (tensor<1x512xf32>, tensor<3x288xui8>) -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}
