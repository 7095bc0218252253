// rlx.rope and rlx.attention reject ill-formed operands and attributes with a diagnostic at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @rope_n_rot_exceeds(%x: tensor<1x4x128xf32>, %c: tensor<4x48xf32>, %s: tensor<4x48xf32>) -> tensor<1x4x128xf32> {
  // expected-error @+1 {{'rlx.rope' op n_rot 96 exceeds head_dim 64}}
  %0 = "rlx.rope"(%x, %c, %s) {head_dim = 64, n_rot = 96} : (tensor<1x4x128xf32>, tensor<4x48xf32>, tensor<4x48xf32>) -> tensor<1x4x128xf32>
  return %0 : tensor<1x4x128xf32>
}

// -----

func.func @rope_n_rot_odd(%x: tensor<1x4x16xf32>, %c: tensor<4x3xf32>, %s: tensor<4x3xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+1 {{'rlx.rope' op n_rot 7 must be even (features rotate in pairs)}}
  %0 = "rlx.rope"(%x, %c, %s) {head_dim = 8, n_rot = 7} : (tensor<1x4x16xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @rope_n_rot_zero(%x: tensor<1x4x16xf32>, %c: tensor<4x0xf32>, %s: tensor<4x0xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+1 {{'rlx.rope' op n_rot must be positive, got 0}}
  %0 = "rlx.rope"(%x, %c, %s) {head_dim = 8, n_rot = 0} : (tensor<1x4x16xf32>, tensor<4x0xf32>, tensor<4x0xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @rope_head_dim_zero(%x: tensor<1x4x16xf32>, %c: tensor<4x2xf32>, %s: tensor<4x2xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+1 {{'rlx.rope' op head_dim must be positive, got 0}}
  %0 = "rlx.rope"(%x, %c, %s) {head_dim = 0, n_rot = 4} : (tensor<1x4x16xf32>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @rope_width(%x: tensor<1x4x20xf32>, %c: tensor<4x4xf32>, %s: tensor<4x4xf32>) -> tensor<1x4x20xf32> {
  // expected-error @+1 {{'rlx.rope' op x last dim 20 is not a multiple of head_dim 8}}
  %0 = "rlx.rope"(%x, %c, %s) {head_dim = 8, n_rot = 8} : (tensor<1x4x20xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x20xf32>
  return %0 : tensor<1x4x20xf32>
}

// -----

func.func @rope_cos_shape(%x: tensor<2x4x16xf32>, %c: tensor<4x2xf32>, %s: tensor<4x4xf32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{'rlx.rope' op cos has shape [4, 2], expected [S, n_rot / 2] = [4, 4] for x [2, 4, 16] and n_rot 8}}
  %0 = "rlx.rope"(%x, %c, %s) {head_dim = 8, n_rot = 8} : (tensor<2x4x16xf32>, tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// -----

func.func @rope_sin_positions(%x: tensor<2x4x16xf32>, %c: tensor<4x4xf32>, %s: tensor<5x4xf32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{'rlx.rope' op sin has shape [5, 4], expected [S, n_rot / 2] = [4, 4] for x [2, 4, 16] and n_rot 8}}
  %0 = "rlx.rope"(%x, %c, %s) {head_dim = 8, n_rot = 8} : (tensor<2x4x16xf32>, tensor<4x4xf32>, tensor<5x4xf32>) -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// -----

func.func @rope_dtype(%x: tensor<1x4x16xf32>, %c: tensor<4x4xf16>, %s: tensor<4x4xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+1 {{'rlx.rope' op requires operands of one element type, got f32, f16, f32}}
  %0 = "rlx.rope"(%x, %c, %s) {head_dim = 8, n_rot = 8} : (tensor<1x4x16xf32>, tensor<4x4xf16>, tensor<4x4xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @rope_rank(%x: tensor<4x16xf32>, %c: tensor<4x4xf32>, %s: tensor<4x4xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'rlx.rope' op x must have rank 3 ([B, S, H * head_dim]), got [4, 16]}}
  %0 = "rlx.rope"(%x, %c, %s) {head_dim = 8, n_rot = 8} : (tensor<4x16xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @rope_result(%x: tensor<1x4x16xf32>, %c: tensor<4x4xf32>, %s: tensor<4x4xf32>) -> tensor<1x4x16xf16> {
  // expected-error @+1 {{'rlx.rope' op result type tensor<1x4x16xf16> does not match the inferred type tensor<1x4x16xf32>}}
  %0 = "rlx.rope"(%x, %c, %s) {head_dim = 8, n_rot = 8} : (tensor<1x4x16xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x16xf16>
  return %0 : tensor<1x4x16xf16>
}

// -----

func.func @rope_missing_attr(%x: tensor<1x4x16xf32>, %c: tensor<4x4xf32>, %s: tensor<4x4xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+1 {{'rlx.rope' op attribute "n_rot" is expected but not provided}}
  %0 = "rlx.rope"(%x, %c, %s) {head_dim = 8} : (tensor<1x4x16xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @rope_attr_type(%x: tensor<1x4x16xf32>, %c: tensor<4x4xf32>, %s: tensor<4x4xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+1 {{expected base attribute 'builtin.integer' but got 'builtin.float'}}
  %0 = "rlx.rope"(%x, %c, %s) {head_dim = 8, n_rot = 8.0 : f32} : (tensor<1x4x16xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @attention_q_width(%q: tensor<1x3x96xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x3x96xf32> {
  // expected-error @+1 {{'rlx.attention' op q last dim 96 is not num_heads * head_dim = 4 * 16}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "none"} : (tensor<1x3x96xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x3x96xf32>
  return %0 : tensor<1x3x96xf32>
}

// -----

func.func @attention_gqa(%q: tensor<1x3x64xf32>, %k: tensor<1x5x48xf32>, %v: tensor<1x5x48xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op 4 query heads are not a multiple of 3 kv heads}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "none"} : (tensor<1x3x64xf32>, tensor<1x5x48xf32>, tensor<1x5x48xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_k_width(%q: tensor<1x3x64xf32>, %k: tensor<1x5x40xf32>, %v: tensor<1x5x40xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op k last dim 40 is not a multiple of head_dim 16}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "none"} : (tensor<1x3x64xf32>, tensor<1x5x40xf32>, tensor<1x5x40xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_v_shape(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x6x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op v shape [1, 6, 32] differs from k shape [1, 5, 32]}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "none"} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x6x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_batch(%q: tensor<1x3x64xf32>, %k: tensor<2x5x32xf32>, %v: tensor<2x5x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op k batch 2 differs from q batch 1 (q [1, 3, 64], k [2, 5, 32])}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "none"} : (tensor<1x3x64xf32>, tensor<2x5x32xf32>, tensor<2x5x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_rank(%q: tensor<3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op q must have rank 3 ([B, Sq, H * D]), got [3, 64]}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "none"} : (tensor<3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<3x64xf32>
  return %0 : tensor<3x64xf32>
}

// -----

func.func @attention_dtype(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf16>, %v: tensor<1x5x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op requires operands of one element type, got f32, f16, f32}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "none"} : (tensor<1x3x64xf32>, tensor<1x5x32xf16>, tensor<1x5x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_integer(%q: tensor<1x3x64xi32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x3x64xi32> {
  // expected-error @+1 {{'rlx.attention' op operand 'q' must be a ranked tensor of f32, f16 or bf16, but got tensor<1x3x64xi32>}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "none"} : (tensor<1x3x64xi32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x3x64xi32>
  return %0 : tensor<1x3x64xi32>
}

// -----

func.func @attention_num_heads(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op num_heads must be positive, got 0}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 0, head_dim = 16, mask_kind = "none"} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_custom_no_mask(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op mask_kind 'custom' requires a mask operand}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "custom"} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_bias_no_mask(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op mask_kind 'bias' requires a mask operand}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "bias"} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_causal_with_mask(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>, %m: tensor<1x5xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op mask_kind 'causal' takes no mask operand, got one of type tensor<1x5xf32>}}
  %0 = "rlx.attention"(%q, %k, %v, %m) {num_heads = 4, head_dim = 16, mask_kind = "causal"} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>, tensor<1x5xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_custom_shape(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>, %m: tensor<1x3xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op mask has shape [1, 3], expected [B, Sk] = [1, 5] for mask_kind 'custom'}}
  %0 = "rlx.attention"(%q, %k, %v, %m) {num_heads = 4, head_dim = 16, mask_kind = "custom"} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>, tensor<1x3xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_bias_shape(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>, %m: tensor<1x2x3x5xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op mask has shape [1, 2, 3, 5], expected [B, H, Sq, Sk] = [1, 4, 3, 5] for mask_kind 'bias'}}
  %0 = "rlx.attention"(%q, %k, %v, %m) {num_heads = 4, head_dim = 16, mask_kind = "bias"} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>, tensor<1x2x3x5xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_mask_dtype(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>, %m: tensor<1x5xf16>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op requires operands of one element type, got f32, f32, f32, f16}}
  %0 = "rlx.attention"(%q, %k, %v, %m) {num_heads = 4, head_dim = 16, mask_kind = "custom"} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>, tensor<1x5xf16>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_mask_kind(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op attribute 'mask_kind' must be one of 'none', 'causal', 'sliding_window', 'custom', 'bias', but got 'alibi'}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "alibi"} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_window_missing(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op mask_kind 'sliding_window' requires a window attribute}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "sliding_window"} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_window_zero(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op window must be positive, got 0}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "sliding_window", window = 0} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_window_unused(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op window 4 is only meaningful with mask_kind 'sliding_window', not 'causal'}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "causal", window = 4} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_window_type(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op attribute 'window' must be a 64-bit integer attribute, but got 4.000000e+00 : f32}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "sliding_window", window = 4.0 : f32} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_softcap(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op softcap must be positive, got -1.0}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "none", softcap = -1.0 : f32} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_softcap_zero(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op softcap must be positive, got 0.0}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "none", softcap = 0.0 : f32} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_scale_inf(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{'rlx.attention' op score_scale must be finite, got inf}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "none", score_scale = 0x7F800000 : f32} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x3x64xf32>
  return %0 : tensor<1x3x64xf32>
}

