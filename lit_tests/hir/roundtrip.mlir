// Every HIR op parses, verifies and prints back to a form that parses again,
// with its attributes (defaults included) and optional operands.
// RUN: rlx-opt %s | rlx-opt | FileCheck %s

// CHECK-LABEL: func.func @linear_blocks
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>, %[[W2:.*]]: tensor<8x4xf32>, %[[V:.*]]: tensor<8xf32>)
func.func @linear_blocks(%x: tensor<2x5x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %w2: tensor<8x4xf32>, %v: tensor<8xf32>)
    -> (tensor<2x5x16xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>, tensor<2x5x4xf32>, tensor<16xf32>) {
  // CHECK: %[[L0:.*]] = "rlx_hir.linear"(%[[X]], %[[W]]) {activation = "none"} : (tensor<2x5x8xf32>, tensor<8x16xf32>) -> tensor<2x5x16xf32>
  %0 = "rlx_hir.linear"(%x, %w) {activation = "none"} : (tensor<2x5x8xf32>, tensor<8x16xf32>) -> tensor<2x5x16xf32>
  // CHECK-NEXT: "rlx_hir.linear"(%[[X]], %[[W]], %[[B]]) {activation = "gelu_approx"} : (tensor<2x5x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  %1 = "rlx_hir.linear"(%x, %w, %b) {activation = "gelu_approx"} : (tensor<2x5x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  // CHECK-NEXT: "rlx_hir.linear_fused"(%[[X]], %[[W]], %[[B]]) {activation = "silu"} : (tensor<2x5x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  %2 = "rlx_hir.linear_fused"(%x, %w, %b) {activation = "silu"} : (tensor<2x5x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  // CHECK-NEXT: %[[P:.*]]:2 = "rlx_hir.shared_linear_pair"(%[[X]], %[[W]], %[[W2]]) : (tensor<2x5x8xf32>, tensor<8x16xf32>, tensor<8x4xf32>) -> (tensor<2x5x16xf32>, tensor<2x5x4xf32>)
  %3:2 = "rlx_hir.shared_linear_pair"(%x, %w, %w2) : (tensor<2x5x8xf32>, tensor<8x16xf32>, tensor<8x4xf32>) -> (tensor<2x5x16xf32>, tensor<2x5x4xf32>)
  // A rank-1 input is one row.
  // CHECK-NEXT: "rlx_hir.linear"(%[[V]], %[[W]]) {activation = "tanh"} : (tensor<8xf32>, tensor<8x16xf32>) -> tensor<16xf32>
  %4 = "rlx_hir.linear"(%v, %w) {activation = "tanh"} : (tensor<8xf32>, tensor<8x16xf32>) -> tensor<16xf32>
  // CHECK: return %[[L0]], %{{.*}}, %{{.*}}, %[[P]]#1, %{{.*}} :
  return %0, %1, %2, %3#1, %4 : tensor<2x5x16xf32>, tensor<2x5x16xf32>, tensor<2x5x16xf32>, tensor<2x5x4xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @ffn_and_norms
func.func @ffn_and_norms(%x: tensor<3x8xf16>, %r: tensor<3x8xf16>, %up: tensor<8x12xf16>, %gate: tensor<8x12xf16>,
                         %down: tensor<12x8xf16>, %g: tensor<8xf16>, %b: tensor<8xf16>) -> (tensor<3x8xf16>, tensor<3x8xf16>, tensor<3x8xf16>) {
  // CHECK: "rlx_hir.swiglu_ffn"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<3x8xf16>, tensor<8x12xf16>, tensor<8x12xf16>, tensor<12x8xf16>) -> tensor<3x8xf16>
  %0 = "rlx_hir.swiglu_ffn"(%x, %up, %gate, %down) : (tensor<3x8xf16>, tensor<8x12xf16>, tensor<8x12xf16>, tensor<12x8xf16>) -> tensor<3x8xf16>
  // CHECK-NEXT: "rlx_hir.rms_norm"(%{{.*}}, %{{.*}}, %{{.*}}) {eps = 9.99999974E-6 : f32} : (tensor<3x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<3x8xf16>
  %1 = "rlx_hir.rms_norm"(%x, %g, %b) {eps = 1.0e-5 : f32} : (tensor<3x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<3x8xf16>
  // CHECK-NEXT: "rlx_hir.residual_rms_norm"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {eps = 9.99999997E-7 : f32} : (tensor<3x8xf16>, tensor<3x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<3x8xf16>
  %2 = "rlx_hir.residual_rms_norm"(%x, %r, %g, %b) {eps = 1.0e-6 : f32} : (tensor<3x8xf16>, tensor<3x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<3x8xf16>
  return %0, %1, %2 : tensor<3x8xf16>, tensor<3x8xf16>, tensor<3x8xf16>
}

// CHECK-LABEL: func.func @attention_blocks
func.func @attention_blocks(%q: tensor<2x5x32xbf16>, %k: tensor<2x7x16xbf16>, %v: tensor<2x7x16xbf16>, %m: tensor<2x7xbf16>,
                            %cos: tensor<5x4xbf16>, %sin: tensor<5x4xbf16>) -> (tensor<2x5x32xbf16>, tensor<2x5x32xbf16>, tensor<2x5x32xbf16>) {
  // CHECK: "rlx_hir.rope"(%{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 8 : i64, n_rot = 8 : i64} : (tensor<2x5x32xbf16>, tensor<5x4xbf16>, tensor<5x4xbf16>) -> tensor<2x5x32xbf16>
  %0 = "rlx_hir.rope"(%q, %cos, %sin) {head_dim = 8 : i64, n_rot = 8 : i64} : (tensor<2x5x32xbf16>, tensor<5x4xbf16>, tensor<5x4xbf16>) -> tensor<2x5x32xbf16>
  // CHECK-NEXT: "rlx_hir.attention"(%{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 8 : i64, mask_kind = "sliding_window", num_heads = 4 : i64, softcap = 3.000000e+01 : f32, window = 3 : i64} : (tensor<2x5x32xbf16>, tensor<2x7x16xbf16>, tensor<2x7x16xbf16>) -> tensor<2x5x32xbf16>
  %1 = "rlx_hir.attention"(%0, %k, %v) {num_heads = 4 : i64, head_dim = 8 : i64, mask_kind = "sliding_window", window = 3 : i64, softcap = 30.0 : f32}
      : (tensor<2x5x32xbf16>, tensor<2x7x16xbf16>, tensor<2x7x16xbf16>) -> tensor<2x5x32xbf16>
  // CHECK-NEXT: "rlx_hir.attention"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 8 : i64, mask_kind = "custom", num_heads = 4 : i64, score_scale = 2.500000e-01 : f32} : (tensor<2x5x32xbf16>, tensor<2x7x16xbf16>, tensor<2x7x16xbf16>, tensor<2x7xbf16>) -> tensor<2x5x32xbf16>
  %2 = "rlx_hir.attention"(%q, %k, %v, %m) {num_heads = 4 : i64, head_dim = 8 : i64, mask_kind = "custom", score_scale = 0.25 : f32}
      : (tensor<2x5x32xbf16>, tensor<2x7x16xbf16>, tensor<2x7x16xbf16>, tensor<2x7xbf16>) -> tensor<2x5x32xbf16>
  return %0, %1, %2 : tensor<2x5x32xbf16>, tensor<2x5x32xbf16>, tensor<2x5x32xbf16>
}

// CHECK-LABEL: func.func @conv_block
func.func @conv_block(%x: tensor<2x6x4xf32>, %w: tensor<4x1x1x3xf32>, %pad: tensor<2x2x4xf32>) -> tensor<2x6x4xf32> {
  // CHECK: "rlx_hir.depthwise_conv1d_causal"(%{{.*}}, %{{.*}}, %{{.*}}) {kernel_size = 3 : i64} : (tensor<2x6x4xf32>, tensor<4x1x1x3xf32>, tensor<2x2x4xf32>) -> tensor<2x6x4xf32>
  %0 = "rlx_hir.depthwise_conv1d_causal"(%x, %w, %pad) {kernel_size = 3 : i64} : (tensor<2x6x4xf32>, tensor<4x1x1x3xf32>, tensor<2x2x4xf32>) -> tensor<2x6x4xf32>
  return %0 : tensor<2x6x4xf32>
}

// CHECK-LABEL: func.func @decoder_blocks
func.func @decoder_blocks(%x: tensor<1x5x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>, %qw: tensor<32x32xf32>, %kw: tensor<32x16xf32>,
                          %vw: tensor<32x16xf32>, %ow: tensor<32x32xf32>, %gw: tensor<32x48xf32>, %uw: tensor<32x48xf32>,
                          %dw: tensor<48x32xf32>, %cos: tensor<5x4xf32>, %sin: tensor<5x4xf32>, %m: tensor<1x4x5x5xf32>)
    -> (tensor<1x5x32xf32>, tensor<1x5x32xf32>) {
  // CHECK: "rlx_hir.llama_decoder_block"(%{{.*}}) {eps = 9.99999997E-7 : f32, head_dim = 8 : i64, mask_kind = "causal", num_heads = 4 : i64, num_kv_heads = 2 : i64} : (tensor<1x5x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<1x5x32xf32>
  %0 = "rlx_hir.llama_decoder_block"(%x, %g, %b, %qw, %kw, %vw, %ow, %g, %b, %gw, %uw, %dw, %cos, %sin)
      {num_heads = 4 : i64, head_dim = 8 : i64, num_kv_heads = 2 : i64, eps = 1.0e-6 : f32, mask_kind = "causal"}
      : (tensor<1x5x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>,
         tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<1x5x32xf32>
  // With a bias mask: 15 operands.
  // CHECK-NEXT: "rlx_hir.llama_decoder_block"({{.*}}) {eps = 9.99999974E-6 : f32, head_dim = 8 : i64, mask_kind = "bias", num_heads = 4 : i64, num_kv_heads = 2 : i64} : ({{.*}}, tensor<1x4x5x5xf32>) -> tensor<1x5x32xf32>
  %1 = "rlx_hir.llama_decoder_block"(%x, %g, %b, %qw, %kw, %vw, %ow, %g, %b, %gw, %uw, %dw, %cos, %sin, %m)
      {num_heads = 4 : i64, head_dim = 8 : i64, num_kv_heads = 2 : i64, eps = 1.0e-5 : f32, mask_kind = "bias"}
      : (tensor<1x5x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>,
         tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<1x4x5x5xf32>) -> tensor<1x5x32xf32>
  return %0, %1 : tensor<1x5x32xf32>, tensor<1x5x32xf32>
}

// MIR ops mix with HIR blocks in one function (RLX's `HirOp::Mir` escape hatch).
// CHECK-LABEL: func.func @escape_hatch
// CHECK: "rlx_hir.rms_norm"
// CHECK-NEXT: "rlx.softmax"
func.func @escape_hatch(%x: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  %0 = "rlx_hir.rms_norm"(%x, %g, %b) {eps = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %1 = "rlx.softmax"(%0) {axis = -1 : i64} : (tensor<3x8xf32>) -> tensor<3x8xf32>
  return %1 : tensor<3x8xf32>
}
