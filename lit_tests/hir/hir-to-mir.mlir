// rlx-hir-to-mir expands each HIR block into MIR ops.  Under `direct` (the
// default without a module attribute) RLX's fused MIR ops are used where they
// exist; under `fusable` primitive chains only.  MIR ops already in the input
// (the escape hatch) stay as they are.
// No rlx_hir op is left (--implicit-check-not).
// RUN: rlx-opt %s --rlx-hir-to-mir | FileCheck %s --check-prefixes=CHECK,DIRECT --implicit-check-not=rlx_hir.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-hir-to-mir{policy=fusable})' | FileCheck %s --check-prefixes=CHECK,FUSABLE --implicit-check-not=rlx_hir.
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-hir-to-mir{policy=direct})' | FileCheck %s --check-prefixes=CHECK,DIRECT --implicit-check-not=rlx_hir.

// Linear with a bias: one fused op (direct), matmul -> add -> activation (fusable).
// CHECK-LABEL: func.func @linear_bias_act
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>)
// DIRECT-NEXT: %[[R:.*]] = "rlx.fused_matmul_bias_act"(%[[X]], %[[W]], %[[B]]) {activation = "gelu"} : (tensor<2x5x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
// FUSABLE-NEXT: %[[M:.*]] = "rlx.matmul"(%[[X]], %[[W]]) : (tensor<2x5x8xf32>, tensor<8x16xf32>) -> tensor<2x5x16xf32>
// FUSABLE-NEXT: %[[A:.*]] = "rlx.add"(%[[M]], %[[B]]) : (tensor<2x5x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
// FUSABLE-NEXT: %[[R:.*]] = "rlx.gelu"(%[[A]])
// CHECK-NEXT: return %[[R]]
func.func @linear_bias_act(%x: tensor<2x5x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<2x5x16xf32> {
  %0 = "rlx_hir.linear"(%x, %w, %b) {activation = "gelu"} : (tensor<2x5x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  return %0 : tensor<2x5x16xf32>
}

// Without a bias there is nothing to fuse: matmul -> activation under both policies.
// CHECK-LABEL: func.func @linear_no_bias
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x8xf32>, %[[W:.*]]: tensor<8x16xf32>)
// CHECK-NEXT: %[[M:.*]] = "rlx.matmul"(%[[X]], %[[W]]) : (tensor<2x5x8xf32>, tensor<8x16xf32>) -> tensor<2x5x16xf32>
// CHECK-NEXT: %[[R:.*]] = "rlx.relu"(%[[M]])
// CHECK-NEXT: return %[[R]]
func.func @linear_no_bias(%x: tensor<2x5x8xf32>, %w: tensor<8x16xf32>) -> tensor<2x5x16xf32> {
  %0 = "rlx_hir.linear"(%x, %w) {activation = "relu"} : (tensor<2x5x8xf32>, tensor<8x16xf32>) -> tensor<2x5x16xf32>
  return %0 : tensor<2x5x16xf32>
}

// activation = none: no activation op in the chain.
// CHECK-LABEL: func.func @linear_identity
// DIRECT-NEXT: %[[R:.*]] = "rlx.fused_matmul_bias_act"(%{{.*}}, %{{.*}}, %{{.*}}) {activation = "none"}
// FUSABLE-NEXT: %[[M:.*]] = "rlx.matmul"
// FUSABLE-NEXT: %[[R:.*]] = "rlx.add"(%[[M]], %{{.*}})
// CHECK-NEXT: return %[[R]]
func.func @linear_identity(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = "rlx_hir.linear"(%x, %w, %b) {activation = "none"} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// A rank-1 input is one row: reshaped to [1, K] around the product.
// CHECK-LABEL: func.func @linear_rank1
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[ROW:.*]] = "rlx.reshape"(%[[X]]) : (tensor<8xf32>) -> tensor<1x8xf32>
// DIRECT-NEXT: %[[F:.*]] = "rlx.fused_matmul_bias_act"(%[[ROW]], %[[W]], %[[B]]) {activation = "silu"} : (tensor<1x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<1x16xf32>
// DIRECT-NEXT: %[[R:.*]] = "rlx.reshape"(%[[F]]) : (tensor<1x16xf32>) -> tensor<16xf32>
// FUSABLE-NEXT: %[[M:.*]] = "rlx.matmul"(%[[ROW]], %[[W]]) : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
// FUSABLE-NEXT: %[[V:.*]] = "rlx.reshape"(%[[M]]) : (tensor<1x16xf32>) -> tensor<16xf32>
// FUSABLE-NEXT: %[[A:.*]] = "rlx.add"(%[[V]], %[[B]]) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
// FUSABLE-NEXT: %[[R:.*]] = "rlx.silu"(%[[A]])
// CHECK-NEXT: return %[[R]]
func.func @linear_rank1(%x: tensor<8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  %0 = "rlx_hir.linear"(%x, %w, %b) {activation = "silu"} : (tensor<8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// linear_fused is fused under both policies.
// CHECK-LABEL: func.func @linear_fused
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf16>, %[[W:.*]]: tensor<8x16xf16>, %[[B:.*]]: tensor<16xf16>)
// CHECK-NEXT: %[[R:.*]] = "rlx.fused_matmul_bias_act"(%[[X]], %[[W]], %[[B]]) {activation = "tanh"} : (tensor<4x8xf16>, tensor<8x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
// CHECK-NEXT: return %[[R]]
func.func @linear_fused(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>, %b: tensor<16xf16>) -> tensor<4x16xf16> {
  %0 = "rlx_hir.linear_fused"(%x, %w, %b) {activation = "tanh"} : (tensor<4x8xf16>, tensor<8x16xf16>, tensor<16xf16>) -> tensor<4x16xf16>
  return %0 : tensor<4x16xf16>
}

// Direct: one matmul against the concatenated weights, then two slices of the
// last axis; fusable: two matmuls.
// CHECK-LABEL: func.func @shared_linear_pair
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x8xf32>, %[[W1:.*]]: tensor<8x16xf32>, %[[W2:.*]]: tensor<8x4xf32>)
// DIRECT-NEXT: %[[WC:.*]] = "rlx.concat"(%[[W1]], %[[W2]]) {axis = 1 : i64} : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<8x20xf32>
// DIRECT-NEXT: %[[M:.*]] = "rlx.matmul"(%[[X]], %[[WC]]) : (tensor<2x5x8xf32>, tensor<8x20xf32>) -> tensor<2x5x20xf32>
// DIRECT-NEXT: %[[R1:.*]] = "rlx.narrow"(%[[M]]) {axis = -1 : i64, len = 16 : i64, start = 0 : i64} : (tensor<2x5x20xf32>) -> tensor<2x5x16xf32>
// DIRECT-NEXT: %[[R2:.*]] = "rlx.narrow"(%[[M]]) {axis = -1 : i64, len = 4 : i64, start = 16 : i64} : (tensor<2x5x20xf32>) -> tensor<2x5x4xf32>
// FUSABLE-NEXT: %[[R1:.*]] = "rlx.matmul"(%[[X]], %[[W1]]) : (tensor<2x5x8xf32>, tensor<8x16xf32>) -> tensor<2x5x16xf32>
// FUSABLE-NEXT: %[[R2:.*]] = "rlx.matmul"(%[[X]], %[[W2]]) : (tensor<2x5x8xf32>, tensor<8x4xf32>) -> tensor<2x5x4xf32>
// CHECK-NEXT: return %[[R1]], %[[R2]]
func.func @shared_linear_pair(%x: tensor<2x5x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<8x4xf32>) -> (tensor<2x5x16xf32>, tensor<2x5x4xf32>) {
  %0:2 = "rlx_hir.shared_linear_pair"(%x, %w1, %w2) : (tensor<2x5x8xf32>, tensor<8x16xf32>, tensor<8x4xf32>) -> (tensor<2x5x16xf32>, tensor<2x5x4xf32>)
  return %0#0, %0#1 : tensor<2x5x16xf32>, tensor<2x5x4xf32>
}

// CHECK-LABEL: func.func @swiglu_ffn
// CHECK-SAME: (%[[X:.*]]: tensor<3x8xf32>, %[[UP:.*]]: tensor<8x12xf32>, %[[GATE:.*]]: tensor<8x12xf32>, %[[DOWN:.*]]: tensor<12x8xf32>)
// DIRECT-NEXT: %[[WC:.*]] = "rlx.concat"(%[[UP]], %[[GATE]]) {axis = 1 : i64} : (tensor<8x12xf32>, tensor<8x12xf32>) -> tensor<8x24xf32>
// DIRECT-NEXT: %[[UG:.*]] = "rlx.matmul"(%[[X]], %[[WC]]) : (tensor<3x8xf32>, tensor<8x24xf32>) -> tensor<3x24xf32>
// DIRECT-NEXT: %[[H:.*]] = "rlx.fused_swiglu"(%[[UG]]) : (tensor<3x24xf32>) -> tensor<3x12xf32>
// FUSABLE-NEXT: %[[U:.*]] = "rlx.matmul"(%[[X]], %[[UP]]) : (tensor<3x8xf32>, tensor<8x12xf32>) -> tensor<3x12xf32>
// FUSABLE-NEXT: %[[G:.*]] = "rlx.matmul"(%[[X]], %[[GATE]]) : (tensor<3x8xf32>, tensor<8x12xf32>) -> tensor<3x12xf32>
// FUSABLE-NEXT: %[[S:.*]] = "rlx.silu"(%[[G]])
// FUSABLE-NEXT: %[[H:.*]] = "rlx.mul"(%[[U]], %[[S]])
// CHECK-NEXT: %[[R:.*]] = "rlx.matmul"(%[[H]], %[[DOWN]]) : (tensor<3x12xf32>, tensor<12x8xf32>) -> tensor<3x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @swiglu_ffn(%x: tensor<3x8xf32>, %up: tensor<8x12xf32>, %gate: tensor<8x12xf32>, %down: tensor<12x8xf32>) -> tensor<3x8xf32> {
  %0 = "rlx_hir.swiglu_ffn"(%x, %up, %gate, %down) : (tensor<3x8xf32>, tensor<8x12xf32>, tensor<8x12xf32>, tensor<12x8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:.*]]: tensor<3x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[R:.*]] = "rlx.rms_norm"(%[[X]], %[[G]], %[[B]]) {axis = -1 : i64, eps = 9.99999974E-6 : f32}
