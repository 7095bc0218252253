// rlx_hir.moe_ffn: the router (matmul, softmax, topk; the chosen probabilities picked by comparing
// the ids with the constant [0 .. E) and summing, normalised here), then under `direct` only the
// chosen experts run: each token's row repeated k times, three rlx.grouped_matmul (rows bucketed
// by expert in their lowering), the rows scaled by their weights and rlx.scatter_add'ed into their
// tokens.  Under `fusable` the reference form: every expert on every token (each expert's weights
// narrowed out of the stacks, 2-D matmuls) weighted by a column of a dense [T, E] matrix, summed.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-hir-to-mir{policy=direct})' | FileCheck %s --check-prefixes=CHECK,DIRECT --implicit-check-not=rlx_hir.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-hir-to-mir{policy=fusable})' | FileCheck %s --check-prefixes=CHECK,FUSABLE --implicit-check-not=rlx_hir.

// CHECK-LABEL: func.func @moe
// CHECK-SAME: %[[X:.*]]: tensor<3x8xf32>, %[[R:.*]]: tensor<8x4xf32>, %[[G:.*]]: tensor<4x8x6xf32>, %[[U:.*]]: tensor<4x8x6xf32>, %[[D:.*]]: tensor<4x6x8xf32>
// CHECK: %[[LOGITS:.*]] = "rlx.matmul"(%[[X]], %[[R]]) : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
// CHECK: %[[P:.*]] = "rlx.softmax"(%[[LOGITS]]) {axis = -1 : i64}
// CHECK: %[[TOP:.*]] = "rlx.topk"(%[[P]]) {k = 2 : i64} : (tensor<3x4xf32>) -> tensor<3x2xi64>
// CHECK: %[[TOP3:.*]] = "rlx.reshape"(%[[TOP]]) : (tensor<3x2xi64>) -> tensor<3x2x1xi64>
// CHECK: %[[IDS:.*]] = "rlx.constant"() {value = dense<[0, 1, 2, 3]> : tensor<4xi64>}
// CHECK: %[[HOT:.*]] = "rlx.compare"(%[[TOP3]], %[[IDS]]) {predicate = "eq"} : (tensor<3x2x1xi64>, tensor<4xi64>) -> tensor<3x2x4xi1>
// CHECK: "rlx.where"(%[[HOT]], %{{.*}}, %{{.*}}) : (tensor<3x2x4xi1>, tensor<3x1x4xf32>, tensor<f32>) -> tensor<3x2x4xf32>
// CHECK: %[[PICKED:.*]] = "rlx.reduce"(%{{.*}}) {axes = array<i64: -1>, keep_dim = false, kind = "sum"} : (tensor<3x2x4xf32>) -> tensor<3x2xf32>
// CHECK: %[[SUM:.*]] = "rlx.reduce"(%[[PICKED]]) {axes = array<i64: -1>, keep_dim = true, kind = "sum"}
// CHECK: %[[W:.*]] = "rlx.div"(%[[PICKED]], %[[SUM]]) : (tensor<3x2xf32>, tensor<3x1xf32>) -> tensor<3x2xf32>
// DIRECT: %[[ROWS:.*]] = "rlx.expand"(%{{.*}}) {shape = array<i64: 3, 2, 8>} : (tensor<3x1x8xf32>) -> tensor<3x2x8xf32>
// DIRECT: %[[XR:.*]] = "rlx.reshape"(%[[ROWS]]) : (tensor<3x2x8xf32>) -> tensor<6x8xf32>
// DIRECT: %[[E:.*]] = "rlx.reshape"(%[[TOP]]) : (tensor<3x2xi64>) -> tensor<6xi64>
// DIRECT: %[[GATE:.*]] = "rlx.grouped_matmul"(%[[XR]], %[[G]], %[[E]]) : (tensor<6x8xf32>, tensor<4x8x6xf32>, tensor<6xi64>) -> tensor<6x6xf32>
// DIRECT: %[[UP:.*]] = "rlx.grouped_matmul"(%[[XR]], %[[U]], %[[E]])
// DIRECT: %[[SILU:.*]] = "rlx.silu"(%[[GATE]])
// DIRECT: %[[H:.*]] = "rlx.mul"(%[[SILU]], %[[UP]])
// DIRECT: %[[DOWN:.*]] = "rlx.grouped_matmul"(%[[H]], %[[D]], %[[E]]) : (tensor<6x6xf32>, tensor<4x6x8xf32>, tensor<6xi64>) -> tensor<6x8xf32>
// DIRECT: %[[WR:.*]] = "rlx.reshape"(%[[W]]) : (tensor<3x2xf32>) -> tensor<6x1xf32>
// DIRECT: %[[SCALED:.*]] = "rlx.mul"(%[[DOWN]], %[[WR]])
// DIRECT: %[[TOKENS:.*]] = "rlx.constant"() {value = dense<[0, 0, 1, 1, 2, 2]> : tensor<6xi64>}
// DIRECT: %[[OUT:.*]] = "rlx.scatter_add"(%[[SCALED]], %[[TOKENS]]) {out_dim = 3 : i64} : (tensor<6x8xf32>, tensor<6xi64>) -> tensor<3x8xf32>
// DIRECT: return %[[OUT]]
// FUSABLE: %[[DENSE:.*]] = "rlx.reduce"(%{{.*}}) {axes = array<i64: 1>, keep_dim = false, kind = "sum"} : (tensor<3x2x4xf32>) -> tensor<3x4xf32>
// FUSABLE: %[[G0:.*]] = "rlx.narrow"(%[[G]]) {axis = 0 : i64, len = 1 : i64, start = 0 : i64} : (tensor<4x8x6xf32>) -> tensor<1x8x6xf32>
// FUSABLE: %[[G0R:.*]] = "rlx.reshape"(%[[G0]]) : (tensor<1x8x6xf32>) -> tensor<8x6xf32>
// FUSABLE: "rlx.narrow"(%[[U]]) {axis = 0 : i64, len = 1 : i64, start = 0 : i64}
// FUSABLE: "rlx.narrow"(%[[D]]) {axis = 0 : i64, len = 1 : i64, start = 0 : i64}
// FUSABLE: "rlx.matmul"(%[[X]], %[[G0R]]) : (tensor<3x8xf32>, tensor<8x6xf32>) -> tensor<3x6xf32>
// FUSABLE: %[[DOWN0:.*]] = "rlx.matmul"(%{{.*}}, %{{.*}}) : (tensor<3x6xf32>, tensor<6x8xf32>) -> tensor<3x8xf32>
// FUSABLE: %[[W0:.*]] = "rlx.narrow"(%[[DENSE]]) {axis = -1 : i64, len = 1 : i64, start = 0 : i64} : (tensor<3x4xf32>) -> tensor<3x1xf32>
// FUSABLE: "rlx.mul"(%[[DOWN0]], %[[W0]])
// FUSABLE-COUNT-3: "rlx.narrow"(%[[G]]) {axis = 0 : i64, len = 1 : i64, start = {{[1-3]}} : i64}
// FUSABLE: "rlx.narrow"(%[[DENSE]]) {axis = -1 : i64, len = 1 : i64, start = 3 : i64}
// FUSABLE: %[[OUT:.*]] = "rlx.add"
// FUSABLE: return %[[OUT]]
func.func @moe(%x: tensor<3x8xf32>, %r: tensor<8x4xf32>, %g: tensor<4x8x6xf32>, %u: tensor<4x8x6xf32>, %d: tensor<4x6x8xf32>) -> tensor<3x8xf32> {
  %0 = "rlx_hir.moe_ffn"(%x, %r, %g, %u, %d) {top_k = 2 : i64, normalize = true, scoring = "softmax", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0>}
      : (tensor<3x8xf32>, tensor<8x4xf32>, tensor<4x8x6xf32>, tensor<4x8x6xf32>, tensor<4x6x8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// Qwen2-MoE: a shared expert (the swiglu_ffn expansion) gated by sigmoid(x @ shared_expert_gate), added.
// CHECK-LABEL: func.func @shared
// CHECK-SAME: %[[SG:[^:]*]]: tensor<8x5xf32>, %[[SU:[^:]*]]: tensor<8x5xf32>, %[[SD:[^:]*]]: tensor<5x8xf32>, %[[SGATE:[^:]*]]: tensor<8x1xf32>
// CHECK: "rlx.topk"
// DIRECT: %[[ROUTED:.*]] = "rlx.scatter_add"
// FUSABLE: "rlx.narrow"(%{{.*}}) {axis = -1 : i64, len = 1 : i64, start = 3 : i64}
// FUSABLE: %[[ROUTED:.*]] = "rlx.add"
// DIRECT: %[[BOTH:.*]] = "rlx.concat"(%[[SU]], %[[SG]]) {axis = 1 : i64}
// DIRECT: "rlx.fused_swiglu"
// CHECK: %[[SHARED:.*]] = "rlx.matmul"(%{{.*}}, %[[SD]]) : (tensor<3x5xf32>, tensor<5x8xf32>) -> tensor<3x8xf32>
// CHECK: %[[GL:.*]] = "rlx.matmul"(%{{.*}}, %[[SGATE]]) : (tensor<3x8xf32>, tensor<8x1xf32>) -> tensor<3x1xf32>
// CHECK: %[[GS:.*]] = "rlx.sigmoid"(%[[GL]])
// CHECK: %[[GATED:.*]] = "rlx.mul"(%[[SHARED]], %[[GS]])
// CHECK: %[[OUT:.*]] = "rlx.add"(%[[ROUTED]], %[[GATED]])
// CHECK: return %[[OUT]]
func.func @shared(%x: tensor<3x8xf32>, %r: tensor<8x4xf32>, %g: tensor<4x8x6xf32>, %u: tensor<4x8x6xf32>, %d: tensor<4x6x8xf32>,
                  %sg: tensor<8x5xf32>, %su: tensor<8x5xf32>, %sd: tensor<5x8xf32>, %sgate: tensor<8x1xf32>) -> tensor<3x8xf32> {
  %0 = "rlx_hir.moe_ffn"(%x, %r, %g, %u, %d, %sg, %su, %sd, %sgate) {top_k = 1 : i64, normalize = false, scoring = "sigmoid", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1>}
      : (tensor<3x8xf32>, tensor<8x4xf32>, tensor<4x8x6xf32>, tensor<4x8x6xf32>, tensor<4x6x8xf32>, tensor<8x5xf32>, tensor<8x5xf32>, tensor<5x8xf32>, tensor<8x1xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
