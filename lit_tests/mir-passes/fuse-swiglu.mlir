// rlx-fuse-swiglu: mul(matmul(x, Wu), silu(matmul(x, Wg))) into one matmul on the
// concatenated weights (up then gate) and rlx.fused_swiglu.
// RUN: rlx-opt %s --rlx-fuse-swiglu | FileCheck %s

// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[WU:.*]]: tensor<8x16xf32>, %[[WG:.*]]: tensor<8x16xf32>)
// CHECK-NEXT: %[[W:.*]] = "rlx.concat"(%[[WU]], %[[WG]]) {axis = 1 : i64} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x32xf32>
// CHECK-NEXT: %[[H:.*]] = "rlx.matmul"(%[[X]], %[[W]]) : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
// CHECK-NEXT: %[[Y:.*]] = "rlx.fused_swiglu"(%[[H]]) : (tensor<2x4x32xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @swiglu(%x: tensor<2x4x8xf32>, %wu: tensor<8x16xf32>, %wg: tensor<8x16xf32>) -> tensor<2x4x16xf32> {
  %u = "rlx.matmul"(%x, %wu) : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %g = "rlx.matmul"(%x, %wg) : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %s = "rlx.silu"(%g) : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %y = "rlx.mul"(%u, %s) : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// silu first: the up projection is still the first half.
// CHECK-LABEL: func.func @silu_first
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf16>, %[[WU:.*]]: tensor<8x16xf16>, %[[WG:.*]]: tensor<8x16xf16>)
// CHECK-NEXT: %[[W:.*]] = "rlx.concat"(%[[WU]], %[[WG]]) {axis = 1 : i64}
// CHECK-NEXT: %[[H:.*]] = "rlx.matmul"(%[[X]], %[[W]])
// CHECK-NEXT: "rlx.fused_swiglu"(%[[H]])
// CHECK-NOT: "rlx.silu"
func.func @silu_first(%x: tensor<4x8xf16>, %wu: tensor<8x16xf16>, %wg: tensor<8x16xf16>) -> tensor<4x16xf16> {
  %g = "rlx.matmul"(%x, %wg) : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %s = "rlx.silu"(%g) : (tensor<4x16xf16>) -> tensor<4x16xf16>
  %u = "rlx.matmul"(%x, %wu) : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %y = "rlx.mul"(%s, %u) : (tensor<4x16xf16>, tensor<4x16xf16>) -> tensor<4x16xf16>
  return %y : tensor<4x16xf16>
}

// Left alone: projections of different inputs, weights of different shapes (the
// mul broadcasts), a silu with another use, a batched weight, an up value that is
// no matmul.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: "rlx.fused_swiglu"
// CHECK-COUNT-5: "rlx.mul"
// CHECK-NOT: "rlx.fused_swiglu"
func.func @not_fused(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>, %w: tensor<8x16xf32>, %w1: tensor<8x1xf32>,
                     %wb: tensor<2x8x16xf32>, %up: tensor<4x16xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<2x4x16xf32>, tensor<4x16xf32>) {
  %0 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.matmul"(%z, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %2 = "rlx.silu"(%1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %3 = "rlx.mul"(%0, %2) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %4 = "rlx.matmul"(%x, %w1) : (tensor<4x8xf32>, tensor<8x1xf32>) -> tensor<4x1xf32>
  %5 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %6 = "rlx.silu"(%5) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %7 = "rlx.mul"(%4, %6) : (tensor<4x1xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %8 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %9 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %10 = "rlx.silu"(%9) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %11 = "rlx.mul"(%8, %10) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %12 = "rlx.matmul"(%x, %wb) : (tensor<4x8xf32>, tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  %13 = "rlx.matmul"(%x, %wb) : (tensor<4x8xf32>, tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  %14 = "rlx.silu"(%13) : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %15 = "rlx.mul"(%12, %14) : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %16 = "rlx.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %17 = "rlx.silu"(%16) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %18 = "rlx.mul"(%up, %17) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %3, %7, %11, %10, %15, %18 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<2x4x16xf32>, tensor<4x16xf32>
}
