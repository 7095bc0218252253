// rlx-outline-blocks on named blocks: runs of ops built in one `GraphModule.named` scope
// (their NameLoc) that repeat with the same ops, attributes, types and wiring become one
// private function, called (no_inline) once per block: here two KV-cache decoder layers.
// Values the block reads from outside are the arguments (in first-read order), values used
// after it the results. A layer's caches are returned by @step as its arguments updated in
// place (rlx.tied), so the function's cache results are tied to its own cache arguments and
// so are the call's: rlx-lower-to-llvm writes the caller's caches in place, through the call.
// A block of other ops (layers.2), or of one op (norm), stays in place.
// RUN: rlx-opt %s --rlx-outline-blocks | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-outline-blocks{named-blocks=false})' | FileCheck %s --check-prefix=OFF
// RUN: rlx-opt %s --rlx-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func private @__rlx_block_layers_{{[0-9a-f]+}}(
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x2x8xf32>, %[[WK:[^:]*]]: tensor<8x4xf32>, %[[KC:[^:]*]]: tensor<1x4x4xf32>, %[[POS:[^:]*]]: tensor<i64>, %[[WV:[^:]*]]: tensor<8x4xf32>, %[[VC:[^:]*]]: tensor<1x4x4xf32>)
// CHECK-SAME: -> (tensor<1x4x4xf32> {rlx.tied = 2 : i64}, tensor<1x4x4xf32> {rlx.tied = 5 : i64}, tensor<1x2x8xf32>)
// CHECK-SAME: attributes {rlx.outlined}
// CHECK-NEXT: %[[K:.*]] = "rlx.matmul"(%[[X]], %[[WK]])
// CHECK-NEXT: %[[K2:.*]] = "rlx.kv_cache_write"(%[[KC]], %[[K]], %[[POS]])
// CHECK-NEXT: %[[V:.*]] = "rlx.matmul"(%[[X]], %[[WV]])
// CHECK-NEXT: %[[V2:.*]] = "rlx.kv_cache_write"(%[[VC]], %[[V]], %[[POS]])
// CHECK-NEXT: %[[A:.*]] = "rlx.cached_attention"(%[[X]], %[[K2]], %[[V2]], %[[POS]])
// CHECK-NEXT: %[[Y:.*]] = "rlx.add"(%[[X]], %[[A]])
// CHECK-NEXT: return %[[K2]], %[[V2]], %[[Y]]
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[SX:[^:]*]]: tensor<1x2x8xf32>, %[[SPOS:[^:]*]]: tensor<i64>, %[[K0:[^:]*]]: tensor<1x4x4xf32>, %[[V0:[^:]*]]: tensor<1x4x4xf32>, %[[K1:[^:]*]]: tensor<1x4x4xf32>, %[[V1:[^:]*]]: tensor<1x4x4xf32>, %[[K2C:[^:]*]]: tensor<1x4x4xf32>, %[[V2C:[^:]*]]: tensor<1x4x4xf32>, %[[W0K:[^:]*]]: tensor<8x4xf32>, %[[W0V:[^:]*]]: tensor<8x4xf32>, %[[W1K:[^:]*]]: tensor<8x4xf32>, %[[W1V:[^:]*]]: tensor<8x4xf32>
// CHECK: %[[L0:.*]]:3 = call @[[LAYER:__rlx_block_layers_[0-9a-f]+]](%[[SX]], %[[W0K]], %[[K0]], %[[SPOS]], %[[W0V]], %[[V0]]) {no_inline, res_attrs = [{rlx.tied = 2 : i64}, {rlx.tied = 5 : i64}, {}]}
// CHECK: %[[L1:.*]]:3 = call @[[LAYER]](%[[L0]]#2, %[[W1K]], %[[K1]], %[[SPOS]], %[[W1V]], %[[V1]]) {no_inline,
// The third layer subtracts: other ops, and it occurs once.
// CHECK: "rlx.kv_cache_write"(%[[K2C]],
// CHECK: "rlx.sub"(%[[L1]]#2,
// CHECK: "rlx.neg"
// CHECK: return %{{.*}}, %[[L0]]#0, %[[L0]]#1, %[[L1]]#0, %[[L1]]#1,

// OFF-NOT: call @
// OFF-COUNT-3: "rlx.cached_attention"

