// Every elementwise op rejects operands that do not fit (one case per op; the
// rules are shared, the diagnostics name the op).
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @sub_shapes(%a: tensor<2x3xf32>, %b: tensor<2x2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx.sub' op operand shapes [2, 3] and [2, 2] do not broadcast}}
  %0 = "rlx.sub"(%a, %b) : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @mul_shapes(%a: tensor<2x3xf32>, %b: tensor<2x2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx.mul' op operand shapes [2, 3] and [2, 2] do not broadcast}}
  %0 = "rlx.mul"(%a, %b) : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @div_shapes(%a: tensor<2x3xf32>, %b: tensor<2x2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx.div' op operand shapes [2, 3] and [2, 2] do not broadcast}}
  %0 = "rlx.div"(%a, %b) : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @max_shapes(%a: tensor<2x3xf32>, %b: tensor<2x2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx.max' op operand shapes [2, 3] and [2, 2] do not broadcast}}
  %0 = "rlx.max"(%a, %b) : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @min_shapes(%a: tensor<2x3xf32>, %b: tensor<2x2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx.min' op operand shapes [2, 3] and [2, 2] do not broadcast}}
  %0 = "rlx.min"(%a, %b) : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @gelu_approx_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'rlx.gelu_approx' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<4xi32>}}
  %0 = "rlx.gelu_approx"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @silu_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'rlx.silu' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<4xi32>}}
  %0 = "rlx.silu"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @sigmoid_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'rlx.sigmoid' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<4xi32>}}
  %0 = "rlx.sigmoid"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @tanh_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'rlx.tanh' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<4xi32>}}
  %0 = "rlx.tanh"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @exp_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'rlx.exp' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<4xi32>}}
  %0 = "rlx.exp"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @log_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'rlx.log' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<4xi32>}}
  %0 = "rlx.log"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @sqrt_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'rlx.sqrt' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<4xi32>}}
  %0 = "rlx.sqrt"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @rsqrt_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'rlx.rsqrt' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<4xi32>}}
  %0 = "rlx.rsqrt"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @neg_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'rlx.neg' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<4xi32>}}
  %0 = "rlx.neg"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @abs_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'rlx.abs' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<4xi32>}}
  %0 = "rlx.abs"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @clamp_bounds(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rlx.clamp' op min (2) must not exceed max (1)}}
  %0 = "rlx.clamp"(%x) {min = 2.0 : f32, max = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @clamp_unbounded(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rlx.clamp' op needs at least one of the attributes 'min' and 'max'}}
  %0 = "rlx.clamp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @shift_float(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rlx.shift_right' op operand 'lhs' must be a ranked tensor of i8, ui8, i32 or i64, but got tensor<4xf32>}}
  %0 = "rlx.shift_right"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @and_mixed(%a: tensor<4xui8>, %b: tensor<4xi8>) -> tensor<4xui8> {
  // expected-error @+1 {{'rlx.bitwise_and' op requires operands of one element type, got ui8, i8}}
  %0 = "rlx.bitwise_and"(%a, %b) : (tensor<4xui8>, tensor<4xi8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

func.func @softplus_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'rlx.softplus' op operand 'input' must be a ranked tensor of f32, f16 or bf16, but got tensor<4xi32>}}
  %0 = "rlx.softplus"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