// CHECK-NEXT: return %[[R]]
func.func @rms_norm(%x: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  %0 = "rlx_hir.rms_norm"(%x, %g, %b) {eps = 1.0e-5 : f32} : (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// CHECK-LABEL: func.func @residual_rms_norm
// CHECK-SAME: (%[[X:.*]]: tensor<3x8xf32>, %[[RES:.*]]: tensor<3x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// DIRECT-NEXT: %[[R:.*]] = "rlx.fused_residual_rms_norm"(%[[X]], %[[RES]], %[[G]], %[[B]]) {eps = 9.99999974E-6 : f32} : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
// FUSABLE-NEXT: %[[S:.*]] = "rlx.add"(%[[X]], %[[RES]]) : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
// FUSABLE-NEXT: %[[R:.*]] = "rlx.rms_norm"(%[[S]], %[[G]], %[[B]]) {axis = -1 : i64, eps = 9.99999974E-6 : f32}
// CHECK-NEXT: return %[[R]]
func.func @residual_rms_norm(%x: tensor<3x8xf32>, %r: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  %0 = "rlx_hir.residual_rms_norm"(%x, %r, %g, %b) {eps = 1.0e-5 : f32} : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// RoPE and attention map one to one, every attribute carried over.
// CHECK-LABEL: func.func @rope_attention
// CHECK-SAME: (%[[Q:.*]]: tensor<2x5x32xf32>, %[[K:.*]]: tensor<2x5x16xf32>, %[[V:.*]]: tensor<2x5x16xf32>, %[[M:.*]]: tensor<2x5xf32>, %[[COS:.*]]: tensor<5x2xf32>, %[[SIN:.*]]: tensor<5x2xf32>)
// CHECK-NEXT: %[[QR:.*]] = "rlx.rope"(%[[Q]], %[[COS]], %[[SIN]]) {head_dim = 8 : i64, n_rot = 4 : i64} : (tensor<2x5x32xf32>, tensor<5x2xf32>, tensor<5x2xf32>) -> tensor<2x5x32xf32>
// CHECK-NEXT: %[[R:.*]] = "rlx.attention"(%[[QR]], %[[K]], %[[V]], %[[M]]) {head_dim = 8 : i64, mask_kind = "custom", num_heads = 4 : i64, softcap = 2.000000e+01 : f32}
// CHECK-NEXT: return %[[R]]
func.func @rope_attention(%q: tensor<2x5x32xf32>, %k: tensor<2x5x16xf32>, %v: tensor<2x5x16xf32>, %m: tensor<2x5xf32>, %cos: tensor<5x2xf32>, %sin: tensor<5x2xf32>) -> tensor<2x5x32xf32> {
  %0 = "rlx_hir.rope"(%q, %cos, %sin) {head_dim = 8 : i64, n_rot = 4 : i64} : (tensor<2x5x32xf32>, tensor<5x2xf32>, tensor<5x2xf32>) -> tensor<2x5x32xf32>
  %1 = "rlx_hir.attention"(%0, %k, %v, %m) {num_heads = 4 : i64, head_dim = 8 : i64, mask_kind = "custom", softcap = 20.0 : f32} : (tensor<2x5x32xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>, tensor<2x5xf32>) -> tensor<2x5x32xf32>
  return %1 : tensor<2x5x32xf32>
}

// The causal depthwise conv is one MIR op under both policies (also with
// kernel_size = 1 and its empty pad).  More in recurrent.mlir.
// CHECK-LABEL: func.func @depthwise_conv1d_causal
// CHECK-SAME: (%[[X:.*]]: tensor<2x6x4xf32>, %[[W:.*]]: tensor<4x1x1x3xf32>, %[[PAD:.*]]: tensor<2x2x4xf32>)
// CHECK-NEXT: %[[R:.*]] = "rlx.depthwise_conv1d_causal"(%[[X]], %[[W]], %[[PAD]]) {kernel_size = 3 : i64} : (tensor<2x6x4xf32>, tensor<4x1x1x3xf32>, tensor<2x2x4xf32>) -> tensor<2x6x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @depthwise_conv1d_causal(%x: tensor<2x6x4xf32>, %w: tensor<4x1x1x3xf32>, %pad: tensor<2x2x4xf32>) -> tensor<2x6x4xf32> {
  %0 = "rlx_hir.depthwise_conv1d_causal"(%x, %w, %pad) {kernel_size = 3 : i64} : (tensor<2x6x4xf32>, tensor<4x1x1x3xf32>, tensor<2x2x4xf32>) -> tensor<2x6x4xf32>
  return %0 : tensor<2x6x4xf32>
}

// CHECK-LABEL: func.func @depthwise_conv1d_k1
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x2xf32>, %[[W:.*]]: tensor<2x1x1x1xf32>, %[[PAD:.*]]: tensor<1x0x2xf32>)
// CHECK-NEXT: %[[R:.*]] = "rlx.depthwise_conv1d_causal"(%[[X]], %[[W]], %[[PAD]]) {kernel_size = 1 : i64} : (tensor<1x3x2xf32>, tensor<2x1x1x1xf32>, tensor<1x0x2xf32>) -> tensor<1x3x2xf32>
// CHECK-NEXT: return %[[R]]
func.func @depthwise_conv1d_k1(%x: tensor<1x3x2xf32>, %w: tensor<2x1x1x1xf32>, %pad: tensor<1x0x2xf32>) -> tensor<1x3x2xf32> {
  %0 = "rlx_hir.depthwise_conv1d_causal"(%x, %w, %pad) {kernel_size = 1 : i64} : (tensor<1x3x2xf32>, tensor<2x1x1x1xf32>, tensor<1x0x2xf32>) -> tensor<1x3x2xf32>
  return %0 : tensor<1x3x2xf32>
}

// The decoder layer: norm, q/k/v projections, RoPE on q and k (all head dims),
// grouped-query attention (no K/V repeat), output projection, residual; then
// the FFN norm (fused with the residual sum under direct), SwiGLU, residual.
// CHECK-LABEL: func.func @decoder
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x5x32xf32>, %[[G1:[^:]*]]: tensor<32xf32>, %[[B1:[^:]*]]: tensor<32xf32>, %[[QW:[^:]*]]: tensor<32x32xf32>, %[[KW:[^:]*]]: tensor<32x16xf32>,
// CHECK-SAME: %[[VW:[^:]*]]: tensor<32x16xf32>, %[[OW:[^:]*]]: tensor<32x32xf32>, %[[G2:[^:]*]]: tensor<32xf32>, %[[B2:[^:]*]]: tensor<32xf32>, %[[GW:[^:]*]]: tensor<32x48xf32>,
// CHECK-SAME: %[[UW:[^:]*]]: tensor<32x48xf32>, %[[DW:[^:]*]]: tensor<48x32xf32>, %[[COS:[^:]*]]: tensor<5x4xf32>, %[[SIN:[^:]*]]: tensor<5x4xf32>)
// CHECK-NEXT: %[[N1:.*]] = "rlx.rms_norm"(%[[X]], %[[G1]], %[[B1]]) {axis = -1 : i64, eps = 9.99999974E-6 : f32}
// CHECK-NEXT: %[[Q:.*]] = "rlx.matmul"(%[[N1]], %[[QW]]) : (tensor<1x5x32xf32>, tensor<32x32xf32>) -> tensor<1x5x32xf32>
// CHECK-NEXT: %[[K:.*]] = "rlx.matmul"(%[[N1]], %[[KW]]) : (tensor<1x5x32xf32>, tensor<32x16xf32>) -> tensor<1x5x16xf32>
// CHECK-NEXT: %[[V:.*]] = "rlx.matmul"(%[[N1]], %[[VW]]) : (tensor<1x5x32xf32>, tensor<32x16xf32>) -> tensor<1x5x16xf32>
// CHECK-NEXT: %[[QR:.*]] = "rlx.rope"(%[[Q]], %[[COS]], %[[SIN]]) {head_dim = 8 : i64, n_rot = 8 : i64}
// CHECK-NEXT: %[[KR:.*]] = "rlx.rope"(%[[K]], %[[COS]], %[[SIN]]) {head_dim = 8 : i64, n_rot = 8 : i64}
// CHECK-NEXT: %[[ATT:.*]] = "rlx.attention"(%[[QR]], %[[KR]], %[[V]]) {head_dim = 8 : i64, mask_kind = "sliding_window", num_heads = 4 : i64, window = 3 : i64} : (tensor<1x5x32xf32>, tensor<1x5x16xf32>, tensor<1x5x16xf32>) -> tensor<1x5x32xf32>
// CHECK-NEXT: %[[O:.*]] = "rlx.matmul"(%[[ATT]], %[[OW]])
// CHECK-NEXT: %[[H:.*]] = "rlx.add"(%[[X]], %[[O]])
// DIRECT-NEXT: %[[N2:.*]] = "rlx.fused_residual_rms_norm"(%[[O]], %[[X]], %[[G2]], %[[B2]]) {eps = 9.99999974E-6 : f32}
// DIRECT-NEXT: %[[WC:.*]] = "rlx.concat"(%[[UW]], %[[GW]]) {axis = 1 : i64} : (tensor<32x48xf32>, tensor<32x48xf32>) -> tensor<32x96xf32>
// DIRECT-NEXT: %[[UG:.*]] = "rlx.matmul"(%[[N2]], %[[WC]])
// DIRECT-NEXT: %[[F:.*]] = "rlx.fused_swiglu"(%[[UG]]) : (tensor<1x5x96xf32>) -> tensor<1x5x48xf32>
// FUSABLE-NEXT: %[[N2:.*]] = "rlx.rms_norm"(%[[H]], %[[G2]], %[[B2]]) {axis = -1 : i64, eps = 9.99999974E-6 : f32}
// FUSABLE-NEXT: %[[U:.*]] = "rlx.matmul"(%[[N2]], %[[UW]])
// FUSABLE-NEXT: %[[G:.*]] = "rlx.matmul"(%[[N2]], %[[GW]])
// FUSABLE-NEXT: %[[S:.*]] = "rlx.silu"(%[[G]])
// FUSABLE-NEXT: %[[F:.*]] = "rlx.mul"(%[[U]], %[[S]])
// CHECK-NEXT: %[[D:.*]] = "rlx.matmul"(%[[F]], %[[DW]]) : (tensor<1x5x48xf32>, tensor<48x32xf32>) -> tensor<1x5x32xf32>
// CHECK-NEXT: %[[R:.*]] = "rlx.add"(%[[H]], %[[D]])
// CHECK-NEXT: return %[[R]]
func.func @decoder(%x: tensor<1x5x32xf32>, %g1: tensor<32xf32>, %b1: tensor<32xf32>, %qw: tensor<32x32xf32>, %kw: tensor<32x16xf32>,
                   %vw: tensor<32x16xf32>, %ow: tensor<32x32xf32>, %g2: tensor<32xf32>, %b2: tensor<32xf32>, %gw: tensor<32x48xf32>, %uw: tensor<32x48xf32>,
                   %dw: tensor<48x32xf32>, %cos: tensor<5x4xf32>, %sin: tensor<5x4xf32>) -> tensor<1x5x32xf32> {
  %0 = "rlx_hir.llama_decoder_block"(%x, %g1, %b1, %qw, %kw, %vw, %ow, %g2, %b2, %gw, %uw, %dw, %cos, %sin)
      {num_heads = 4 : i64, head_dim = 8 : i64, num_kv_heads = 2 : i64, eps = 1.0e-5 : f32, mask_kind = "sliding_window", window = 3 : i64}
      : (tensor<1x5x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>,
         tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<1x5x32xf32>
  return %0 : tensor<1x5x32xf32>
}

// A custom mask reaches rlx.attention as its fourth operand.
// CHECK-LABEL: func.func @decoder_custom_mask
// CHECK: "rlx.attention"(%{{.*}}, %{{.*}}, %{{.*}}, %[[MASK:.*]]) {head_dim = 16 : i64, mask_kind = "custom", num_heads = 4 : i64} : (tensor<2x6x64xf32>, tensor<2x6x32xf32>, tensor<2x6x32xf32>, tensor<2x6xf32>)
func.func @decoder_custom_mask(%x: tensor<2x6x32xf32>, %g: tensor<32xf32>, %qw: tensor<32x64xf32>, %kw: tensor<32x32xf32>, %ow: tensor<64x32xf32>,
                               %fw: tensor<32x40xf32>, %dw: tensor<40x32xf32>, %cos: tensor<6x8xf32>, %m: tensor<2x6xf32>) -> tensor<2x6x32xf32> {
  %0 = "rlx_hir.llama_decoder_block"(%x, %g, %g, %qw, %kw, %kw, %ow, %g, %g, %fw, %fw, %dw, %cos, %cos, %m)
      {num_heads = 4 : i64, head_dim = 16 : i64, num_kv_heads = 2 : i64, eps = 1.0e-6 : f32, mask_kind = "custom"}
      : (tensor<2x6x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x64xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<64x32xf32>,
         tensor<32xf32>, tensor<32xf32>, tensor<32x40xf32>, tensor<32x40xf32>, tensor<40x32xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<2x6xf32>) -> tensor<2x6x32xf32>
  return %0 : tensor<2x6x32xf32>
}

// The escape hatch: MIR ops around a block are kept, in order.
// CHECK-LABEL: func.func @escape_hatch
// CHECK-NEXT: %[[SM:.*]] = "rlx.softmax"(%{{.*}}) {axis = -1 : i64}
// CHECK-NEXT: %[[N:.*]] = "rlx.rms_norm"(%[[SM]], %{{.*}}, %{{.*}}) {axis = -1 : i64, eps = 9.99999997E-7 : f32}
// CHECK-NEXT: %[[E:.*]] = "rlx.exp"(%[[N]])
// CHECK-NEXT: return %[[E]]
func.func @escape_hatch(%x: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  %0 = "rlx.softmax"(%x) {axis = -1 : i64} : (tensor<3x8xf32>) -> tensor<3x8xf32>
  %1 = "rlx_hir.rms_norm"(%0, %g, %b) {eps = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %2 = "rlx.exp"(%1) : (tensor<3x8xf32>) -> tensor<3x8xf32>
  return %2 : tensor<3x8xf32>
}