// One function for the two layers, kept down to LLVM and called twice.
// LLVM: llvm.func @__rlx_block_layers_{{[0-9a-f]+}}(
// LLVM: llvm.func @step(
// LLVM-COUNT-2: llvm.call @__rlx_block_layers_{{[0-9a-f]+}}(
// LLVM-NOT: llvm.call @__rlx_block
// LLVM: llvm.return
func.func @step(%x: tensor<1x2x8xf32>, %pos: tensor<i64>,
                %k0: tensor<1x4x4xf32>, %v0: tensor<1x4x4xf32>, %k1: tensor<1x4x4xf32>, %v1: tensor<1x4x4xf32>,
                %k2: tensor<1x4x4xf32>, %v2: tensor<1x4x4xf32>,
                %wk0: tensor<8x4xf32>, %wv0: tensor<8x4xf32>, %wk1: tensor<8x4xf32>, %wv1: tensor<8x4xf32>,
                %wk2: tensor<8x4xf32>, %wv2: tensor<8x4xf32>)
    -> (tensor<1x2x8xf32>, tensor<1x4x4xf32> {rlx.tied = 2 : i64}, tensor<1x4x4xf32> {rlx.tied = 3 : i64},
        tensor<1x4x4xf32> {rlx.tied = 4 : i64}, tensor<1x4x4xf32> {rlx.tied = 5 : i64},
        tensor<1x4x4xf32> {rlx.tied = 6 : i64}, tensor<1x4x4xf32> {rlx.tied = 7 : i64}) {
  %a0 = "rlx.matmul"(%x, %wk0) : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32> loc("layers.0")
  %a1 = "rlx.kv_cache_write"(%k0, %a0, %pos) : (tensor<1x4x4xf32>, tensor<1x2x4xf32>, tensor<i64>) -> tensor<1x4x4xf32> loc("layers.0")
  %a2 = "rlx.matmul"(%x, %wv0) : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32> loc("layers.0")
  %a3 = "rlx.kv_cache_write"(%v0, %a2, %pos) : (tensor<1x4x4xf32>, tensor<1x2x4xf32>, tensor<i64>) -> tensor<1x4x4xf32> loc("layers.0")
  %a4 = "rlx.cached_attention"(%x, %a1, %a3, %pos) {head_dim = 4 : i64, num_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<i64>) -> tensor<1x2x8xf32> loc("layers.0")
  %a5 = "rlx.add"(%x, %a4) : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32> loc("layers.0")
  %b0 = "rlx.matmul"(%a5, %wk1) : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32> loc("layers.1")
  %b1 = "rlx.kv_cache_write"(%k1, %b0, %pos) : (tensor<1x4x4xf32>, tensor<1x2x4xf32>, tensor<i64>) -> tensor<1x4x4xf32> loc("layers.1")
  %b2 = "rlx.matmul"(%a5, %wv1) : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32> loc("layers.1")
  %b3 = "rlx.kv_cache_write"(%v1, %b2, %pos) : (tensor<1x4x4xf32>, tensor<1x2x4xf32>, tensor<i64>) -> tensor<1x4x4xf32> loc("layers.1")
  %b4 = "rlx.cached_attention"(%a5, %b1, %b3, %pos) {head_dim = 4 : i64, num_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<i64>) -> tensor<1x2x8xf32> loc("layers.1")
  %b5 = "rlx.add"(%a5, %b4) : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32> loc("layers.1")
  %c0 = "rlx.matmul"(%b5, %wk2) : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32> loc("layers.2")
  %c1 = "rlx.kv_cache_write"(%k2, %c0, %pos) : (tensor<1x4x4xf32>, tensor<1x2x4xf32>, tensor<i64>) -> tensor<1x4x4xf32> loc("layers.2")
  %c2 = "rlx.matmul"(%b5, %wv2) : (tensor<1x2x8xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32> loc("layers.2")
  %c3 = "rlx.kv_cache_write"(%v2, %c2, %pos) : (tensor<1x4x4xf32>, tensor<1x2x4xf32>, tensor<i64>) -> tensor<1x4x4xf32> loc("layers.2")
  %c4 = "rlx.cached_attention"(%b5, %c1, %c3, %pos) {head_dim = 4 : i64, num_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<i64>) -> tensor<1x2x8xf32> loc("layers.2")
  %c5 = "rlx.sub"(%b5, %c4) : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32> loc("layers.2")
  %y = "rlx.neg"(%c5) : (tensor<1x2x8xf32>) -> tensor<1x2x8xf32> loc("norm")
  return %y, %a1, %a3, %b1, %b3, %c1, %c3 : tensor<1x2x8xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>
}
