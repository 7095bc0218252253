// The norms and fused SwiGLU reject ill-formed operands and attributes.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

// eps must be positive.
func.func @rms_eps(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.rms_norm' op eps must be positive, got -1.0}}
  %0 = "rlx.rms_norm"(%x, %g, %g) {axis = -1 : i64, eps = -1.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @rms_eps_zero(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.rms_norm' op eps must be positive, got 0.0}}
  %0 = "rlx.rms_norm"(%x, %g, %g) {axis = -1 : i64, eps = 0.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Negative axes count from the end: -3 is out of range for rank 2.
func.func @rms_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.rms_norm' op axis -3 is out of range for rank 2 input [2, 8]}}
  %0 = "rlx.rms_norm"(%x, %g, %g) {axis = -3 : i64, eps = 1.0e-6 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// gamma follows the normalised axis (here axis 0, size 2).
func.func @rms_gamma(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.rms_norm' op gamma must have shape [2] (dimension 0 of input [2, 8]), got [8]}}
  %0 = "rlx.rms_norm"(%x, %g, %g) {axis = 0 : i64, eps = 1.0e-6 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @rms_eps_kind(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{expected base attribute 'builtin.float' but got 'builtin.integer'}}
  %0 = "rlx.rms_norm"(%x, %g, %g) {axis = -1 : i64, eps = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @ln_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.layer_norm' op axis 2 is out of range for rank 2 input [2, 8]}}
  %0 = "rlx.layer_norm"(%x, %g, %g) {axis = 2 : i64, eps = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @ln_beta(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<1x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.layer_norm' op beta must have shape [8] (dimension 1 of input [2, 8]), got [1, 8]}}
  %0 = "rlx.layer_norm"(%x, %g, %b) {axis = -1 : i64, eps = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @ln_eps(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.layer_norm' op eps must be positive, got -1.0}}
  %0 = "rlx.layer_norm"(%x, %g, %g) {axis = -1 : i64, eps = -1.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @ln_dtype(%x: tensor<2x8xf16>, %g: tensor<8xf32>) -> tensor<2x8xf16> {
  // expected-error @+1 {{'rlx.layer_norm' op requires operands of one element type, got f16, f32, f32}}
  %0 = "rlx.layer_norm"(%x, %g, %g) {axis = -1 : i64, eps = 1.0e-5 : f32} : (tensor<2x8xf16>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf16>
  return %0 : tensor<2x8xf16>
}

// -----

func.func @ln_missing_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.layer_norm' op attribute "axis" is expected but not provided}}
  %0 = "rlx.layer_norm"(%x, %g, %g) {eps = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @ln_rank0(%x: tensor<f32>, %g: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{'rlx.layer_norm' op axis -1 is out of range for rank 0 input []}}
  %0 = "rlx.layer_norm"(%x, %g, %g) {axis = -1 : i64, eps = 1.0e-5 : f32} : (tensor<f32>, tensor<1xf32>, tensor<1xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @frrms_residual(%x: tensor<2x8xf32>, %r: tensor<1x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.fused_residual_rms_norm' op residual [1, 8] must have the shape of x [2, 8]}}
  %0 = "rlx.fused_residual_rms_norm"(%x, %r, %g, %g) {eps = 1.0e-6 : f32} : (tensor<2x8xf32>, tensor<1x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @frrms_bias(%x: tensor<2x8xf32>, %r: tensor<2x8xf32>, %bias: tensor<2xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.fused_residual_rms_norm' op bias must have shape [8] (dimension 1 of input [2, 8]), got [2]}}
  %0 = "rlx.fused_residual_rms_norm"(%x, %r, %bias, %g, %g) {eps = 1.0e-6 : f32} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @frrms_eps(%x: tensor<2x8xf32>, %r: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.fused_residual_rms_norm' op eps must be positive, got -1.0}}
  %0 = "rlx.fused_residual_rms_norm"(%x, %r, %g, %g) {eps = -1.0 : f32} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @frln_gamma(%x: tensor<2x8xf32>, %r: tensor<2x8xf32>, %g: tensor<4xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.fused_residual_layer_norm' op gamma must have shape [8] (dimension 1 of input [2, 8]), got [4]}}
  %0 = "rlx.fused_residual_layer_norm"(%x, %r, %g, %b) {eps = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @frln_operands(%x: tensor<2x8xf32>, %r: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{op expects at least 4 operands, but got 3}}
  %0 = "rlx.fused_residual_layer_norm"(%x, %r, %g) {eps = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @frln_dtype(%x: tensor<2x8xf32>, %r: tensor<2x8xf32>, %bias: tensor<8xbf16>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.fused_residual_layer_norm' op requires operands of one element type, got f32, f32, bf16, f32, f32}}
  %0 = "rlx.fused_residual_layer_norm"(%x, %r, %bias, %g, %g) {eps = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xbf16>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @swiglu_odd(%x: tensor<2x7xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx.fused_swiglu' op requires an even last dimension (up and gate halves), got [2, 7]}}
  %0 = "rlx.fused_swiglu"(%x) : (tensor<2x7xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @swiglu_result(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.fused_swiglu' op result type tensor<2x8xf32> does not match the inferred type tensor<2x4xf32>}}
  %0 = "rlx.fused_swiglu"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @swiglu_int(%x: tensor<2x8xi32>) -> tensor<2x4xi32> {
  // expected-error @+1 {{'rlx.fused_swiglu' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<2x8xi32>}}
  %0 = "rlx.fused_swiglu"(%x) : (tensor<2x8xi32>) -> tensor<2x4xi32>
  return %0 : tensor<2x4xi32>
}
