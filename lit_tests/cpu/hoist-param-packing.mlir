// rlx-hoist-param-packing: with rlx-pack-matmul{pack-params}, the B panels of every GEMM whose B is a
// parameter (rlx.param, followed into the private functions it is passed to) are packed by a public
// companion function @<f>__pack<i>, once when the weights are bound; @f takes the panels as arguments
// after its own (named "<param>:panels<i>"), listed in rlx.packed_params.  A private function takes
// them as a new last argument, each call passing the panels of its weight.  Only parameters: B from
// a runtime input, or a function called with a non-parameter at some call, keeps its packing.
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul{pack-params},rlx-hoist-param-packing,canonicalize)' | FileCheck %s
// Without pack-params nothing is tagged, so nothing is hoisted (16 rows: B is read in place).
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-mir-to-linalg,rlx-pack-matmul,rlx-hoist-param-packing,canonicalize)' | FileCheck %s --check-prefix=DEFAULT

// CHECK-LABEL: func.func private @layer(
// CHECK-SAME: %{{.*}}: tensor<16x64xf32>, %{{.*}}: tensor<64x64xf32>, %[[LP:.*]]: tensor<2x64x32xf32>)
// CHECK-NOT: linalg.pack
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[LP]] : tensor<2x8x64xf32>, tensor<2x64x32xf32>)
// CHECK-SAME: rlx.microkernel_packed = true
// CHECK-LABEL: func.func @net(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<16x64xf32> {rlx.name = "x"}, %[[W0:[a-z0-9]+]]: tensor<64x64xf32> {rlx.name = "w0", rlx.param}, %[[W1:[a-z0-9]+]]: tensor<64x64xf32> {rlx.name = "w1", rlx.param}, %{{.*}}: tensor<16x62xf32> {rlx.name = "h"}, %{{.*}}: tensor<62x70xf32> {rlx.name = "head", rlx.param},
// CHECK-SAME: %[[P0:[a-z0-9]+]]: tensor<2x64x32xf32> {rlx.name = "w0:panels0"}, %[[P1:[a-z0-9]+]]: tensor<2x64x32xf32> {rlx.name = "w1:panels1"}, %[[P2:[a-z0-9]+]]: tensor<3x64x32xf32> {rlx.name = "head:panels2"})
// CHECK-SAME: rlx.packed_params = [{function = "net__pack0", param = "w0", type = tensor<2x64x32xf32>}, {function = "net__pack1", param = "w1", type = tensor<2x64x32xf32>}, {function = "net__pack2", param = "head", type = tensor<3x64x32xf32>}]
// CHECK-NOT: linalg.pack
// CHECK: %[[A:.*]] = call @layer(%[[X]], %[[W0]], %[[P0]])
// CHECK: %[[B:.*]] = call @layer(%[[A]], %[[W1]], %[[P1]])
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[P2]] : tensor<2x8x64xf32>, tensor<3x64x32xf32>)
// CHECK: return %[[B]], %{{.*}} : tensor<16x64xf32>, tensor<16x70xf32>
// CHECK-LABEL: func.func @net__pack0(
// CHECK-SAME: %[[S0:.*]]: tensor<64x64xf32> {rlx.name = "w0", rlx.param}) -> tensor<2x64x32xf32>
// CHECK: %[[R0:.*]] = linalg.pack %[[S0]] outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [32] into %{{.*}} {rlx.b_panels} : tensor<64x64xf32> -> tensor<2x64x32xf32>
// CHECK: return %[[R0]]
// CHECK-LABEL: func.func @net__pack1(
// CHECK-SAME: tensor<64x64xf32> {rlx.name = "w1", rlx.param}) -> tensor<2x64x32xf32>
// The head's K (62) is padded to 64 rows and its N (70) to three 32-column panels.
// CHECK-LABEL: func.func @net__pack2(
// CHECK-SAME: %[[S2:.*]]: tensor<62x70xf32> {rlx.name = "head", rlx.param}) -> tensor<3x64x32xf32>
// CHECK: %[[PAD:.*]] = tensor.pad %[[S2]] low[0, 0] high[2, 0]
// CHECK: } : tensor<62x70xf32> to tensor<64x70xf32>
// CHECK: %[[R2:.*]] = linalg.pack %[[PAD]] padding_value(%{{.*}} : f32) outer_dims_perm = [1, 0] inner_dims_pos = [1] inner_tiles = [32] into %{{.*}} {rlx.b_panels} : tensor<64x70xf32> -> tensor<3x64x32xf32>
// CHECK: return %[[R2]]
// DEFAULT-LABEL: func.func @net(
// DEFAULT-NOT: panels
// DEFAULT-NOT: rlx.packed_params
// DEFAULT-NOT: __pack
func.func private @layer(%x: tensor<16x64xf32>, %w: tensor<64x64xf32>) -> tensor<16x64xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
func.func @net(%x: tensor<16x64xf32> {rlx.name = "x"}, %w0: tensor<64x64xf32> {rlx.name = "w0", rlx.param},
               %w1: tensor<64x64xf32> {rlx.name = "w1", rlx.param},
               %h: tensor<16x62xf32> {rlx.name = "h"},
               %head: tensor<62x70xf32> {rlx.name = "head", rlx.param}) -> (tensor<16x64xf32>, tensor<16x70xf32>) {
  %a = call @layer(%x, %w0) : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %b = call @layer(%a, %w1) : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %y = "rlx.matmul"(%h, %head) : (tensor<16x62xf32>, tensor<62x70xf32>) -> tensor<16x70xf32>
  return %b, %y : tensor<16x64xf32>, tensor<16x70xf32>
}

