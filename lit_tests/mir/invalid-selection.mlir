// The verifier rejects ill-formed rlx.topk and rlx.sample with a diagnostic at the op.
// (A missing attribute or one of the wrong kind is caught by the IRDL half, with its wording.)
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @topk_k_too_large(%x: tensor<2x8xf32>) -> tensor<2x9xi64> {
  // expected-error @+1 {{'rlx.topk' op k 9 is larger than the last axis (8) of input [2, 8]}}
  %0 = "rlx.topk"(%x) {k = 9 : i64} : (tensor<2x8xf32>) -> tensor<2x9xi64>
  return %0 : tensor<2x9xi64>
}

// -----

func.func @topk_k_zero(%x: tensor<8xf32>) -> tensor<0xi64> {
  // expected-error @+1 {{'rlx.topk' op k 0 must be positive}}
  %0 = "rlx.topk"(%x) {k = 0 : i64} : (tensor<8xf32>) -> tensor<0xi64>
  return %0 : tensor<0xi64>
}

// -----

func.func @topk_k_negative(%x: tensor<8xf32>) -> tensor<8xi64> {
  // expected-error @+1 {{'rlx.topk' op k -1 must be positive}}
  %0 = "rlx.topk"(%x) {k = -1 : i64} : (tensor<8xf32>) -> tensor<8xi64>
  return %0 : tensor<8xi64>
}

// -----

func.func @topk_rank0(%x: tensor<f32>) -> tensor<1xi64> {
  // expected-error @+1 {{'rlx.topk' op requires an input of rank 1 or more, got a rank 0 input []}}
  %0 = "rlx.topk"(%x) {k = 1 : i64} : (tensor<f32>) -> tensor<1xi64>
  return %0 : tensor<1xi64>
}

// -----

func.func @topk_missing_k(%x: tensor<8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.topk' op attribute "k" is expected but not provided}}
  %0 = "rlx.topk"(%x) : (tensor<8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @topk_k_not_integer(%x: tensor<8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{expected base attribute 'builtin.integer' but got 'builtin.float'}}
  %0 = "rlx.topk"(%x) {k = 2.0 : f32} : (tensor<8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @topk_integer_input(%x: tensor<8xi32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.topk' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<8xi32>}}
  %0 = "rlx.topk"(%x) {k = 2 : i64} : (tensor<8xi32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @topk_i32_result(%x: tensor<8xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{'rlx.topk' op result #0 ('result') must be a ranked tensor of i64, but got tensor<2xi32>}}
  %0 = "rlx.topk"(%x) {k = 2 : i64} : (tensor<8xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @topk_wrong_result_shape(%x: tensor<3x8xf32>) -> tensor<3x3xi64> {
  // expected-error @+1 {{'rlx.topk' op result type tensor<3x3xi64> does not match the inferred type tensor<3x2xi64>}}
  %0 = "rlx.topk"(%x) {k = 2 : i64} : (tensor<3x8xf32>) -> tensor<3x3xi64>
  return %0 : tensor<3x3xi64>
}

// -----

func.func @sample_rank3(%x: tensor<2x3x8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.sample' op requires a rank 2 input [B, V], got [2, 3, 8]}}
  %0 = "rlx.sample"(%x) {top_k = 0 : i64, top_p = 1.0 : f32, temperature = 1.0 : f32, seed = 0 : i64} : (tensor<2x3x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @sample_rank1(%x: tensor<8xf32>) -> tensor<1xi64> {
  // expected-error @+1 {{'rlx.sample' op requires a rank 2 input [B, V], got [8]}}
  %0 = "rlx.sample"(%x) {top_k = 0 : i64, top_p = 1.0 : f32, temperature = 1.0 : f32, seed = 0 : i64} : (tensor<8xf32>) -> tensor<1xi64>
  return %0 : tensor<1xi64>
}

// -----

func.func @sample_top_k_negative(%x: tensor<2x8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.sample' op top_k -1 must not be negative (0 turns it off)}}
  %0 = "rlx.sample"(%x) {top_k = -1 : i64, top_p = 1.0 : f32, temperature = 1.0 : f32, seed = 0 : i64} : (tensor<2x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @sample_top_k_too_large(%x: tensor<2x8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.sample' op top_k 9 is larger than the vocabulary (8) of logits [2, 8]}}
  %0 = "rlx.sample"(%x) {top_k = 9 : i64, top_p = 1.0 : f32, temperature = 1.0 : f32, seed = 0 : i64} : (tensor<2x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @sample_top_p_zero(%x: tensor<2x8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.sample' op top_p 0 must be in (0, 1]}}
  %0 = "rlx.sample"(%x) {top_k = 0 : i64, top_p = 0.0 : f32, temperature = 1.0 : f32, seed = 0 : i64} : (tensor<2x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @sample_top_p_above_one(%x: tensor<2x8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.sample' op top_p 1.5 must be in (0, 1]}}
  %0 = "rlx.sample"(%x) {top_k = 0 : i64, top_p = 1.5 : f32, temperature = 1.0 : f32, seed = 0 : i64} : (tensor<2x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @sample_top_p_nan(%x: tensor<2x8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.sample' op top_p nan must be in (0, 1]}}
  %0 = "rlx.sample"(%x) {top_k = 0 : i64, top_p = 0x7FC00000 : f32, temperature = 1.0 : f32, seed = 0 : i64} : (tensor<2x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @sample_negative_temperature(%x: tensor<2x8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.sample' op temperature -0.5 must be finite and not negative}}
  %0 = "rlx.sample"(%x) {top_k = 0 : i64, top_p = 1.0 : f32, temperature = -0.5 : f32, seed = 0 : i64} : (tensor<2x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @sample_infinite_temperature(%x: tensor<2x8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.sample' op temperature inf must be finite and not negative}}
  %0 = "rlx.sample"(%x) {top_k = 0 : i64, top_p = 1.0 : f32, temperature = 0x7F800000 : f32, seed = 0 : i64} : (tensor<2x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @sample_missing_seed(%x: tensor<2x8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.sample' op attribute "seed" is expected but not provided}}
  %0 = "rlx.sample"(%x) {top_k = 0 : i64, top_p = 1.0 : f32, temperature = 1.0 : f32} : (tensor<2x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @sample_seed_not_integer(%x: tensor<2x8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{expected base attribute 'builtin.integer' but got 'builtin.string'}}
  %0 = "rlx.sample"(%x) {top_k = 0 : i64, top_p = 1.0 : f32, temperature = 1.0 : f32, seed = "7"} : (tensor<2x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @sample_wrong_batch(%x: tensor<2x8xf32>) -> tensor<3xi64> {
  // expected-error @+1 {{'rlx.sample' op result type tensor<3xi64> does not match the inferred type tensor<2xi64>}}
  %0 = "rlx.sample"(%x) {top_k = 0 : i64, top_p = 1.0 : f32, temperature = 1.0 : f32, seed = 0 : i64} : (tensor<2x8xf32>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

func.func @sample_integer_logits(%x: tensor<2x8xi64>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.sample' op operand 'logits' must be a ranked tensor of f32, f16 or bf16, but got tensor<2x8xi64>}}
  %0 = "rlx.sample"(%x) {top_k = 0 : i64, top_p = 1.0 : f32, temperature = 1.0 : f32, seed = 0 : i64} : (tensor<2x8xi64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}
