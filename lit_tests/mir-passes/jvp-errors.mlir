// rlx-jvp's errors are located at the offending op (or the function) and name it.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(rlx-jvp{wrt=x})'

// An argmax on the path from x to a result: no derivative, never a silent zero.
func.func @argmax_path(%x: tensor<4x8xf32> {rlx.name = "x"}) -> tensor<4xf32> {
  // expected-error @+1 {{'rlx.argmax' has no derivative (no JVP or VJP rule) and lies on a path from 'x' to an output}}
  %i = "rlx.argmax"(%x) {axis = 1 : i64, keep_dim = false} : (tensor<4x8xf32>) -> tensor<4xi64>
  %f = "rlx.cast"(%i) : (tensor<4xi64>) -> tensor<4xf32>
  return %f : tensor<4xf32>
}

// -----

// top-k indices used only to select rows: x reaches the result only through them.
func.func @topk_indices(%x: tensor<8xf32> {rlx.name = "x"}, %t: tensor<8x2xf32> {rlx.name = "t"}) -> tensor<2x2xf32> {
  // expected-error @+1 {{'rlx.topk' has no derivative and lies on every path from 'x' to output #0}}
  %i = "rlx.topk"(%x) {k = 2 : i64} : (tensor<8xf32>) -> tensor<2xi64>
  %g = "rlx.gather"(%t, %i) {axis = 0 : i64} : (tensor<8x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  return %g : tensor<2x2xf32>
}

// -----

// expected-error @+1 {{wrt 'x' is not an argument of @no_x (arguments: y)}}
func.func @no_x(%y: tensor<4xf32> {rlx.name = "y"}) -> tensor<4xf32> {
  return %y : tensor<4xf32>
}

// -----

// An integer argument has no tangent.
// expected-error @+1 {{cannot differentiate with respect to 'x': its element type i64 is not a float}}
func.func @integer(%x: tensor<4xi64> {rlx.name = "x"}) -> tensor<4xi64> {
  return %x : tensor<4xi64>
}
