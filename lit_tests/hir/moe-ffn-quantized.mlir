// rlx_hir.moe_ffn with packed (ui8) expert stacks: each stack with a scheme is expert-outermost GGUF
// rows W_e [out, in] (gate, up: ui8 [E, F, D bytes]; down: ui8 [E, D, F bytes]).  Under `direct`
// its products are rlx.dequant_grouped_matmul (blocks decoded inside the product, only the chosen
// experts' slabs read); under `fusable` each expert's slab is narrowed out and multiplied by
// rlx.dequant_matmul.  An f32 stack beside packed ones keeps rlx.grouped_matmul / rlx.matmul.
// No f32 copy of an expert (rlx.dequant_moe_weights) is built under either policy.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-hir-to-mir{policy=direct})' | FileCheck %s --check-prefix=DIRECT --implicit-check-not=rlx_hir. --implicit-check-not=rlx.dequant_moe_weights
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-hir-to-mir{policy=fusable})' | FileCheck %s --check-prefix=FUSABLE --implicit-check-not=rlx_hir. --implicit-check-not=rlx.dequant_moe_weights

// DIRECT-LABEL: func.func @quantized
// DIRECT-SAME: %[[G:[^:]*]]: tensor<4x64x34xui8>, %[[U:[^:]*]]: tensor<4x32x64xf32>, %[[D:[^:]*]]: tensor<4x32x36xui8>
// DIRECT: %[[XR:.*]] = "rlx.reshape"(%{{.*}}) : (tensor<3x2x32xf32>) -> tensor<6x32xf32>
// DIRECT: %[[E:.*]] = "rlx.reshape"(%{{.*}}) : (tensor<3x2xi64>) -> tensor<6xi64>
// DIRECT: %[[GATE:.*]] = "rlx.dequant_grouped_matmul"(%[[XR]], %[[G]], %[[E]]) {scheme = "q8_0"} : (tensor<6x32xf32>, tensor<4x64x34xui8>, tensor<6xi64>) -> tensor<6x64xf32>
// DIRECT: %[[UP:.*]] = "rlx.grouped_matmul"(%[[XR]], %[[U]], %[[E]]) : (tensor<6x32xf32>, tensor<4x32x64xf32>, tensor<6xi64>) -> tensor<6x64xf32>
// DIRECT: %[[SILU:.*]] = "rlx.silu"(%[[GATE]])
// DIRECT: %[[H:.*]] = "rlx.mul"(%[[SILU]], %[[UP]])
// DIRECT: "rlx.dequant_grouped_matmul"(%[[H]], %[[D]], %[[E]]) {scheme = "q4_0"} : (tensor<6x64xf32>, tensor<4x32x36xui8>, tensor<6xi64>) -> tensor<6x32xf32>
// DIRECT: "rlx.scatter_add"

// FUSABLE-LABEL: func.func @quantized
// FUSABLE-SAME: %[[X:[^:]*]]: tensor<3x32xf32>, %{{[^:]*}}: tensor<32x4xf32>, %[[G:[^:]*]]: tensor<4x64x34xui8>, %[[U:[^:]*]]: tensor<4x32x64xf32>, %[[D:[^:]*]]: tensor<4x32x36xui8>
// FUSABLE: %[[G0:.*]] = "rlx.narrow"(%[[G]]) {axis = 0 : i64, len = 1 : i64, start = 0 : i64} : (tensor<4x64x34xui8>) -> tensor<1x64x34xui8>
// FUSABLE: %[[G0R:.*]] = "rlx.reshape"(%[[G0]]) : (tensor<1x64x34xui8>) -> tensor<64x34xui8>
// FUSABLE: "rlx.narrow"(%[[U]]) {axis = 0 : i64, len = 1 : i64, start = 0 : i64}
// FUSABLE: "rlx.narrow"(%[[D]]) {axis = 0 : i64, len = 1 : i64, start = 0 : i64}
// FUSABLE: "rlx.dequant_matmul"(%[[X]], %[[G0R]]) {scheme = "q8_0"} : (tensor<3x32xf32>, tensor<64x34xui8>) -> tensor<3x64xf32>
// FUSABLE: "rlx.matmul"(%[[X]], %{{.*}}) : (tensor<3x32xf32>, tensor<32x64xf32>) -> tensor<3x64xf32>
// FUSABLE: "rlx.dequant_matmul"(%{{.*}}, %{{.*}}) {scheme = "q4_0"} : (tensor<3x64xf32>, tensor<32x36xui8>) -> tensor<3x32xf32>
// FUSABLE-COUNT-3: "rlx.dequant_matmul"(%[[X]], %{{.*}}) {scheme = "q8_0"}
// FUSABLE: return
func.func @quantized(%x: tensor<3x32xf32>, %r: tensor<32x4xf32>, %g: tensor<4x64x34xui8>, %u: tensor<4x32x64xf32>, %d: tensor<4x32x36xui8>) -> tensor<3x32xf32> {
  %0 = "rlx_hir.moe_ffn"(%x, %r, %g, %u, %d) {top_k = 2 : i64, normalize = true, scoring = "softmax", gate_scheme = "q8_0", down_scheme = "q4_0", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0>}
      : (tensor<3x32xf32>, tensor<32x4xf32>, tensor<4x64x34xui8>, tensor<4x32x64xf32>, tensor<4x32x36xui8>) -> tensor<3x32xf32>
  return %0 : tensor<3x32xf32>
}
