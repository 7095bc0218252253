// rlx.dot_general and rlx.fused_matmul_bias_act reject ill-formed operands and attributes.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

// Contracting lists pair up: equal lengths.
func.func @dg_length(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx.dot_general' op lhs_contracting [1] and rhs_contracting [0, 1] differ in length (1 vs 2)}}
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: 1>, rhs_contracting = array<i64: 0, 1>, lhs_batch = array<i64>, rhs_batch = array<i64>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Batch lists pair up too.
func.func @dg_batch_length(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.dot_general' op lhs_batch [0] and rhs_batch [] differ in length (1 vs 0)}}
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: 1>, rhs_contracting = array<i64: 1>, lhs_batch = array<i64: 0>, rhs_batch = array<i64>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Axes index the operand.
func.func @dg_range(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx.dot_general' op lhs_contracting axis 2 is out of range for rank 2 lhs [2, 3]}}
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: 2>, rhs_contracting = array<i64: 0>, lhs_batch = array<i64>, rhs_batch = array<i64>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// No negative axes (as XLA).
func.func @dg_negative(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx.dot_general' op lhs_contracting axis -1 is out of range for rank 2 lhs [2, 3]}}
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: -1>, rhs_contracting = array<i64: 0>, lhs_batch = array<i64>, rhs_batch = array<i64>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Each dimension is batch, contracting or free, once.
func.func @dg_twice(%a: tensor<3x3xf32>, %b: tensor<3x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'rlx.dot_general' op lhs dimension 0 is used more than once in lhs_batch [] and lhs_contracting [0, 0]}}
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: 0, 0>, rhs_contracting = array<i64: 0, 1>, lhs_batch = array<i64>, rhs_batch = array<i64>} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Paired dimensions have one size (no broadcasting).
func.func @dg_size(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{'rlx.dot_general' op contracting dimensions differ: lhs [2, 3] dimension 1 has size 3, rhs [4, 5] dimension 0 has size 4}}
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: 1>, rhs_contracting = array<i64: 0>, lhs_batch = array<i64>, rhs_batch = array<i64>} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// Contracting lists are required.
func.func @dg_missing(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx.dot_general' op attribute "rhs_contracting" is expected but not provided}}
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: 1>, lhs_batch = array<i64>, rhs_batch = array<i64>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Attribute kinds are checked by IRDL first, then by the Python verifier.
func.func @dg_attr_kind(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{expected base attribute 'builtin.dense_array' but got 'builtin.array'}}
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = [1], rhs_contracting = array<i64: 0>, lhs_batch = array<i64>, rhs_batch = array<i64>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @dg_i32_array(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx.dot_general' op attribute 'lhs_contracting' must be a dense i64 array attribute, but got array<i32: 1>}}
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i32: 1>, rhs_contracting = array<i64: 0>, lhs_batch = array<i64>, rhs_batch = array<i64>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Result dims: batch, lhs free, rhs free.
func.func @dg_result(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'rlx.dot_general' op result type tensor<4x2xf32> does not match the inferred type tensor<2x4xf32>}}
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: 1>, rhs_contracting = array<i64: 0>, lhs_batch = array<i64>, rhs_batch = array<i64>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// The activation is one of the listed names.
func.func @fm_act(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx.fused_matmul_bias_act' op attribute 'activation' must be one of 'none', 'relu', 'gelu', 'gelu_approx', 'silu', 'sigmoid', 'tanh', but got 'swish'}}
  %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = "swish"} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @fm_act_kind(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{expected base attribute 'builtin.string' but got 'builtin.integer'}}
  %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = 1 : i64} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @fm_k(%x: tensor<2x3xf32>, %w: tensor<5x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx.fused_matmul_bias_act' op contracting dimensions differ: x [2, 3] has K = 3, w [5, 4] has K = 5}}
  %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = "relu"} : (tensor<2x3xf32>, tensor<5x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @fm_bias(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx.fused_matmul_bias_act' op bias must have shape [4] (N of w [3, 4]), got [2, 4]}}
  %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = "relu"} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// The weight is [K, N]: no batched weights.
func.func @fm_w_rank(%x: tensor<2x3xf32>, %w: tensor<1x3x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx.fused_matmul_bias_act' op requires x of rank 2 or more and w of rank 2, got [2, 3] and [1, 3, 4]}}
  %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = "relu"} : (tensor<2x3xf32>, tensor<1x3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @fm_dtype(%x: tensor<2x3xf16>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx.fused_matmul_bias_act' op requires operands of one element type, got f16, f32, f32}}
  %0 = "rlx.fused_matmul_bias_act"(%x, %w, %b) {activation = "relu"} : (tensor<2x3xf16>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @dg_batch_size(%a: tensor<2x3xf32>, %b: tensor<5x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.dot_general' op batch dimensions differ: lhs [2, 3] dimension 0 has size 2, rhs [5, 3] dimension 0 has size 5}}
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: 1>, rhs_contracting = array<i64: 1>, lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>} : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// A dimension cannot be both batch and contracting.
func.func @dg_batch_and_contracting(%a: tensor<3x3xf32>, %b: tensor<3x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'rlx.dot_general' op rhs dimension 1 is used more than once in rhs_batch [1] and rhs_contracting [1]}}
  %0 = "rlx.dot_general"(%a, %b) {lhs_contracting = array<i64: 1>, rhs_contracting = array<i64: 1>, lhs_batch = array<i64: 0>, rhs_batch = array<i64: 1>} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
