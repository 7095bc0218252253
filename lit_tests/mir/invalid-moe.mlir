// The mixture-of-experts ops check their shapes, index types and packed bytes, with a diagnostic at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics
func.func @experts_k(%x: tensor<5x64xf32>, %w: tensor<3x32x8xf32>, %idx: tensor<5xi64>) -> tensor<5x8xf32> {
  // expected-error @+1 {{'rlx.grouped_matmul' op contracting dimensions differ: x [5, 64] has K = 64, weight [3, 32, 8] has K = 32}}
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<5x64xf32>, tensor<3x32x8xf32>, tensor<5xi64>) -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}

// -----

func.func @rows(%x: tensor<5x64xf32>, %w: tensor<3x64x8xf32>, %idx: tensor<4xi64>) -> tensor<5x8xf32> {
  // expected-error @+1 {{'rlx.grouped_matmul' op expert_idx [4] must have one expert per row of x [5, 64]}}
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<5x64xf32>, tensor<3x64x8xf32>, tensor<4xi64>) -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}

// -----

func.func @weight_rank(%x: tensor<5x64xf32>, %w: tensor<64x8xf32>, %idx: tensor<5xi64>) -> tensor<5x8xf32> {
  // expected-error @+1 {{'rlx.grouped_matmul' op requires weight of rank 3, [E, K, N], got [64, 8]}}
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<5x64xf32>, tensor<64x8xf32>, tensor<5xi64>) -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}

// -----

func.func @index_type(%x: tensor<5x64xf32>, %w: tensor<3x64x8xf32>, %idx: tensor<5xi32>) -> tensor<5x8xf32> {
  // expected-error @+1 {{'rlx.grouped_matmul' op operand 'expert_idx' must be a ranked tensor of i64, but got tensor<5xi32>}}
  %0 = "rlx.grouped_matmul"(%x, %w, %idx) : (tensor<5x64xf32>, tensor<3x64x8xf32>, tensor<5xi32>) -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}

// -----

func.func @bytes(%x: tensor<5x64xf32>, %q: tensor<3x8x70xui8>, %idx: tensor<5xi64>) -> tensor<5x8xf32> {
  // expected-error @+1 {{'rlx.dequant_grouped_matmul' op scheme 'q8_0' needs 68 bytes per weight row for K = 64 (2 blocks of 34 bytes), but w has 70}}
  %0 = "rlx.dequant_grouped_matmul"(%x, %q, %idx) {scheme = "q8_0"} : (tensor<5x64xf32>, tensor<3x8x70xui8>, tensor<5xi64>) -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}

// -----

func.func @stack_rank(%x: tensor<5x64xf32>, %q: tensor<8x68xui8>, %idx: tensor<5xi64>) -> tensor<5x8xf32> {
  // expected-error @+1 {{'rlx.dequant_grouped_matmul' op requires w of rank 3, [E, N, bytes per row], got [8, 68]}}
  %0 = "rlx.dequant_grouped_matmul"(%x, %q, %idx) {scheme = "q8_0"} : (tensor<5x64xf32>, tensor<8x68xui8>, tensor<5xi64>) -> tensor<5x8xf32>
  return %0 : tensor<5x8xf32>
}

// -----

func.func @partial_block(%q: tensor<3x8x70xui8>) -> tensor<3x64x8xf32> {
  // expected-error @+1 {{'rlx.dequant_moe_weights' op scheme 'q8_0' packs blocks of 34 bytes, but a row of w has 70 bytes, not a whole number of blocks}}
  %0 = "rlx.dequant_moe_weights"(%q) {scheme = "q8_0"} : (tensor<3x8x70xui8>) -> tensor<3x64x8xf32>
  return %0 : tensor<3x64x8xf32>
}

// -----

func.func @decoded_shape(%q: tensor<3x8x68xui8>) -> tensor<3x8x64xf32> {
  // expected-error @+1 {{'rlx.dequant_moe_weights' op result type tensor<3x8x64xf32> does not match the inferred type tensor<3x64x8xf32>}}
  %0 = "rlx.dequant_moe_weights"(%q) {scheme = "q8_0"} : (tensor<3x8x68xui8>) -> tensor<3x8x64xf32>
  return %0 : tensor<3x8x64xf32>
}

// -----

func.func @neither(%u: tensor<4x3xf32>, %i: tensor<4xi64>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx.scatter_add' op requires exactly one of an init operand and an out_dim attribute}}
  %0 = "rlx.scatter_add"(%u, %i) : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @index_count(%u: tensor<4x3xf32>, %i: tensor<5xi64>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'rlx.scatter_add' op indices [5] must have one index per row of updates [4, 3]}}
  %0 = "rlx.scatter_add"(%u, %i) {out_dim = 2 : i64} : (tensor<4x3xf32>, tensor<5xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @init_rows(%u: tensor<4x3xf32>, %i: tensor<4xi64>, %init: tensor<6x2xf32>) -> tensor<6x2xf32> {
  // expected-error @+1 {{'rlx.scatter_add' op init [6, 2] must be [D, T...] with the row shape of updates [4, 3]}}
  %0 = "rlx.scatter_add"(%u, %i, %init) : (tensor<4x3xf32>, tensor<4xi64>, tensor<6x2xf32>) -> tensor<6x2xf32>
  return %0 : tensor<6x2xf32>
}
