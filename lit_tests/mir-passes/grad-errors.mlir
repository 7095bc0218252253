// rlx-grad's errors are located at the offending op (or the function) and name it.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(rlx-grad{wrt=x})'

// An argmax on the only path from x to the loss: no derivative, never a silent zero.
func.func @argmax_path(%x: tensor<4x8xf32> {rlx.name = "x"}) -> tensor<f32> {
  // expected-error @+1 {{'rlx.argmax' has no derivative: its i64 result lies on a path from 'x' to the loss (through 'rlx.cast')}}
  %i = "rlx.argmax"(%x) {axis = 1 : i64, keep_dim = false} : (tensor<4x8xf32>) -> tensor<4xi64>
  %f = "rlx.cast"(%i) : (tensor<4xi64>) -> tensor<4xf32>
  %s = "rlx.reduce"(%f) {axes = array<i64: 0>, keep_dim = false, kind = "sum"} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A comparison turned into a number.
func.func @compare_path(%x: tensor<4xf32> {rlx.name = "x"}, %y: tensor<4xf32> {rlx.name = "y"}) -> tensor<f32> {
  // expected-error @+1 {{'rlx.compare' has no derivative: its i1 result lies on a path from 'x' to the loss}}
  %c = "rlx.compare"(%x, %y) {predicate = "gt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %f = "rlx.cast"(%c) : (tensor<4xi1>) -> tensor<4xf32>
  %s = "rlx.reduce"(%f) {axes = array<i64: 0>, keep_dim = false, kind = "sum"} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// top-k indices used only to select rows: x reaches the loss only through them.
func.func @topk_indices(%x: tensor<8xf32> {rlx.name = "x"}, %t: tensor<8x2xf32> {rlx.name = "t"}) -> tensor<f32> {
  // expected-error @+1 {{'rlx.topk' has no derivative and lies on every path from 'x' to the loss}}
  %i = "rlx.topk"(%x) {k = 2 : i64} : (tensor<8xf32>) -> tensor<2xi64>
  %g = "rlx.gather"(%t, %i) {axis = 0 : i64} : (tensor<8x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  %s = "rlx.reduce"(%g) {axes = array<i64: 0, 1>, keep_dim = false, kind = "sum"} : (tensor<2x2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A reduce kind without a rule.
func.func @prod(%x: tensor<4xf32> {rlx.name = "x"}) -> tensor<f32> {
  // expected-error @+1 {{'rlx.reduce' has no VJP rule for reduce kind 'prod'}}
  %s = "rlx.reduce"(%x) {axes = array<i64: 0>, keep_dim = false, kind = "prod"} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// The loss must be one element.
func.func @vector_loss(%x: tensor<4xf32> {rlx.name = "x"}) -> tensor<4xf32> {
  // expected-error @+1 {{the loss must be a float scalar (one element), got [4] f32}}
  %y = "rlx.tanh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// wrt names an argument that does not exist.
// expected-error @+1 {{wrt 'x' is not an argument of @no_x (arguments: a, b)}}
func.func @no_x(%a: tensor<4xf32> {rlx.name = "a"}, %b: tensor<4xf32> {rlx.name = "b"}) -> tensor<f32> {
  %y = "rlx.mul"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = "rlx.reduce"(%y) {axes = array<i64: 0>, keep_dim = false, kind = "sum"} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A while loop without max_iterations cannot be unrolled.
func.func private @cond(%c: tensor<4xf32>) -> tensor<i1> {
  %t = "rlx.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
  return %t : tensor<i1>
}
func.func private @body(%c: tensor<4xf32>) -> tensor<4xf32> {
  return %c : tensor<4xf32>
}
func.func @unbounded(%x: tensor<4xf32> {rlx.name = "x"}) -> tensor<f32> {
  // expected-error @+1 {{'rlx.while' has no VJP rule for a loop without max_iterations (unbounded)}}
  %w = "rlx.while"(%x) {cond = @cond, body = @body} : (tensor<4xf32>) -> tensor<4xf32>
  %s = "rlx.reduce"(%w) {axes = array<i64: 0>, keep_dim = false, kind = "sum"} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// The gradient function's name is taken.
// expected-error @+1 {{rlx-grad: the module already has a function @g_grad}}
func.func @g(%x: tensor<4xf32> {rlx.name = "x"}) -> tensor<f32> {
  %s = "rlx.reduce"(%x) {axes = array<i64: 0>, keep_dim = false, kind = "sum"} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
func.func private @g_grad(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
