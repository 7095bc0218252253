// The verifier rejects ill-formed MIR with a diagnostic at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @matmul_k_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{'rlx.matmul' op contracting dimensions differ: lhs [2, 3] has K = 3, rhs [4, 5] has K = 4}}
  %0 = "rlx.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @matmul_rank(%a: tensor<3xf32>, %b: tensor<3x5xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'rlx.matmul' op requires operands of rank 2 or more, got [3] and [3, 5]}}
  %0 = "rlx.matmul"(%a, %b) : (tensor<3xf32>, tensor<3x5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @matmul_batch(%a: tensor<2x4x3xf32>, %b: tensor<3x3x5xf32>) -> tensor<2x4x5xf32> {
  // expected-error @+1 {{'rlx.matmul' op batch dimensions [2] and [3] do not broadcast}}
  %0 = "rlx.matmul"(%a, %b) : (tensor<2x4x3xf32>, tensor<3x3x5xf32>) -> tensor<2x4x5xf32>
  return %0 : tensor<2x4x5xf32>
}

// -----

func.func @matmul_dtype(%a: tensor<2x3xf32>, %b: tensor<3x5xf16>) -> tensor<2x5xf32> {
  // expected-error @+1 {{'rlx.matmul' op requires operands of one element type, got f32, f16}}
  %0 = "rlx.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<3x5xf16>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @matmul_integer(%a: tensor<2x3xi32>, %b: tensor<3x5xi32>) -> tensor<2x5xi32> {
  // expected-error @+1 {{'rlx.matmul' op operand 'lhs' must be a ranked tensor of f32, f16 or bf16, but got tensor<2x3xi32>}}
  %0 = "rlx.matmul"(%a, %b) : (tensor<2x3xi32>, tensor<3x5xi32>) -> tensor<2x5xi32>
  return %0 : tensor<2x5xi32>
}

// -----

func.func @wrong_result_shape(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx.matmul' op result type tensor<2x4xf32> does not match the inferred type tensor<2x5xf32>}}
  %0 = "rlx.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @binary_no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx.add' op operand shapes [2, 3] and [4] do not broadcast}}
  %0 = "rlx.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @binary_dtype(%a: tensor<2xf32>, %b: tensor<2xf16>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.pow' op requires operands of one element type, got f32, f16}}
  %0 = "rlx.pow"(%a, %b) : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @activation_type(%a: tensor<2xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'rlx.gelu' op result type tensor<3xf32> does not match the inferred type tensor<2xf32>}}
  %0 = "rlx.gelu"(%a) : (tensor<2xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @activation_not_tensor(%a: f32) -> f32 {
  // expected-error @+1 {{expected base type 'builtin.tensor' but got 'builtin.f32'}}
  %0 = "rlx.relu"(%a) : (f32) -> f32
  return %0 : f32
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'rlx.reshape' op cannot reshape [2, 3] (6 elements) to [7] (7 elements)}}
  %0 = "rlx.reshape"(%a) : (tensor<2x3xf32>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @reshape_dtype(%a: tensor<6xf32>) -> tensor<6xf16> {
  // expected-error @+1 {{'rlx.reshape' op changes the element type from f32 to f16}}
  %0 = "rlx.reshape"(%a) : (tensor<6xf32>) -> tensor<6xf16>
  return %0 : tensor<6xf16>
}

// -----

func.func @transpose_perm(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'rlx.transpose' op perm [1, 1] is not a permutation of the 2 dimensions of [2, 3]}}
  %0 = "rlx.transpose"(%a) {perm = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_missing_perm(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'rlx.transpose' op attribute "perm" is expected but not provided}}
  %0 = "rlx.transpose"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @unknown_op(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{unregistered operation 'rlx.frobnicate' found in dialect ('rlx') that does not allow unknown operations}}
  %0 = "rlx.frobnicate"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @operand_count(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{op expects exactly 2 operands, but got 1}}
  %0 = "rlx.add"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
