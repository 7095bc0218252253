// rlx.dequant_matmul checks its weight's bytes against the scheme, the scheme's name and the
// element types, with a diagnostic at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics
func.func @bytes(%x: tensor<3x64xf32>, %w: tensor<5x35xui8>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op scheme 'q4_0' needs 36 bytes per weight row for K = 64 (2 blocks of 18 bytes), but w has 35}}
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_0"} : (tensor<3x64xf32>, tensor<5x35xui8>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @k(%x: tensor<3x48xf32>, %w: tensor<5x36xui8>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op scheme 'q4_0' packs blocks of 32 weights, but K = 48 is not a multiple of 32}}
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_0"} : (tensor<3x48xf32>, tensor<5x36xui8>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @scheme(%x: tensor<3x64xf32>, %w: tensor<5x36xui8>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op attribute 'scheme' must be one of 'q4_0', 'q8_0', 'q2_k', 'q3_k', 'q4_k', 'q5_k', 'q6_k', but got 'q3_q'}}
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q3_q"} : (tensor<3x64xf32>, tensor<5x36xui8>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @dtype(%x: tensor<3x64xf32>, %w: tensor<5x36xi8>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op operand 'w' must be a ranked tensor of ui8, but got tensor<5x36xi8>}}
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_0"} : (tensor<3x64xf32>, tensor<5x36xi8>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @xdtype(%x: tensor<3x64xf16>, %w: tensor<5x36xui8>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op operand 'x' must be a ranked tensor of f32, but got tensor<3x64xf16>}}
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_0"} : (tensor<3x64xf16>, tensor<5x36xui8>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @result(%x: tensor<3x64xf32>, %w: tensor<5x36xui8>) -> tensor<3x6xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op result type tensor<3x6xf32> does not match the inferred type tensor<3x5xf32>}}
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_0"} : (tensor<3x64xf32>, tensor<5x36xui8>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @rank(%x: tensor<3x64xf32>, %w: tensor<180xui8>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op requires w of rank 2, [N, bytes per row], got [180]}}
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_0"} : (tensor<3x64xf32>, tensor<180xui8>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @noscheme(%x: tensor<3x64xf32>, %w: tensor<5x36xui8>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op attribute "scheme" is expected but not provided}}
  %0 = "rlx.dequant_matmul"(%x, %w) : (tensor<3x64xf32>, tensor<5x36xui8>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @gather_rank(%t: tensor<340xui8>, %i: tensor<2xi64>) -> tensor<2x320xf32> {
  // expected-error @+1 {{'rlx.dequant_gather' op requires table of rank 2, [rows, bytes per row], got [340]}}
  %0 = "rlx.dequant_gather"(%t, %i) {scheme = "q8_0"} : (tensor<340xui8>, tensor<2xi64>) -> tensor<2x320xf32>
  return %0 : tensor<2x320xf32>
}

// -----

func.func @gather_bytes(%t: tensor<4x35xui8>, %i: tensor<2xi64>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'rlx.dequant_gather' op scheme 'q8_0' packs blocks of 34 bytes, but a row of table has 35 bytes, not a whole number of blocks}}
  %0 = "rlx.dequant_gather"(%t, %i) {scheme = "q8_0"} : (tensor<4x35xui8>, tensor<2xi64>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

func.func @gather_indices(%t: tensor<4x34xui8>, %i: tensor<2xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'rlx.dequant_gather' op operand 'indices' must be a ranked tensor of i32 or i64, but got tensor<2xf32>}}
  %0 = "rlx.dequant_gather"(%t, %i) {scheme = "q8_0"} : (tensor<4x34xui8>, tensor<2xf32>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}

// -----

func.func @gather_result(%t: tensor<4x34xui8>, %i: tensor<2x3xi64>) -> tensor<6x32xf32> {
  // expected-error @+1 {{'rlx.dequant_gather' op result type tensor<6x32xf32> does not match the inferred type tensor<2x3x32xf32>}}
  %0 = "rlx.dequant_gather"(%t, %i) {scheme = "q8_0"} : (tensor<4x34xui8>, tensor<2x3xi64>) -> tensor<6x32xf32>
  return %0 : tensor<6x32xf32>
}

// -----

// activations = "q8" (8-bit activations) has a kernel for q4_k only.
func.func @q8_activations(%x: tensor<3x64xf32>, %w: tensor<5x68xui8>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op activations = "q8" (8-bit activations) is implemented for scheme 'q4_k' only, got scheme 'q8_0'}}
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q8_0", activations = "q8"} : (tensor<3x64xf32>, tensor<5x68xui8>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @activations_mode(%x: tensor<1x256xf32>, %w: tensor<5x144xui8>) -> tensor<1x5xf32> {
  // expected-error @+1 {{'rlx.dequant_matmul' op attribute 'activations' must be one of}}
  %0 = "rlx.dequant_matmul"(%x, %w) {scheme = "q4_k", activations = "q4"} : (tensor<1x256xf32>, tensor<5x144xui8>) -> tensor<1x5xf32>
  return %0 : tensor<1x5xf32>
}
