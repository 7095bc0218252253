// The verifier rejects ill-formed data-movement ops with a diagnostic at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @narrow_past_the_end(%a: tensor<4x5xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'rlx.narrow' op start 3 + len 4 exceeds dimension 5 of axis 1}}
  %0 = "rlx.narrow"(%a) {axis = 1 : i64, start = 3 : i64, len = 4 : i64} : (tensor<4x5xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @narrow_negative_start(%a: tensor<4x5xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'rlx.narrow' op start -2 must be non-negative}}
  %0 = "rlx.narrow"(%a) {axis = -1 : i64, start = -2 : i64, len = 2 : i64} : (tensor<4x5xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @narrow_negative_len(%a: tensor<4x5xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'rlx.narrow' op len -1 must be non-negative}}
  %0 = "rlx.narrow"(%a) {axis = 1 : i64, start = 0 : i64, len = -1 : i64} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

func.func @narrow_axis(%a: tensor<4x5xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'rlx.narrow' op axis -3 is out of range for rank 2 input [4, 5]}}
  %0 = "rlx.narrow"(%a) {axis = -3 : i64, start = 0 : i64, len = 1 : i64} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

func.func @narrow_float_start(%a: tensor<4x5xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{expected base attribute 'builtin.integer' but got 'builtin.float'}}
  %0 = "rlx.narrow"(%a) {axis = 1 : i64, start = 1.0 : f32, len = 2 : i64} : (tensor<4x5xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @narrow_wrong_result(%a: tensor<4x5xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'rlx.narrow' op result type tensor<4x3xf32> does not match the inferred type tensor<4x2xf32>}}
  %0 = "rlx.narrow"(%a) {axis = 1 : i64, start = 1 : i64, len = 2 : i64} : (tensor<4x5xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @concat_one_input(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{op expects exactly 2 operands, but got 1}}
  %0 = "rlx.concat"(%a) {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'rlx.concat' op axis 2 is out of range for rank 2 lhs [2, 3]}}
  %0 = "rlx.concat"(%a, %b) {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @concat_wrong_result(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'rlx.concat' op result type tensor<4x3xf32> does not match the inferred type tensor<2x6xf32>}}
  %0 = "rlx.concat"(%a, %b) {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @concat_missing_axis(%a: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'rlx.concat' op attribute "axis" is expected but not provided}}
  %0 = "rlx.concat"(%a, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @concat_other_dims(%a: tensor<2x3xf32>, %b: tensor<3x1xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'rlx.concat' op rhs [3, 1] differs from lhs [2, 3] in dimension 0, which is not the concatenation axis 1}}
  %0 = "rlx.concat"(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x1xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @expand_incompatible(%a: tensor<2x1xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'rlx.expand' op cannot expand [2, 1] to [3, 4]: input dimension 0 has size 2, target size 3 (only size-1 dimensions stretch)}}
  %0 = "rlx.expand"(%a) {shape = array<i64: 3, 4>} : (tensor<2x1xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @expand_lower_rank(%a: tensor<2x1xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.expand' op cannot expand rank 2 input [2, 1] to the lower rank 1 shape [2]}}
  %0 = "rlx.expand"(%a) {shape = array<i64: 2>} : (tensor<2x1xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @expand_minus_one(%a: tensor<2x1xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx.expand' op target shape [-1, 3] has a negative dimension}}
  %0 = "rlx.expand"(%a) {shape = array<i64: -1, 3>} : (tensor<2x1xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @expand_shape_kind(%a: tensor<2x1xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{expected base attribute 'builtin.dense_array' but got 'builtin.array'}}
  %0 = "rlx.expand"(%a) {shape = [2, 3]} : (tensor<2x1xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @gather_float_indices(%t: tensor<5x3xf32>, %i: tensor<4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'rlx.gather' op operand 'indices' must be a ranked tensor of i32 or i64, but got tensor<4xf32>}}
  %0 = "rlx.gather"(%t, %i) {axis = 0 : i64} : (tensor<5x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @gather_axis(%t: tensor<5x3xf32>, %i: tensor<4xi32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'rlx.gather' op axis 2 is out of range for rank 2 table [5, 3]}}
  %0 = "rlx.gather"(%t, %i) {axis = 2 : i64} : (tensor<5x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @gather_empty_axis(%t: tensor<0x3xf32>, %i: tensor<4xi32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'rlx.gather' op cannot gather along the empty axis 0 of table [0, 3]}}
  %0 = "rlx.gather"(%t, %i) {axis = 0 : i64} : (tensor<0x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @gather_wrong_result(%t: tensor<5x3xf32>, %i: tensor<2x4xi64>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{'rlx.gather' op result type tensor<4x2x3xf32> does not match the inferred type tensor<2x4x3xf32>}}
  %0 = "rlx.gather"(%t, %i) {axis = 0 : i64} : (tensor<5x3xf32>, tensor<2x4xi64>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}
