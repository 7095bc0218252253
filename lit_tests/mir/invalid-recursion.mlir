// A function may not run itself, directly or through other functions: func.call and the
// bodies of rlx.scan / if / while / custom_fn (private functions named by attribute) form
// the call graph, and a cycle in it is an error at the op that closes it (such programs
// used to verify, compile, and crash at run time).
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

// A scan body that scans itself.
func.func private @step(%c: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.scan' op body @step closes the call cycle @step -> @step: recursion (through func.call or scan/if/while/custom_fn bodies) is not supported}}
  %r = "rlx.scan"(%c) {body = @step, length = 3, save_trajectory = false, num_checkpoints = 0, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
func.func @scan_body_scans_itself(%i: tensor<2xf32>) -> tensor<2xf32> {
  %r = "rlx.scan"(%i) {body = @step, length = 3, save_trajectory = false, num_checkpoints = 0, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// A function that calls itself.
func.func @self_call(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'func.call' op callee @self_call closes the call cycle @self_call -> @self_call}}
  %r = func.call @self_call(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// Mutual recursion through func.call, reached from an entry point.
func.func @entry(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = func.call @ping(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
func.func private @ping(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = func.call @pong(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
func.func private @pong(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'func.call' op callee @ping closes the call cycle @ping -> @pong -> @ping}}
  %r = func.call @ping(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// The cycle passes through an if branch, a custom_fn and a while condition.
func.func private @cond(%x: tensor<2xf32>) -> tensor<i1> {
  %y = "rlx.custom_fn"(%x) {fwd = @outer} : (tensor<2xf32>) -> tensor<2xf32>
  %0 = "rlx.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
  return %0 : tensor<i1>
}
func.func private @twice(%x: tensor<2xf32>) -> tensor<2xf32> {
  // The search starts at the first function, @cond: the while closes the cycle.
  // expected-error @+1 {{'rlx.while' op cond @cond closes the call cycle @cond -> @outer -> @twice -> @cond}}
  %r = "rlx.while"(%x) {cond = @cond, body = @twice_body} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
func.func private @twice_body(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @outer(%x: tensor<2xf32>) -> tensor<2xf32> {
  %p = "rlx.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
  %r = "rlx.if"(%p, %x) {then_branch = @twice, else_branch = @twice_body, operandSegmentSizes = array<i32: 1, 1>} : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// Shared callees are no cycle: @leaf is reached twice, through a scan body and a call;
// a custom_fn's vjp naming its caller is metadata, never called.
func.func private @leaf(%c: tensor<2xf32>) -> tensor<2xf32> {
  return %c : tensor<2xf32>
}
func.func private @mid(%c: tensor<2xf32>) -> tensor<2xf32> {
  %r = func.call @leaf(%c) : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
func.func @diamond(%i: tensor<2xf32>) -> tensor<2xf32> {
  %a = "rlx.scan"(%i) {body = @mid, length = 2, save_trajectory = false, num_checkpoints = 0, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2xf32>) -> tensor<2xf32>
  %b = func.call @leaf(%a) : (tensor<2xf32>) -> tensor<2xf32>
  %c = "rlx.custom_fn"(%b) {fwd = @mid, vjp = @diamond} : (tensor<2xf32>) -> tensor<2xf32>
  return %c : tensor<2xf32>
}
