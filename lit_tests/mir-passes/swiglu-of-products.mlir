// rlx-swiglu-of-products: fused_swiglu of a last-axis concat of two equal halves reads the
// halves: mul(up, silu(gate)), no [..., 2N] concatenation.  A concat with another use, one
// along another axis, unequal halves, and f16 / bf16 (silu would round before the product) stay.
// RUN: rlx-opt %s --split-input-file --rlx-swiglu-of-products | FileCheck %s
// RUN: rlx-opt %s --split-input-file --pass-pipeline='builtin.module(rlx-hir-to-mir,rlx-split-weight-concat{swiglu-products=true})' | FileCheck %s --check-prefix=FFN

// CHECK-LABEL: func.func @products(
// CHECK-SAME: %[[U:[^:]*]]: tensor<2x4x16xf32>, %[[G:[^:]*]]: tensor<2x4x16xf32>
// CHECK-NEXT: %[[S:.*]] = "rlx.silu"(%[[G]]) : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[Y:.*]] = "rlx.mul"(%[[U]], %[[S]]) : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: rlx.concat
// CHECK-NOT: rlx.fused_swiglu
func.func @products(%u: tensor<2x4x16xf32>, %g: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %c = "rlx.concat"(%u, %g) {axis = -1 : i64} : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x32xf32>
  %s = "rlx.fused_swiglu"(%c) : (tensor<2x4x32xf32>) -> tensor<2x4x16xf32>
  return %s : tensor<2x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @kept(
// CHECK: %[[C:.*]] = "rlx.concat"
// CHECK-NEXT: "rlx.fused_swiglu"(%[[C]])
// CHECK: %[[R:.*]] = "rlx.concat"(%{{.*}}, %{{.*}}) {axis = 0 : i64}
// CHECK-NEXT: "rlx.fused_swiglu"(%[[R]])
// CHECK: %[[B:.*]] = "rlx.concat"(%{{.*}}, %{{.*}}) {axis = 1 : i64} : (tensor<4x8xbf16>
// CHECK-NEXT: "rlx.fused_swiglu"(%[[B]])
// CHECK: %[[H:.*]] = "rlx.concat"(%{{.*}}, %{{.*}}) {axis = 1 : i64} : (tensor<4x6xf32>, tensor<4x10xf32>)
// CHECK-NEXT: "rlx.fused_swiglu"(%[[H]])
// CHECK-NOT: rlx.silu
func.func @kept(%u: tensor<4x8xf32>, %g: tensor<4x8xf32>, %r: tensor<2x16xf32>, %bu: tensor<4x8xbf16>, %bg: tensor<4x8xbf16>,
                %a: tensor<4x6xf32>, %b: tensor<4x10xf32>)
    -> (tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf32>) {
  %c = "rlx.concat"(%u, %g) {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  %s = "rlx.fused_swiglu"(%c) : (tensor<4x16xf32>) -> tensor<4x8xf32>
  %rows = "rlx.concat"(%r, %r) {axis = 0 : i64} : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<4x16xf32>
  %t = "rlx.fused_swiglu"(%rows) : (tensor<4x16xf32>) -> tensor<4x8xf32>
  %bc = "rlx.concat"(%bu, %bg) {axis = 1 : i64} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x16xbf16>
  %bs = "rlx.fused_swiglu"(%bc) : (tensor<4x16xbf16>) -> tensor<4x8xbf16>
  %h = "rlx.concat"(%a, %b) {axis = 1 : i64} : (tensor<4x6xf32>, tensor<4x10xf32>) -> tensor<4x16xf32>
  %hs = "rlx.fused_swiglu"(%h) : (tensor<4x16xf32>) -> tensor<4x8xf32>
  return %s, %c, %t, %bs, %hs : tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf32>
}

// -----

// The Llama MLP as expanded (direct policy) and split as rlx-lower-to-llvm splits it: two products,
// one gating, no concat.
// FFN-LABEL: func.func @swiglu_ffn(
// FFN-SAME: %[[X:[^:]*]]: tensor<3x8xf32>, %[[UP:[^:]*]]: tensor<8x12xf32>, %[[GATE:[^:]*]]: tensor<8x12xf32>, %[[DOWN:[^:]*]]: tensor<12x8xf32>
// FFN-NEXT: %[[U:.*]] = "rlx.matmul"(%[[X]], %[[UP]]) : (tensor<3x8xf32>, tensor<8x12xf32>) -> tensor<3x12xf32>
// FFN-NEXT: %[[G:.*]] = "rlx.matmul"(%[[X]], %[[GATE]]) : (tensor<3x8xf32>, tensor<8x12xf32>) -> tensor<3x12xf32>
// FFN-NEXT: %[[S:.*]] = "rlx.silu"(%[[G]])
// FFN-NEXT: %[[H:.*]] = "rlx.mul"(%[[U]], %[[S]])
// FFN-NEXT: %[[R:.*]] = "rlx.matmul"(%[[H]], %[[DOWN]]) : (tensor<3x12xf32>, tensor<12x8xf32>) -> tensor<3x8xf32>
// FFN-NEXT: return %[[R]]
func.func @swiglu_ffn(%x: tensor<3x8xf32>, %up: tensor<8x12xf32>, %gate: tensor<8x12xf32>, %down: tensor<12x8xf32>) -> tensor<3x8xf32> {
  %0 = "rlx_hir.swiglu_ffn"(%x, %up, %gate, %down) : (tensor<3x8xf32>, tensor<8x12xf32>, tensor<8x12xf32>, tensor<12x8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
