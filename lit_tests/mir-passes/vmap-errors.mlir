// rlx-vmap's errors are located at the offending op (or the function) and name it.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(rlx-vmap{batched=w size=4})'

// A batched norm scale: the rule takes a batched x only.
func.func @gamma(%x: tensor<3x5xf32> {rlx.name = "x"}, %w: tensor<5xf32> {rlx.name = "w"}) -> tensor<3x5xf32> {
  %z = "rlx.constant"() {value = dense<0.0> : tensor<5xf32>} : () -> tensor<5xf32>
  // expected-error @+1 {{'rlx.rms_norm' has no batching rule for a batched gamma / beta}}
  %0 = "rlx.rms_norm"(%x, %w, %z) {axis = -1 : i64, eps = 1.0e-5 : f32} : (tensor<3x5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// An op without a batching rule.
func.func @topk(%w: tensor<8xf32> {rlx.name = "w"}) -> tensor<2xi64> {
  // expected-error @+1 {{'rlx.topk' has no batching rule and reads a batched value (argument 'w')}}
  %0 = "rlx.topk"(%w) {k = 2 : i64} : (tensor<8xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// expected-error @+1 {{batched 'w' is not an argument of @no_w (arguments: x)}}
func.func @no_w(%x: tensor<4xf32> {rlx.name = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
