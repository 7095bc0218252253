// rlx-readonly-arguments: bufferization may write into an argument only when a
// result is tied to it (rlx.tied); other arguments of public functions become
// read-only (existing argument attributes are kept), private functions are left alone.
// RUN: rlx-opt %s --rlx-readonly-arguments | FileCheck %s

// CHECK-LABEL: func.func @step(
// CHECK-SAME: %{{[^:]*}}: tensor<1x8x4xf32> {bufferization.writable = true, rlx.name = "cache"},
// CHECK-SAME: %{{[^:]*}}: tensor<1x1x4xf32> {bufferization.writable = false},
// CHECK-SAME: %{{[^:]*}}: tensor<i64> {bufferization.writable = false, rlx.name = "pos"})
// CHECK-SAME: -> (tensor<1x8x4xf32> {rlx.tied = 0 : i64})
func.func @step(%cache: tensor<1x8x4xf32> {rlx.name = "cache"}, %new: tensor<1x1x4xf32>, %pos: tensor<i64> {rlx.name = "pos"})
    -> (tensor<1x8x4xf32> {rlx.tied = 0 : i64}) {
  %0 = "rlx.kv_cache_write"(%cache, %new, %pos) : (tensor<1x8x4xf32>, tensor<1x1x4xf32>, tensor<i64>) -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// CHECK-LABEL: func.func private @helper(
// CHECK-SAME: %{{[^:]*}}: tensor<4xf32>) -> tensor<4xf32>
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
