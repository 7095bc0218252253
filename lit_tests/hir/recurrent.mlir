// rlx-hir-to-mir expands the recurrent blocks into their MIR ops, the same under
// both fusion policies: gated DeltaNet (with and without a carried state) into
// `rlx.gated_delta_net`, the causal depthwise conv into `rlx.depthwise_conv1d_causal`.
// RUN: rlx-opt %s --rlx-hir-to-mir | FileCheck %s --implicit-check-not=rlx_hir.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-hir-to-mir{policy=fusable})' | FileCheck %s --implicit-check-not=rlx_hir.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-hir-to-mir{policy=direct})' | FileCheck %s --implicit-check-not=rlx_hir.

// No state operand (zeros); the MIR op's final state is left unused.
// CHECK-LABEL: func.func @gated_delta_net
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x5x3x4xf32>, %[[K:[^:]*]]: tensor<2x5x3x4xf32>, %[[V:[^:]*]]: tensor<2x5x3x4xf32>, %[[G:[^:]*]]: tensor<2x5x3xf32>, %[[B:[^:]*]]: tensor<2x5x3xf32>)
// CHECK-NEXT: %[[R:.*]]:2 = "rlx.gated_delta_net"(%[[Q]], %[[K]], %[[V]], %[[G]], %[[B]]) {state_size = 4 : i64} : (tensor<2x5x3x4xf32>, tensor<2x5x3x4xf32>, tensor<2x5x3x4xf32>, tensor<2x5x3xf32>, tensor<2x5x3xf32>) -> (tensor<2x5x3x4xf32>, tensor<2x3x4x4xf32>)
// CHECK-NEXT: return %[[R]]#0 : tensor<2x5x3x4xf32>
func.func @gated_delta_net(%q: tensor<2x5x3x4xf32>, %k: tensor<2x5x3x4xf32>, %v: tensor<2x5x3x4xf32>, %g: tensor<2x5x3xf32>, %beta: tensor<2x5x3xf32>) -> tensor<2x5x3x4xf32> {
  %0 = "rlx_hir.gated_delta_net"(%q, %k, %v, %g, %beta) {state_size = 4 : i64} : (tensor<2x5x3x4xf32>, tensor<2x5x3x4xf32>, tensor<2x5x3x4xf32>, tensor<2x5x3xf32>, tensor<2x5x3xf32>) -> tensor<2x5x3x4xf32>
  return %0 : tensor<2x5x3x4xf32>
}

// The carry form passes the state and maps both results (out, new_state).
// CHECK-LABEL: func.func @gated_delta_net_carry
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<1x2x2x8xf16>, %[[K:[^:]*]]: tensor<1x2x2x8xf16>, %[[V:[^:]*]]: tensor<1x2x2x8xf16>, %[[G:[^:]*]]: tensor<1x2x2xf16>, %[[B:[^:]*]]: tensor<1x2x2xf16>, %[[S:[^:]*]]: tensor<1x2x8x8xf16>)
// CHECK-NEXT: %[[R:.*]]:2 = "rlx.gated_delta_net"(%[[Q]], %[[K]], %[[V]], %[[G]], %[[B]], %[[S]]) {state_size = 8 : i64} : (tensor<1x2x2x8xf16>, tensor<1x2x2x8xf16>, tensor<1x2x2x8xf16>, tensor<1x2x2xf16>, tensor<1x2x2xf16>, tensor<1x2x8x8xf16>) -> (tensor<1x2x2x8xf16>, tensor<1x2x8x8xf16>)
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1 : tensor<1x2x2x8xf16>, tensor<1x2x8x8xf16>
func.func @gated_delta_net_carry(%q: tensor<1x2x2x8xf16>, %k: tensor<1x2x2x8xf16>, %v: tensor<1x2x2x8xf16>, %g: tensor<1x2x2xf16>, %beta: tensor<1x2x2xf16>, %s: tensor<1x2x8x8xf16>) -> (tensor<1x2x2x8xf16>, tensor<1x2x8x8xf16>) {
  %0:2 = "rlx_hir.gated_delta_net_carry"(%q, %k, %v, %g, %beta, %s) {state_size = 8 : i64} : (tensor<1x2x2x8xf16>, tensor<1x2x2x8xf16>, tensor<1x2x2x8xf16>, tensor<1x2x2xf16>, tensor<1x2x2xf16>, tensor<1x2x8x8xf16>) -> (tensor<1x2x2x8xf16>, tensor<1x2x8x8xf16>)
  return %0#0, %0#1 : tensor<1x2x2x8xf16>, tensor<1x2x8x8xf16>
}

