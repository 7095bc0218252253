// A training step's update writes each parameter in place: a returned value
// tied to an argument (rlx.tied) that an elementwise op computes is
// materialized into that argument (rlx-lir-to-linalg), so the op computes
// straight into the argument's buffer after every read of it, and
// rlx-drop-tied-results removes the result: no buffer of the parameter's size
// is allocated, copied or returned; only the loss is an output.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-mir-to-lir,rlx-lir-to-linalg,inline,symbol-dce,eliminate-empty-tensors,canonicalize,rlx-distinct-results,rlx-readonly-arguments,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},canonicalize,rlx-drop-tied-results,buffer-results-to-out-params{hoist-static-allocs modify-public-functions},canonicalize)' --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @sgd(
// CHECK-SAME: %[[X:[^:]*]]: memref<4x8xf32>, %[[W:[^:]*]]: memref<8x8xf32>, %[[LOSS:[^:]*]]: memref<f32>)
// CHECK-NOT: memref.alloc{{.*}}memref<8x8xf32>
// CHECK: linalg.matmul
// CHECK-NOT: memref.alloc{{.*}}memref<8x8xf32>
// CHECK-NOT: memref.copy {{.*}}%[[W]]
// The update reads the old weight and its gradient and writes the weight itself.
// CHECK: linalg.generic {{.*}} ins(%[[W]], %{{.*}} : memref<8x8xf32>, memref<8x8xf32>{{.*}}) outs(%[[W]] : memref<8x8xf32>)
// CHECK-NOT: memref.copy {{.*}}%[[W]]
// CHECK: return{{$}}
func.func @sgd(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<f32>, tensor<8x8xf32> {rlx.tied = 1 : i64}) {
  %y = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %loss = "rlx.reduce"(%y) {axes = array<i64: 0, 1>, keep_dim = false, kind = "sum"} : (tensor<4x8xf32>) -> tensor<f32>
  %xt = "rlx.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %ones = "rlx.constant"() {value = dense<1.0> : tensor<4x8xf32>} : () -> tensor<4x8xf32>
  %g = "rlx.matmul"(%xt, %ones) : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %lr = "rlx.constant"() {value = dense<0.1> : tensor<8x8xf32>} : () -> tensor<8x8xf32>
  %step = "rlx.mul"(%g, %lr) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %new = "rlx.sub"(%w, %step) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %loss, %new : tensor<f32>, tensor<8x8xf32>
}

// -----

// The old weight is read after the update: bufferization would have to copy
// it, and rlx-drop-tied-results says so instead.
func.func @read_after_update(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32> {rlx.tied = 1 : i64}) {
  %new = "rlx.neg"(%w) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  // expected-error @+1 {{result #1 is tied to argument #1 (rlx.tied), but bufferization did not update that argument in place}}
  return %y, %new : tensor<4x8xf32>, tensor<8x8xf32>
}
