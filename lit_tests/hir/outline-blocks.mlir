// rlx-outline-blocks: HIR blocks that repeat with the same attributes and types
// become one private function, called (no_inline) once per use; rlx-lower-to-llvm
// then plans, lowers and compiles the block once. A block that occurs once, or
// with other attributes, stays in place.
// RUN: rlx-opt %s --rlx-outline-blocks | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(rlx-outline-blocks{min-uses=3})' | FileCheck %s --check-prefix=THREE
// RUN: rlx-opt %s --rlx-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func private @__rlx_block_llama_decoder_block_{{[0-9a-f]+}}(
// CHECK-SAME: %[[X:[^:]*]]: tensor<1x5x32xf32>
// CHECK-SAME: attributes {rlx.outlined}
// CHECK-NEXT: %[[Y:.*]] = "rlx_hir.llama_decoder_block"(%[[X]],
// CHECK-NEXT: return %[[Y]] : tensor<1x5x32xf32>
// CHECK-LABEL: func.func @two_layers(
// CHECK: %[[L0:.*]] = call @[[BLOCK:__rlx_block_llama_decoder_block_[0-9a-f]+]](%{{.*}}) {no_inline}
// CHECK: %[[L1:.*]] = call @[[BLOCK]](%[[L0]], {{.*}}) {no_inline}
// The third block has another window: not the same function, and it occurs once.
// CHECK: "rlx_hir.llama_decoder_block"(%[[L1]],
// CHECK-SAME: window = 2 : i64

// THREE-NOT: call @
// THREE-COUNT-3: "rlx_hir.llama_decoder_block"

// LLVM: llvm.func {{.*}}@__rlx_block_llama_decoder_block_{{[0-9a-f]+}}(
// LLVM: llvm.func @two_layers(
// LLVM-COUNT-2: llvm.call @__rlx_block_llama_decoder_block_{{[0-9a-f]+}}(
// LLVM-NOT: llvm.call @__rlx_block
// LLVM: llvm.return
// LLVM: llvm.func @_mlir_ciface_two_layers(
// LLVM-NOT: llvm.func @__rlx_block
func.func @two_layers(%x: tensor<1x5x32xf32>, %g1: tensor<32xf32>, %b1: tensor<32xf32>, %qw: tensor<32x32xf32>, %kw: tensor<32x16xf32>,
                      %vw: tensor<32x16xf32>, %ow: tensor<32x32xf32>, %g2: tensor<32xf32>, %b2: tensor<32xf32>, %gw: tensor<32x48xf32>, %uw: tensor<32x48xf32>,
                      %dw: tensor<48x32xf32>, %cos: tensor<5x4xf32>, %sin: tensor<5x4xf32>) -> tensor<1x5x32xf32> {
  %0 = "rlx_hir.llama_decoder_block"(%x, %g1, %b1, %qw, %kw, %vw, %ow, %g2, %b2, %gw, %uw, %dw, %cos, %sin)
      {num_heads = 4 : i64, head_dim = 8 : i64, num_kv_heads = 2 : i64, eps = 1.0e-5 : f32, mask_kind = "sliding_window", window = 3 : i64}
      : (tensor<1x5x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>,
         tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<1x5x32xf32>
  %1 = "rlx_hir.llama_decoder_block"(%0, %g2, %b2, %qw, %kw, %vw, %ow, %g1, %b1, %gw, %uw, %dw, %cos, %sin)
      {num_heads = 4 : i64, head_dim = 8 : i64, num_kv_heads = 2 : i64, eps = 1.0e-5 : f32, mask_kind = "sliding_window", window = 3 : i64}
      : (tensor<1x5x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>,
         tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<1x5x32xf32>
  %2 = "rlx_hir.llama_decoder_block"(%1, %g2, %b2, %qw, %kw, %vw, %ow, %g1, %b1, %gw, %uw, %dw, %cos, %sin)
      {num_heads = 4 : i64, head_dim = 8 : i64, num_kv_heads = 2 : i64, eps = 1.0e-5 : f32, mask_kind = "sliding_window", window = 2 : i64}
      : (tensor<1x5x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<32x32xf32>,
         tensor<32xf32>, tensor<32xf32>, tensor<32x48xf32>, tensor<32x48xf32>, tensor<48x32xf32>, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<1x5x32xf32>
  return %2 : tensor<1x5x32xf32>
}
