// rlx.scan, rlx.if, rlx.while and rlx.custom_fn reject missing bodies, bodies
// of the wrong signature and bad attributes with a diagnostic at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @scan_missing_body(%i: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.scan' op body @missing does not name a func.func in the enclosing module}}
  %r = "rlx.scan"(%i) {body = @missing, length = 3, save_trajectory = false, num_checkpoints = 0, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func private @s(%c: tensor<3xf32>) -> tensor<3xf32> {
  return %c : tensor<3xf32>
}
func.func @scan_wrong_carry(%i: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.scan' op body @s has type (tensor<3xf32>) -> (tensor<3xf32>), expected (tensor<2xf32>) -> (tensor<2xf32>)}}
  %r = "rlx.scan"(%i) {body = @s, length = 3, save_trajectory = false, num_checkpoints = 0, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func private @s(%c: tensor<2xf32>, %x: tensor<4x2xf32>) -> tensor<2xf32> {
  return %c : tensor<2xf32>
}
func.func @scan_body_takes_whole_xs(%i: tensor<2xf32>, %xs: tensor<4x2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.scan' op body @s has type (tensor<2xf32>, tensor<4x2xf32>) -> (tensor<2xf32>), expected (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>)}}
  %r = "rlx.scan"(%i, %xs) {body = @s, length = 4, save_trajectory = false, num_checkpoints = 0, operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<2xf32>, tensor<4x2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func private @s(%c: tensor<2xf32>, %x: tensor<2xf32>) -> tensor<2xf32> {
  return %c : tensor<2xf32>
}
func.func @scan_xs_length(%i: tensor<2xf32>, %xs: tensor<4x2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.scan' op xs has shape [4, 2], expected a leading axis of size length = 5}}
  %r = "rlx.scan"(%i, %xs) {body = @s, length = 5, save_trajectory = false, num_checkpoints = 0, operandSegmentSizes = array<i32: 1, 0, 1>} : (tensor<2xf32>, tensor<4x2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func private @s(%c: tensor<2xf32>) -> tensor<2xf32> {
  return %c : tensor<2xf32>
}
func.func @scan_length_zero(%i: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.scan' op length must be positive, got 0}}
  %r = "rlx.scan"(%i) {body = @s, length = 0, save_trajectory = false, num_checkpoints = 0, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func private @s(%c: tensor<2xf32>) -> tensor<2xf32> {
  return %c : tensor<2xf32>
}
func.func @scan_negative_checkpoints(%i: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.scan' op num_checkpoints must be non-negative, got -1}}
  %r = "rlx.scan"(%i) {body = @s, length = 2, save_trajectory = false, num_checkpoints = -1, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func private @s(%c: tensor<2xf32>) -> tensor<2xf32> {
  return %c : tensor<2xf32>
}
func.func @scan_trajectory_type(%i: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.scan' op result type tensor<2xf32> does not match the inferred type tensor<3x2xf32>}}
  %r = "rlx.scan"(%i) {body = @s, length = 3, save_trajectory = true, num_checkpoints = 0, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func @scan_body_not_symbol(%i: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{expected base attribute 'builtin.symbol_ref' but got 'builtin.string'}}
  %r = "rlx.scan"(%i) {body = "s", length = 3, save_trajectory = false, num_checkpoints = 0, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func private @a(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @if_pred_not_scalar(%p: tensor<2xi1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.if' op pred must be an i1 tensor with one element, got tensor<2xi1>}}
  %r = "rlx.if"(%p, %x) {then_branch = @a, else_branch = @a, operandSegmentSizes = array<i32: 1, 1>} : (tensor<2xi1>, tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func private @a(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func private @b(%x: tensor<2xf32>) -> tensor<3xf32> {
  %0 = "rlx.concat"(%x, %x) {axis = 0} : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
  %1 = "rlx.narrow"(%0) {axis = 0, start = 0, len = 3} : (tensor<4xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}
func.func @if_else_result(%p: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.if' op else_branch @b has type (tensor<2xf32>) -> (tensor<3xf32>), expected (tensor<2xf32>) -> (tensor<2xf32>)}}
  %r = "rlx.if"(%p, %x) {then_branch = @a, else_branch = @b, operandSegmentSizes = array<i32: 1, 1>} : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func @if_missing_then(%p: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.if' op then_branch @nope does not name a func.func in the enclosing module}}
  %r = "rlx.if"(%p, %x) {then_branch = @nope, else_branch = @nope, operandSegmentSizes = array<i32: 1, 1>} : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func private @c(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @while_cond_not_bool(%i: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.while' op cond @c must return one i1 tensor with one element, got (tensor<2xf32>)}}
  %r = "rlx.while"(%i) {cond = @c, body = @c} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func private @c(%x: tensor<2xf32>) -> tensor<i1> {
  %0 = "rlx.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
  return %0 : tensor<i1>
}
func.func private @b(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @while_negative_bound(%i: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.while' op max_iterations must be non-negative, got -2}}
  %r = "rlx.while"(%i) {cond = @c, body = @b, max_iterations = -2} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func private @c(%x: tensor<2xf32>) -> tensor<i1> {
  %0 = "rlx.constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
  return %0 : tensor<i1>
}
func.func @while_missing_body(%i: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.while' op body @gone does not name a func.func in the enclosing module}}
  %r = "rlx.while"(%i) {cond = @c, body = @gone} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func private @fwd(%x: tensor<2xf32>) -> tensor<2xf16> {
  %0 = "rlx.cast"(%x) {dtype = "f16"} : (tensor<2xf32>) -> tensor<2xf16>
  return %0 : tensor<2xf16>
}
func.func @custom_result_type(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.custom_fn' op fwd @fwd has type (tensor<2xf32>) -> (tensor<2xf16>), expected (tensor<2xf32>) -> (tensor<2xf32>)}}
  %r = "rlx.custom_fn"(%x) {fwd = @fwd} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func private @fwd(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
func.func @custom_missing_vjp(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.custom_fn' op vjp @no_vjp does not name a func.func in the enclosing module}}
  %r = "rlx.custom_fn"(%x) {fwd = @fwd, vjp = @no_vjp} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}