// A chunk in a decode loop: the new state of one block feeds the next.
// CHECK-LABEL: func.func @two_chunks
// CHECK-NEXT: %[[A:.*]]:2 = "rlx.gated_delta_net"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[S0:[^)]*]])
// CHECK-NEXT: %[[B:.*]]:2 = "rlx.gated_delta_net"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[A]]#1)
// CHECK-NEXT: return %[[A]]#0, %[[B]]#0, %[[B]]#1
func.func @two_chunks(%q: tensor<1x1x1x2xf32>, %k: tensor<1x1x1x2xf32>, %v: tensor<1x1x1x2xf32>, %g: tensor<1x1x1xf32>, %beta: tensor<1x1x1xf32>, %s: tensor<1x1x2x2xf32>) -> (tensor<1x1x1x2xf32>, tensor<1x1x1x2xf32>, tensor<1x1x2x2xf32>) {
  %0:2 = "rlx_hir.gated_delta_net_carry"(%q, %k, %v, %g, %beta, %s) {state_size = 2 : i64} : (tensor<1x1x1x2xf32>, tensor<1x1x1x2xf32>, tensor<1x1x1x2xf32>, tensor<1x1x1xf32>, tensor<1x1x1xf32>, tensor<1x1x2x2xf32>) -> (tensor<1x1x1x2xf32>, tensor<1x1x2x2xf32>)
  %1:2 = "rlx_hir.gated_delta_net_carry"(%q, %k, %v, %g, %beta, %0#1) {state_size = 2 : i64} : (tensor<1x1x1x2xf32>, tensor<1x1x1x2xf32>, tensor<1x1x1x2xf32>, tensor<1x1x1xf32>, tensor<1x1x1xf32>, tensor<1x1x2x2xf32>) -> (tensor<1x1x1x2xf32>, tensor<1x1x2x2xf32>)
  return %0#0, %1#0, %1#1 : tensor<1x1x1x2xf32>, tensor<1x1x1x2xf32>, tensor<1x1x2x2xf32>
}

// The causal depthwise conv is one MIR op; a dynamic sequence length expands too
// (the MIR op takes it; only lowering to linalg needs static shapes).
// CHECK-LABEL: func.func @depthwise_conv1d_causal
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x?x4xf32>, %[[W:[^:]*]]: tensor<4x1x1x3xf32>, %[[P:[^:]*]]: tensor<2x2x4xf32>)
// CHECK-NEXT: %[[R:.*]] = "rlx.depthwise_conv1d_causal"(%[[X]], %[[W]], %[[P]]) {kernel_size = 3 : i64} : (tensor<2x?x4xf32>, tensor<4x1x1x3xf32>, tensor<2x2x4xf32>) -> tensor<2x?x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @depthwise_conv1d_causal(%x: tensor<2x?x4xf32>, %w: tensor<4x1x1x3xf32>, %pad: tensor<2x2x4xf32>) -> tensor<2x?x4xf32> {
  %0 = "rlx_hir.depthwise_conv1d_causal"(%x, %w, %pad) {kernel_size = 3 : i64} : (tensor<2x?x4xf32>, tensor<4x1x1x3xf32>, tensor<2x2x4xf32>) -> tensor<2x?x4xf32>
  return %0 : tensor<2x?x4xf32>
}
