// rlx_hir.dequant_linear checks the weight's bytes against the scheme, with a diagnostic at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @bytes(%x: tensor<2x256xf32>, %w: tensor<3x176xui8>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx_hir.dequant_linear' op scheme 'q6_k' needs 210 bytes per weight row for K = 256 (1 block of 210 bytes), but w has 176}}
  %0 = "rlx_hir.dequant_linear"(%x, %w) {scheme = "q6_k", activation = "none"} : (tensor<2x256xf32>, tensor<3x176xui8>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @bias(%x: tensor<2x256xf32>, %w: tensor<3x176xui8>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx_hir.dequant_linear' op bias must have shape [N] = [3], got [4]}}
  %0 = "rlx_hir.dequant_linear"(%x, %w, %b) {scheme = "q5_k", activation = "none"} : (tensor<2x256xf32>, tensor<3x176xui8>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @weight_f32(%x: tensor<2x256xf32>, %w: tensor<3x176xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx_hir.dequant_linear' op operand 'w' must be a ranked tensor of ui8, but got tensor<3x176xf32>}}
  %0 = "rlx_hir.dequant_linear"(%x, %w) {scheme = "q5_k", activation = "none"} : (tensor<2x256xf32>, tensor<3x176xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @side_and_bias(%x: tensor<2x64xf32>, %w: tensor<64x6xi8>, %s: tensor<2x6xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'rlx_hir.dequant_linear' op scheme 'int8/32' takes its 1 side tensor after w and no bias (the operands after w share one type); add the bias with rlx.add}}
  %0 = "rlx_hir.dequant_linear"(%x, %w, %s, %s) {scheme = "int8/32", activation = "none"} : (tensor<2x64xf32>, tensor<64x6xi8>, tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @missing_zp(%x: tensor<2x64xf32>, %w: tensor<64x6xui8>, %s: tensor<2x6xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'rlx_hir.dequant_linear' op scheme 'int8_asym/32' takes 2 tensors after w (scale [K / 32, N] f32, zp [K / 32, N] f32), but 1 was given}}
  %0 = "rlx_hir.dequant_linear"(%x, %w, %s) {scheme = "int8_asym/32", activation = "none"} : (tensor<2x64xf32>, tensor<64x6xui8>, tensor<2x6xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}
