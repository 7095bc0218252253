// --verify-diagnostics understands MLIR's line anchors: @+N, @-N, @above, @below and
// an absolute @N; a matched expectation consumes one diagnostic.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @relative(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  %0 = "rlx.matmul"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  // expected-error @-1 {{contracting dimensions differ}}
  return %0 : tensor<2x5xf32>
}

// -----

func.func @above(%a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<2xf32> {
  %0 = "rlx.add"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  // expected-error @above {{do not broadcast}}
  return %0 : tensor<2xf32>
}

// -----

func.func @below(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @below {{is not a permutation}}
  %0 = "rlx.transpose"(%a) {perm = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// expected-error @31 {{'rlx.relu' op result type tensor<3xf32> does not match the inferred type tensor<2xf32>}}
func.func @absolute(%a: tensor<2xf32>) -> tensor<3xf32> {
  %0 = "rlx.relu"(%a) : (tensor<2xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
