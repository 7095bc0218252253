// A scan's carry is updated in place: after inlining the body, eliminating
// empty tensors, bufferizing and hoisting, the loop neither copies the carry nor
// allocates (the pipeline rlx-lower-to-llvm runs these steps in this order).
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-lir,rlx-lir-to-linalg,inline,symbol-dce,eliminate-empty-tensors,canonicalize,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},func.func(buffer-loop-hoisting),canonicalize)' | FileCheck %s

// The body is inlined and gone:
// CHECK-NOT: func.func private @step
// CHECK-LABEL: func.func @rnn
// CHECK: %[[CARRY:.*]] = memref.alloc() {{.*}} : memref<8xf32>
// CHECK: linalg.copy {{.*}} outs(%[[CARRY]] : memref<8xf32>)
// CHECK: %[[TMP:.*]] = memref.alloc() {{.*}} : memref<8xf32>
// CHECK: scf.for
// CHECK-NOT: memref.alloc
// CHECK-NOT: copy
// CHECK: linalg.generic {{.*}} outs(%[[TMP]] : memref<8xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[TMP]] : memref<8xf32>) outs(%[[CARRY]] : memref<8xf32>)
// CHECK-NOT: copy
// CHECK: return %[[CARRY]]
func.func private @step(%h: tensor<8xf32>, %x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "rlx.add"(%h, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = "rlx.tanh"(%0) : (tensor<8xf32>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

func.func @rnn(%h0: tensor<8xf32>, %xs: tensor<16x8xf32>) -> tensor<8xf32> {
  %0 = "rlx.scan"(%h0, %xs) {body = @step, length = 16 : i64, save_trajectory = false, num_checkpoints = 0 : i64, operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<8xf32>, tensor<16x8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
