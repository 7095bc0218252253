// rlx_hir.lora_linear checks K, r, N and the bias, naming the dimension, with a diagnostic at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @rank(%x: tensor<2x16xf32>, %w: tensor<16x8xf32>, %a: tensor<16x2xf32>, %b: tensor<3x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx_hir.lora_linear' op adapter ranks differ: a [16, 2] has r = 2, b [3, 8] has r = 3}}
  %0 = "rlx_hir.lora_linear"(%x, %w, %a, %b) {scale = 1.0 : f32, activation = "none"} : (tensor<2x16xf32>, tensor<16x8xf32>, tensor<16x2xf32>, tensor<3x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @k(%x: tensor<2x16xf32>, %w: tensor<16x8xf32>, %a: tensor<12x2xf32>, %b: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx_hir.lora_linear' op contracting dimensions differ: x [2, 16] has K = 16, a [12, 2] has K = 12}}
  %0 = "rlx_hir.lora_linear"(%x, %w, %a, %b) {scale = 1.0 : f32, activation = "none"} : (tensor<2x16xf32>, tensor<16x8xf32>, tensor<12x2xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @n(%x: tensor<2x16xf32>, %w: tensor<16x8xf32>, %a: tensor<16x2xf32>, %b: tensor<2x9xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx_hir.lora_linear' op output dimensions differ: w [16, 8] has N = 8, b [2, 9] has N = 9}}
  %0 = "rlx_hir.lora_linear"(%x, %w, %a, %b) {scale = 1.0 : f32, activation = "none"} : (tensor<2x16xf32>, tensor<16x8xf32>, tensor<16x2xf32>, tensor<2x9xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @bias(%x: tensor<2x16xf32>, %w: tensor<16x8xf32>, %a: tensor<16x2xf32>, %b: tensor<2x8xf32>, %bias: tensor<16xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'rlx_hir.lora_linear' op bias must have shape [N] = [8], got [16]}}
  %0 = "rlx_hir.lora_linear"(%x, %w, %a, %b, %bias) {scale = 1.0 : f32, activation = "none"} : (tensor<2x16xf32>, tensor<16x8xf32>, tensor<16x2xf32>, tensor<2x8xf32>, tensor<16xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
