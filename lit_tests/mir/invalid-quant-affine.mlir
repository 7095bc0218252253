// rlx.dequant_matmul with the side-tensor schemes (int8/B, int8_asym/B, int4/B, nvfp4) checks the
// codes and the side tensors against the scheme, naming it, what it expects and what it was given.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics
func.func @count(%x: tensor<3x64xf32>, %w: tensor<64x6xui8>, %s: tensor<2x6xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op scheme 'int8_asym/32' takes 2 tensors after w (scale [K / 32, N] f32, zp [K / 32, N] f32), but 1 was given}}
  %0 = "rlx.dequant_matmul"(%x, %w, %s) {scheme = "int8_asym/32"} : (tensor<3x64xf32>, tensor<64x6xui8>, tensor<2x6xf32>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @scale_shape(%x: tensor<3x64xf32>, %w: tensor<64x6xi8>, %s: tensor<4x6xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op scheme 'int8/32' needs scale of shape [K / 32, N] = [2, 6], but got [4, 6]}}
  %0 = "rlx.dequant_matmul"(%x, %w, %s) {scheme = "int8/32"} : (tensor<3x64xf32>, tensor<64x6xi8>, tensor<4x6xf32>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @int4_columns(%x: tensor<3x64xf32>, %w: tensor<64x6xui8>, %s: tensor<2x6xf32>) -> tensor<3x12xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op scheme 'int4/32' needs scale of shape [K / 32, N] = [2, 12], but got [2, 6]}}
  %0 = "rlx.dequant_matmul"(%x, %w, %s, %s) {scheme = "int4/32"} : (tensor<3x64xf32>, tensor<64x6xui8>, tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<3x12xf32>
  return %0 : tensor<3x12xf32>
}

// -----

func.func @rows(%x: tensor<3x64xf32>, %w: tensor<32x6xui8>, %s: tensor<2x12xf32>) -> tensor<3x12xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op scheme 'int4/32' needs w [K, N / 2] (two 4-bit codes per byte along N) with K = 64 rows, but w has 32}}
  %0 = "rlx.dequant_matmul"(%x, %w, %s, %s) {scheme = "int4/32"} : (tensor<3x64xf32>, tensor<32x6xui8>, tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<3x12xf32>
  return %0 : tensor<3x12xf32>
}

// -----

func.func @block(%x: tensor<3x48xf32>, %w: tensor<48x6xi8>, %s: tensor<1x6xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op scheme 'int8/32' has blocks of 32 along K, but K = 48 is not a multiple of 32}}
  %0 = "rlx.dequant_matmul"(%x, %w, %s) {scheme = "int8/32"} : (tensor<3x48xf32>, tensor<48x6xi8>, tensor<1x6xf32>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @bad_block(%x: tensor<3x64xf32>, %w: tensor<64x6xi8>, %s: tensor<2x6xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op attribute 'scheme' bad scheme 'int8/0': expected 'int8/B' with B, the block size along K, a positive integer (such as 'int8/32')}}
  %0 = "rlx.dequant_matmul"(%x, %w, %s) {scheme = "int8/0"} : (tensor<3x64xf32>, tensor<64x6xi8>, tensor<2x6xf32>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @unknown(%x: tensor<3x64xf32>, %w: tensor<64x6xi8>) -> tensor<3x6xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op attribute 'scheme' must be one of 'q4_0', 'q8_0', 'q2_k', 'q3_k', 'q4_k', 'q5_k', 'q6_k', but got 'int3/32' (nor is it a side-tensor scheme: 'nvfp4', or 'int8/B', 'int8_asym/B', 'int4/B' with B the block size along K)}}
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "int3/32"} : (tensor<3x64xf32>, tensor<64x6xi8>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @code_dtype(%x: tensor<3x64xf32>, %w: tensor<64x6xui8>, %s: tensor<2x6xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op operand 'w' must be a ranked tensor of i8 for scheme 'int8/32', but got tensor<64x6xui8>}}
  %0 = "rlx.dequant_matmul"(%x, %w, %s) {scheme = "int8/32"} : (tensor<3x64xf32>, tensor<64x6xui8>, tensor<2x6xf32>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @scale_dtype(%x: tensor<3x64xf32>, %w: tensor<64x6xui8>, %s: tensor<4x12xf32>) -> tensor<3x12xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op scheme 'nvfp4' needs scales of element type ui8, but got tensor<4x12xf32>}}
  %0 = "rlx.dequant_matmul"(%x, %w, %s) {scheme = "nvfp4", global_scale = 1.0 : f32} : (tensor<3x64xf32>, tensor<64x6xui8>, tensor<4x12xf32>) -> tensor<3x12xf32>
  return %0 : tensor<3x12xf32>
}

// -----

func.func @no_global(%x: tensor<3x64xf32>, %w: tensor<64x6xui8>, %s: tensor<4x12xui8>) -> tensor<3x12xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op scheme 'nvfp4' requires the attribute 'global_scale' (the f32 scale of the whole weight)}}
  %0 = "rlx.dequant_matmul"(%x, %w, %s) {scheme = "nvfp4"} : (tensor<3x64xf32>, tensor<64x6xui8>, tensor<4x12xui8>) -> tensor<3x12xf32>
  return %0 : tensor<3x12xf32>
}

// -----

func.func @stray_global(%x: tensor<3x64xf32>, %w: tensor<64x6xi8>, %s: tensor<2x6xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op attribute 'global_scale' is for scheme 'nvfp4' only, but the scheme is 'int8/32'}}
  %0 = "rlx.dequant_matmul"(%x, %w, %s) {scheme = "int8/32", global_scale = 2.0 : f32} : (tensor<3x64xf32>, tensor<64x6xi8>, tensor<2x6xf32>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @gguf_side(%x: tensor<3x64xf32>, %w: tensor<5x36xui8>, %s: tensor<2x5xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op scheme 'q4_0' keeps its scales inside the blocks of w and takes no tensors after w, but 1 was given}}
  %0 = "rlx.dequant_matmul"(%x, %w, %s) {scheme = "q4_0"} : (tensor<3x64xf32>, tensor<5x36xui8>, tensor<2x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @result(%x: tensor<3x64xf32>, %w: tensor<64x6xui8>, %s: tensor<2x12xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op result type tensor<3x6xf32> does not match the inferred type tensor<3x12xf32>}}
  %0 = "rlx.dequant_matmul"(%x, %w, %s, %s) {scheme = "int4/32"} : (tensor<3x64xf32>, tensor<64x6xui8>, tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}