// -----

func.func @attention_result(%q: tensor<1x3x64xf32>, %k: tensor<1x5x32xf32>, %v: tensor<1x5x32xf32>) -> tensor<1x5x64xf32> {
  // expected-error @+1 {{'rlx.attention' op result type tensor<1x5x64xf32> does not match the inferred type tensor<1x3x64xf32>}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 4, head_dim = 16, mask_kind = "none"} : (tensor<1x3x64xf32>, tensor<1x5x32xf32>, tensor<1x5x32xf32>) -> tensor<1x5x64xf32>
  return %0 : tensor<1x5x64xf32>
}

// -----

// Batch and sequence dims may be dynamic (bound before lowering); the head dims may not.
func.func @attention_dynamic_heads(%q: tensor<?x?x?xf32>, %k: tensor<?x?x32xf32>, %v: tensor<?x?x32xf32>) -> tensor<?x?x?xf32> {
  // expected-error @+1 {{'rlx.attention' op q last dim must be static (it holds the heads), got [?, ?, ?]}}
  %0 = "rlx.attention"(%q, %k, %v) {num_heads = 2, head_dim = 16, mask_kind = "causal"} : (tensor<?x?x?xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

func.func @attention_dynamic_batch(%q: tensor<?x?x64xf32>, %k: tensor<?x?x32xf32>, %v: tensor<?x?x32xf32>, %m: tensor<?x?xf32>) -> tensor<?x?x64xf32> {
  %0 = "rlx.attention"(%q, %k, %v, %m) {num_heads = 4, head_dim = 16, mask_kind = "custom"} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?xf32>) -> tensor<?x?x64xf32>
  return %0 : tensor<?x?x64xf32>
}