// -----

// @layer is called with a runtime input at one call: its B is no parameter, its packing stays (and
// pack-params does not pack it: 16 rows read B in place).  @mixed's own B, a runtime input, too.
// CHECK-LABEL: func.func private @layer(
// CHECK-SAME: %{{.*}}: tensor<16x64xf32>, %[[W:.*]]: tensor<64x64xf32>) -> tensor<16x64xf32>
// CHECK: tensor.expand_shape %[[W]] {{\[}}[0], [1, 2]] output_shape [64, 2, 32]
// CHECK: rlx.microkernel_packed = false
// CHECK-LABEL: func.func @mixed(
// CHECK-NOT: panels
// CHECK-NOT: rlx.packed_params
// CHECK: call @layer
// CHECK: call @layer
// CHECK-NOT: func.func @mixed__pack
func.func private @layer(%x: tensor<16x64xf32>, %w: tensor<64x64xf32>) -> tensor<16x64xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
func.func @mixed(%x: tensor<16x64xf32> {rlx.name = "x"}, %v: tensor<64x64xf32> {rlx.name = "v"},
                 %w: tensor<64x64xf32> {rlx.name = "w", rlx.param}) -> tensor<16x64xf32> {
  %a = call @layer(%x, %w) : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %b = call @layer(%a, %v) : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  return %b : tensor<16x64xf32>
}

// -----

// A public function another one calls keeps its signature, so its packing stays inside it.
// CHECK-LABEL: func.func @inner(
// CHECK-SAME: %{{.*}}: tensor<16x64xf32> {rlx.name = "x"}, %[[W:.*]]: tensor<64x64xf32> {rlx.name = "w", rlx.param}) -> tensor<16x64xf32> {
// CHECK: linalg.pack %[[W]]
// CHECK-LABEL: func.func @outer(
// CHECK: call @inner(%{{.*}}, %{{.*}}) : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
// CHECK-NOT: func.func @inner__pack
func.func @inner(%x: tensor<16x64xf32> {rlx.name = "x"}, %w: tensor<64x64xf32> {rlx.name = "w", rlx.param}) -> tensor<16x64xf32> {
  %y = "rlx.matmul"(%x, %w) : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
func.func @outer(%x: tensor<16x64xf32> {rlx.name = "x"}, %w: tensor<64x64xf32> {rlx.name = "w", rlx.param}) -> tensor<16x64xf32> {
  %y = call @inner(%x, %w) : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
