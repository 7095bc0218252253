// A dynamic function is verified at probe sizes: an op that is invalid whatever
// the sizes is an error at the op, with the sizes written as the symbols.
// Malformed symbol attributes are errors too.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @conflicting_symbols(%x: tensor<?x?xf32> {rlx.dims = ["BATCH", "SEQ"]},
                               %y: tensor<?x?xf32> {rlx.dims = ["SEQ", "BATCH"]}) -> tensor<?x?xf32> {
  // expected-error @+1 {{'rlx.add' op operand shapes [BATCH, SEQ] and [SEQ, BATCH] do not broadcast}}
  %0 = "rlx.add"(%x, %y) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @conflicting_contraction(%x: tensor<?x?xf32> {rlx.dims = ["SEQ", "K"]},
                                   %w: tensor<?x4xf32> {rlx.dims = ["N", 4]}) -> tensor<?x4xf32> {
  // expected-error @+1 {{'rlx.matmul' op contracting dimensions differ: lhs [SEQ, K] has K = K, rhs [N, 4] has K = N}}
  %0 = "rlx.matmul"(%x, %w) : (tensor<?x?xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @reshape_drops_a_symbol(%x: tensor<?x?x8xf32> {rlx.dims = ["BATCH", "SEQ", 8]}) -> tensor<?x8xf32> {
  // expected-error @+1 {{'rlx.reshape' op cannot reshape [BATCH, SEQ, 8]}}
  %0 = "rlx.reshape"(%x) {rlx.dims = ["SEQ", 8]} : (tensor<?x?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @static_type_for_a_symbol(%x: tensor<?x8xf32> {rlx.dims = ["SEQ", 8]}) -> tensor<7x8xf32> {
  // expected-error @+1 {{'rlx.relu' op result #0 has type tensor<7x8xf32>, but its shape is [SEQ, 8] (type tensor<?x8xf32>)}}
  %0 = "rlx.relu"(%x) : (tensor<?x8xf32>) -> tensor<7x8xf32>
  return %0 : tensor<7x8xf32>
}

// -----

func.func @annotation_disagrees(%x: tensor<?x8xf32> {rlx.dims = ["SEQ", 8]}) -> tensor<?x8xf32> {
  // expected-error @+1 {{'rlx.relu' op result shape [SEQ, 8] differs from its 'rlx.dims' [SEQ + 1, 8]}}
  %0 = "rlx.relu"(%x) {rlx.dims = ["SEQ + 1", 8]} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @reshape_without_dims(%x: tensor<?x8xf32> {rlx.dims = ["SEQ", 8]}) -> tensor<?xf32> {
  // expected-error @+1 {{'rlx.reshape' op result #0 is dynamic, but the op has no shape inference: give it 'rlx.dims'}}
  %0 = "rlx.reshape"(%x) : (tensor<?x8xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @sym_names_no_attribute(%x: tensor<?x8xf32> {rlx.dims = ["SEQ", 8]}) -> tensor<?x8xf32> {
  // expected-error @+1 {{'rlx.relu' op 'rlx.sym' names 'len', which is not an attribute of the op}}
  %0 = "rlx.relu"(%x) {rlx.sym = {len = "SEQ"}} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// expected-error @+1 {{argument #0: dimension 1 of tensor<?x8xf32> must be 9 for 'rlx.dims' [SEQ, 9]}}
func.func @dims_disagree_with_type(%x: tensor<?x8xf32> {rlx.dims = ["SEQ", 9]}) -> tensor<?x8xf32> {
  return %x : tensor<?x8xf32>
}

// -----

// expected-error @+1 {{argument #0 'rlx.dims' [SEQ] has rank 1, but its type tensor<?x8xf32> has rank 2}}
func.func @dims_rank(%x: tensor<?x8xf32> {rlx.dims = ["SEQ"]}) -> tensor<?x8xf32> {
  return %x : tensor<?x8xf32>
}

// -----

// expected-error @+1 {{argument #0 'rlx.dims': cannot parse dimension 'SEQ +': it ends early}}
func.func @dims_expression(%x: tensor<?x8xf32> {rlx.dims = ["SEQ +", 8]}) -> tensor<?x8xf32> {
  return %x : tensor<?x8xf32>
}

// -----

// expected-error @+1 {{argument #1 has dynamic dimensions but no 'rlx.dims' naming them}}
func.func @unnamed_dynamic(%x: tensor<?x8xf32> {rlx.dims = ["SEQ", 8]}, %y: tensor<?x8xf32>) -> tensor<?x8xf32> {
  return %x : tensor<?x8xf32>
}

// -----

func.func @sym_not_a_dictionary(%x: tensor<?x8xf32> {rlx.dims = ["SEQ", 8]}) -> tensor<?x8xf32> {
  // expected-error @+1 {{'rlx.relu' op 'rlx.sym' must be a dictionary from attribute names to expressions, got 3 : i64}}
  %0 = "rlx.relu"(%x) {rlx.sym = 3} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @sym_kind(%x: tensor<?xf32> {rlx.dims = ["SEQ"]}, %w: tensor<8x4xf32>) -> tensor<?x8x4xf32> {
  // expected-error @+1 {{'rlx.expand' op 'rlx.sym' entry 'shape' does not fit the attribute's kind}}
  %0 = "rlx.expand"(%w) {shape = array<i64: -1, 8, 4>, rlx.sym = {shape = "SEQ"}} : (tensor<8x4xf32>) -> tensor<?x8x4xf32>
  return %0 : tensor<?x8x4xf32>
}

// -----

func.func @division_by_zero(%x: tensor<?xf32> {rlx.dims = ["SEQ"]}, %t: tensor<16x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'rlx.narrow' op division by zero in 'SEQ//(SEQ - SEQ)'}}
  %0 = "rlx.narrow"(%t) {axis = 0 : i64, start = 0 : i64, len = -1 : i64, rlx.sym = {len = "SEQ // (SEQ - SEQ)"}} : (tensor<16x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
