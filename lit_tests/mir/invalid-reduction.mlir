// The verifier rejects ill-formed reductions with a diagnostic at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @reduce_unknown_kind(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.reduce' op attribute 'kind' must be one of 'sum', 'mean', 'max', 'min', 'prod', but got 'median'}}
  %0 = "rlx.reduce"(%a) {kind = "median", axes = array<i64: 1>, keep_dim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_duplicate_axes(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.reduce' op axes [1, -1] name a dimension of [2, 3] more than once}}
  %0 = "rlx.reduce"(%a) {kind = "sum", axes = array<i64: 1, -1>, keep_dim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_axis_range(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.reduce' op axis 2 is out of range for rank 2 input [2, 3]}}
  %0 = "rlx.reduce"(%a) {kind = "max", axes = array<i64: 2>, keep_dim = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_no_axes(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx.reduce' op requires at least one axis to reduce over}}
  %0 = "rlx.reduce"(%a) {kind = "sum", axes = array<i64>, keep_dim = false} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reduce_keep_dim_result(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.reduce' op result type tensor<2xf32> does not match the inferred type tensor<2x1xf32>}}
  %0 = "rlx.reduce"(%a) {kind = "mean", axes = array<i64: 1>, keep_dim = true} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_missing_keep_dim(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.reduce' op attribute "keep_dim" is expected but not provided}}
  %0 = "rlx.reduce"(%a) {kind = "sum", axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_integer(%a: tensor<2x3xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{'rlx.reduce' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<2x3xi32>}}
  %0 = "rlx.reduce"(%a) {kind = "sum", axes = array<i64: 1>, keep_dim = false} : (tensor<2x3xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @softmax_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx.softmax' op axis -3 is out of range for rank 2 input [2, 3]}}
  %0 = "rlx.softmax"(%a) {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @softmax_result(%a: tensor<2x3xf32>) -> tensor<2x3xf16> {
  // expected-error @+1 {{'rlx.softmax' op result type tensor<2x3xf16> does not match the inferred type tensor<2x3xf32>}}
  %0 = "rlx.softmax"(%a) {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// -----

func.func @cumsum_axis(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rlx.cumsum' op axis 1 is out of range for rank 1 input [4]}}
  %0 = "rlx.cumsum"(%a) {axis = 1 : i64, exclusive = false} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @cumsum_exclusive_kind(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rlx.cumsum' op attribute 'exclusive' must be a bool attribute, but got 2 : i64}}
  %0 = "rlx.cumsum"(%a) {axis = 0 : i64, exclusive = 2} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @argmax_result_type(%a: tensor<2x3xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{'rlx.argmax' op result #0 ('result') must be a ranked tensor of i64, but got tensor<2xi32>}}
  %0 = "rlx.argmax"(%a) {axis = 1 : i64, keep_dim = false} : (tensor<2x3xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @argmax_keep_dim(%a: tensor<2x3xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.argmax' op result type tensor<2xi64> does not match the inferred type tensor<2x1xi64>}}
  %0 = "rlx.argmax"(%a) {axis = -1 : i64, keep_dim = true} : (tensor<2x3xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @argmax_empty_axis(%a: tensor<2x0xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.argmax' op cannot take the argmax along the empty axis 1 of [2, 0]}}
  %0 = "rlx.argmax"(%a) {axis = 1 : i64, keep_dim = false} : (tensor<2x0xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}
