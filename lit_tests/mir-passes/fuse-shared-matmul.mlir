// rlx-fuse-shared-matmul: matmuls of one input by 2-D weights into one matmul on
// the weights concatenated along axis 1, plus one rlx.narrow per result.
// RUN: rlx-opt %s --rlx-fuse-shared-matmul | FileCheck %s
// SwiGLU pairs give fused_swiglu whichever of the two passes runs first.
// RUN: rlx-opt %s --rlx-fuse-swiglu --rlx-fuse-shared-matmul | FileCheck %s --check-prefix=SWIGLU
// RUN: rlx-opt %s --rlx-fuse-shared-matmul --rlx-fuse-swiglu | FileCheck %s --check-prefix=SWIGLU

// q / k / v projections.
// CHECK-LABEL: func.func @qkv
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[WQ:.*]]: tensor<8x8xf32>, %[[WK:.*]]: tensor<8x4xf32>, %[[WV:.*]]: tensor<8x4xf32>)
// CHECK-NEXT: %[[C1:.*]] = "rlx.concat"(%[[WQ]], %[[WK]]) {axis = 1 : i64} : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x12xf32>
// CHECK-NEXT: %[[C2:.*]] = "rlx.concat"(%[[C1]], %[[WV]]) {axis = 1 : i64} : (tensor<8x12xf32>, tensor<8x4xf32>) -> tensor<8x16xf32>
// CHECK-NEXT: %[[M:.*]] = "rlx.matmul"(%[[X]], %[[C2]]) : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[Q:.*]] = "rlx.narrow"(%[[M]]) {axis = 2 : i64, len = 8 : i64, start = 0 : i64} : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[K:.*]] = "rlx.narrow"(%[[M]]) {axis = 2 : i64, len = 4 : i64, start = 8 : i64} : (tensor<2x4x16xf32>) -> tensor<2x4x4xf32>
// CHECK-NEXT: %[[V:.*]] = "rlx.narrow"(%[[M]]) {axis = 2 : i64, len = 4 : i64, start = 12 : i64} : (tensor<2x4x16xf32>) -> tensor<2x4x4xf32>
// CHECK-NEXT: return %[[Q]], %[[K]], %[[V]]
func.func @qkv(%x: tensor<2x4x8xf32>, %wq: tensor<8x8xf32>, %wk: tensor<8x4xf32>, %wv: tensor<8x4xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %q = "rlx.matmul"(%x, %wq) : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k = "rlx.matmul"(%x, %wk) : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
  %v = "rlx.matmul"(%x, %wv) : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
  return %q, %k, %v : tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>
}

// A weight defined between the matmuls: the merged matmul goes after it.
// CHECK-LABEL: func.func @late_weight
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W1:.*]]: tensor<8x8xf32>)
// CHECK-NEXT: %[[W2:.*]] = "rlx.constant"()
// CHECK-NEXT: %[[C:.*]] = "rlx.concat"(%[[W1]], %[[W2]]) {axis = 1 : i64}
// CHECK-NEXT: %[[M:.*]] = "rlx.matmul"(%[[X]], %[[C]]) : (tensor<4x8xf32>, tensor<8x10xf32>) -> tensor<4x10xf32>
// CHECK-NEXT: %[[A:.*]] = "rlx.narrow"(%[[M]]) {axis = 1 : i64, len = 8 : i64, start = 0 : i64}
// CHECK-NEXT: %[[B:.*]] = "rlx.narrow"(%[[M]]) {axis = 1 : i64, len = 2 : i64, start = 8 : i64}
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @late_weight(%x: tensor<4x8xf32>, %w1: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x2xf32>) {
  %0 = "rlx.matmul"(%x, %w1) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %w2 = "rlx.constant"() {value = dense<0.5> : tensor<8x2xf32>} : () -> tensor<8x2xf32>
  %1 = "rlx.matmul"(%x, %w2) : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x2xf32>
}

// A weight computed from another matmul's result would make a cycle: only the
// other two merge.  A batched weight and a lone matmul on another input stay.
// CHECK-LABEL: func.func @cycle
// CHECK-SAME: (%[[X:.*]]: tensor<8x8xf32>, %[[W1:.*]]: tensor<8x8xf32>, %[[W3:.*]]: tensor<8x4xf32>, %[[WB:.*]]: tensor<2x8x8xf32>, %[[Y:.*]]: tensor<8x8xf32>)
// CHECK-NEXT: %[[C:.*]] = "rlx.concat"(%[[W1]], %[[W3]])
// CHECK-NEXT: %[[M:.*]] = "rlx.matmul"(%[[X]], %[[C]]) : (tensor<8x8xf32>, tensor<8x12xf32>) -> tensor<8x12xf32>
// CHECK-NEXT: %[[A:.*]] = "rlx.narrow"(%[[M]]) {axis = 1 : i64, len = 8 : i64, start = 0 : i64}
// CHECK-NEXT: %[[C3:.*]] = "rlx.narrow"(%[[M]]) {axis = 1 : i64, len = 4 : i64, start = 8 : i64}
// CHECK-NEXT: %[[W2:.*]] = "rlx.transpose"(%[[A]])
// CHECK-NEXT: "rlx.matmul"(%[[X]], %[[W2]])
// CHECK-NEXT: "rlx.matmul"(%[[X]], %[[WB]])
// CHECK-NEXT: "rlx.matmul"(%[[Y]], %[[W1]])
// CHECK-NOT: "rlx.narrow"
func.func @cycle(%x: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %w3: tensor<8x4xf32>, %wb: tensor<2x8x8xf32>, %y: tensor<8x8xf32>)
    -> (tensor<8x8xf32>, tensor<8x4xf32>, tensor<2x8x8xf32>, tensor<8x8xf32>) {
  %0 = "rlx.matmul"(%x, %w1) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %w2 = "rlx.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = "rlx.matmul"(%x, %w2) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %2 = "rlx.matmul"(%x, %w3) : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %3 = "rlx.matmul"(%x, %wb) : (tensor<8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %4 = "rlx.matmul"(%y, %w1) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %1, %2, %3, %4 : tensor<8x8xf32>, tensor<8x4xf32>, tensor<2x8x8xf32>, tensor<8x8xf32>
}

// A SwiGLU's projections beside a third matmul on the same input.
// CHECK-LABEL: func.func @swiglu
// CHECK-NOT: "rlx.concat"
// CHECK: "rlx.silu"
// SWIGLU-LABEL: func.func @swiglu
// SWIGLU-NOT: "rlx.silu"
// SWIGLU: "rlx.fused_swiglu"
// SWIGLU-NOT: "rlx.silu"
func.func @swiglu(%x: tensor<4x8xf32>, %wu: tensor<8x16xf32>, %wg: tensor<8x16xf32>, %wo: tensor<8x8xf32>)
    -> (tensor<4x16xf32>, tensor<4x8xf32>) {
  %u = "rlx.matmul"(%x, %wu) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %g = "rlx.matmul"(%x, %wg) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %o = "rlx.matmul"(%x, %wo) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = "rlx.silu"(%g) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = "rlx.mul"(%u, %s) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y, %o : tensor<4x16xf32>, tensor<4x8xf32>
}
