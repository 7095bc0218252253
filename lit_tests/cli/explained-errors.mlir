// Errors that used to mislead: each names the op, the attribute, or the pass to run instead.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @misspelled(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{unregistered operation 'rlx.transpos' found in dialect ('rlx') that does not allow unknown operations; did you mean 'rlx.transpose'?}}
  %0 = "rlx.transpos"(%a) {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @hir_misspelled(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{unregistered operation 'rlx_hir.lienar' found in dialect ('rlx_hir') that does not allow unknown operations; did you mean 'rlx_hir.linear'?}}
  %0 = "rlx_hir.lienar"(%x, %w) : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// IRDL only says "expected base attribute 'builtin.dense_array' but got 'builtin.integer'".
func.func @wrong_attribute_kind(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'rlx.transpose' op attribute 'perm' must be a dense i64 array attribute, but got 3 : i64}}
  %0 = "rlx.transpose"(%a) {perm = 3 : i64} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @wrong_attribute_kind_string(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx.cumsum' op attribute 'axis' must be a 64-bit integer attribute, but got "last"}}
  %0 = "rlx.cumsum"(%x) {axis = "last", exclusive = false} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
