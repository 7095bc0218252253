// rlx_hir.moe_ffn's packed expert stacks: a ui8 stack needs its scheme, the scheme's bytes per row
// and the experts' count; diagnostics at the op.
// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @packed_without_scheme(%x: tensor<3x32xf32>, %r: tensor<32x4xf32>, %g: tensor<4x64x34xui8>, %u: tensor<4x32x64xf32>, %d: tensor<4x64x32xf32>) -> tensor<3x32xf32> {
  // expected-error @+1 {{'rlx_hir.moe_ffn' op gate_w is ui8, but gate_scheme is absent: a packed (ui8) stack takes a scheme, an f32 one none}}
  %0 = "rlx_hir.moe_ffn"(%x, %r, %g, %u, %d) {top_k = 2 : i64, normalize = false, scoring = "softmax", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0>}
      : (tensor<3x32xf32>, tensor<32x4xf32>, tensor<4x64x34xui8>, tensor<4x32x64xf32>, tensor<4x64x32xf32>) -> tensor<3x32xf32>
  return %0 : tensor<3x32xf32>
}

// -----

func.func @wrong_row_bytes(%x: tensor<3x32xf32>, %r: tensor<32x4xf32>, %g: tensor<4x32x64xf32>, %u: tensor<4x32x64xf32>, %d: tensor<4x32x34xui8>) -> tensor<3x32xf32> {
  // expected-error @+1 {{'rlx_hir.moe_ffn' op scheme 'q8_0' needs 68 bytes per weight row for K = 64 (2 blocks of 34 bytes), but w has 34}}
  %0 = "rlx_hir.moe_ffn"(%x, %r, %g, %u, %d) {top_k = 2 : i64, normalize = false, scoring = "softmax", down_scheme = "q8_0", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0>}
      : (tensor<3x32xf32>, tensor<32x4xf32>, tensor<4x32x64xf32>, tensor<4x32x64xf32>, tensor<4x32x34xui8>) -> tensor<3x32xf32>
  return %0 : tensor<3x32xf32>
}

// -----

func.func @wrong_experts(%x: tensor<3x32xf32>, %r: tensor<32x4xf32>, %g: tensor<4x32x64xf32>, %u: tensor<4x32x64xf32>, %d: tensor<3x32x68xui8>) -> tensor<3x32xf32> {
  // expected-error @+1 {{'rlx_hir.moe_ffn' op down_w [3, 32, 68] must be [E, N, bytes per row] = [4, 32, bytes] (packed q8_0, each expert's W [N, K] with K = 64)}}
  %0 = "rlx_hir.moe_ffn"(%x, %r, %g, %u, %d) {top_k = 2 : i64, normalize = false, scoring = "softmax", down_scheme = "q8_0", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0>}
      : (tensor<3x32xf32>, tensor<32x4xf32>, tensor<4x32x64xf32>, tensor<4x32x64xf32>, tensor<3x32x68xui8>) -> tensor<3x32xf32>
  return %0 : tensor<3x32xf32>
}
