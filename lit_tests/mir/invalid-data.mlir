// Verifier errors of constants, casts, comparisons, select and argument attributes.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @constant_type(%a: tensor<2xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'rlx.constant' op result type tensor<3xf32> does not match the inferred type tensor<2xf32>}}
  %0 = "rlx.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @constant_not_dense() -> tensor<2xf32> {
  // expected-error @+1 {{expected base attribute 'builtin.dense_int_or_fp_elements' but got 'builtin.integer'}}
  %0 = "rlx.constant"() {value = 3 : i64} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @cast_shape(%a: tensor<2x3xf32>) -> tensor<6xi32> {
  // expected-error @+1 {{'rlx.cast' op changes the shape from [2, 3] to [6]}}
  %0 = "rlx.cast"(%a) : (tensor<2x3xf32>) -> tensor<6xi32>
  return %0 : tensor<6xi32>
}

// -----

func.func @cast_target(%a: tensor<2xf32>) -> tensor<2xi16> {
  // expected-error @+1 {{'rlx.cast' op result #0 ('result') must be a ranked tensor of f32, f16, bf16, f8E4M3FN, i8, ui8, i32, i64 or i1, but got tensor<2xi16>}}
  %0 = "rlx.cast"(%a) : (tensor<2xf32>) -> tensor<2xi16>
  return %0 : tensor<2xi16>
}

// -----

func.func @compare_predicate(%a: tensor<2xf32>) -> tensor<2xi1> {
  // expected-error @+1 {{'rlx.compare' op attribute 'predicate' must be one of 'eq', 'ne', 'lt', 'le', 'gt', 'ge', but got 'less'}}
  %0 = "rlx.compare"(%a, %a) {predicate = "less"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @compare_types(%a: tensor<2xf32>, %b: tensor<2xi32>) -> tensor<2xi1> {
  // expected-error @+1 {{'rlx.compare' op requires operands of one element type, got f32, i32}}
  %0 = "rlx.compare"(%a, %b) {predicate = "eq"} : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @compare_result(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.compare' op result #0 ('result') must be a ranked tensor of i1, but got tensor<2xf32>}}
  %0 = "rlx.compare"(%a, %a) {predicate = "eq"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @where_condition(%c: tensor<2xf32>, %a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.where' op operand 'condition' must be a ranked tensor of i1, but got tensor<2xf32>}}
  %0 = "rlx.where"(%c, %a, %a) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @where_broadcast(%c: tensor<3xi1>, %a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'rlx.where' op operand shapes [3] and [2] and [2] do not broadcast}}
  %0 = "rlx.where"(%c, %a, %a) : (tensor<3xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// expected-error @+1 {{argument #1: 'rlx.name' "x" is already the name of argument #0}}
func.func @duplicate_names(%x: tensor<2xf32> {rlx.name = "x"}, %y: tensor<2xf32> {rlx.name = "x"}) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{argument #0: 'rlx.param' is a unit attribute, got 1 : i64}}
func.func @param_not_unit(%w: tensor<2xf32> {rlx.param = 1}) -> tensor<2xf32> {
  return %w : tensor<2xf32>
}
