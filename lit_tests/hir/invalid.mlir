// HIR blocks reject ill-formed operands and attributes with a diagnostic at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @linear_k_mismatch(%x: tensor<2x8xf32>, %w: tensor<6x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx_hir.linear' op contracting dimensions differ: x [2, 8] has K = 8, w [6, 4] has K = 6}}
  %0 = "rlx_hir.linear"(%x, %w) {activation = "none"} : (tensor<2x8xf32>, tensor<6x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @linear_bias_shape(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %b: tensor<8xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx_hir.linear' op bias must have shape [N] = [4], got [8]}}
  %0 = "rlx_hir.linear"(%x, %w, %b) {activation = "none"} : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @linear_bad_activation(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx_hir.linear' op attribute 'activation' must be one of 'none', 'relu', 'gelu', 'gelu_approx', 'silu', 'sigmoid', 'tanh', but got 'swish'}}
  %0 = "rlx_hir.linear"(%x, %w) {activation = "swish"} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @linear_wrong_result(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx_hir.linear' op result type tensor<2x8xf32> does not match the inferred type tensor<2x4xf32>}}
  %0 = "rlx_hir.linear"(%x, %w) {activation = "relu"} : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @linear_weight_rank(%x: tensor<2x8xf32>, %w: tensor<1x8x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx_hir.linear' op w must have rank 2 ([K, N]), got [1, 8, 4]}}
  %0 = "rlx_hir.linear"(%x, %w) {activation = "none"} : (tensor<2x8xf32>, tensor<1x8x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @linear_fused_mixed_types(%x: tensor<2x8xf16>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx_hir.linear_fused' op requires operands of one element type, got f16, f32, f32}}
  %0 = "rlx_hir.linear_fused"(%x, %w, %b) {activation = "gelu"} : (tensor<2x8xf16>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @linear_fused_bad_activation(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // IRDL checks the attribute kind before the Python verifier runs.
  // expected-error @+1 {{expected base attribute 'builtin.string' but got 'builtin.integer'}}
  %0 = "rlx_hir.linear_fused"(%x, %w, %b) {activation = 3 : i64} : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @shared_pair_k_mismatch(%x: tensor<2x8xf32>, %w1: tensor<8x4xf32>, %w2: tensor<6x3xf32>) -> (tensor<2x4xf32>, tensor<2x3xf32>) {
  // expected-error @+1 {{'rlx_hir.shared_linear_pair' op contracting dimensions differ: x [2, 8] has K = 8, w_second [6, 3] has K = 6}}
  %0:2 = "rlx_hir.shared_linear_pair"(%x, %w1, %w2) : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<6x3xf32>) -> (tensor<2x4xf32>, tensor<2x3xf32>)
  return %0#0, %0#1 : tensor<2x4xf32>, tensor<2x3xf32>
}

// -----

func.func @shared_pair_second_result(%x: tensor<2x8xf32>, %w1: tensor<8x4xf32>, %w2: tensor<8x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  // expected-error @+1 {{'rlx_hir.shared_linear_pair' op result #1 ('second') type tensor<2x4xf32> does not match the inferred type tensor<2x3xf32>}}
  %0:2 = "rlx_hir.shared_linear_pair"(%x, %w1, %w2) : (tensor<2x8xf32>, tensor<8x4xf32>, tensor<8x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  return %0#0, %0#1 : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

func.func @swiglu_gate_shape(%x: tensor<3x8xf32>, %up: tensor<8x12xf32>, %gate: tensor<8x10xf32>, %down: tensor<12x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'rlx_hir.swiglu_ffn' op gate_w [8, 10] must have the shape of up_w [8, 12]}}
  %0 = "rlx_hir.swiglu_ffn"(%x, %up, %gate, %down) : (tensor<3x8xf32>, tensor<8x12xf32>, tensor<8x10xf32>, tensor<12x8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @swiglu_down_rows(%x: tensor<3x8xf32>, %up: tensor<8x12xf32>, %gate: tensor<8x12xf32>, %down: tensor<8x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'rlx_hir.swiglu_ffn' op down_w [8, 8] must have F = 12 rows (the columns of up_w [8, 12])}}
  %0 = "rlx_hir.swiglu_ffn"(%x, %up, %gate, %down) : (tensor<3x8xf32>, tensor<8x12xf32>, tensor<8x12xf32>, tensor<8x8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @rms_norm_gamma(%x: tensor<3x8xf32>, %g: tensor<3xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'rlx_hir.rms_norm' op gamma must have shape [8] (dimension 1 of input [3, 8]), got [3]}}
  %0 = "rlx_hir.rms_norm"(%x, %g, %b) {eps = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<3xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @rms_norm_eps(%x: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'rlx_hir.rms_norm' op eps must be positive, got 0.0}}
  %0 = "rlx_hir.rms_norm"(%x, %g, %b) {eps = 0.0 : f32} : (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @residual_rms_norm_shape(%x: tensor<3x8xf32>, %r: tensor<1x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'rlx_hir.residual_rms_norm' op residual [1, 8] must have the shape of x [3, 8]}}
  %0 = "rlx_hir.residual_rms_norm"(%x, %r, %g, %b) {eps = 1.0e-6 : f32} : (tensor<3x8xf32>, tensor<1x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @residual_rms_norm_eps(%x: tensor<3x8xf32>, %r: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'rlx_hir.residual_rms_norm' op eps must be positive, got -1.0}}
  %0 = "rlx_hir.residual_rms_norm"(%x, %r, %g, %b) {eps = -1.0 : f32} : (tensor<3x8xf32>, tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}

// -----

func.func @rope_n_rot(%x: tensor<1x4x16xf32>, %c: tensor<4x5xf32>, %s: tensor<4x5xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+1 {{'rlx_hir.rope' op n_rot 10 exceeds head_dim 8}}
  %0 = "rlx_hir.rope"(%x, %c, %s) {head_dim = 8 : i64, n_rot = 10 : i64} : (tensor<1x4x16xf32>, tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @rope_table(%x: tensor<1x4x16xf32>, %c: tensor<4x2xf32>, %s: tensor<4x4xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+1 {{'rlx_hir.rope' op cos has shape [4, 2], expected [S, n_rot / 2] = [4, 4] for x [1, 4, 16] and n_rot 8}}
  %0 = "rlx_hir.rope"(%x, %c, %s) {head_dim = 8 : i64, n_rot = 8 : i64} : (tensor<1x4x16xf32>, tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @attention_heads(%q: tensor<1x4x24xf32>, %k: tensor<1x4x16xf32>, %v: tensor<1x4x16xf32>) -> tensor<1x4x24xf32> {
  // expected-error @+1 {{'rlx_hir.attention' op 3 query heads are not a multiple of 2 kv heads}}
  %0 = "rlx_hir.attention"(%q, %k, %v) {num_heads = 3 : i64, head_dim = 8 : i64, mask_kind = "causal"} : (tensor<1x4x24xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x24xf32>
  return %0 : tensor<1x4x24xf32>
}

// -----

func.func @attention_window(%q: tensor<1x4x16xf32>, %k: tensor<1x4x16xf32>, %v: tensor<1x4x16xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+1 {{'rlx_hir.attention' op mask_kind 'sliding_window' requires a window attribute}}
  %0 = "rlx_hir.attention"(%q, %k, %v) {num_heads = 2 : i64, head_dim = 8 : i64, mask_kind = "sliding_window"} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @attention_mask_kind(%q: tensor<1x4x16xf32>, %k: tensor<1x4x16xf32>, %v: tensor<1x4x16xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+1 {{'rlx_hir.attention' op attribute 'mask_kind' must be one of 'none', 'causal', 'sliding_window', 'custom', 'bias', but got 'alibi'}}
  %0 = "rlx_hir.attention"(%q, %k, %v) {num_heads = 2 : i64, head_dim = 8 : i64, mask_kind = "alibi"} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @conv_weight(%x: tensor<2x6x4xf32>, %w: tensor<4x1x1x2xf32>, %pad: tensor<2x2x4xf32>) -> tensor<2x6x4xf32> {
  // expected-error @+1 {{'rlx_hir.depthwise_conv1d_causal' op weight must have shape [C, 1, 1, kernel_size] = [4, 1, 1, 3], got [4, 1, 1, 2]}}
  %0 = "rlx_hir.depthwise_conv1d_causal"(%x, %w, %pad) {kernel_size = 3 : i64} : (tensor<2x6x4xf32>, tensor<4x1x1x2xf32>, tensor<2x2x4xf32>) -> tensor<2x6x4xf32>
  return %0 : tensor<2x6x4xf32>
}

// -----

func.func @conv_pad(%x: tensor<2x6x4xf32>, %w: tensor<4x1x1x3xf32>, %pad: tensor<2x3x4xf32>) -> tensor<2x6x4xf32> {
  // expected-error @+1 {{'rlx_hir.depthwise_conv1d_causal' op left_pad must have shape [B, kernel_size - 1, C] = [2, 2, 4], got [2, 3, 4]}}
  %0 = "rlx_hir.depthwise_conv1d_causal"(%x, %w, %pad) {kernel_size = 3 : i64} : (tensor<2x6x4xf32>, tensor<4x1x1x3xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
  return %0 : tensor<2x6x4xf32>
}

// -----

func.func @conv_kernel_size(%x: tensor<2x6x4xf32>, %w: tensor<4x1x1x0xf32>, %pad: tensor<2x0x4xf32>) -> tensor<2x6x4xf32> {
  // expected-error @+1 {{'rlx_hir.depthwise_conv1d_causal' op kernel_size must be positive, got 0}}
  %0 = "rlx_hir.depthwise_conv1d_causal"(%x, %w, %pad) {kernel_size = 0 : i64} : (tensor<2x6x4xf32>, tensor<4x1x1x0xf32>, tensor<2x0x4xf32>) -> tensor<2x6x4xf32>
  return %0 : tensor<2x6x4xf32>
}

// -----

func.func @decoder_kv_heads(%x: tensor<1x5x32xf32>, %g: tensor<32xf32>, %qw: tensor<32x32xf32>, %kw: tensor<32x24xf32>, %ow: tensor<32x32xf32>,
                            %fw: tensor<32x48xf32>, %dw: tensor<48x32xf32>, %cos: tensor<5x4xf32>) -> tensor<1x5x32xf32> {
  // expected-error @+1 {{'rlx_hir.llama_decoder_block' op num_heads 4 is not a multiple of num_kv_heads 3}}
  %0 = "rlx_hir.llama_decoder_block"(%x, %g, %g, %qw, %kw, %kw, %ow, %g, %g, %fw, %fw, %dw, %cos, %cos)
      {num_heads = 4 : i64, head_dim = 8 : i64, num_kv_heads = 3 : i64, eps = 1.0e-6 : f32, mask_kind = "causal"}
      : (tensor<1x5x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x24xf32>, tensor<32x24xf32>, tensor<32x32xf32>,
         tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<1x5x32xf32>
  return %0 : tensor<1x5x32xf32>
}

// -----

func.func @decoder_k_w(%x: tensor<1x5x32xf32>, %g: tensor<32xf32>, %qw: tensor<32x32xf32>, %kw: tensor<32x32xf32>, %vw: tensor<32x16xf32>,
                       %ow: tensor<32x32xf32>, %fw: tensor<32x48xf32>, %dw: tensor<48x32xf32>, %cos: tensor<5x4xf32>) -> tensor<1x5x32xf32> {
  // expected-error @+1 {{'rlx_hir.llama_decoder_block' op k_w must have shape [D, num_kv_heads * head_dim] = [32, 16], got [32, 32]}}
  %0 = "rlx_hir.llama_decoder_block"(%x, %g, %g, %qw, %kw, %vw, %ow, %g, %g, %fw, %fw, %dw, %cos, %cos)
      {num_heads = 4 : i64, head_dim = 8 : i64, num_kv_heads = 2 : i64, eps = 1.0e-6 : f32, mask_kind = "causal"}
      : (tensor<1x5x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x32xf32>,
         tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<1x5x32xf32>
  return %0 : tensor<1x5x32xf32>
}

// -----

func.func @decoder_cos(%x: tensor<1x5x32xf32>, %g: tensor<32xf32>, %qw: tensor<32x32xf32>, %kw: tensor<32x16xf32>, %ow: tensor<32x32xf32>,
                       %fw: tensor<32x48xf32>, %dw: tensor<48x32xf32>, %cos: tensor<5x8xf32>) -> tensor<1x5x32xf32> {
  // expected-error @+1 {{'rlx_hir.llama_decoder_block' op cos must have shape [S, head_dim / 2] = [5, 4], got [5, 8]}}
  %0 = "rlx_hir.llama_decoder_block"(%x, %g, %g, %qw, %kw, %kw, %ow, %g, %g, %fw, %fw, %dw, %cos, %cos)
      {num_heads = 4 : i64, head_dim = 8 : i64, num_kv_heads = 2 : i64, eps = 1.0e-6 : f32, mask_kind = "causal"}
      : (tensor<1x5x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>,
         tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>, tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<1x5x32xf32>
  return %0 : tensor<1x5x32xf32>
}

// -----

func.func @decoder_mask_kind(%x: tensor<1x5x32xf32>, %g: tensor<32xf32>, %qw: tensor<32x32xf32>, %kw: tensor<32x16xf32>, %ow: tensor<32x32xf32>,
                             %fw: tensor<32x48xf32>, %dw: tensor<48x32xf32>, %cos: tensor<5x4xf32>) -> tensor<1x5x32xf32> {
  // expected-error @+1 {{'rlx_hir.llama_decoder_block' op attribute 'mask_kind' must be one of 'none', 'causal', 'sliding_window', 'custom', 'bias', but got 'prefix'}}
  %0 = "rlx_hir.llama_decoder_block"(%x, %g, %g, %qw, %kw, %kw, %ow, %g, %g, %fw, %fw, %dw, %cos, %cos)
      {num_heads = 4 : i64, head_dim = 8 : i64, num_kv_heads = 2 : i64, eps = 1.0e-6 : f32, mask_kind = "prefix"}
      : (tensor<1x5x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>,
         tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<1x5x32xf32>
  return %0 : tensor<1x5x32xf32>
}

// -----

func.func @decoder_custom_mask_missing(%x: tensor<1x5x32xf32>, %g: tensor<32xf32>, %qw: tensor<32x32xf32>, %kw: tensor<32x16xf32>, %ow: tensor<32x32xf32>,
                                       %fw: tensor<32x48xf32>, %dw: tensor<48x32xf32>, %cos: tensor<5x4xf32>) -> tensor<1x5x32xf32> {
  // expected-error @+1 {{'rlx_hir.llama_decoder_block' op mask_kind 'custom' requires a mask operand}}
  %0 = "rlx_hir.llama_decoder_block"(%x, %g, %g, %qw, %kw, %kw, %ow, %g, %g, %fw, %fw, %dw, %cos, %cos)
      {num_heads = 4 : i64, head_dim = 8 : i64, num_kv_heads = 2 : i64, eps = 1.0e-6 : f32, mask_kind = "custom"}
      : (tensor<1x5x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>,
         tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<1x5x32xf32>
  return %0 : tensor<1x5x32xf32>
}

// -----

func.func @decoder_eps(%x: tensor<1x5x32xf32>, %g: tensor<32xf32>, %qw: tensor<32x32xf32>, %kw: tensor<32x16xf32>, %ow: tensor<32x32xf32>,
                       %fw: tensor<32x48xf32>, %dw: tensor<48x32xf32>, %cos: tensor<5x4xf32>) -> tensor<1x5x32xf32> {
  // expected-error @+1 {{'rlx_hir.llama_decoder_block' op eps must be positive, got 0.0}}
  %0 = "rlx_hir.llama_decoder_block"(%x, %g, %g, %qw, %kw, %kw, %ow, %g, %g, %fw, %fw, %dw, %cos, %cos)
      {num_heads = 4 : i64, head_dim = 8 : i64, num_kv_heads = 2 : i64, eps = 0.0 : f32, mask_kind = "causal"}
      : (tensor<1x5x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>,
         tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<1x5x32xf32>
  return %0 : tensor<1x5x32xf32>
}
