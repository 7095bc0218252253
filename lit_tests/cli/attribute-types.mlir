// Integer and float attributes carry the type dialect/rlx.md documents: a
// "64-bit integer attribute" is i64, a "32-bit float attribute" is f32.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @eps_f64(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx.rms_norm' op attribute 'eps' must be a 32-bit float attribute (f32), but got 1.000000e-05 : f64}}
  %0 = "rlx.rms_norm"(%x, %g, %b) {axis = -1 : i64, eps = 1.0e-05 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @axis_i32(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx.layer_norm' op attribute 'axis' must be a 64-bit integer attribute (i64), but got -1 : i32}}
  %0 = "rlx.layer_norm"(%x, %g, %b) {axis = -1 : i32, eps = 1.0e-05 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @axis_index(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'rlx.softmax' op attribute 'axis' must be a 64-bit integer attribute (i64), but got 1 : index}}
  %0 = "rlx.softmax"(%x) {axis = 1 : index} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @top_p_f16(%x: tensor<2x8xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.sample' op attribute 'top_p' must be a 32-bit float attribute (f32), but got 5.000000e-01 : f16}}
  %0 = "rlx.sample"(%x) {top_k = 0 : i64, top_p = 0.5 : f16, temperature = 1.0 : f32, seed = 0 : i64} : (tensor<2x8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// The documented types verify.
func.func @documented(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "rlx.rms_norm"(%x, %g, %b) {axis = -1 : i64, eps = 1.0e-05 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
