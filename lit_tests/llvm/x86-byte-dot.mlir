// rlx-x86-byte-dot (last in rlx-lower-to-llvm, on AVX-512 VNNI hosts; host=false here so the test
// does not depend on the machine): the portable byte dot product (64 unsigned bytes times 64
// signed bytes, widened to i32, the 4 strided shuffles added) becomes one vpdpbusd from zero; the
// other three shuffles become zeros.  Anything else is left alone: a signed x signed product, and
// shuffles that are not the 4 strided ones.
// RUN: rlx-opt %s --rlx-x86-byte-dot=host=false | FileCheck %s

// CHECK-LABEL: llvm.func @dot(
// CHECK-SAME:    %[[A:.*]]: vector<64xi8>, %[[B:.*]]: vector<64xi8>
// CHECK:         %[[ZERO:.*]] = llvm.mlir.constant(dense<0> : vector<16xi32>) : vector<16xi32>
// CHECK-NEXT:    %[[DOT:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%[[ZERO]], %[[A]], %[[B]]) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// CHECK-NOT:     llvm.shufflevector
// CHECK-NOT:     llvm.mul
// CHECK:         %[[S01:.*]] = llvm.add %[[DOT]], %[[ZERO]] : vector<16xi32>
// CHECK-NEXT:    %[[S012:.*]] = llvm.add %[[S01]], %[[ZERO]] : vector<16xi32>
// CHECK-NEXT:    %[[S:.*]] = llvm.add %[[S012]], %[[ZERO]] : vector<16xi32>
// CHECK-NEXT:    llvm.return %[[S]]
llvm.func @dot(%a: vector<64xi8>, %b: vector<64xi8>) -> vector<16xi32> {
  %ua = llvm.zext %a : vector<64xi8> to vector<64xi32>
  %sb = llvm.sext %b : vector<64xi8> to vector<64xi32>
  %p = llvm.mul %sb, %ua : vector<64xi32>
  %s0 = llvm.shufflevector %p, %p [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60] : vector<64xi32>
  %s1 = llvm.shufflevector %p, %p [1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61] : vector<64xi32>
  %s2 = llvm.shufflevector %p, %p [2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58, 62] : vector<64xi32>
  %s3 = llvm.shufflevector %p, %p [3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63] : vector<64xi32>
  %t0 = llvm.add %s0, %s1 : vector<16xi32>
  %t1 = llvm.add %t0, %s2 : vector<16xi32>
  %t2 = llvm.add %t1, %s3 : vector<16xi32>
  llvm.return %t2 : vector<16xi32>
}

// Both bytes signed: no vpdpbusd (it takes one operand unsigned).
// CHECK-LABEL: llvm.func @signed(
// CHECK-NOT:     vpdpbusd
// CHECK:         llvm.mul
llvm.func @signed(%a: vector<64xi8>, %b: vector<64xi8>) -> vector<16xi32> {
  %sa = llvm.sext %a : vector<64xi8> to vector<64xi32>
  %sb = llvm.sext %b : vector<64xi8> to vector<64xi32>
  %p = llvm.mul %sa, %sb : vector<64xi32>
  %s0 = llvm.shufflevector %p, %p [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60] : vector<64xi32>
  %s1 = llvm.shufflevector %p, %p [1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61] : vector<64xi32>
  %s2 = llvm.shufflevector %p, %p [2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58, 62] : vector<64xi32>
  %s3 = llvm.shufflevector %p, %p [3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63] : vector<64xi32>
  %t0 = llvm.add %s0, %s1 : vector<16xi32>
  %t1 = llvm.add %t0, %s2 : vector<16xi32>
  %t2 = llvm.add %t1, %s3 : vector<16xi32>
  llvm.return %t2 : vector<16xi32>
}

// Only three of the four groups summed (or any other use of the products): left alone.
// CHECK-LABEL: llvm.func @partial(
// CHECK-NOT:     vpdpbusd
// CHECK:         llvm.mul
llvm.func @partial(%a: vector<64xi8>, %b: vector<64xi8>) -> vector<16xi32> {
  %ua = llvm.zext %a : vector<64xi8> to vector<64xi32>
  %sb = llvm.sext %b : vector<64xi8> to vector<64xi32>
  %p = llvm.mul %ua, %sb : vector<64xi32>
  %s0 = llvm.shufflevector %p, %p [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60] : vector<64xi32>
  %s1 = llvm.shufflevector %p, %p [1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61] : vector<64xi32>
  %s2 = llvm.shufflevector %p, %p [2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58, 62] : vector<64xi32>
  %t0 = llvm.add %s0, %s1 : vector<16xi32>
  %t1 = llvm.add %t0, %s2 : vector<16xi32>
  llvm.return %t1 : vector<16xi32>
}
