// rlx.lora_matmul checks K, r and N of x [..., M, K], w [K, N], a [K, r], b [r, N], naming the
// dimension that differs, with a diagnostic at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @k_of_w(%x: tensor<3x64xf32>, %w: tensor<48x32xf32>, %a: tensor<64x4xf32>, %b: tensor<4x32xf32>) -> tensor<3x32xf32> {
  // expected-error @+1 {{'rlx.lora_matmul' op contracting dimensions differ: x [3, 64] has K = 64, w [48, 32] has K = 48}}
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 1.0 : f32} : (tensor<3x64xf32>, tensor<48x32xf32>, tensor<64x4xf32>, tensor<4x32xf32>) -> tensor<3x32xf32>
  return %0 : tensor<3x32xf32>
}

// -----

func.func @k_of_a(%x: tensor<3x64xf32>, %w: tensor<64x32xf32>, %a: tensor<63x4xf32>, %b: tensor<4x32xf32>) -> tensor<3x32xf32> {
  // expected-error @+1 {{'rlx.lora_matmul' op contracting dimensions differ: x [3, 64] has K = 64, a [63, 4] has K = 63}}
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 1.0 : f32} : (tensor<3x64xf32>, tensor<64x32xf32>, tensor<63x4xf32>, tensor<4x32xf32>) -> tensor<3x32xf32>
  return %0 : tensor<3x32xf32>
}

// -----

func.func @rank(%x: tensor<3x64xf32>, %w: tensor<64x32xf32>, %a: tensor<64x4xf32>, %b: tensor<8x32xf32>) -> tensor<3x32xf32> {
  // expected-error @+1 {{'rlx.lora_matmul' op adapter ranks differ: a [64, 4] has r = 4, b [8, 32] has r = 8}}
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 1.0 : f32} : (tensor<3x64xf32>, tensor<64x32xf32>, tensor<64x4xf32>, tensor<8x32xf32>) -> tensor<3x32xf32>
  return %0 : tensor<3x32xf32>
}

// -----

func.func @n(%x: tensor<3x64xf32>, %w: tensor<64x32xf32>, %a: tensor<64x4xf32>, %b: tensor<4x31xf32>) -> tensor<3x32xf32> {
  // expected-error @+1 {{'rlx.lora_matmul' op output dimensions differ: w [64, 32] has N = 32, b [4, 31] has N = 31}}
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 1.0 : f32} : (tensor<3x64xf32>, tensor<64x32xf32>, tensor<64x4xf32>, tensor<4x31xf32>) -> tensor<3x32xf32>
  return %0 : tensor<3x32xf32>
}

// -----

func.func @batched_weight(%x: tensor<3x64xf32>, %w: tensor<2x64x32xf32>, %a: tensor<64x4xf32>, %b: tensor<4x32xf32>) -> tensor<3x32xf32> {
  // expected-error @+1 {{'rlx.lora_matmul' op requires w of rank 2 ([K, N]), got [2, 64, 32]}}
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 1.0 : f32} : (tensor<3x64xf32>, tensor<2x64x32xf32>, tensor<64x4xf32>, tensor<4x32xf32>) -> tensor<3x32xf32>
  return %0 : tensor<3x32xf32>
}

// -----

func.func @x_rank(%x: tensor<64xf32>, %w: tensor<64x32xf32>, %a: tensor<64x4xf32>, %b: tensor<4x32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'rlx.lora_matmul' op requires x of rank 2 or more, got [64]}}
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 1.0 : f32} : (tensor<64xf32>, tensor<64x32xf32>, tensor<64x4xf32>, tensor<4x32xf32>) -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @result(%x: tensor<3x64xf32>, %w: tensor<64x32xf32>, %a: tensor<64x4xf32>, %b: tensor<4x32xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'rlx.lora_matmul' op result type tensor<3x4xf32> does not match the inferred type tensor<3x32xf32>}}
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 1.0 : f32} : (tensor<3x64xf32>, tensor<64x32xf32>, tensor<64x4xf32>, tensor<4x32xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @dtypes(%x: tensor<3x64xf32>, %w: tensor<64x32xf32>, %a: tensor<64x4xf16>, %b: tensor<4x32xf32>) -> tensor<3x32xf32> {
  // expected-error @+1 {{'rlx.lora_matmul' op requires operands of one element type, got f32, f32, f16, f32}}
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) {scale = 1.0 : f32} : (tensor<3x64xf32>, tensor<64x32xf32>, tensor<64x4xf16>, tensor<4x32xf32>) -> tensor<3x32xf32>
  return %0 : tensor<3x32xf32>
}

// -----

func.func @scale(%x: tensor<3x64xf32>, %w: tensor<64x32xf32>, %a: tensor<64x4xf32>, %b: tensor<4x32xf32>) -> tensor<3x32xf32> {
  // expected-error @+1 {{'rlx.lora_matmul' op attribute "scale" is expected but not provided}}
  %0 = "rlx.lora_matmul"(%x, %w, %a, %b) : (tensor<3x64xf32>, tensor<64x32xf32>, tensor<64x4xf32>, tensor<4x32xf32>) -> tensor<3x32xf32>
  return %0 : tensor<3x32xf32>
}
