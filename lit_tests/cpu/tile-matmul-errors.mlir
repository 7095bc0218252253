// A generic tagged rlx.microkernel that is not rlx-pack-matmul's 5-loop kernel is
// reported at the op (the transform script's own message attached), not a crash.
// RUN: not rlx-opt %s --rlx-tile-matmul 2>&1 | FileCheck %s

// CHECK: tile-matmul-errors.mlir:[[# @LINE + 4]]:8: error: tiling the matmul kernels failed:
// CHECK-SAME: Failed to apply named transform sequence.
// CHECK: too many tiles provided, expected at most 2 found 5
func.func @not_a_kernel(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x4xf32>) outs(%a : tensor<4x4xf32>) attrs = {rlx.microkernel} {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
