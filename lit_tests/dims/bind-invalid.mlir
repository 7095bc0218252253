// A binding that makes an op invalid is an error at that op, naming the binding.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics --rlx-bind-dims=BATCH=2,SEQ=20

// RoPE rows narrowed from a 16-row table: valid for SEQ <= 16 only.
func.func @too_long(%x: tensor<?x?x4xf32> {rlx.dims = ["BATCH", "SEQ", 4]}, %t: tensor<16x4xf32>) -> tensor<?x?x4xf32> {
  // expected-error @+1 {{'rlx.narrow' op is invalid for BATCH=2, SEQ=20: start 0 + len 20 exceeds dimension 16 of axis 0}}
  %0 = "rlx.narrow"(%t) {axis = 0 : i64, start = 0 : i64, len = -1 : i64, rlx.sym = {len = "SEQ"}} : (tensor<16x4xf32>) -> tensor<?x4xf32>
  %1 = "rlx.add"(%x, %0) : (tensor<?x?x4xf32>, tensor<?x4xf32>) -> tensor<?x?x4xf32>
  return %1 : tensor<?x?x4xf32>
}

// -----

// 16 positions of a 32-row table starting at SEQ: valid for SEQ <= 16 only.
func.func @after_the_prompt(%x: tensor<?x?x4xf32> {rlx.dims = ["BATCH", "SEQ", 4]}, %t: tensor<32x4xf32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{'rlx.narrow' op is invalid for BATCH=2, SEQ=20: start 20 + len 16 exceeds dimension 32 of axis 0}}
  %0 = "rlx.narrow"(%t) {axis = 0 : i64, start = -1 : i64, len = 16 : i64, rlx.sym = {start = "SEQ"}} : (tensor<32x4xf32>) -> tensor<16x4xf32>
  return %0 : tensor<16x4xf32>
}

// -----

// An argument whose size expression is negative for the binding.
// expected-error @+1 {{argument #1: size SEQ - 30 = -10 is negative}}
func.func @negative_size(%x: tensor<?x?x4xf32> {rlx.dims = ["BATCH", "SEQ", 4]}, %pad: tensor<?x4xf32> {rlx.dims = ["SEQ - 30", 4]}) -> tensor<?x4xf32> {
  return %pad : tensor<?x4xf32>
}
